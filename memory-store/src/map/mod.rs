//! The in-memory map table: per key group, a [`PrefixMap`] of entries (a hash index of the
//! prefixes in use, each prefix's entries ordered by user key). The handle operators hold
//! is in `handle.rs`, the share of the store's native snapshot in `checkpoint.rs`; the core
//! (entries and bundle operations) here.

mod checkpoint;
mod handle;

pub use handle::MemoryMapTable;
// Full entry keys `prefix ‖ user key` (removed entries until commit), inline up to 54 bytes.
use state_api::InlineMapKey as MapKey;

use std::mem::size_of;
use std::ops::ControlFlow;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use keygroup::{KeyGroup, KeyGroupRange, MaxParallelism};
use state_api::{
    BundlePhase, CanonicalTable, Clock, MapHydration, MapTable, MemoryReservation, PrefetchStages,
    PrefixEntry, PrefixMap, Result, ScanDirection, StoreConfig, SweepProgress, TableStats,
    TtlConfig, TtlRead, UserKeyRange, ValueCodec, canonical_schema, change_in_place,
    decode_canonical_batch, encode_canonical_batch, key_group_offset, map_entry_key, ttl_exported,
    ttl_now, ttl_read, ttl_scan_visible,
};

/// Bookkeeping bytes charged per entry on top of key, entry and value heap bytes (the
/// slack of its prefix's vector or B-tree node). Each prefix in use is charged
/// [`PrefixMap::PREFIX_BYTES`] besides.
const ENTRY_OVERHEAD: usize = 32;

#[derive(Debug, Clone)]
struct Entry<V> {
    value: V,
    last_access: i64,
    /// The bundle that last dirtied this entry (32 bits: with the flag below the entry of an
    /// `i64` value is 24 bytes, not 32; the epochs start over after `u32::MAX` bundles).
    dirty_epoch: u32,
    /// `false`: removed in the open bundle, purged at commit.
    live: bool,
}

type Group<V> = PrefixMap<Entry<V>>;

/// Bytes charged per prefix in use (and per restored entry until its prefix is named).
const fn prefix_bytes<V>() -> usize {
    PrefixMap::<Entry<V>>::PREFIX_BYTES
}

/// An entry by its full key's two parts (`head ‖ tail`, see [`PrefixMap::for_each_ordered`]).
type SplitEntry<'a, V> = (&'a [u8], &'a [u8], &'a Entry<V>);

/// An entry removed in the open bundle: its group, the length of its prefix, its full key.
type Buried = (usize, usize, MapKey);

fn entry_size<V>(key_len: usize, heap: usize) -> usize {
    MapKey::heap_bytes(key_len)
        + size_of::<MapKey>()
        + size_of::<Entry<V>>()
        + ENTRY_OVERHEAD
        + heap
}

#[derive(Debug)]
struct Staged<V> {
    groups: Vec<Group<V>>,
    reservation: MemoryReservation,
}

/// The state of a [`MemoryMapTable`]: one [`PrefixMap`] per key group of decoded entries, the
/// bundle phase and the counters (the handle's docs describe the behaviour).
#[derive(Debug)]
pub(crate) struct MapCore<C: ValueCodec> {
    name: String,
    codec: C,
    ttl: Option<TtlConfig>,
    schema: SchemaRef,
    key_groups: KeyGroupRange,
    max_parallelism: MaxParallelism,
    clock: Arc<dyn Clock>,
    groups: Vec<Group<C::Value>>,
    buried: Vec<Buried>,
    reservation: MemoryReservation,
    bounded_pool: bool,
    bundle: BundlePhase,
    /// The open (or next) bundle's epoch, `1..=u32::MAX`.
    epoch: u32,
    dirty_in_bundle: u64,
    sweep_cursor: usize,
    staged: Option<Staged<C::Value>>,
    stats: TableStats,
    scratch: Vec<u8>,
    /// Prefetch hints in flight: (group, prefix hash).
    ahead: PrefetchStages<(usize, u64)>,
}

