//! The working map as a clean cache of committed state: keys committed or read in one bundle are
//! served without a RocksDB read in the next, and the cache never hides RocksDB's state.

use std::sync::Arc;

use state_api::{
    I64Codec, KeyedStateStore, KeyedTable, ManualClock, MemoryPool, NativeSnapshot,
    UnboundedMemoryPool,
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
