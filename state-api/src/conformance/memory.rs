//! Memory-pool accounting: reservations grow with state, are released on drop, and an
//! exhausted pool is a typed error that leaves state unchanged.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::snapshot::filled_snapshot;
use super::{
    StoreFactory, bundle_keys, full_config, key, max_parallelism, read_all, snapshot_of, write_all,
};
use crate::codec::I64F64StrCodec;
use crate::error::{Error, Result};
use crate::memory::MemoryPool;
use crate::snapshot::{CanonicalTable, restore_canonical_snapshot, write_canonical_snapshot};
use crate::table::{KeyedStateStore, KeyedTable};
use crate::ttl::ManualClock;

/// A bounded pool whose capacity the test can move.
#[derive(Debug)]
struct AdjustablePool {
    capacity: AtomicUsize,
    used: AtomicUsize,
}

impl AdjustablePool {
    fn new(capacity: usize) -> Arc<Self> {
        Arc::new(Self {
            capacity: AtomicUsize::new(capacity),
            used: AtomicUsize::new(0),
        })
    }

    /// Leaves `headroom` bytes free.
    fn set_headroom(&self, headroom: usize) {
        self.capacity.store(
            self.used.load(Ordering::SeqCst) + headroom,
            Ordering::SeqCst,
        );
    }
}

impl MemoryPool for AdjustablePool {
    fn try_acquire(&self, bytes: usize) -> Result<()> {
        let capacity = self.capacity.load(Ordering::SeqCst);
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                u.checked_add(bytes).filter(|&n| n <= capacity)
            })
            .map(|_| ())
            .map_err(|u| Error::MemoryExhausted {
                requested: bytes,
                available: capacity.saturating_sub(u),
            })
    }

    fn release(&self, bytes: usize) {
        let _ = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                Some(u.saturating_sub(bytes))
            });
    }

    fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }

    fn capacity(&self) -> Option<usize> {
        Some(self.capacity.load(Ordering::SeqCst))
    }
}

fn value(i: usize) -> (i64, f64, Option<String>) {
    (i as i64, 0.5, Some("x".repeat(200)))
}

/// Pending writes reserve memory; removing everything does not grow it; dropping the tables
/// and the store returns every byte.
pub fn memory_reservation_accounting<F: StoreFactory>(f: &F) {
    let mp = max_parallelism(128);
    let pool = AdjustablePool::new(usize::MAX);
    let clock = ManualClock::new(1);
    {
        let mut store = f.create(full_config(mp, &clock).with_memory_pool(pool.clone()));
        let mut t = store
            .open_table("rows", I64F64StrCodec, None)
            .expect("open");
        let keys: Vec<_> = (0..100).map(|i| key(i, mp)).collect();
        let base = pool.used();
        t.begin_bundle(&bundle_keys(&keys)).expect("begin");
        for (i, (kg, k)) in keys.iter().enumerate() {
            t.put(*kg, k, value(i)).expect("put");
        }
        assert!(
            pool.used() >= base + 100 * 200,
            "pending writes reserve at least their string bytes ({} -> {})",
            base,
            pool.used()
        );
        t.commit_bundle().expect("commit");
        let full = pool.used();
        write_all(
            &mut t,
            &keys.iter().map(|k| (k.clone(), None)).collect::<Vec<_>>(),
        );
        t.sweep_expired(usize::MAX).expect("sweep");
        assert!(
            pool.used() <= full,
            "removing everything does not grow the reservation"
        );
        // Snapshot materialisation reserves from the pool too, and gives it back (a backend
        // that buffers committed writes may write them out and hold less afterwards).
        let before = pool.used();
        let _ = snapshot_of(&store, "op", &[&t as &dyn CanonicalTable]);
        assert!(pool.used() <= before, "snapshot reservations are released");
        let settled = pool.used();
        let _ = snapshot_of(&store, "op", &[&t as &dyn CanonicalTable]);
        assert_eq!(
            pool.used(),
            settled,
            "a second snapshot holds nothing after"
        );
    }
    assert_eq!(
        pool.used(),
        0,
        "dropping tables and store releases everything"
    );
}