impl<C: ValueCodec> MapCore<C> {
    /// An empty map table named `name` in a store with `config`.
    pub(crate) fn new(name: &str, codec: C, ttl: Option<TtlConfig>, config: &StoreConfig) -> Self {
        let key_groups = config.key_groups();
        let schema = canonical_schema(&codec.fields());
        Self {
            name: name.to_owned(),
            codec,
            ttl,
            schema,
            key_groups,
            max_parallelism: config.max_parallelism(),
            clock: Arc::clone(config.clock()),
            groups: (0..key_groups.len()).map(|_| PrefixMap::new()).collect(),
            buried: Vec::new(),
            reservation: MemoryReservation::new(Arc::clone(config.memory_pool())),
            bounded_pool: config.memory_pool().capacity().is_some(),
            bundle: BundlePhase::default(),
            epoch: 1,
            dirty_in_bundle: 0,
            sweep_cursor: 0,
            staged: None,
            stats: TableStats::default(),
            scratch: Vec::new(),
            ahead: PrefetchStages::default(),
        }
    }

    /// Live entries (expired entries not yet cleaned up included).
    pub(crate) fn len(&self) -> usize {
        self.groups
            .iter()
            .map(|g| g.values().filter(|e| e.live).count())
            .sum()
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

    fn empty_groups(&self) -> Vec<Group<C::Value>> {
        (0..self.key_groups.len())
            .map(|_| PrefixMap::new())
            .collect()
    }

    /// The two-stage prefetch of [`MapTable::prefetch`]: the prefix's index slot now, its
    /// entries [`PREFETCH_STAGE`](state_api::PREFETCH_STAGE) hints later.
    pub(crate) fn prefetch(&mut self, key_group: KeyGroup, prefix: &[u8]) {
        let Ok(index) = self.group_index(key_group) else {
            return;
        };
        let Some(group) = self.groups.get(index) else {
            return;
        };
        let hash = group.prefetch_prefix(prefix);
        if let Some((index, hash)) = self.ahead.push((index, hash))
            && let Some(group) = self.groups.get(index)
        {
            group.prefetch_entries(hash);
        }
    }

    /// Moves to the next bundle's epoch; after `u32::MAX` bundles the epochs start over at 1
    /// and every entry's is cleared first (an entry dirtied exactly `u32::MAX - 1` bundles
    /// ago must not look dirty in the new bundle).
    fn next_epoch(&mut self) {
        if self.epoch < u32::MAX {
            self.epoch += 1;
            return;
        }
        self.restart_epochs();
    }

    /// Clears every entry's epoch and starts over at 1.
    fn restart_epochs(&mut self) {
        for group in &mut self.groups {
            group.retain(|_, _, entry| {
                entry.dirty_epoch = 0;
                true
            });
        }
        self.epoch = 1;
    }

    /// Purges expired entries and tombstones of group `index`; returns (removed, scanned).
    /// Removes at most `limit` of them.
    fn purge_group(&mut self, index: usize, now: Option<i64>, limit: u64) -> (u64, u64) {
        let Some(group) = self.groups.get_mut(index) else {
            return (0, 0);
        };
        let ttl = self.ttl;
        let codec = &self.codec;
        let scanned = group.len() as u64;
        let mut removed = 0;
        let mut bytes = 0;
        group.retain(|head, tail, entry| {
            if removed >= limit {
                return true;
            }
            let expired =
                now.is_some_and(|now| !ttl_exported(ttl.as_ref(), entry.last_access, now));
            if entry.live && !expired {
                return true;
            }
            removed += 1;
            bytes += entry_size::<C::Value>(head.len() + tail.len(), codec.heap_size(&entry.value));
            false
        });
        bytes += group.take_released();
        self.reservation.shrink(bytes);
        (removed, scanned)
    }
}

/// What an inserted entry charges: its size, and its prefix's when it opens one.
fn new_entry_charge<V>(key_len: usize, heap: usize, opens_prefix: bool) -> usize {
    entry_size::<V>(key_len, heap) + if opens_prefix { prefix_bytes::<V>() } else { 0 }
}

/// What a restored entry charges until its prefix is named: its size and a prefix (the
/// surplus is given back when entries join one prefix, [`PrefixMap::take_released`]).
fn restored_entry_charge<V>(key_len: usize, heap: usize) -> usize {
    entry_size::<V>(key_len, heap) + prefix_bytes::<V>()
}

/// The record of an entry removed in the bundle (purged at commit).
fn bury(scratch: &mut Vec<u8>, index: usize, prefix: &[u8], user_key: &[u8]) -> Buried {
    (
        index,
        prefix.len(),
        MapKey::from(map_entry_key(scratch, prefix, user_key)),
    )
}

fn mark_dirty<V>(entry: &mut Entry<V>, epoch: u32, dirty: &mut u64) {
    if entry.dirty_epoch != epoch {
        entry.dirty_epoch = epoch;
        *dirty += 1;
    }
}

/// Replaces `entry`'s value with `value` (a put over a stored entry, live or not), reserving
/// the growth of its heap bytes first; refused, nothing changes.
fn overwrite<C: ValueCodec>(
    codec: &C,
    reservation: &mut MemoryReservation,
    entry: &mut Entry<C::Value>,
    value: C::Value,
) -> Result<()> {
    reservation.try_replace(codec.heap_size(&entry.value), codec.heap_size(&value))?;
    entry.live = true;
    entry.value = value;
    Ok(())
}

impl<C: ValueCodec> MapTable for MapCore<C> {
    type Codec = C;

