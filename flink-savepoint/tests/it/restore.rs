//! `state_api::restore_canonical_snapshot` restores a store straight from a savepoint: a
//! memory-store table snapshotted canonically, written as a Flink savepoint at one
//! parallelism, restored at another (every target subtask takes exactly its key groups).

use std::sync::Arc;

use flink_savepoint::{OperatorSelector, SavepointReader, WriteOptions, write_savepoint};
use keygroup::{MaxParallelism, Parallelism};
use memory_store::MemoryStore;
use sfcs_format::MemoryContainer;
use state_api::{
    I64Codec, KeyedStateStore, KeyedTable, MemoryPool, StoreConfig, UnboundedMemoryPool,
};

const KEYS: i32 = 600;

fn key(i: i32) -> Vec<u8> {
    format!("user-{i}").into_bytes()
}

#[test]
fn restore_canonical_snapshot_from_a_written_savepoint_at_another_parallelism() {
    let mp = MaxParallelism::new(256).unwrap();
    let pool: Arc<dyn MemoryPool> = Arc::new(UnboundedMemoryPool::new());
    // The source: one subtask owning every key group.
    let config = StoreConfig::for_subtask(mp, Parallelism::new(1).unwrap(), 0).unwrap();
    let mut store = MemoryStore::new(config);
    let mut counts = store.open_table("counts", I64Codec, None).unwrap();
    let keys: Vec<(keygroup::KeyGroup, Vec<u8>)> = (0..KEYS)
        .map(|i| (mp.key_group(i % 256).unwrap(), key(i)))
        .collect();
    let refs: Vec<(keygroup::KeyGroup, &[u8])> =
        keys.iter().map(|(kg, k)| (*kg, k.as_slice())).collect();
    counts.begin_bundle(&refs).unwrap();
    for (i, (kg, k)) in (0..).zip(&keys) {
        counts.put(*kg, k, i64::from(i) * 7).unwrap();
    }
    counts.commit_bundle().unwrap();
    let mut container = MemoryContainer::new();
    state_api::write_canonical_snapshot("group aggregate", None, &[&counts], &mut container, &pool)
        .unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sp");
    write_savepoint(
        &container,
        &out,
        &WriteOptions::new("native-op", 256, 2).unwrap(),
    )
    .unwrap();
    let savepoint =
        SavepointReader::open(&out, &OperatorSelector::Uid("native-op".into())).unwrap();

    // Restore at parallelism 3: each subtask reads its own key-group range from the savepoint.
    let mut restored_rows = 0;
    for index in 0..3 {
        let config = StoreConfig::for_subtask(mp, Parallelism::new(3).unwrap(), index).unwrap();
        let range = config.key_groups();
        let mut store = MemoryStore::new(config);
        let mut table = store.open_table("counts", I64Codec, None).unwrap();
        let summary = state_api::restore_canonical_snapshot(
            "group aggregate",
            &[&savepoint],
            &mut [&mut table],
            &pool,
        )
        .unwrap();
        restored_rows += summary.rows;
        let mine: Vec<(keygroup::KeyGroup, &[u8])> = refs
            .iter()
            .copied()
            .filter(|(kg, _)| range.contains(*kg))
            .collect();
        table.begin_bundle(&mine).unwrap();
        for (i, (kg, k)) in (0..).zip(&keys) {
            if range.contains(*kg) {
                assert_eq!(
                    table.get(*kg, k).unwrap().copied(),
                    Some(i64::from(i) * 7),
                    "key {i}"
                );
            }
        }
        table.commit_bundle().unwrap();
        assert_eq!(table.len(), mine.len(), "subtask {index}");
    }
    assert_eq!(restored_rows, keys.len());

    // The wrong operator is refused before any row is restored.
    let config = StoreConfig::for_subtask(mp, Parallelism::new(1).unwrap(), 0).unwrap();
    let mut store = MemoryStore::new(config);
    let mut table = store.open_table("counts", I64Codec, None).unwrap();
    assert!(
        state_api::restore_canonical_snapshot("top-n", &[&savepoint], &mut [&mut table], &pool)
            .is_err()
    );
    assert_eq!(table.len(), 0);
}
