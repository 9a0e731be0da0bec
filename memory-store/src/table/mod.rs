//! The in-memory keyed table, by concern: the handle operators hold in `handle.rs`; its
//! core (the entries) here; the bundle operations ([`KeyedTable`](state_api::KeyedTable)) in
//! `bundle.rs`; tombstones and the TTL sweep in `sweep.rs`; canonical export and restore
//! staging in `restore.rs`; the share of the store's native snapshot in `checkpoint.rs`.

mod bundle;
mod checkpoint;
mod handle;
mod restore;
mod sweep;

pub use handle::MemoryKeyedTable;

use std::sync::Arc;

use arrow_schema::SchemaRef;
use foldhash::fast::RandomState;
use keygroup::{KeyGroup, KeyGroupRange};
use state_api::{
    BundlePhase, BundlePrefetch, CacheLineAligned, Clock, FlatMap, MaxLoad, MemoryReservation,
    Result, StoreConfig, TableStats, TtlConfig, ValueCodec, canonical_schema, key_group_offset,
    ttl_now,
};

use state_api::InlineKey as Key;

/// One stored entry: the value and its TTL stamp. Its flags live in its slot's word
/// ([`LIVE`], the dirty epoch), so a 24-byte value's slot (hash, word, 24-byte key, entry)
/// is 64 bytes: one cache line in a [`CacheLineAligned`] map (80 bytes, two or three lines,
/// with the flags in the entry; W1 on memory-store gained ~7 %). A removed (or
/// expired-and-read) entry stays as a tombstone until the bundle commits or a sweep, so a
/// later write in the same bundle is still one dirty key.
#[derive(Debug, Clone)]
struct Entry<V> {
    value: V,
    last_access: i64,
}

/// The slot word's bit saying the entry is live (clear: a tombstone).
const LIVE: u32 = 1 << 31;

/// The slot word's bits holding the bundle epoch that last dirtied the entry (0: none since
/// the epochs last started over).
const EPOCH_BITS: u32 = LIVE - 1;

/// Whether an entry whose slot word is `word` is live.
fn is_live(word: u32) -> bool {
    word & LIVE != 0
}

/// One key group's entries: a [`FlatMap`] (keys inline up to 22 bytes, one hash per
/// operation, slots prefetchable, each on its own cache line). All groups of a table share
/// one hasher, so a key's hash does not depend on the group.
type Group<V> = FlatMap<Entry<V>, CacheLineAligned>;

/// Rows staged by [`CanonicalTable::stage_restore`] or a native restore.
#[derive(Debug)]
struct Staged<V> {
    groups: Vec<Group<V>>,
    reservation: MemoryReservation,
}

/// The state of a [`MemoryKeyedTable`]: one hash map per key group of decoded entries with
/// their tombstones, the bundle phase and the counters (the handle's docs describe the
/// behaviour).
#[derive(Debug)]
pub(crate) struct KeyedCore<C: ValueCodec> {
    name: String,
    codec: C,
    ttl: Option<TtlConfig>,
    max_parallelism: keygroup::MaxParallelism,
    schema: SchemaRef,
    key_groups: KeyGroupRange,
    clock: Arc<dyn Clock>,
    hasher: RandomState,
    groups: Vec<Group<C::Value>>,
    /// The open bundle's named keys in order, `(group index, hash)`, for the gets to
    /// prefetch their slots ahead.
    ahead: BundlePrefetch<(usize, u64)>,
    tombstones: Vec<usize>,
    /// Groups with tombstones, each listed once (`listed[index]` says whether it is).
    tombstone_groups: Vec<usize>,
    listed: Vec<bool>,
    reservation: MemoryReservation,
    /// Whether the pool has a capacity (an in-place update then keeps a copy to restore).
    bounded_pool: bool,
    bundle: BundlePhase,
    /// The open (or next) bundle's epoch, `1..=EPOCH_BITS`.
    epoch: u32,
    dirty_in_bundle: u64,
    sweep_cursor: usize,
    staged: Option<Staged<C::Value>>,
    stats: TableStats,
}

/// How full a group's map may get: at most half, so that a key is mostly at its home slot
/// and one prefetched slot serves its lookup (see [`MaxLoad`]: W1 / W4 +5-7 % for half
/// again the slots per entry).
const GROUP_LOAD: MaxLoad = MaxLoad::Half;