    fn name(&self) -> &str {
        &self.name
    }

    fn key_groups(&self) -> KeyGroupRange {
        self.key_groups
    }

    fn begin_bundle(&mut self, hydrate: MapHydration<'_>) -> Result<()> {
        self.bundle.check_begin("begin_bundle")?;
        for (key_group, _) in hydrate.prefixes {
            self.group_index(*key_group)?;
        }
        for (key_group, _, _) in hydrate.entries {
            self.group_index(*key_group)?;
        }
        self.bundle.begin("begin_bundle")?;
        self.dirty_in_bundle = 0;
        self.ahead.clear();
        Ok(())
    }

    fn get(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
    ) -> Result<Option<&C::Value>> {
        self.check_bundle("get", true)?;
        let index = self.group_index(key_group)?;
        let now = self.now();
        let Self {
            groups,
            ttl,
            epoch,
            dirty_in_bundle,
            buried,
            scratch,
            ..
        } = self;
        let Some(entry) = groups
            .get_mut(index)
            .and_then(|g| g.get_mut(prefix, user_key))
        else {
            return Ok(None);
        };
        if !entry.live {
            return Ok(None);
        }
        let read = ttl_read(ttl.as_ref(), entry.last_access, now);
        if read.clears() {
            entry.live = false;
            buried.push(bury(scratch, index, prefix, user_key));
            mark_dirty(entry, *epoch, dirty_in_bundle);
        } else if read == TtlRead::LiveRefresh {
            entry.last_access = now;
            mark_dirty(entry, *epoch, dirty_in_bundle);
        }
        if !read.returns_value() {
            return Ok(None);
        }
        Ok(Some(&entry.value))
    }

    fn put(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
        value: C::Value,
    ) -> Result<()> {
        self.check_bundle("put", true)?;
        let index = self.group_index(key_group)?;
        let now = self.now();
        let new_heap = self.codec.heap_size(&value);
        let Self {
            groups,
            codec,
            epoch,
            dirty_in_bundle,
            reservation,
            ..
        } = self;
        let Some(group) = groups.get_mut(index) else {
            return Ok(());
        };
        // One search for both cases.
        let key_len = prefix.len() + user_key.len();
        match group.entry(prefix, user_key) {
            PrefixEntry::Occupied(entry) => {
                overwrite(codec, reservation, entry, value)?;
                entry.last_access = now;
                mark_dirty(entry, *epoch, dirty_in_bundle);
            }
            PrefixEntry::Vacant(vacant) => {
                reservation.try_grow(new_entry_charge::<C::Value>(
                    key_len,
                    new_heap,
                    vacant.opens_prefix(),
                ))?;
                vacant.insert(Entry {
                    value,
                    last_access: now,
                    live: true,
                    dirty_epoch: *epoch,
                });
                *dirty_in_bundle += 1;
            }
        }
        Ok(())
    }

