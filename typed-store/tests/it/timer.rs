//! Timer tables on RocksDB: Flink's timer key layout in their own column family, only
//! committed changes persist, timers load at open and after a native restore, and the
//! canonical section moves them across a rescale.

use keygroup::{KeyGroup, Parallelism};
use sfcs_format::MemoryContainer;
use state_api::{
    CanonicalTable, KeyedStateStore, ManualClock, NativeSnapshot, StoreConfig, TimeDomain, Timer,
    TimerStateStore, TimerTable, restore_canonical_snapshot, write_canonical_snapshot,
};
use typed_store::{RocksSlot, RocksStore, RocksTimerTable};

use crate::util::{full_config, mp128, raw_entries, table_cf};

fn kg(v: i32) -> KeyGroup {
    KeyGroup::new(v).expect("kg")
}

fn drain(t: &mut RocksTimerTable, up_to: i64) -> Vec<(i64, i32, Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some(Timer {
        timestamp,
        key_group,
        key,
        namespace,
    }) = t.pop_due(up_to).expect("pop")
    {
        out.push((timestamp, key_group.get(), key, namespace));
    }
    out
}

#[test]
fn timers_are_flink_timer_keys_and_only_committed_changes_persist() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let db_dir = {
        let mut store =
            RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("open");
        let mut t = store
            .open_timer_table("t", TimeDomain::EventTime)
            .expect("timers");
        assert!(t.register(kg(5), 1000, b"k", b"w").expect("register"));
        assert!(!t.register(kg(5), 1000, b"k", b"w").expect("again"));
        assert!(t.register(kg(5), -3, b"key", b"").expect("register"));
        t.commit().expect("commit");
        // Not committed: lost with the store (WAL off; changes are durable on commit).
        t.register(kg(9), 7, b"x", b"").expect("register");
        assert_eq!(t.pending_changes(), 1);
        drop(t);
        store.db_dir()
    };
    let entries = raw_entries(&db_dir);
    let cf = table_cf(&entries, "t");
    let stored: Vec<(Vec<u8>, Vec<u8>)> = entries
        .into_iter()
        .filter(|(c, _, _)| *c == cf)
        .map(|(_, k, v)| (k, v))
        .collect();
    let mut ts = (-3_i64 ^ i64::MIN).to_be_bytes().to_vec();
    ts.splice(0..0, [5]);
    ts.extend_from_slice(b"key");
    assert_eq!(
        stored,
        [
            (ts, vec![0, 0, 0, 3]),
            (
                vec![5, 0x80, 0, 0, 0, 0, 0, 0x03, 0xe8, b'k', b'w'],
                vec![0, 0, 0, 1]
            ),
        ]
    );
    let mut store =
        RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("reopen");
    let mut t = store
        .open_timer_table("t", TimeDomain::EventTime)
        .expect("timers");
    assert_eq!(t.len(), 2);
    assert_eq!(t.next_timestamp(), Some(-3));
    assert_eq!(
        drain(&mut t, i64::MAX),
        [
            (-3, 5, b"key".to_vec(), Vec::new()),
            (1000, 5, b"k".to_vec(), b"w".to_vec())
        ]
    );
}

#[test]
fn native_restore_reloads_timers() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mut store =
        RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("open");
    let mut t = store
        .open_timer_table("t", TimeDomain::ProcessingTime)
        .expect("timers");
    for i in 0..100_i64 {
        let group = kg(i32::try_from(i % 128).expect("small"));
        t.register(group, i * 10, format!("k{i}").as_bytes(), b"")
            .expect("register");
    }
    t.commit().expect("commit");
    let checkpoint = store.native_snapshot().expect("checkpoint");
    assert_eq!(drain(&mut t, 500).len(), 51);
    t.commit().expect("commit");
    assert_eq!(t.len(), 49);
    store.restore_native(&checkpoint).expect("restore");
    assert_eq!(t.len(), 100, "the checkpoint's timers are back");
    assert_eq!(t.next_timestamp(), Some(0));
    let fired = drain(&mut t, i64::MAX);
    let times: Vec<i64> = fired.iter().map(|f| f.0).collect();
    assert_eq!(times, (0..100).map(|i| i * 10).collect::<Vec<_>>());
}

/// Timers of two subtasks (parallelism 2) restored into one (parallelism 1) and split again
/// into three: every timer lands in the subtask owning its key group, in order.
#[test]
fn canonical_timer_sections_rescale() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(32 << 20).expect("slot");
    let mp = mp128();
    let mut all: Vec<(i64, i32, Vec<u8>, Vec<u8>)> = Vec::new();
    let mut containers = Vec::new();
    for index in 0..2 {
        let config =
            StoreConfig::for_subtask(mp, Parallelism::new(2).expect("p"), index).expect("config");
        let range = config.key_groups();
        let mut store =
            RocksStore::open(dir.path().join(format!("src-{index}")), config, &slot).expect("open");
        let mut t = store
            .open_timer_table("timers", TimeDomain::EventTime)
            .expect("timers");
        for i in 0..300_i32 {
            let group = range.start() + i % range.number_of_key_groups();
            let key = format!("key-{i}").into_bytes();
            let ns = (i64::from(i) * 7).to_be_bytes().to_vec();
            t.register(kg(group), i64::from(i % 50), &key, &ns)
                .expect("register");
            all.push((i64::from(i % 50), group, key, ns));
        }
        t.commit().expect("commit");
        let mut container = MemoryContainer::new();
        let tables: [&dyn CanonicalTable; 1] = [&t];
        write_canonical_snapshot(
            "op",
            None,
            &tables,
            &mut container,
            store.config().memory_pool(),
        )
        .expect("snapshot");
        containers.push(container);
    }
    all.sort();
    let sources: Vec<&dyn sfcs_format::Container> = containers
        .iter()
        .map(|c| c as &dyn sfcs_format::Container)
        .collect();

    let mut merged_store = RocksStore::open(
        dir.path().join("merged"),
        StoreConfig::try_new(mp, mp.key_groups()).expect("config"),
        &slot,
    )
    .expect("open");
    let mut merged = merged_store
        .open_timer_table("timers", TimeDomain::EventTime)
        .expect("timers");
    {
        let mut tables: [&mut dyn CanonicalTable; 1] = [&mut merged];
        restore_canonical_snapshot(
            "op",
            &sources,
            &mut tables,
            merged_store.config().memory_pool(),
        )
        .expect("restore");
    }
    assert_eq!(merged.len(), all.len());
    let mut split = Vec::new();
    for index in 0..3 {
        let config =
            StoreConfig::for_subtask(mp, Parallelism::new(3).expect("p"), index).expect("config");
        let range = config.key_groups();
        let mut store =
            RocksStore::open(dir.path().join(format!("dst-{index}")), config, &slot).expect("open");
        let mut t = store
            .open_timer_table("timers", TimeDomain::EventTime)
            .expect("timers");
        {
            let mut tables: [&mut dyn CanonicalTable; 1] = [&mut t];
            restore_canonical_snapshot("op", &sources, &mut tables, store.config().memory_pool())
                .expect("restore");
        }
        let fired = drain(&mut t, i64::MAX);
        assert!(fired.iter().all(|f| range.contains(kg(f.1))));
        assert!(fired.windows(2).all(|w| w[0] <= w[1]), "fired in order");
        split.extend(fired);
    }
    split.sort();
    assert_eq!(split, all);
    assert_eq!(drain(&mut merged, i64::MAX), all);
}
