//! The in-memory keyed table.

use std::mem::size_of;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use hashbrown::HashMap;
use hashbrown::hash_map::EntryRef;
use keygroup::{KeyGroup, KeyGroupRange};
use state_api::{
    BundlePhase, CanonicalTable, Clock, Error, KeyedTable, MemoryReservation, NativeSnapshot,
    Result, StoreConfig, SweepProgress, TableStats, TtlConfig, TtlRead, ValueCodec,
    canonical_schema, decode_canonical_batch, encode_canonical_batch, ttl_exported, ttl_read,
};

use state_api::InlineKey as Key;

/// Bookkeeping bytes charged per entry on top of key, entry and value heap bytes (hash-table
/// control bytes and slack).
const ENTRY_OVERHEAD: usize = 16;

/// One stored entry. A removed (or expired-and-read) entry stays as a tombstone until the
/// bundle commits or a sweep, so a later write in the same bundle is still one dirty key.
#[derive(Debug, Clone)]
struct Entry<V> {
    value: V,
    last_access: i64,
    live: bool,
    /// The bundle that last dirtied this entry.
    dirty_epoch: u64,
}

/// One key group's entries: hashbrown with foldhash, keys inline up to 22 bytes, looked up
/// by `&[u8]` with one hash per operation.
type Group<V> = HashMap<Key, Entry<V>, foldhash::fast::RandomState>;

/// Rows staged by [`CanonicalTable::stage_restore`] or a native restore.
#[derive(Debug)]
struct Staged<V> {
    groups: Vec<Group<V>>,
    reservation: MemoryReservation,
}

/// A keyed table that keeps decoded values in one hash map per key group.
///
/// - Everything is resident, so [`begin_bundle`](KeyedTable::begin_bundle) only validates
///   and opens the bundle: it issues no reads ([`TableStats::hydration_batches`] and
///   `point_hydrations` stay 0), and a get of a key not named in it is as fast as any other.
/// - Writes go to the maps in place; a per-entry bundle epoch makes each dirty key count
///   once in [`TableStats::written_keys`]. Removals leave tombstones that a commit purges
///   from a key group once they are a quarter of it (amortised O(1) per removal, no
///   allocation), and [`sweep_expired`](KeyedTable::sweep_expired) purges too.
/// - Memory: every entry reserves `key length + size_of::<Entry<V>>() + 16 +`
///   [`ValueCodec::heap_size`] from the store's pool; a write the pool refuses fails with
///   [`Error::MemoryExhausted`] and changes nothing. Restore stages the new content (reserved
///   in addition to the old) before replacing it.
/// - TTL: expiry on read (Flink's rule) plus an incremental sweep.
#[derive(Debug)]
pub struct MemoryKeyedTable<C: ValueCodec> {
    name: String,
    codec: C,
    ttl: Option<TtlConfig>,
    max_parallelism: keygroup::MaxParallelism,
    schema: SchemaRef,
    key_groups: KeyGroupRange,
    clock: Arc<dyn Clock>,
    groups: Vec<Group<C::Value>>,
    tombstones: Vec<usize>,
    /// Groups with tombstones, each listed once (`listed[index]` says whether it is).
    tombstone_groups: Vec<usize>,
    listed: Vec<bool>,
    reservation: MemoryReservation,
    bundle: BundlePhase,
    epoch: u64,
    dirty_in_bundle: u64,
    sweep_cursor: usize,
    staged: Option<Staged<C::Value>>,
    stats: TableStats,
}

fn entry_size<V>(key_len: usize, heap: usize) -> usize {
    Key::heap_bytes(key_len) + size_of::<Key>() + size_of::<Entry<V>>() + ENTRY_OVERHEAD + heap
}