    fn update<R>(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
        f: impl FnOnce(&mut C::Value) -> R,
    ) -> Result<Option<R>> {
        self.check_bundle("update", true)?;
        let index = self.group_index(key_group)?;
        let now = self.now();
        let Self {
            groups,
            codec,
            ttl,
            epoch,
            dirty_in_bundle,
            reservation,
            bounded_pool,
            ..
        } = self;
        let Some(entry) = groups
            .get_mut(index)
            .and_then(|g| g.get_mut(prefix, user_key))
        else {
            return Ok(None);
        };
        if !entry.live || !ttl_scan_visible(ttl.as_ref(), entry.last_access, now) {
            return Ok(None);
        }
        let out = change_in_place(codec, *bounded_pool, &mut entry.value, f)
            .charge(reservation, &mut entry.value)?;
        entry.last_access = now;
        mark_dirty(entry, *epoch, dirty_in_bundle);
        Ok(Some(out))
    }

    /// One search: the entry found is updated in place (as `update`) or overwritten (a
    /// removed or invisible one, as `put`), or `insert()` goes where the search ended.
    fn upsert(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
        insert: impl FnOnce() -> C::Value,
        f: impl FnOnce(&mut C::Value),
    ) -> Result<bool> {
        self.check_bundle("upsert", true)?;
        let index = self.group_index(key_group)?;
        let now = self.now();
        let Self {
            groups,
            codec,
            ttl,
            epoch,
            dirty_in_bundle,
            reservation,
            bounded_pool,
            ..
        } = self;
        let Some(group) = groups.get_mut(index) else {
            return Ok(false);
        };
        let key_len = prefix.len() + user_key.len();
        let updated = match group.entry(prefix, user_key) {
            PrefixEntry::Occupied(entry) => {
                let visible = entry.live && ttl_scan_visible(ttl.as_ref(), entry.last_access, now);
                if visible {
                    change_in_place(codec, *bounded_pool, &mut entry.value, f)
                        .charge(reservation, &mut entry.value)?;
                } else {
                    overwrite(codec, reservation, entry, insert())?;
                }
                entry.last_access = now;
                mark_dirty(entry, *epoch, dirty_in_bundle);
                visible
            }
            PrefixEntry::Vacant(vacant) => {
                let value = insert();
                reservation.try_grow(new_entry_charge::<C::Value>(
                    key_len,
                    codec.heap_size(&value),
                    vacant.opens_prefix(),
                ))?;
                vacant.insert(Entry {
                    value,
                    last_access: now,
                    live: true,
                    dirty_epoch: *epoch,
                });
                *dirty_in_bundle += 1;
                false
            }
        };
        Ok(updated)
    }

    fn remove(&mut self, key_group: KeyGroup, prefix: &[u8], user_key: &[u8]) -> Result<()> {
        self.check_bundle("remove", true)?;
        let index = self.group_index(key_group)?;
        let Self {
            groups,
            epoch,
            dirty_in_bundle,
            buried,
            scratch,
            ..
        } = self;
        if let Some(entry) = groups
            .get_mut(index)
            .and_then(|g| g.get_mut(prefix, user_key))
            && entry.live
        {
            entry.live = false;
            buried.push(bury(scratch, index, prefix, user_key));
            mark_dirty(entry, *epoch, dirty_in_bundle);
        }
        Ok(())
    }

    fn remove_range(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        range: UserKeyRange<'_>,
    ) -> Result<u64> {
        self.check_bundle("remove_range", true)?;
        let index = self.group_index(key_group)?;
        if range.is_empty() {
            return Ok(0);
        }
        let now = self.now();
        let Self {
            groups,
            ttl,
            epoch,
            dirty_in_bundle,
            buried,
            scratch,
            ..
        } = self;
        let Some(group) = groups.get_mut(index) else {
            return Ok(0);
        };
        let mut removed = 0;
        for (user_key, entry) in group.range_mut(prefix, (range.start(), range.end())) {
            if !entry.live {
                continue;
            }
            if ttl_scan_visible(ttl.as_ref(), entry.last_access, now) {
                removed += 1;
            }
            entry.live = false;
            buried.push(bury(scratch, index, prefix, user_key));
            mark_dirty(entry, *epoch, dirty_in_bundle);
        }
        Ok(removed)
    }