/// A put the pool refuses is [`Error::MemoryExhausted`] and leaves that key as it was; the
/// bundle stays usable and commits the writes that succeeded.
pub fn memory_exhausted_put_leaves_state_unchanged<F: StoreFactory>(f: &F) {
    let mp = max_parallelism(128);
    let pool = AdjustablePool::new(usize::MAX);
    let clock = ManualClock::new(1);
    let mut store = f.create(full_config(mp, &clock).with_memory_pool(pool.clone()));
    let mut t = store
        .open_table("rows", I64F64StrCodec, None)
        .expect("open");
    let keys: Vec<_> = (0..300).map(|i| key(i, mp)).collect();
    let first = keys[0].clone();
    write_all(&mut t, &[(first.clone(), Some((1, 1.0, None)))]);
    pool.set_headroom(16 * 1024);
    t.begin_bundle(&bundle_keys(&keys)).expect("begin");
    let huge = (2, 2.0, Some("y".repeat(64 * 1024)));
    let err = t
        .put(first.0, &first.1, huge)
        .expect_err("overwrite beyond the pool");
    assert!(matches!(err, Error::MemoryExhausted { .. }), "{err}");
    assert_eq!(
        t.get(first.0, &first.1).expect("get"),
        Some(&(1, 1.0, None)),
        "old value kept"
    );
    let mut failed_at = None;
    for (i, (kg, k)) in keys.iter().enumerate().skip(1) {
        match t.put(*kg, k, value(i)) {
            Ok(()) => {}
            Err(Error::MemoryExhausted {
                requested,
                available,
            }) => {
                assert!(requested > available, "{requested} <= {available}");
                failed_at = Some(i);
                break;
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    let failed_at = failed_at.expect("300 x 200-byte strings exceed 16 KiB of headroom");
    let (kg, k) = &keys[failed_at];
    assert_eq!(
        t.get(*kg, k).expect("get"),
        None,
        "the refused key stays absent"
    );
    t.commit_bundle().expect("commit after a refused put");
    pool.set_headroom(usize::MAX / 2);
    let read = read_all(&mut t, &keys[..=failed_at]);
    assert_eq!(read[0], Some((1, 1.0, None)));
    for (i, v) in read.iter().enumerate().skip(1) {
        let expected = (i < failed_at).then(|| value(i));
        assert_eq!(v, &expected, "key {i}");
    }
}

/// An in-place `update` or `upsert` whose value grows beyond the pool is
/// [`Error::MemoryExhausted`] and leaves the value as it was (the closure ran on the value
/// itself: the backend puts it back); one that grows within the pool, or shrinks, is kept and
/// charged; the bundle stays usable and commits what succeeded.
pub fn memory_exhausted_update_leaves_state_unchanged<F: StoreFactory>(f: &F) {
    let mp = max_parallelism(128);
    let pool = AdjustablePool::new(usize::MAX);
    let clock = ManualClock::new(1);
    let mut store = f.create(full_config(mp, &clock).with_memory_pool(pool.clone()));
    let mut t = store
        .open_table("rows", I64F64StrCodec, None)
        .expect("open");
    let keys: Vec<_> = (0..3).map(|i| key(i, mp)).collect();
    let [a, b, c] = [&keys[0], &keys[1], &keys[2]];
    let small = |n: i64| (n, 1.0, Some("ab".to_owned()));
    write_all(
        &mut t,
        &[(a.clone(), Some(small(1))), (b.clone(), Some(small(2)))],
    );
    pool.set_headroom(16 * 1024);
    let huge = "y".repeat(64 * 1024);
    t.begin_bundle(&bundle_keys(&keys)).expect("begin");

    let err = t
        .update(a.0, &a.1, |v| {
            v.0 = 10;
            v.2 = Some(huge.clone());
        })
        .expect_err("an update growing beyond the pool");
    assert!(matches!(err, Error::MemoryExhausted { .. }), "{err}");
    assert_eq!(
        t.get(a.0, &a.1).expect("get"),
        Some(&small(1)),
        "a as it was"
    );
    let err = t
        .upsert(b.0, &b.1, || small(0), |v| v.2 = Some(huge.clone()))
        .expect_err("an upsert growing beyond the pool");
    assert!(matches!(err, Error::MemoryExhausted { .. }), "{err}");
    assert_eq!(
        t.get(b.0, &b.1).expect("get"),
        Some(&small(2)),
        "b as it was"
    );
    let err = t
        .upsert(c.0, &c.1, || (3, 3.0, Some(huge.clone())), |_| {})
        .expect_err("an upsert inserting beyond the pool");
    assert!(matches!(err, Error::MemoryExhausted { .. }), "{err}");
    assert_eq!(t.get(c.0, &c.1).expect("get"), None, "c still absent");

    // Growth within the pool is kept; a shrink returns memory.
    let grown = (11, 1.0, Some("z".repeat(1024)));
    let out = t
        .update(a.0, &a.1, |v| {
            *v = grown.clone();
            "ran"
        })
        .expect("an update growing within the pool");
    assert_eq!(out, Some("ran"));
    assert_eq!(t.get(a.0, &a.1).expect("get"), Some(&grown));
    let used = pool.used();
    assert!(
        t.upsert(a.0, &a.1, || small(0), |v| v.2 = None)
            .expect("a shrinking upsert"),
        "a is visible: updated, not inserted"
    );
    assert!(pool.used() < used, "the shrink is returned to the pool");
    t.commit_bundle().expect("commit after refused updates");
    pool.set_headroom(usize::MAX / 2);
    let read = read_all(&mut t, &keys);
    assert_eq!(read, vec![Some((11, 1.0, None)), Some(small(2)), None]);
}

/// A restore whose staging exceeds the pool is [`Error::MemoryExhausted`] and leaves the
/// target unchanged.
pub fn memory_exhausted_restore_leaves_state_unchanged<F: StoreFactory>(f: &F) {
    let source = filled_snapshot(f, 400);
    let mp = max_parallelism(128);
    let pool = AdjustablePool::new(usize::MAX);
    let clock = ManualClock::new(3);
    let mut store = f.create(full_config(mp, &clock).with_memory_pool(pool.clone()));
    let mut main = store
        .open_table("main", crate::codec::I64Codec, None)
        .expect("open");
    let mut side = store
        .open_table("side", I64F64StrCodec, None)
        .expect("open");
    let keys: Vec<_> = (0..10).map(|i| key(i, mp)).collect();
    write_all(
        &mut main,
        &keys
            .iter()
            .map(|k| (k.clone(), Some(-1)))
            .collect::<Vec<_>>(),
    );
    let before = snapshot_of(&store, "op", &[&main as &dyn CanonicalTable, &side]);
    pool.set_headroom(1024);
    let pool_dyn: Arc<dyn MemoryPool> = pool.clone();
    let err = restore_canonical_snapshot(
        "op",
        &[&source],
        &mut [&mut main as &mut dyn CanonicalTable, &mut side],
        &pool_dyn,
    )
    .expect_err("restore beyond the pool");
    assert!(matches!(err, Error::MemoryExhausted { .. }), "{err}");
    pool.set_headroom(usize::MAX / 2);
    assert_eq!(read_all(&mut main, &keys), vec![Some(-1); keys.len()]);
    assert_eq!(
        snapshot_of(&store, "op", &[&main as &dyn CanonicalTable, &side]),
        before
    );
}

/// Canonical materialisation beyond the pool is [`Error::MemoryExhausted`]; the table is
/// unchanged and a later snapshot with room succeeds.
pub fn memory_exhausted_snapshot<F: StoreFactory>(f: &F) {
    let mp = max_parallelism(128);
    let pool = AdjustablePool::new(usize::MAX);
    let clock = ManualClock::new(1);
    let mut store = f.create(full_config(mp, &clock).with_memory_pool(pool.clone()));
    let mut t = store
        .open_table("rows", I64F64StrCodec, None)
        .expect("open");
    let keys: Vec<_> = (0..50).map(|i| key(i, mp)).collect();
    write_all(
        &mut t,
        &keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), Some(value(i))))
            .collect::<Vec<_>>(),
    );
    // A first snapshot settles what a backend buffers (typed-store's write-behind buffer is
    // written out and its bytes returned), so that the headroom below is what is left.
    let _ = snapshot_of(&store, "op", &[&t as &dyn CanonicalTable]);
    pool.set_headroom(64);
    let pool_dyn: Arc<dyn MemoryPool> = pool.clone();
    let mut container = sfcs_format::MemoryContainer::new();
    let err = write_canonical_snapshot("op", None, &[&t], &mut container, &pool_dyn)
        .expect_err("snapshot beyond the pool");
    assert!(matches!(err, Error::MemoryExhausted { .. }), "{err}");
    pool.set_headroom(usize::MAX / 2);
    let expected: Vec<_> = (0..50).map(|i| Some(value(i))).collect();
    assert_eq!(read_all(&mut t, &keys), expected);
    let _ = snapshot_of(&store, "op", &[&t as &dyn CanonicalTable]);
}