impl<C: ValueCodec> MemoryKeyedTable<C> {
    /// An empty table named `name` in a store with `config` (normally opened through
    /// [`MemoryStore`](crate::MemoryStore)).
    pub fn new(name: &str, codec: C, ttl: Option<TtlConfig>, config: &StoreConfig) -> Self {
        let key_groups = config.key_groups();
        let schema = canonical_schema(&codec.fields());
        Self {
            name: name.to_owned(),
            codec,
            ttl,
            max_parallelism: config.max_parallelism(),
            schema,
            key_groups,
            clock: Arc::clone(config.clock()),
            groups: (0..key_groups.len()).map(|_| Group::default()).collect(),
            tombstones: vec![0; key_groups.len()],
            tombstone_groups: Vec::new(),
            listed: vec![false; key_groups.len()],
            reservation: MemoryReservation::new(Arc::clone(config.memory_pool())),
            bundle: BundlePhase::default(),
            epoch: 1,
            dirty_in_bundle: 0,
            sweep_cursor: 0,
            staged: None,
            stats: TableStats::default(),
        }
    }

    /// Live entries (expired entries not yet cleaned up included).
    pub fn len(&self) -> usize {
        self.groups.iter().map(HashMap::len).sum::<usize>() - self.tombstones.iter().sum::<usize>()
    }

    /// Whether the table holds no live entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes this table currently holds from the memory pool.
    pub fn reserved_bytes(&self) -> usize {
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
        if self.key_groups.contains(key_group) {
            usize::try_from(key_group.get() - self.key_groups.start()).map_err(|_| {
                Error::KeyGroupOutOfRange {
                    key_group: key_group.get(),
                    range: self.key_groups,
                }
            })
        } else {
            Err(Error::KeyGroupOutOfRange {
                key_group: key_group.get(),
                range: self.key_groups,
            })
        }
    }

    fn now(&self) -> i64 {
        if self.ttl.is_some() {
            self.clock.now_millis()
        } else {
            0
        }
    }

    /// Removes tombstones (and, when `now` is given, expired entries) from group `index`,
    /// at most `limit` entries; returns how many were removed and how many bytes they held.
    fn purge_group(&mut self, index: usize, now: Option<i64>, limit: usize) -> usize {
        let (Some(group), Some(tombstones)) =
            (self.groups.get_mut(index), self.tombstones.get_mut(index))
        else {
            return 0;
        };
        let ttl = self.ttl;
        let codec = &self.codec;
        let mut removed = 0;
        let mut bytes = 0;
        group.retain(|key, entry| {
            if removed >= limit {
                return true;
            }
            let expired =
                now.is_some_and(|now| !ttl_exported(ttl.as_ref(), entry.last_access, now));
            if entry.live && !expired {
                return true;
            }
            if !entry.live {
                *tombstones -= 1;
            }
            removed += 1;
            bytes += entry_size::<C::Value>(key.as_bytes().len(), codec.heap_size(&entry.value));
            false
        });
        self.reservation.shrink(bytes);
        removed
    }

    fn check_staging(&self) -> Result<()> {
        self.check_bundle("restore", false)
    }

    /// Builds fully reserved groups from `(group index, key, last_access, value)` rows.
    fn stage_rows(
        &self,
        rows: impl Iterator<Item = (usize, Box<[u8]>, i64, C::Value)>,
    ) -> Result<Staged<C::Value>> {
        let mut staged = Staged {
            groups: (0..self.key_groups.len())
                .map(|_| Group::default())
                .collect(),
            reservation: MemoryReservation::new(Arc::clone(self.reservation.pool())),
        };
        for (index, key, last_access, value) in rows {
            staged.reservation.try_grow(entry_size::<C::Value>(
                key.len(),
                self.codec.heap_size(&value),
            ))?;
            let Some(group) = staged.groups.get_mut(index) else {
                return Err(Error::KeyGroupOutOfRange {
                    key_group: self
                        .key_groups
                        .start()
                        .saturating_add(i32::try_from(index).unwrap_or(i32::MAX)),
                    range: self.key_groups,
                });
            };
            group.insert(
                Key::from(&*key),
                Entry {
                    value,
                    last_access,
                    live: true,
                    dirty_epoch: 0,
                },
            );
        }
        Ok(staged)
    }