    fn scan<F>(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        range: UserKeyRange<'_>,
        direction: ScanDirection,
        visit: &mut F,
    ) -> Result<()>
    where
        F: FnMut(&[u8], &C::Value) -> ControlFlow<()> + ?Sized,
    {
        self.check_bundle("scan", true)?;
        let index = self.group_index(key_group)?;
        if range.is_empty() {
            return Ok(());
        }
        let now = self.now();
        let ttl = self.ttl;
        let Some(group) = self.groups.get(index) else {
            return Ok(());
        };
        let mut step = |user_key: &[u8], entry: &Entry<C::Value>| {
            if !entry.live
                || (ttl.is_some() && !ttl_scan_visible(ttl.as_ref(), entry.last_access, now))
            {
                return ControlFlow::Continue(());
            }
            visit(user_key, &entry.value)
        };
        let entries = group.range(prefix, (range.start(), range.end()));
        let _ = match direction {
            ScanDirection::Forward => entries.into_iter().try_for_each(|(k, e)| step(k, e)),
            ScanDirection::Reverse => entries.rev().try_for_each(|(k, e)| step(k, e)),
        };
        Ok(())
    }

    fn commit_bundle(&mut self) -> Result<()> {
        self.bundle.require_open("commit_bundle")?;
        let mut bytes = 0;
        for (index, split, key) in std::mem::take(&mut self.buried) {
            let Some(group) = self.groups.get_mut(index) else {
                continue;
            };
            let (prefix, user_key) = key.as_bytes().split_at_checked(split).unwrap_or_default();
            if group.get_mut(prefix, user_key).is_some_and(|e| !e.live)
                && let Some(entry) = group.remove(prefix, user_key)
            {
                bytes += entry_size::<C::Value>(key.len(), self.codec.heap_size(&entry.value));
            }
        }
        // Prefixes emptied, restored entries that joined a prefix.
        bytes += self
            .groups
            .iter_mut()
            .map(PrefixMap::take_released)
            .sum::<usize>();
        self.reservation.shrink(bytes);
        self.stats.written_keys += self.dirty_in_bundle;
        self.stats.bundles += 1;
        self.dirty_in_bundle = 0;
        self.next_epoch();
        self.bundle.end("commit_bundle")
    }

    /// Sweeps whole key groups from a cursor: the work of one call is bounded by
    /// `max_entries` plus the size of one key group; at most `max_entries` are removed.
    fn sweep_expired(&mut self, max_entries: usize) -> Result<SweepProgress> {
        self.check_bundle("sweep_expired", false)?;
        let mut progress = SweepProgress::default();
        let groups = self.groups.len();
        if groups == 0 || self.ttl.is_none() {
            return Ok(SweepProgress::nothing_to_sweep());
        }
        if max_entries == 0 {
            return Ok(progress);
        }
        let now = Some(self.clock.now_millis());
        let limit = max_entries as u64;
        for _ in 0..groups {
            let index = self.sweep_cursor % groups;
            let (removed, scanned) = self.purge_group(index, now, limit - progress.removed);
            progress.removed += removed;
            progress.scanned += scanned;
            if progress.removed >= limit {
                break; // resume in this group next time
            }
            self.sweep_cursor = (index + 1) % groups;
            if self.sweep_cursor == 0 {
                progress.wrapped = true;
                break;
            }
            if progress.scanned >= max_entries as u64 {
                break;
            }
        }
        Ok(progress)
    }

    fn stats(&self) -> TableStats {
        self.stats
    }
}

impl<C: ValueCodec> CanonicalTable for MapCore<C> {
    fn table_name(&self) -> &str {
        &self.name
    }

