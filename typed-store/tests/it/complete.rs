//! The complete working map: a table opened empty holds every key it has in its working map,
//! so a key the map lacks is absent without a read. Whatever makes the map incomplete (a
//! table opened with state, an eviction, a restore) brings the reads back, and no reader
//! sees a difference. And a commit writes what the dirty keys' last change left, however
//! many changes a key had in its bundle.

use std::sync::Arc;

use state_api::{
    BoundedMemoryPool, I64Codec, KeyedStateStore, KeyedTable, ManualClock, MemoryPool,
    NativeSnapshot, TtlConfig, TtlUpdateType, TtlVisibility,
};
use std::time::Duration;
use typed_store::{RocksSlot, RocksStore};

use crate::util::{Key, full_config, key, mp128, read_all, write_all};

fn puts(keys: &[Key], value: i64) -> Vec<(Key, Option<i64>)> {
    keys.iter().map(|k| (k.clone(), Some(value))).collect()
}

#[test]
fn a_table_opened_with_state_reads_what_its_map_lacks() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = mp128();
    let keys: Vec<Key> = (0..100).map(|i| key(i, mp)).collect();
    {
        let mut store = RocksStore::open(dir.path(), full_config(mp, &clock), &slot).expect("open");
        let mut t = store.open_table("t", I64Codec, None).expect("table");
        write_all(&mut t, &puts(&keys, 1));
        write_all(&mut t, &puts(&keys[..10], 2));
        assert_eq!(read_all(&mut t, &keys[..1]), vec![Some(2)]);
        let stats = t.stats();
        assert_eq!(
            (
                stats.hydration_batches,
                stats.hydrated_keys,
                stats.point_hydrations
            ),
            (0, 0, 0),
            "a table opened empty reads nothing"
        );
    }
    // Reopened from disk (the close flushed the write-behind buffer): RocksDB holds the
    // state, and the new handle reads what its map lacks.
    let mut store = RocksStore::open(dir.path(), full_config(mp, &clock), &slot).expect("open");
    let mut t = store.open_table("t", I64Codec, None).expect("table");
    assert_eq!(
        read_all(&mut t, &keys),
        [vec![Some(2); 10], vec![Some(1); 90]].concat()
    );
    assert_eq!(t.stats().hydrated_keys, 100);
    // Keys it never had are read too (the map is not complete) and absent, by batch and by
    // point read.
    let fresh: Vec<Key> = (100..110).map(|i| key(i, mp)).collect();
    assert_eq!(read_all(&mut t, &fresh), vec![None; fresh.len()]);
    assert_eq!(t.stats().hydrated_keys, 110);
    let (kg, k) = key(200, mp);
    t.begin_bundle(&[]).expect("begin");
    assert_eq!(t.get(kg, &k).expect("get"), None);
    t.commit_bundle().expect("commit");
    assert_eq!(t.stats().point_hydrations, 1);
}

#[test]
fn an_evicting_table_reads_its_evicted_keys_back() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = mp128();
    // Room for a few hundred cached entries: 4,000 keys evict.
    let pool: Arc<BoundedMemoryPool> = Arc::new(BoundedMemoryPool::new(96 << 10));
    let config = full_config(mp, &clock).with_memory_pool(pool.clone());
    let mut store = RocksStore::open(dir.path(), config, &slot).expect("open");
    let mut t = store.open_table("t", I64Codec, None).expect("table");
    let keys: Vec<Key> = (0..4000).map(|i| key(i, mp)).collect();
    for (n, chunk) in keys.chunks(200).enumerate() {
        let value = i64::try_from(n).expect("small");
        write_all(&mut t, &puts(chunk, value));
    }
    let want: Vec<Option<i64>> = (0..keys.len())
        .map(|i| Some(i64::try_from(i / 200).expect("small")))
        .collect();
    let before = t.stats().hydrated_keys;
    let mut got = Vec::new();
    for chunk in keys.chunks(200) {
        got.extend(read_all(&mut t, chunk));
    }
    assert_eq!(
        got, want,
        "evicted keys come back from RocksDB or the buffer"
    );
    assert!(
        t.stats().hydrated_keys > before,
        "the evictions made the map incomplete: keys were read"
    );
    // Absent keys of an incomplete map are read and absent.
    let fresh: Vec<Key> = (5000..5010).map(|i| key(i, mp)).collect();
    assert_eq!(read_all(&mut t, &fresh), vec![None; fresh.len()]);
    assert!(pool.capacity().is_some_and(|c| pool.used() <= c));
}