    fn apply_staged(&mut self, staged: Option<Staged<C::Value>>) {
        let staged = staged.unwrap_or_else(|| Staged {
            groups: (0..self.key_groups.len())
                .map(|_| Group::default())
                .collect(),
            reservation: MemoryReservation::new(Arc::clone(self.reservation.pool())),
        });
        self.groups = staged.groups;
        self.reservation = staged.reservation;
        self.tombstones = vec![0; self.key_groups.len()];
        self.tombstone_groups.clear();
        self.listed = vec![false; self.key_groups.len()];
        self.sweep_cursor = 0;
    }
}

/// Marks `entry` dirty in bundle `epoch`, counting it once per bundle.
fn mark_dirty<V>(entry: &mut Entry<V>, epoch: u64, dirty: &mut u64) {
    if entry.dirty_epoch != epoch {
        entry.dirty_epoch = epoch;
        *dirty += 1;
    }
}

/// The tombstone bookkeeping of a table: counts per group and the groups to look at on
/// commit, each listed once.
struct Tombstones<'a> {
    counts: &'a mut [usize],
    groups: &'a mut Vec<usize>,
    listed: &'a mut [bool],
}

impl Tombstones<'_> {
    /// Turns a live entry into a tombstone of group `index`.
    fn bury<V>(&mut self, entry: &mut Entry<V>, index: usize) {
        entry.live = false;
        if let Some(count) = self.counts.get_mut(index) {
            *count += 1;
        }
        if let Some(listed) = self.listed.get_mut(index)
            && !*listed
        {
            *listed = true;
            self.groups.push(index);
        }
    }
}

impl<C: ValueCodec> KeyedTable for MemoryKeyedTable<C> {
    type Codec = C;

    fn name(&self) -> &str {
        &self.name
    }

    fn key_groups(&self) -> KeyGroupRange {
        self.key_groups
    }

    fn begin_bundle(&mut self, keys: &[(KeyGroup, &[u8])]) -> Result<()> {
        self.bundle.check_begin("begin_bundle")?;
        for (key_group, _) in keys {
            self.group_index(*key_group)?;
        }
        self.bundle.begin("begin_bundle")?;
        self.dirty_in_bundle = 0;
        Ok(())
    }

    fn get(&mut self, key_group: KeyGroup, key: &[u8]) -> Result<Option<&C::Value>> {
        self.check_bundle("get", true)?;
        let index = self.group_index(key_group)?;
        let now = self.now();
        let Self {
            groups,
            ttl,
            epoch,
            dirty_in_bundle,
            tombstones,
            tombstone_groups,
            listed,
            ..
        } = self;
        let Some(entry) = groups.get_mut(index).and_then(|g| g.get_mut(key)) else {
            return Ok(None);
        };
        if !entry.live {
            return Ok(None);
        }
        let read = ttl_read(ttl.as_ref(), entry.last_access, now);
        if read.clears() {
            Tombstones {
                counts: tombstones,
                groups: tombstone_groups,
                listed,
            }
            .bury(entry, index);
            mark_dirty(entry, *epoch, dirty_in_bundle);
        } else if read == TtlRead::LiveRefresh {
            entry.last_access = now;
            mark_dirty(entry, *epoch, dirty_in_bundle);
        }
        Ok(read.returns_value().then_some(&entry.value))
    }