    fn table_key_groups(&self) -> KeyGroupRange {
        self.key_groups
    }

    fn canonical_schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn export_key_group(&self, key_group: KeyGroup) -> Result<Option<RecordBatch>> {
        self.check_bundle("export_key_group", false)?;
        let index = self.group_index(key_group)?;
        let Some(group) = self.groups.get(index) else {
            return Ok(None);
        };
        let now = self.ttl.map(|_| self.clock.now_millis());
        let mut scratch = MemoryReservation::new(Arc::clone(self.reservation.pool()));
        scratch.try_grow(group.len() * size_of::<SplitEntry<'_, C::Value>>())?;
        // In full-key order; the full keys are put together in one buffer.
        let mut exported: Vec<SplitEntry<'_, C::Value>> = Vec::new();
        let mut key_bytes = 0;
        group.for_each_ordered(|head, tail, e| {
            if e.live && now.is_none_or(|now| ttl_exported(self.ttl.as_ref(), e.last_access, now)) {
                key_bytes += head.len() + tail.len();
                exported.push((head, tail, e));
            }
        });
        if exported.is_empty() {
            return Ok(None);
        }
        scratch.try_grow(key_bytes + exported.len() * size_of::<(&[u8], i64, &C::Value)>())?;
        let mut keys = Vec::with_capacity(key_bytes);
        for (head, tail, _) in &exported {
            keys.extend_from_slice(head);
            keys.extend_from_slice(tail);
        }
        let mut at = 0;
        let rows: Vec<(&[u8], i64, &C::Value)> = exported
            .iter()
            .map(|(head, tail, e)| {
                let len = head.len() + tail.len();
                let key = keys.get(at..at + len).unwrap_or_default();
                at += len;
                (key, e.last_access, &e.value)
            })
            .collect();
        encode_canonical_batch(&self.schema, &self.codec, &rows).map(Some)
    }

    fn stage_restore(&mut self, batches: Vec<(KeyGroup, RecordBatch)>) -> Result<()> {
        self.check_bundle("restore", false)?;
        self.staged = None;
        let mut staged = Staged {
            groups: self.empty_groups(),
            reservation: MemoryReservation::new(Arc::clone(self.reservation.pool())),
        };
        for (key_group, batch) in &batches {
            let index = self.group_index(*key_group)?;
            let decoded = decode_canonical_batch(&self.codec, batch)?;
            let Some(group) = staged.groups.get_mut(index) else {
                continue;
            };
            for ((key, ts), value) in decoded
                .keys
                .iter()
                .zip(decoded.last_access.iter())
                .zip(decoded.values)
            {
                let key = key.unwrap_or_default();
                staged
                    .reservation
                    .try_grow(restored_entry_charge::<C::Value>(
                        key.len(),
                        self.codec.heap_size(&value),
                    ))?;
                group.insert_unsplit(
                    key.into(),
                    Entry {
                        value,
                        last_access: *ts,
                        live: true,
                        dirty_epoch: 0,
                    },
                );
            }
        }
        self.staged = Some(staged);
        Ok(())
    }

    fn commit_restore(&mut self) {
        let staged = self.staged.take().unwrap_or_else(|| Staged {
            groups: self.empty_groups(),
            reservation: MemoryReservation::new(Arc::clone(self.reservation.pool())),
        });
        self.groups = staged.groups;
        self.reservation = staged.reservation;
        self.buried.clear();
        self.sweep_cursor = 0;
    }

    fn abort_restore(&mut self) {
        self.staged = None;
    }

    fn table_max_parallelism(&self) -> MaxParallelism {
        self.max_parallelism
    }

    fn table_has_ttl(&self) -> bool {
        self.ttl.is_some()
    }
}

#[cfg(test)]
mod tests {
    use keygroup::MaxParallelism;
    use std::ops::Bound;

    use state_api::{BoundedMemoryPool, I64Codec, ManualClock, MemoryPool};

    use super::*;