/// A bundle that changes keys several times; its commit must write each key's last state.
fn churn(t: &mut impl KeyedTable<Codec = I64Codec>, keys: &[Key]) {
    let named: Vec<_> = keys.iter().map(|(kg, k)| (*kg, k.as_slice())).collect();
    t.begin_bundle(&named).expect("begin");
    for (i, (kg, k)) in keys.iter().enumerate() {
        let v = i64::try_from(i).expect("small");
        match i % 4 {
            // Put twice.
            0 => {
                t.put(*kg, k, v).expect("put");
                t.put(*kg, k, v + 1000).expect("put");
            }
            // Put, then remove.
            1 => {
                t.put(*kg, k, v).expect("put");
                t.remove(*kg, k).expect("remove");
            }
            // Remove, then put.
            2 => {
                t.remove(*kg, k).expect("remove");
                t.put(*kg, k, v + 2000).expect("put");
            }
            // Untouched by this bundle.
            _ => {}
        }
    }
    t.commit_bundle().expect("commit");
}

fn churned(i: usize, before: i64) -> Option<i64> {
    let v = i64::try_from(i).expect("small");
    match i % 4 {
        0 => Some(v + 1000),
        1 => None,
        2 => Some(v + 2000),
        _ => Some(before),
    }
}

#[test]
fn a_commit_writes_each_keys_last_change_write_through_or_behind() {
    for write_behind in [0, 32 << 20] {
        let dir = tempfile::tempdir().expect("tmp");
        let slot = RocksSlot::try_new(16 << 20)
            .expect("slot")
            .with_write_behind(write_behind);
        let clock = ManualClock::new(1);
        let mp = mp128();
        let keys: Vec<Key> = (0..400).map(|i| key(i, mp)).collect();
        let want: Vec<Option<i64>> = (0..keys.len()).map(|i| churned(i, 7)).collect();
        {
            let mut store =
                RocksStore::open(dir.path(), full_config(mp, &clock), &slot).expect("open");
            let mut t = store.open_table("t", I64Codec, None).expect("table");
            write_all(&mut t, &puts(&keys, 7));
            churn(&mut t, &keys);
            assert_eq!(read_all(&mut t, &keys), want, "the working map");
            store.native_snapshot().expect("flushes the buffer");
        }
        let mut store = RocksStore::open(dir.path(), full_config(mp, &clock), &slot).expect("open");
        let mut t = store.open_table("t", I64Codec, None).expect("table");
        assert_eq!(
            read_all(&mut t, &keys),
            want,
            "RocksDB, write-behind {write_behind}"
        );
    }
}

#[test]
fn a_read_that_refreshes_or_clears_ttl_is_committed() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1_000);
    let mp = mp128();
    let ttl = TtlConfig::new(Duration::from_millis(100))
        .with_update_type(TtlUpdateType::OnReadAndWrite)
        .with_visibility(TtlVisibility::NeverReturnExpired);
    let keys: Vec<Key> = (0..20).map(|i| key(i, mp)).collect();
    {
        let mut store = RocksStore::open(dir.path(), full_config(mp, &clock), &slot).expect("open");
        let mut t = store.open_table("t", I64Codec, Some(ttl)).expect("table");
        write_all(&mut t, &puts(&keys, 1));
        // At 1,080 the first ten are read: their access time moves to 1,080.
        clock.set(1_080);
        assert_eq!(read_all(&mut t, &keys[..10]), vec![Some(1); 10]);
        // At 1,150 the other ten have expired; reading them clears them.
        clock.set(1_150);
        assert_eq!(read_all(&mut t, &keys[10..]), vec![None; 10]);
        store.native_snapshot().expect("flushes the buffer");
    }
    let mut store = RocksStore::open(dir.path(), full_config(mp, &clock), &slot).expect("open");
    let mut t = store.open_table("t", I64Codec, Some(ttl)).expect("table");
    clock.set(1_170);
    assert_eq!(
        read_all(&mut t, &keys),
        [vec![Some(1); 10], vec![None; 10]].concat(),
        "the refreshed keys live on, the cleared ones are gone"
    );
}