/// Bytes charged for an entry with a `key_len`-byte key and `heap` value heap bytes: the
/// key's heap bytes (0 when inline), three slots of the group's map
/// ([`FlatMap::entry_bytes`] at [`GROUP_LOAD`], its mean cost per entry) and the value's
/// heap bytes.
fn entry_size<V>(key_len: usize, heap: usize) -> usize {
    Key::heap_bytes(key_len) + Group::<V>::entry_bytes(GROUP_LOAD) + heap
}

impl<C: ValueCodec> KeyedCore<C> {
    /// An empty table named `name` in a store with `config`.
    pub(crate) fn new(name: &str, codec: C, ttl: Option<TtlConfig>, config: &StoreConfig) -> Self {
        let key_groups = config.key_groups();
        let schema = canonical_schema(&codec.fields());
        let hasher = RandomState::default();
        Self {
            name: name.to_owned(),
            codec,
            ttl,
            max_parallelism: config.max_parallelism(),
            schema,
            key_groups,
            clock: Arc::clone(config.clock()),
            groups: empty_groups(&hasher, key_groups.len()),
            hasher,
            ahead: BundlePrefetch::default(),
            tombstones: vec![0; key_groups.len()],
            tombstone_groups: Vec::new(),
            listed: vec![false; key_groups.len()],
            reservation: MemoryReservation::new(Arc::clone(config.memory_pool())),
            bounded_pool: config.memory_pool().capacity().is_some(),
            bundle: BundlePhase::default(),
            epoch: 1,
            dirty_in_bundle: 0,
            sweep_cursor: 0,
            staged: None,
            stats: TableStats::default(),
        }
    }

    /// Live entries (expired entries not yet cleaned up included).
    pub(crate) fn len(&self) -> usize {
        self.groups.iter().map(FlatMap::len).sum::<usize>() - self.tombstones.iter().sum::<usize>()
    }

    /// Whether the table holds no live entry.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes this table currently holds from the memory pool.
    pub(crate) fn reserved_bytes(&self) -> usize {
        self.reservation.size()
    }

    fn check_bundle(&self, operation: &'static str, requires_open: bool) -> Result<()> {
        if requires_open {
            self.bundle.require_open(operation)
        } else {
            self.bundle.require_closed(operation)
        }
    }

    fn group_index(&self, key_group: KeyGroup) -> Result<usize> {
        key_group_offset(self.key_groups, key_group)
    }

    fn now(&self) -> i64 {
        ttl_now(self.ttl.as_ref(), &*self.clock)
    }

    /// Counts one access of the bundle's named keys and prefetches the slot of the key
    /// `state_api::PREFETCH_AHEAD` named keys further (gets, updates and upserts in the
    /// order the keys were named find their slots in cache); for a codec whose values keep
    /// data on the heap, also that data of the key whose slot was prefetched
    /// `state_api::PREFETCH_STAGE` accesses ago.
    #[inline]
    fn prefetch_next(&mut self) {
        let (ahead, due) = self.ahead.advance_staged(C::PREFETCH_HEAP);
        if let Some((index, hash)) = ahead
            && let Some(group) = self.groups.get(index)
        {
            group.prefetch(hash);
        }
        if let Some((index, hash)) = due
            && let Some(entry) = self
                .groups
                .get(index)
                .and_then(|g| g.get_by_hash_for_hint(hash))
        {
            self.codec.prefetch_heap(&entry.value);
        }
    }
}

/// `count` empty groups sharing `hasher`.
fn empty_groups<V>(hasher: &RandomState, count: usize) -> Vec<Group<V>> {
    (0..count)
        .map(|_| FlatMap::with_hasher(hasher.clone()).with_max_load(GROUP_LOAD))
        .collect()
}

/// Marks the entry whose slot word is `word` dirty in bundle `epoch`, counting it once per
/// bundle.
fn mark_dirty(word: &mut u32, epoch: u32, dirty: &mut u64) {
    if *word & EPOCH_BITS != epoch {
        *word = (*word & LIVE) | epoch;
        *dirty += 1;
    }
}