    fn table(pool: Arc<dyn MemoryPool>) -> MapCore<I64Codec> {
        let mp = MaxParallelism::new(8).unwrap();
        let config = StoreConfig::try_new(mp, mp.key_groups())
            .unwrap()
            .with_memory_pool(pool)
            .with_clock(Arc::new(ManualClock::new(0)));
        MapCore::new("m", I64Codec, None, &config)
    }

    /// The epochs start over after `u32::MAX` bundles: no entry dirtied before looks dirty
    /// in a later bundle, and every dirty entry still counts once per bundle.
    #[test]
    fn epochs_start_over_without_losing_a_dirty_entry() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(1 << 20));
        let mut t = table(pool);
        let kg = KeyGroup::new(0).unwrap();
        t.begin_bundle(MapHydration::none()).unwrap();
        for i in 0..3_u8 {
            t.put(kg, b"p", &[i], 1).unwrap();
        }
        t.commit_bundle().unwrap(); // epoch 1 done: entries 0..2 carry epoch 1
        assert_eq!(t.stats().written_keys, 3);
        t.epoch = u32::MAX;
        t.begin_bundle(MapHydration::none()).unwrap();
        t.put(kg, b"p", &[0], 2).unwrap();
        t.commit_bundle().unwrap();
        assert_eq!(t.epoch, 1);
        assert!(t.groups[0].values().all(|e| e.dirty_epoch == 0));
        assert_eq!(t.stats().written_keys, 4);
        // Epoch 1 again: entry 1 (dirtied in the first epoch 1) and entry 0 count once each.
        t.begin_bundle(MapHydration::none()).unwrap();
        t.put(kg, b"p", &[1], 3).unwrap();
        t.upsert(kg, b"p", &[1], || 0, |v| *v += 1).unwrap();
        t.put(kg, b"p", &[0], 5).unwrap();
        t.commit_bundle().unwrap();
        assert_eq!(t.stats().written_keys, 6);
        t.begin_bundle(MapHydration::none()).unwrap();
        assert_eq!(t.get(kg, b"p", &[1]).unwrap(), Some(&4));
        assert_eq!(t.get(kg, b"p", &[2]).unwrap(), Some(&1));
        t.commit_bundle().unwrap();
    }

    #[test]
    fn map_entry_of_an_i64_is_24_bytes() {
        assert_eq!(size_of::<Entry<i64>>(), 24);
    }