    fn put(&mut self, key_group: KeyGroup, key: &[u8], value: C::Value) -> Result<()> {
        self.check_bundle("put", true)?;
        let index = self.group_index(key_group)?;
        let now = self.now();
        let new_heap = self.codec.heap_size(&value);
        let Self {
            groups,
            codec,
            epoch,
            dirty_in_bundle,
            tombstones,
            reservation,
            ..
        } = self;
        let Some(group) = groups.get_mut(index) else {
            return Ok(());
        };
        // One hash: the entry is found or the slot for it is kept for the insert.
        match group.entry_ref(key) {
            EntryRef::Occupied(mut occupied) => {
                let entry = occupied.get_mut();
                let old_heap = codec.heap_size(&entry.value);
                if new_heap > old_heap {
                    reservation.try_grow(new_heap - old_heap)?;
                } else {
                    reservation.shrink(old_heap - new_heap);
                }
                if !entry.live {
                    entry.live = true;
                    if let Some(count) = tombstones.get_mut(index) {
                        *count -= 1;
                    }
                }
                entry.value = value;
                entry.last_access = now;
                mark_dirty(entry, *epoch, dirty_in_bundle);
            }
            EntryRef::Vacant(vacant) => {
                reservation.try_grow(entry_size::<C::Value>(key.len(), new_heap))?;
                vacant.insert_with_key(
                    Key::from(key),
                    Entry {
                        value,
                        last_access: now,
                        live: true,
                        dirty_epoch: *epoch,
                    },
                );
                *dirty_in_bundle += 1;
            }
        }
        Ok(())
    }

    fn remove(&mut self, key_group: KeyGroup, key: &[u8]) -> Result<()> {
        self.check_bundle("remove", true)?;
        let index = self.group_index(key_group)?;
        let Self {
            groups,
            epoch,
            dirty_in_bundle,
            tombstones,
            tombstone_groups,
            listed,
            ..
        } = self;
        if let Some(entry) = groups.get_mut(index).and_then(|g| g.get_mut(key))
            && entry.live
        {
            Tombstones {
                counts: tombstones,
                groups: tombstone_groups,
                listed,
            }
            .bury(entry, index);
            mark_dirty(entry, *epoch, dirty_in_bundle);
        }
        Ok(())
    }

    fn commit_bundle(&mut self) -> Result<()> {
        self.bundle.require_open("commit_bundle")?;
        let candidates = std::mem::take(&mut self.tombstone_groups);
        for index in candidates {
            let (Some(&count), Some(len)) = (
                self.tombstones.get(index),
                self.groups.get(index).map(HashMap::len),
            ) else {
                continue;
            };
            if count > 0 && count * 4 >= len {
                self.purge_group(index, None, usize::MAX);
            }
            if self.tombstones.get(index).is_some_and(|&c| c > 0) {
                self.tombstone_groups.push(index);
            } else if let Some(listed) = self.listed.get_mut(index) {
                *listed = false;
            }
        }
        self.stats.written_keys += self.dirty_in_bundle;
        self.stats.bundles += 1;
        self.dirty_in_bundle = 0;
        self.epoch += 1;
        self.bundle.end("commit_bundle")
    }

    /// Sweeps whole key groups from a cursor: the work of one call is bounded by
    /// `max_entries` plus the size of one key group; at most `max_entries` are removed
    /// (tombstones of earlier removals count as removed). `wrapped` when the cursor passed
    /// the last key group.
    fn sweep_expired(&mut self, max_entries: usize) -> Result<SweepProgress> {
        self.check_bundle("sweep_expired", false)?;
        let mut progress = SweepProgress::default();
        let groups = self.groups.len();
        if groups == 0 {
            return Ok(SweepProgress::nothing_to_sweep());
        }
        if max_entries == 0 {
            return Ok(progress);
        }
        let now = self.ttl.map(|_| self.clock.now_millis());
        let limit = max_entries as u64;
        for _ in 0..groups {
            let index = self.sweep_cursor % groups;
            progress.scanned += self.groups.get(index).map_or(0, HashMap::len) as u64;
            let budget = usize::try_from(limit - progress.removed).unwrap_or(usize::MAX);
            progress.removed += self.purge_group(index, now, budget) as u64;
            if progress.removed >= limit {
                break; // resume in this group next time
            }
            self.sweep_cursor = (index + 1) % groups;
            if self.sweep_cursor == 0 {
                progress.wrapped = true;
                break;
            }
            if progress.scanned >= limit {
                break;
            }
        }
        let Self {
            tombstone_groups,
            tombstones,
            listed,
            ..
        } = self;
        tombstone_groups.retain(|&i| {
            let keep = tombstones.get(i).is_some_and(|&c| c > 0);
            if !keep && let Some(l) = listed.get_mut(i) {
                *l = false;
            }
            keep
        });
        Ok(progress)
    }

