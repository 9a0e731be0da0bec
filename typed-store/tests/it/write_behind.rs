//! The write-behind buffer of keyed tables: committed values wait in host memory and reach
//! RocksDB at the flush points, and no reader (next bundle, checkpoint,
//! canonical export, restore, reopened store) sees a difference from write-through.

use std::sync::Arc;

use sfcs_format::MemoryContainer;
use state_api::{
    BoundedMemoryPool, CanonicalTable, I64Codec, KeyedStateStore, KeyedTable, ManualClock,
    MemoryPool, NativeSnapshot, restore_canonical_snapshot, write_canonical_snapshot,
};
use typed_store::{RocksSlot, RocksStore};

use crate::util::{Key, full_config, key, mp128, raw_entries, read_all, write_all};

fn puts(keys: &[Key], value: i64) -> Vec<(Key, Option<i64>)> {
    keys.iter().map(|k| (k.clone(), Some(value))).collect()
}

fn removes(keys: &[Key]) -> Vec<(Key, Option<i64>)> {
    keys.iter().map(|k| (k.clone(), None)).collect()
}

#[test]
fn commits_are_buffered_and_every_reader_sees_them() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = mp128();
    let keys: Vec<Key> = (0..200).map(|i| key(i, mp)).collect();
    let mut store = RocksStore::open(dir.path(), full_config(mp, &clock), &slot).expect("open");
    let mut t = store.open_table("t", I64Codec, None).expect("table");
    for round in 1..=5 {
        write_all(&mut t, &puts(&keys, round));
    }
    assert_eq!(t.write_behind_flushes(), (0, 0), "nothing written yet");
    assert!(
        t.write_behind_bytes() > 0,
        "the buffer is charged to the pool"
    );
    assert_eq!(
        t.stats().written_keys,
        5 * 200,
        "each commit counts its dirty keys"
    );

    assert_eq!(read_all(&mut t, &keys), vec![Some(5); keys.len()]);

    // A native checkpoint writes the buffer first: once per key, not once per commit.
    let checkpoint = store.native_snapshot().expect("checkpoint");
    assert_eq!(t.write_behind_flushes(), (1, 200));
    assert_eq!(t.write_behind_bytes(), 0);

    // A pending delete hides the value RocksDB holds.
    write_all(&mut t, &removes(&keys[..50]));
    write_all(&mut t, &puts(&keys[50..100], 7));
    assert_eq!(
        read_all(&mut t, &keys[..100]),
        [vec![None; 50], vec![Some(7); 50]].concat()
    );

    // A canonical export sees the pending writes.
    let pool = store.config().memory_pool().clone();
    let mut container = MemoryContainer::new();
    write_canonical_snapshot("op", None, &[&t], &mut container, &pool).expect("snapshot");
    assert_eq!(t.write_behind_bytes(), 0, "the export flushed the buffer");

    // The checkpoint holds the state of its moment; a native restore drops what is pending.
    write_all(&mut t, &puts(&keys, 9));
    store.restore_native(&checkpoint).expect("restore");
    assert_eq!(t.write_behind_bytes(), 0);
    assert_eq!(read_all(&mut t, &keys), vec![Some(5); keys.len()]);

    // A canonical restore replaces the state, pending writes included.
    write_all(&mut t, &puts(&keys, 11));
    restore_canonical_snapshot(
        "op",
        &[&container],
        &mut [&mut t as &mut dyn CanonicalTable],
        &pool,
    )
    .expect("restore");
    assert_eq!(
        read_all(&mut t, &keys),
        [vec![None; 50], vec![Some(7); 50], vec![Some(5); 100]].concat()
    );

    // Closing the store writes what is pending: the database on disk holds the last state.
    write_all(&mut t, &puts(&keys[..10], 13));
    let live = store.db_dir();
    drop(t);
    drop(store);
    let on_disk = raw_entries(&live)
        .into_iter()
        .filter(|(cf, _, _)| cf.starts_with(typed_store::TABLE_CF_PREFIX))
        .count();
    assert_eq!(
        on_disk, 160,
        "on disk: 150 restored keys and 10 written after"
    );
    let mut store = RocksStore::open(dir.path(), full_config(mp, &clock), &slot).expect("reopen");
    let mut t = store.open_table("t", I64Codec, None).expect("table");
    assert_eq!(
        read_all(&mut t, &keys),
        [
            vec![Some(13); 10],
            vec![None; 40],
            vec![Some(7); 50],
            vec![Some(5); 100]
        ]
        .concat()
    );
}

