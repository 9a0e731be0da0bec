//! The working map as a clean cache of committed state: keys committed or read in one bundle are
//! served without a RocksDB read in the next, and the cache never hides RocksDB's state.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use state_api::{
    BoundedMemoryPool, I64Codec, I64F64StrCodec, KeyedStateStore, KeyedTable, ManualClock,
    MemoryPool, NativeSnapshot, UnboundedMemoryPool,
};
use typed_store::{RocksSlot, RocksStore};

use crate::util::{full_config, key, mp128, read_all, write_all};

#[test]
fn committed_keys_are_cached_and_restores_invalidate_the_cache() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = mp128();
    let pool: Arc<UnboundedMemoryPool> = Arc::new(UnboundedMemoryPool::new());
    let keys: Vec<_> = (0..100).map(|i| key(i, mp)).collect();
    {
        let config = full_config(mp, &clock).with_memory_pool(pool.clone());
        let mut store = RocksStore::open(dir.path(), config, &slot).expect("open");
        let mut t = store.open_table("t", I64Codec, None).expect("table");
        write_all(
            &mut t,
            &keys
                .iter()
                .map(|k| (k.clone(), Some(1)))
                .collect::<Vec<_>>(),
        );
        let checkpoint = store.native_snapshot().expect("checkpoint");
        assert!(pool.used() > 0, "cached entries are reserved");

        let before = t.stats();
        assert_eq!(read_all(&mut t, &keys), vec![Some(1); keys.len()]);
        let after = t.stats();
        assert_eq!(
            after.hydrated_keys, before.hydrated_keys,
            "all hits: nothing read"
        );
        assert_eq!(after.hydration_batches, before.hydration_batches);

        // The table was opened empty, so its working map holds every key it has: a key the
        // map lacks is absent, without a read (neither batched nor point).
        let fresh: Vec<_> = (100..110).map(|i| key(i, mp)).collect();
        assert_eq!(read_all(&mut t, &fresh), vec![None; fresh.len()]);
        assert_eq!(t.stats().hydrated_keys, after.hydrated_keys);
        assert_eq!(t.stats().point_hydrations, after.point_hydrations);

        // A removal leaves the cache; a native restore replaces RocksDB underneath it.
        write_all(
            &mut t,
            &keys[..10]
                .iter()
                .map(|k| (k.clone(), None))
                .collect::<Vec<_>>(),
        );
        write_all(
            &mut t,
            &keys[10..20]
                .iter()
                .map(|k| (k.clone(), Some(2)))
                .collect::<Vec<_>>(),
        );
        assert_eq!(
            read_all(&mut t, &keys[..20]),
            [vec![None; 10], vec![Some(2); 10]].concat()
        );
        store.restore_native(&checkpoint).expect("restore");
        let before = t.stats();
        assert_eq!(
            read_all(&mut t, &keys[..20]),
            vec![Some(1); 20],
            "no stale cache"
        );
        assert_eq!(
            t.stats().hydrated_keys,
            before.hydrated_keys + 20,
            "read again"
        );
    }
    assert_eq!(
        pool.used(),
        0,
        "tables and store dropped: every reservation returned"
    );
}