    fn stats(&self) -> TableStats {
        self.stats
    }
}

impl<C: ValueCodec> CanonicalTable for MemoryKeyedTable<C> {
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
        if group.is_empty() {
            return Ok(None);
        }
        let now = self.ttl.map(|_| self.clock.now_millis());
        let mut scratch = MemoryReservation::new(Arc::clone(self.reservation.pool()));
        scratch.try_grow(group.len() * size_of::<(&[u8], i64, &C::Value)>())?;
        let mut rows: Vec<(&[u8], i64, &C::Value)> = group
            .iter()
            .filter(|(_, e)| {
                e.live && now.is_none_or(|now| ttl_exported(self.ttl.as_ref(), e.last_access, now))
            })
            .map(|(k, e)| (k.as_bytes(), e.last_access, &e.value))
            .collect();
        if rows.is_empty() {
            return Ok(None);
        }
        rows.sort_unstable_by(|a, b| a.0.cmp(b.0));
        encode_canonical_batch(&self.schema, &self.codec, &rows).map(Some)
    }

    fn stage_restore(&mut self, batches: Vec<(KeyGroup, RecordBatch)>) -> Result<()> {
        self.check_staging()?;
        self.staged = None;
        let mut rows = Vec::new();
        for (key_group, batch) in &batches {
            let index = self.group_index(*key_group)?;
            let decoded = decode_canonical_batch(&self.codec, batch)?;
            for ((key, ts), value) in decoded
                .keys
                .iter()
                .zip(decoded.last_access.iter())
                .zip(decoded.values)
            {
                rows.push((
                    index,
                    Box::<[u8]>::from(key.unwrap_or_default()),
                    *ts,
                    value,
                ));
            }
        }
        self.staged = Some(self.stage_rows(rows.into_iter())?);
        Ok(())
    }

    fn commit_restore(&mut self) {
        let staged = self.staged.take();
        self.apply_staged(staged);
    }

    fn abort_restore(&mut self) {
        self.staged = None;
    }

    fn table_max_parallelism(&self) -> keygroup::MaxParallelism {
        self.max_parallelism
    }

    fn table_has_ttl(&self) -> bool {
        self.ttl.is_some()
    }
}

/// A native snapshot of a [`MemoryKeyedTable`]: a copy of its live committed entries
/// (expired ones included, as they are stored), valid only for a table of the same
/// key-group range.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryTableSnapshot<V> {
    key_groups: KeyGroupRange,
    rows: Vec<(usize, Box<[u8]>, i64, V)>,
}

impl<V> MemoryTableSnapshot<V> {
    /// Entries in the snapshot.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the snapshot holds no entry.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

impl<C: ValueCodec> NativeSnapshot for MemoryKeyedTable<C> {
    type Snapshot = MemoryTableSnapshot<C::Value>;

    fn native_snapshot(&mut self) -> Result<Self::Snapshot> {
        self.check_bundle("native_snapshot", false)?;
        let rows = self
            .groups
            .iter()
            .enumerate()
            .flat_map(|(index, group)| {
                group.iter().filter(|(_, e)| e.live).map(move |(k, e)| {
                    (
                        index,
                        Box::from(k.as_bytes()),
                        e.last_access,
                        e.value.clone(),
                    )
                })
            })
            .collect();
        Ok(MemoryTableSnapshot {
            key_groups: self.key_groups,
            rows,
        })
    }