#[test]
fn write_through_and_limits() {
    let clock = ManualClock::new(1);
    let mp = mp128();
    let keys: Vec<Key> = (0..100).map(|i| key(i, mp)).collect();

    // Limit 0: every commit writes RocksDB directly.
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20)
        .expect("slot")
        .with_write_behind(0);
    let mut store = RocksStore::open(dir.path(), full_config(mp, &clock), &slot).expect("open");
    let mut t = store.open_table("t", I64Codec, None).expect("table");
    write_all(&mut t, &puts(&keys, 1));
    assert_eq!(
        (t.write_behind_bytes(), t.write_behind_flushes()),
        (0, (0, 0))
    );
    drop(t);
    drop(store);

    // A small limit: the buffer is written whenever a commit takes it over the limit.
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20)
        .expect("slot")
        .with_write_behind(4 << 10);
    let mut store = RocksStore::open(dir.path(), full_config(mp, &clock), &slot).expect("open");
    let mut t = store.open_table("t", I64Codec, None).expect("table");
    for round in 0..10 {
        write_all(&mut t, &puts(&keys[round * 10..round * 10 + 10], 2));
    }
    let (flushes, keys_written) = t.write_behind_flushes();
    assert!(
        flushes >= 1 && keys_written >= 10,
        "{flushes} flushes, {keys_written} keys"
    );
    assert!(t.write_behind_bytes() <= 4 << 10);
    assert_eq!(read_all(&mut t, &keys), vec![Some(2); keys.len()]);
}

#[test]
fn a_refusing_pool_flushes_pending_writes_and_counts_every_byte() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = mp128();
    // Room for a few hundred resident keys: 1,000 keys need evictions, and pending writes
    // are never evicted, so the pool's refusals must flush them.
    let pool = Arc::new(BoundedMemoryPool::new(48 << 10));
    let config = full_config(mp, &clock).with_memory_pool(pool.clone());
    let mut store = RocksStore::open(dir.path(), config, &slot).expect("open");
    let mut t = store.open_table("t", I64Codec, None).expect("table");
    let keys: Vec<Key> = (0..1000).map(|i| key(i, mp)).collect();
    for round in 1..=3 {
        for chunk in keys.chunks(100) {
            write_all(&mut t, &puts(chunk, round));
            assert!(pool.used() <= 48 << 10);
            assert_eq!(
                pool.used(),
                t.reserved_bytes(),
                "every byte of the table is reserved, pending writes included"
            );
        }
    }
    assert!(
        t.write_behind_flushes().0 >= 1,
        "the refusals flushed the pending writes"
    );
    let mut got = Vec::new();
    for chunk in keys.chunks(100) {
        got.extend(read_all(&mut t, chunk));
    }
    assert_eq!(got, vec![Some(3); keys.len()], "nothing committed was lost");
    drop(t);
    drop(store);
    assert_eq!(
        pool.used(),
        0,
        "store closed: every reservation is returned"
    );
}

#[test]
fn a_flush_inside_an_open_bundle_writes_committed_state_only() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = mp128();
    let keys: Vec<Key> = (0..50).map(|i| key(i, mp)).collect();
    {
        let mut store = RocksStore::open(dir.path(), full_config(mp, &clock), &slot).expect("open");
        let mut t = store.open_table("t", I64Codec, None).expect("table");
        write_all(&mut t, &puts(&keys, 1));
        // An open bundle changes every key (pending from the commit above), then the handle
        // is dropped without a commit: its flush writes what was committed.
        let named: Vec<_> = keys.iter().map(|(kg, k)| (*kg, k.as_slice())).collect();
        t.begin_bundle(&named).expect("begin");
        for (i, (kg, k)) in keys.iter().enumerate() {
            if i % 2 == 0 {
                t.put(*kg, k, 99).expect("put");
            } else {
                t.remove(*kg, k).expect("remove");
            }
        }
        let extra = key(1000, mp);
        t.put(extra.0, &extra.1, 5).expect("put of a new key");
        // A store-level flush cannot reach a table in a bundle.
        assert!(store.flush_table("t").is_err());
        drop(t);
    }
    let mut store = RocksStore::open(dir.path(), full_config(mp, &clock), &slot).expect("open");
    let mut t = store.open_table("t", I64Codec, None).expect("table");
    assert_eq!(read_all(&mut t, &keys), vec![Some(1); keys.len()]);
    assert_eq!(read_all(&mut t, &[key(1000, mp)]), vec![None]);
}