    #[test]
    fn scans_stop_at_their_bounds_in_both_directions() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(1 << 20));
        let mut t = table(pool);
        let kg = KeyGroup::new(1).unwrap();
        t.begin_bundle(MapHydration::none()).unwrap();
        for p in [&b"pa"[..], b"pb", b"pc"] {
            for u in 0..4_u8 {
                t.put(kg, p, &[u], i64::from(u)).unwrap();
            }
        }
        let collect = |t: &mut MapCore<I64Codec>, range, direction| {
            let mut out = Vec::new();
            t.scan(kg, b"pb", range, direction, &mut |k: &[u8], v: &i64| {
                out.push((k.to_vec(), *v));
                ControlFlow::Continue(())
            })
            .unwrap();
            out
        };
        let all: Vec<(Vec<u8>, i64)> = (0..4_u8).map(|u| (vec![u], i64::from(u))).collect();
        assert_eq!(
            collect(&mut t, UserKeyRange::all(), ScanDirection::Forward),
            all
        );
        let rev: Vec<_> = all.iter().rev().cloned().collect();
        assert_eq!(
            collect(&mut t, UserKeyRange::all(), ScanDirection::Reverse),
            rev
        );
        let mid = UserKeyRange::new(Bound::Excluded(&[0][..]), Bound::Included(&[2][..]));
        assert_eq!(
            collect(&mut t, mid, ScanDirection::Forward),
            all[1..3].to_vec()
        );
        let rev_mid: Vec<_> = all[1..3].iter().rev().cloned().collect();
        assert_eq!(collect(&mut t, mid, ScanDirection::Reverse), rev_mid);
        t.commit_bundle().unwrap();
    }

    #[test]
    fn restored_entries_join_their_prefixes_and_release_every_charge() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(1 << 20));
        let mut t = table(Arc::clone(&pool));
        let kg = KeyGroup::new(1).unwrap();
        t.begin_bundle(MapHydration::none()).unwrap();
        for p in [&b"pa"[..], b"pb"] {
            for u in 0..4_u8 {
                t.put(kg, p, &[u], i64::from(u)).unwrap();
            }
        }
        t.commit_bundle().unwrap();
        let batch = t.export_key_group(kg).unwrap().unwrap();
        let mut r = table(Arc::clone(&pool));
        r.stage_restore(vec![(kg, batch.clone())]).unwrap();
        r.commit_restore();
        drop(t);
        // Restored entries wait unsplit, each charged a prefix.
        let restored = pool.used();
        r.begin_bundle(MapHydration::none()).unwrap();
        assert_eq!(r.get(kg, b"pb", &[2]).unwrap(), Some(&2));
        let mut seen = Vec::new();
        r.scan(
            kg,
            b"pa",
            UserKeyRange::all(),
            ScanDirection::Reverse,
            &mut |k: &[u8], v: &i64| {
                seen.push((k.to_vec(), *v));
                ControlFlow::Continue(())
            },
        )
        .unwrap();
        assert_eq!(
            seen,
            (0..4_u8)
                .rev()
                .map(|u| (vec![u], i64::from(u)))
                .collect::<Vec<_>>()
        );
        r.commit_bundle().unwrap();
        // The get moved `pb`'s four entries into one prefix (three charges given back); the
        // scan read `pa`'s where they wait.
        assert_eq!(restored - pool.used(), 3 * prefix_bytes::<i64>());
        // The export is the same rows in the same order.
        assert_eq!(r.export_key_group(kg).unwrap().unwrap(), batch);
        r.begin_bundle(MapHydration::none()).unwrap();
        for p in [&b"pa"[..], b"pb"] {
            assert_eq!(r.remove_range(kg, p, UserKeyRange::all()).unwrap(), 4);
        }
        r.commit_bundle().unwrap();
        assert_eq!(pool.used(), 0);
    }

    #[test]
    fn prefetch_hints_change_nothing() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(1 << 20));
        let mut t = table(Arc::clone(&pool));
        let kg = KeyGroup::new(1).unwrap();
        // Outside a bundle, and before any entry exists.
        t.prefetch(kg, b"pa");
        t.begin_bundle(MapHydration::none()).unwrap();
        for i in 0..40_u8 {
            t.prefetch(kg, &[b'p', i % 3]);
            t.put(kg, &[b'p', i % 3], &[i], i64::from(i)).unwrap();
        }
        t.commit_bundle().unwrap();
        let used = pool.used();
        t.begin_bundle(MapHydration::none()).unwrap();
        // Both stages, known and unknown prefixes, a key group outside the table.
        for i in 0..3 * state_api::PREFETCH_STAGE {
            let i = u8::try_from(i).unwrap();
            t.prefetch(kg, &[b'p', i % 5]);
            t.prefetch(KeyGroup::new(100).unwrap(), b"p");
        }
        assert_eq!(pool.used(), used);
        for i in 0..40_u8 {
            assert_eq!(
                t.get(kg, &[b'p', i % 3], &[i]).unwrap(),
                Some(&i64::from(i))
            );
        }
        t.commit_bundle().unwrap();
    }

    #[test]
    fn removed_entries_are_purged_and_released_at_commit() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(1 << 20));
        let mut t = table(Arc::clone(&pool));
        let kg = KeyGroup::new(1).unwrap();
        t.begin_bundle(MapHydration::none()).unwrap();
        for i in 0..10_u8 {
            t.put(kg, b"p", &[i], i64::from(i)).unwrap();
        }
        t.commit_bundle().unwrap();
        let full = pool.used();
        t.begin_bundle(MapHydration::none()).unwrap();
        assert_eq!(t.remove_range(kg, b"p", UserKeyRange::all()).unwrap(), 10);
        t.commit_bundle().unwrap();
        assert!(t.is_empty());
        assert_eq!(pool.used(), 0, "was {full}");
    }
}
