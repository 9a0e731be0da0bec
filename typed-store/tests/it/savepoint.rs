//! Both sfstate backends through a Flink savepoint written and read by `flink-savepoint`: a
//! typed-store table's canonical snapshot equals a memory-store table's of the same rows
//! byte for byte, is written as a savepoint at parallelism 2, and restores from the
//! `SavepointReader` into memory-store at parallelism 3 and typed-store at parallelism 4
//! with every row in the subtask that owns it (the real-Flink leg is
//! `compat/flink-savepoint/proof.sh`).

use flink_savepoint::{OperatorSelector, SavepointReader, WriteOptions, write_savepoint};
use keygroup::{KeyGroup, Parallelism};
use memory_store::MemoryStore;
use sfcs_format::MemoryContainer;
use state_api::{
    CanonicalTable, I64Codec, KeyedStateStore, KeyedTable, ManualClock, StoreConfig,
    restore_canonical_snapshot, write_canonical_snapshot,
};
use typed_store::{RocksSlot, RocksStore};

use crate::util::{full_config, key, read_all, write_all};

const OPERATOR: &str = "group aggregate";
const ROWS: usize = 3000;

fn value(i: usize) -> i64 {
    i64::try_from(i).expect("small") * 11 - 5
}

/// Checks that `table` holds exactly the rows of `keys` in its key groups; returns how many.
fn check<T: KeyedTable<Codec = I64Codec>>(
    table: &mut T,
    keys: &[(KeyGroup, Vec<u8>)],
    config: &StoreConfig,
) -> usize {
    let range = config.key_groups();
    let mine: Vec<(usize, (KeyGroup, Vec<u8>))> = keys
        .iter()
        .cloned()
        .enumerate()
        .filter(|(_, (kg, _))| range.contains(*kg))
        .collect();
    let only_keys: Vec<_> = mine.iter().map(|(_, k)| k.clone()).collect();
    let expected: Vec<_> = mine.iter().map(|(i, _)| Some(value(*i))).collect();
    assert_eq!(read_all(table, &only_keys), expected);
    mine.len()
}

#[test]
fn typed_store_snapshot_through_a_savepoint_restores_into_both_backends() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(64 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = keygroup::MaxParallelism::new(256).expect("valid");
    let keys: Vec<_> = (0..ROWS).map(|i| key(i, mp)).collect();
    let rows: Vec<_> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.clone(), Some(value(i))))
        .collect();

    let mut typed =
        RocksStore::open(dir.path().join("src"), full_config(mp, &clock), &slot).expect("open");
    let mut t = typed.open_table("counts", I64Codec, None).expect("table");
    write_all(&mut t, &rows);
    let pool = typed.config().memory_pool().clone();
    let mut from_typed = MemoryContainer::new();
    write_canonical_snapshot(OPERATOR, None, &[&t], &mut from_typed, &pool).expect("snapshot");

    let mut memory = MemoryStore::new(full_config(mp, &clock));
    let mut m = memory.open_table("counts", I64Codec, None).expect("table");
    write_all(&mut m, &rows);
    let mut from_memory = MemoryContainer::new();
    write_canonical_snapshot(OPERATOR, None, &[&m], &mut from_memory, &pool).expect("snapshot");
    assert_eq!(
        from_typed, from_memory,
        "one canonical snapshot for both backends"
    );

    let out = dir.path().join("savepoint");
    write_savepoint(
        &from_typed,
        &out,
        &WriteOptions::new("typed-op", 256, 2).expect("options"),
    )
    .expect("write");
    let savepoint =
        SavepointReader::open(&out, &OperatorSelector::Uid("typed-op".into())).expect("open");

    // Into memory-store at parallelism 3.
    let mut restored = 0;
    for index in 0..3 {
        let config =
            StoreConfig::for_subtask(mp, Parallelism::new(3).expect("p"), index).expect("config");
        let mut store = MemoryStore::new(config.clone());
        let mut table = store.open_table("counts", I64Codec, None).expect("table");
        let summary = restore_canonical_snapshot(
            OPERATOR,
            &[&savepoint],
            &mut [&mut table as &mut dyn CanonicalTable],
            &pool,
        )
        .expect("restore");
        assert_eq!(summary.rows, check(&mut table, &keys, &config));
        restored += summary.rows;
    }
    assert_eq!(restored, ROWS);

    // Into typed-store at parallelism 4.
    let mut restored = 0;
    for index in 0..4 {
        let config =
            StoreConfig::for_subtask(mp, Parallelism::new(4).expect("p"), index).expect("config");
        let mut store = RocksStore::open(
            dir.path().join(format!("dst-{index}")),
            config.clone(),
            &slot,
        )
        .expect("open");
        let mut table = store.open_table("counts", I64Codec, None).expect("table");
        let summary = restore_canonical_snapshot(
            OPERATOR,
            &[&savepoint],
            &mut [&mut table as &mut dyn CanonicalTable],
            &pool,
        )
        .expect("restore");
        assert_eq!(summary.rows, check(&mut table, &keys, &config));
        restored += summary.rows;
    }
    assert_eq!(restored, ROWS);
}