impl<C: ValueCodec> KeyedCore<C> {
    /// Moves to the next bundle's epoch; after `EPOCH_BITS` bundles the epochs start over
    /// at 1 and every entry's is cleared first (an entry dirtied exactly 2^31 - 1 bundles
    /// ago must not look dirty in the new bundle).
    fn next_epoch(&mut self) {
        if self.epoch < EPOCH_BITS {
            self.epoch += 1;
            return;
        }
        for group in &mut self.groups {
            for word in group.words_mut() {
                *word &= LIVE;
            }
        }
        self.epoch = 1;
    }
}

#[cfg(test)]
mod tests {
    use keygroup::MaxParallelism;
    use state_api::{BoundedMemoryPool, Error, I64Codec, KeyedTable, ManualClock, MemoryPool};

    use super::*;

    fn table(pool: Arc<dyn MemoryPool>) -> KeyedCore<I64Codec> {
        let mp = MaxParallelism::new(8).unwrap();
        let config = StoreConfig::try_new(mp, mp.key_groups())
            .unwrap()
            .with_memory_pool(pool)
            .with_clock(Arc::new(ManualClock::new(0)));
        KeyedCore::new("t", I64Codec, None, &config)
    }

    fn kg(v: i32) -> KeyGroup {
        KeyGroup::new(v).unwrap()
    }