/// An in-place update whose value grows beyond what the pool grants makes room as a put
/// does, by evicting clean entries the open bundle does not use, and then succeeds; the
/// evicted keys are read from RocksDB again when next used.
#[test]
fn update_growing_beyond_the_pool_evicts_clean_entries_and_succeeds() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = mp128();
    let pool: Arc<BoundedMemoryPool> = Arc::new(BoundedMemoryPool::new(64 << 10));
    let config = full_config(mp, &clock).with_memory_pool(pool.clone());
    let mut store = RocksStore::open(dir.path(), config, &slot).expect("open");
    let mut t = store.open_table("t", I64F64StrCodec, None).expect("table");
    let keys: Vec<_> = (0..100).map(|i| key(i, mp)).collect();
    let value = |i: usize| (i64::try_from(i).unwrap(), 0.5, Some("x".repeat(200)));
    let rows: Vec<_> = (0..100)
        .map(|i| (keys[i].clone(), Some(value(i))))
        .collect();
    write_all(&mut t, &rows);
    let cached = pool.used();
    assert!(
        cached > 20 << 10,
        "100 entries of 200+ bytes are cached: {cached}"
    );

    // Key 0 grows by 40 KiB: more than the pool has free, less than it frees by evicting.
    let grown = (0, 0.5, Some("g".repeat(40 << 10)));
    let (kg, k) = &keys[0];
    t.begin_bundle(&[(*kg, k.as_slice())]).expect("begin");
    let out = t
        .update(*kg, k, |v| {
            *v = grown.clone();
            v.0
        })
        .expect("the update makes room");
    assert_eq!(out, Some(0));
    assert_eq!(t.get(*kg, k).expect("get"), Some(&grown));
    t.commit_bundle().expect("commit");
    assert!(pool.used() <= 64 << 10);

    let mut expected: Vec<_> = (0..100).map(|i| Some(value(i))).collect();
    expected[0] = Some(grown);
    let hydrated = t.stats().hydrated_keys;
    assert_eq!(read_all(&mut t, &keys), expected);
    assert!(
        t.stats().hydrated_keys > hydrated,
        "evicted keys are read from RocksDB again"
    );
}

/// A pool without a capacity that refuses on demand: an unbounded pool refuses only a byte
/// count that would overflow, and this one stands in for that refusal.
#[derive(Debug, Default)]
struct RefusingPool {
    refuse: AtomicBool,
    used: AtomicUsize,
}

impl MemoryPool for RefusingPool {
    fn try_acquire(&self, bytes: usize) -> state_api::Result<()> {
        if self.refuse.load(Ordering::SeqCst) {
            return Err(state_api::Error::MemoryExhausted {
                requested: bytes,
                available: 0,
            });
        }
        self.used.fetch_add(bytes, Ordering::SeqCst);
        Ok(())
    }

    fn release(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::SeqCst);
    }

    fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }

    fn capacity(&self) -> Option<usize> {
        None
    }
}

/// Under a pool without a capacity an in-place update keeps no copy of the value; when
/// that pool refuses the growth anyway, the change stays and is written with the bundle, so
/// the cache never holds a value RocksDB does not get.
#[test]
fn refused_update_without_a_copy_is_written_not_only_cached() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = mp128();
    let pool = Arc::new(RefusingPool::default());
    let (kg, k) = key(0, mp);
    let grown = (2, 2.0, Some("z".repeat(200 << 10)));
    {
        let config = full_config(mp, &clock).with_memory_pool(pool.clone());
        let mut store = RocksStore::open(dir.path(), config, &slot).expect("open");
        let mut t = store.open_table("t", I64F64StrCodec, None).expect("table");
        write_all(&mut t, &[((kg, k.clone()), Some((1, 1.0, None)))]);
        // Written: the key is a clean cache entry, not a pending write.
        store.write_pending().expect("write pending");
        pool.refuse.store(true, Ordering::SeqCst);
        t.begin_bundle(&[(kg, k.as_slice())]).expect("begin");
        let err = t
            .update(kg, &k, |v| *v = grown.clone())
            .expect_err("the pool refuses 200 KiB");
        assert!(
            matches!(err, state_api::Error::MemoryExhausted { .. }),
            "{err}"
        );
        assert_eq!(
            t.get(kg, &k).expect("get"),
            Some(&grown),
            "the change stays"
        );
        t.commit_bundle().expect("commit");
        pool.refuse.store(false, Ordering::SeqCst);
    }
    // A new store reads RocksDB: it got the change.
    let config = full_config(mp, &clock).with_memory_pool(pool.clone());
    let mut store = RocksStore::open(dir.path(), config, &slot).expect("reopen");
    let mut t = store.open_table("t", I64F64StrCodec, None).expect("table");
    assert_eq!(read_all(&mut t, &[(kg, k)]), vec![Some(grown)]);
}