    fn restore_native(&mut self, snapshot: &Self::Snapshot) -> Result<()> {
        self.check_staging()?;
        if snapshot.key_groups != self.key_groups {
            return Err(Error::Unsupported {
                operation: "native restore onto another key-group range",
            });
        }
        let staged = self.stage_rows(
            snapshot
                .rows
                .iter()
                .map(|(i, k, ts, v)| (*i, k.clone(), *ts, v.clone())),
        )?;
        self.apply_staged(Some(staged));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use keygroup::MaxParallelism;
    use state_api::{BoundedMemoryPool, I64Codec, ManualClock, MemoryPool};

    use super::*;

    fn table(pool: Arc<dyn MemoryPool>) -> MemoryKeyedTable<I64Codec> {
        let mp = MaxParallelism::new(8).unwrap();
        let config = StoreConfig::try_new(mp, mp.key_groups())
            .unwrap()
            .with_memory_pool(pool)
            .with_clock(Arc::new(ManualClock::new(0)));
        MemoryKeyedTable::new("t", I64Codec, None, &config)
    }

    fn kg(v: i32) -> KeyGroup {
        KeyGroup::new(v).unwrap()
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
        let mut t = MemoryKeyedTable::new("t", I64Codec, Some(ttl), &config);
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
    fn native_snapshot_round_trip_and_refusals() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(1 << 20));
        let mut t = table(Arc::clone(&pool));
        t.begin_bundle(&[]).unwrap();
        for i in 0..20_u8 {
            t.put(kg(i32::from(i % 8)), &[i], i64::from(i)).unwrap();
        }
        t.remove(kg(0), &[0]).unwrap();
        assert!(matches!(
            t.native_snapshot(),
            Err(Error::BundleState { .. })
        ));
        t.commit_bundle().unwrap();
        let snapshot = t.native_snapshot().unwrap();
        assert_eq!(snapshot.len(), 19);

        t.begin_bundle(&[]).unwrap();
        t.put(kg(1), b"new", 99).unwrap();
        t.remove(kg(1), &[1]).unwrap();
        t.commit_bundle().unwrap();
        t.restore_native(&snapshot).unwrap();
        t.begin_bundle(&[]).unwrap();
        assert_eq!(t.get(kg(1), b"new").unwrap(), None);
        assert_eq!(t.get(kg(1), &[1]).unwrap(), Some(&1));
        assert_eq!(t.get(kg(0), &[0]).unwrap(), None);
        t.commit_bundle().unwrap();

        // A snapshot of another range is refused; a restore the pool cannot hold changes nothing.
        let mp = MaxParallelism::new(8).unwrap();
        let other = StoreConfig::try_new(mp, KeyGroupRange::new(0, 3).unwrap()).unwrap();
        let mut small = MemoryKeyedTable::new("t", I64Codec, None, &other);
        assert!(matches!(
            small.restore_native(&snapshot),
            Err(Error::Unsupported { .. })
        ));
        let tight: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(pool.used() + 64));
        let mut u = table(Arc::clone(&tight));
        u.begin_bundle(&[]).unwrap();
        u.put(kg(2), b"keep", 5).unwrap();
        u.commit_bundle().unwrap();
        let err = u.restore_native(&snapshot).unwrap_err();
        assert!(matches!(err, Error::MemoryExhausted { .. }), "{err}");
        u.begin_bundle(&[]).unwrap();
        assert_eq!(u.get(kg(2), b"keep").unwrap(), Some(&5));
        u.commit_bundle().unwrap();
    }

    #[test]
    fn failed_growth_on_overwrite_keeps_old_value() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(1 << 20));
        let mp = MaxParallelism::new(8).unwrap();
        let config = StoreConfig::try_new(mp, mp.key_groups())
            .unwrap()
            .with_memory_pool(Arc::clone(&pool));
        let mut t = MemoryKeyedTable::new("s", state_api::I64F64StrCodec, None, &config);
        t.begin_bundle(&[]).unwrap();
        t.put(kg(1), b"k", (1, 1.0, None)).unwrap();
        let big = "x".repeat(2 << 20);
        let err = t.put(kg(1), b"k", (2, 2.0, Some(big))).unwrap_err();
        assert!(matches!(err, Error::MemoryExhausted { .. }), "{err}");
        assert_eq!(t.get(kg(1), b"k").unwrap(), Some(&(1, 1.0, None)));
        t.commit_bundle().unwrap();
    }
}