    /// The epochs start over after `EPOCH_BITS` bundles: no entry dirtied before looks
    /// dirty in a later bundle, tombstones stay tombstones, and every dirty key still
    /// counts once per bundle.
    #[test]
    fn epochs_start_over_without_losing_a_dirty_key_or_a_tombstone() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(1 << 20));
        let mut t = table(pool);
        t.begin_bundle(&[]).unwrap();
        for i in 0..4_u8 {
            t.put(kg(0), &[i], 1).unwrap();
        }
        t.remove(kg(0), &[3]).unwrap();
        t.commit_bundle().unwrap(); // epoch 1 done: keys 0..3 carry epoch 1
        assert_eq!(t.stats().written_keys, 4);
        t.epoch = EPOCH_BITS;
        t.begin_bundle(&[]).unwrap();
        t.put(kg(0), &[0], 2).unwrap();
        t.commit_bundle().unwrap();
        assert_eq!(t.epoch, 1);
        assert!(
            t.groups[0]
                .iter_with_word()
                .all(|(_, w, _)| w & EPOCH_BITS == 0)
        );
        assert_eq!(t.stats().written_keys, 5);
        // Epoch 1 again: key 1 (dirtied in the first epoch 1) and key 0 count once each.
        t.begin_bundle(&[]).unwrap();
        t.put(kg(0), &[1], 3).unwrap();
        t.put(kg(0), &[1], 4).unwrap();
        t.put(kg(0), &[0], 5).unwrap();
        t.commit_bundle().unwrap();
        assert_eq!(t.stats().written_keys, 7);
        t.begin_bundle(&[]).unwrap();
        assert_eq!(t.get(kg(0), &[3]).unwrap(), None);
        assert_eq!(t.get(kg(0), &[1]).unwrap(), Some(&4));
        t.commit_bundle().unwrap();
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn tombstones_are_purged_once_a_quarter_of_the_group() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(1 << 20));
        let mut t = table(Arc::clone(&pool));
        t.begin_bundle(&[]).unwrap();
        for i in 0..8_u8 {
            t.put(kg(0), &[i], i64::from(i)).unwrap();
        }
        t.commit_bundle().unwrap();
        let full = pool.used();
        t.begin_bundle(&[]).unwrap();
        t.remove(kg(0), &[0]).unwrap();
        t.commit_bundle().unwrap();
        // 1 of 8 is below a quarter: kept as a tombstone, still reserved.
        assert_eq!(pool.used(), full);
        assert_eq!(t.len(), 7);
        t.begin_bundle(&[]).unwrap();
        t.remove(kg(0), &[1]).unwrap();
        t.commit_bundle().unwrap();
        assert_eq!(t.groups[0].len(), 6);
        assert!(pool.used() < full);
        assert_eq!(t.tombstones[0], 0);
        assert!(t.tombstone_groups.is_empty());
    }

    #[test]
    fn a_hot_key_put_and_removed_again_lists_its_group_once() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(1 << 20));
        let mut t = table(Arc::clone(&pool));
        t.begin_bundle(&[]).unwrap();
        for i in 0..64_u8 {
            t.put(kg(0), &[i], 1).unwrap(); // a large group: one tombstone is never purged
        }
        t.commit_bundle().unwrap();
        for round in 0..100 {
            // Revived and buried again in every bundle: the group must stay listed once.
            t.begin_bundle(&[]).unwrap();
            t.put(kg(0), b"hot", round).unwrap();
            t.remove(kg(0), b"hot").unwrap();
            t.commit_bundle().unwrap();
            assert_eq!(t.tombstone_groups, [0], "round {round}");
        }
        assert_eq!(t.sweep_expired(1_000).unwrap().removed, 1);
        assert!(t.tombstone_groups.is_empty());
        t.begin_bundle(&[]).unwrap();
        t.remove(kg(0), &[0]).unwrap();
        t.commit_bundle().unwrap();
        assert_eq!(t.tombstone_groups, [0], "listed again after the sweep");
    }

    #[test]
    fn sweep_purges_tombstones_and_respects_the_limit() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(1 << 20));
        let mut t = table(Arc::clone(&pool));
        t.begin_bundle(&[]).unwrap();
        for i in 0..8_u8 {
            t.put(kg(3), &[i], 1).unwrap();
        }
        t.commit_bundle().unwrap();
        t.begin_bundle(&[]).unwrap();
        t.remove(kg(3), &[0]).unwrap();
        t.commit_bundle().unwrap();
        let mut removed = 0;
        while {
            let step = t.sweep_expired(5).unwrap();
            assert!(step.removed <= 5);
            removed += step.removed;
            !step.wrapped
        } {}
        assert_eq!(removed, 1);
        assert_eq!(t.groups[3].len(), 7);
        let pass: Vec<_> = std::iter::repeat_with(|| t.sweep_expired(5).unwrap())
            .take_while(|s| !s.wrapped)
            .collect();
        assert!(pass.iter().all(|s| s.removed == 0), "{pass:?}");
    }

    #[test]
    fn sweep_removes_expired_entries_and_releases_memory() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(1 << 20));
        let clock = ManualClock::new(1_000);
        let mp = MaxParallelism::new(8).unwrap();
        let config = StoreConfig::try_new(mp, mp.key_groups())
            .unwrap()
            .with_memory_pool(Arc::clone(&pool))
            .with_clock(Arc::new(clock.clone()));
        let ttl = TtlConfig::new(std::time::Duration::from_millis(10));
        let mut t = KeyedCore::new("t", I64Codec, Some(ttl), &config);
        t.begin_bundle(&[]).unwrap();
        for i in 0..40_u8 {
            t.put(kg(i32::from(i % 8)), &[i], 1).unwrap();
        }
        t.commit_bundle().unwrap();
        clock.set(1_005);
        t.begin_bundle(&[]).unwrap();
        for i in 0..8_u8 {
            t.put(kg(i32::from(i % 8)), &[i], 2).unwrap(); // refreshed: alive until 1015
        }
        t.commit_bundle().unwrap();
        let full = pool.used();
        clock.set(1_010);
        let mut total = 0;
        loop {
            let step = t.sweep_expired(3).unwrap();
            assert!(step.removed <= 3);
            total += step.removed;
            if step.wrapped {
                break;
            }
        }
        assert_eq!(total, 32);
        assert_eq!(t.len(), 8);
        assert!(pool.used() < full);
        clock.set(1_015);
        let step = t.sweep_expired(100).unwrap();
        assert_eq!((step.removed, step.scanned, step.wrapped), (8, 8, true));
        assert_eq!(pool.used(), 0);
        assert!(t.is_empty());
    }

    #[test]
    fn failed_growth_on_overwrite_keeps_old_value() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(1 << 20));
        let mp = MaxParallelism::new(8).unwrap();
        let config = StoreConfig::try_new(mp, mp.key_groups())
            .unwrap()
            .with_memory_pool(Arc::clone(&pool));
        let mut t = KeyedCore::new("s", state_api::I64F64StrCodec, None, &config);
        t.begin_bundle(&[]).unwrap();
        t.put(kg(1), b"k", (1, 1.0, None)).unwrap();
        let big = "x".repeat(2 << 20);
        let err = t.put(kg(1), b"k", (2, 2.0, Some(big))).unwrap_err();
        assert!(matches!(err, Error::MemoryExhausted { .. }), "{err}");
        assert_eq!(t.get(kg(1), b"k").unwrap(), Some(&(1, 1.0, None)));
        t.commit_bundle().unwrap();
    }
}
