//! The RocksDB keyed table: a bundle's working map over one column family.

use std::mem::size_of;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use arrow_array::{Array, RecordBatch};
use arrow_schema::SchemaRef;
use keygroup::{KeyGroup, KeyGroupRange};
use rocksdb::{ReadOptions, WriteBatch};
use state_api::{
    BundlePhase, CanonicalTable, Clock, Error, KeyedTable, MemoryReservation, Result, StoreConfig,
    SweepProgress, TableStats, TtlConfig, TtlRead, ValueCodec, canonical_schema,
    decode_canonical_batch, encode_canonical_batch, key_group_offset, ttl_exported, ttl_now,
    ttl_read,
};

use crate::cache::{Key, WorkingMap};
use crate::error::rocks_api;
use crate::format::{
    RowCodec, composite_key, decode_stored_values, encode_stored_values, key_group_upper_bound,
    prefix_bytes, split_value,
};
use crate::restore::{Sink, load_staging};
use crate::store::Shared;
use crate::sweep::sweep_column_family;
use crate::write_behind::{Pending, SharedWriteBehind, WriteBehind, entry_bound};

/// When the pool refuses a cache admission, clean entries not used in the open bundle are
/// evicted until about this fraction (1/N) of the cache's bytes is free again.
const EVICT_FRACTION: usize = 8;

/// One key of the working map.
#[derive(Debug)]
struct Slot<V> {
    /// The value (kept after an expired read under `ReturnExpiredIfNotCleanedUp`).
    value: Option<V>,
    /// Whether the key is present (not removed, not cleared as expired).
    live: bool,
    last_access: i64,
    /// The bundle that dirtied the key (dirty while that bundle is open; 0: never), so that
    /// a commit need not visit its keys again to clear a flag.
    dirty_in: u64,
    /// Bytes reserved from the pool for this entry.
    reserved: usize,
    /// The last bundle that named or touched the key (entries of the open bundle are never
    /// evicted).
    bundle: u64,
}

impl<V> Slot<V> {
    fn absent(bundle: u64) -> Self {
        Self {
            value: None,
            live: false,
            last_access: 0,
            dirty_in: 0,
            reserved: 0,
            bundle,
        }
    }

    fn hit(value: V, last_access: i64, bundle: u64) -> Self {
        Self {
            value: Some(value),
            live: true,
            last_access,
            dirty_in: 0,
            reserved: 0,
            bundle,
        }
    }
}

/// A keyed table stored in its own RocksDB column family.
///
/// - [`begin_bundle`](KeyedTable::begin_bundle) fetches every named key that is not cached
///   with **one** `batched_multi_get_cf` (pinned values, input order, keys need not be
///   sorted) and decodes all hits with one arrow-row conversion and one
///   [`ValueCodec::decode`] into the working map. A key not named is fetched alone with
///   `get_pinned_cf` (counted in [`TableStats::point_hydrations`]) and stays resident.
/// - [`commit_bundle`](KeyedTable::commit_bundle) encodes the dirty values with one
///   [`ValueCodec::encode`] and one arrow-row conversion and hands every dirty key once to the
///   table's write-behind buffer (see [`RocksSlot::with_write_behind`](crate::RocksSlot::with_write_behind)),
///   or, with a limit of 0, writes them in **one** `WriteBatch` with the WAL off. No flush is
///   forced; the working map then stays a **clean cache** of committed state, so hot keys of
///   later bundles need no read. Removed and expired keys
///   leave it; it is cleared whole only after a restore or a sweep that removed entries
///   (RocksDB changed underneath).
/// - The working map is a hashbrown table with foldhash over RocksDB keys stored inline up
///   to 22 bytes: a get, put or remove hashes its key once and allocates nothing for a key
///   already resident; dirty keys are listed inline too.
/// - Memory: every resident entry (pending write or cached value) reserves
///   `key length + size_of::<Slot<V>>() +` [`ValueCodec::heap_size`] from the store's pool,
///   so the cache is as large as the pool grants. When the pool refuses, clean entries not
///   used in the open bundle are evicted until an eighth of the cache's bytes is free and the
///   reservation is tried once more. A `put` still refused is [`Error::MemoryExhausted`] and
///   leaves the key as it was; a hydrated value still refused is kept for the bundle only.
/// - TTL: Flink's rules on read (see [`KeyedTable`]), the TTL compaction filter in the
///   background, and [`sweep_expired`](KeyedTable::sweep_expired) as a bounded scan.
pub struct RocksKeyedTable<C: ValueCodec> {
    name: String,
    codec: C,
    ttl: Option<TtlConfig>,
    max_parallelism: keygroup::MaxParallelism,
    schema: SchemaRef,
    key_groups: KeyGroupRange,
    prefix_bytes: usize,
    clock: Arc<dyn Clock>,
    shared: Arc<Shared>,
    rows: RowCodec,
    working: WorkingMap<Slot<C::Value>>,
    scratch: Vec<u8>,
    /// The RocksDB keys `begin_bundle` misses, back to back (`miss_ends` ends each).
    miss_bytes: Vec<u8>,
    miss_ends: Vec<usize>,
    bundle_phase: BundlePhase,
    /// The number of the open (or last) bundle.
    bundle: u64,
    /// Keys dirtied in the open bundle, each once, with their hash in the working map.
    dirty_keys: Vec<(Key, u64)>,
    /// Keys removed or cleared as expired in the open bundle (they leave the working map at
    /// commit unless put again).
    dead_keys: Vec<(Key, u64)>,
    /// Keys resident for this bundle only (absent in RocksDB, or refused by the pool).
    transient_keys: Vec<Key>,
    /// The store generation the cached entries belong to (a native restore bumps it).
    generation: u64,
    reservation: MemoryReservation,
    /// The column family filled by `stage_restore`, swapped in by `commit_restore`.
    staged_cf: Option<String>,
    sweep_cursor: Option<Vec<u8>>,
    stats: TableStats,
    /// Committed values not yet in RocksDB (shared with the store; see `write_behind.rs`).
    write_behind: SharedWriteBehind,
    /// The buffer's limit in bytes; 0 writes every commit through.
    write_behind_limit: usize,
    /// A commit's encoded values, back to back (`encoded_ends` ends each).
    encoded: Vec<u8>,
    encoded_ends: Vec<usize>,
}

impl<C: ValueCodec> std::fmt::Debug for RocksKeyedTable<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksKeyedTable")
            .field("name", &self.name)
            .field("key_groups", &self.key_groups)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<C: ValueCodec> RocksKeyedTable<C> {
    pub(crate) fn new(
        name: &str,
        codec: C,
        ttl: Option<TtlConfig>,
        config: &StoreConfig,
        shared: Arc<Shared>,
    ) -> Result<Self> {
        let fields = codec.fields();
        let rows = RowCodec::try_new(name, &fields)?;
        let generation = shared.generation();
        let write_behind = shared.write_behind_of(name, config.memory_pool());
        let write_behind_limit = shared.slot.write_behind();
        Ok(Self {
            name: name.to_owned(),
            schema: canonical_schema(&fields),
            codec,
            ttl,
            key_groups: config.key_groups(),
            prefix_bytes: prefix_bytes(config.max_parallelism()),
            max_parallelism: config.max_parallelism(),
            clock: Arc::clone(config.clock()),
            shared,
            rows,
            working: WorkingMap::new(),
            scratch: Vec::new(),
            miss_bytes: Vec::new(),
            miss_ends: Vec::new(),
            bundle_phase: BundlePhase::default(),
            bundle: 0,
            dirty_keys: Vec::new(),
            dead_keys: Vec::new(),
            transient_keys: Vec::new(),
            generation,
            reservation: MemoryReservation::new(Arc::clone(config.memory_pool())),
            staged_cf: None,
            sweep_cursor: None,
            stats: TableStats::default(),
            write_behind,
            write_behind_limit,
            encoded: Vec::new(),
            encoded_ends: Vec::new(),
        })
    }

    /// Bytes this table's working map (pending bundle writes and cached values) currently
    /// holds from the memory pool.
    pub fn reserved_bytes(&self) -> usize {
        self.reservation.size()
    }

    /// Bytes the table's write-behind buffer (committed values not yet in RocksDB) holds
    /// from the memory pool.
    pub fn write_behind_bytes(&self) -> usize {
        WriteBehind::lock(&self.write_behind).reserved_bytes()
    }

    /// `(flushes, keys)`: how often the write-behind buffer was written to RocksDB and how
    /// many keys it wrote (with write-through, `(0, 0)`: every commit writes directly).
    pub fn write_behind_flushes(&self) -> (u64, u64) {
        WriteBehind::lock(&self.write_behind).flush_counts()
    }

    /// Writes the write-behind buffer to RocksDB.
    fn flush_write_behind(&self) -> Result<()> {
        WriteBehind::lock(&self.write_behind).flush(&self.shared, &self.name)
    }

    fn check_bundle(&self, operation: &'static str, requires_open: bool) -> Result<()> {
        if requires_open {
            self.bundle_phase.require_open(operation)
        } else {
            self.bundle_phase.require_closed(operation)
        }
    }

    fn check_key_group(&self, key_group: KeyGroup) -> Result<()> {
        key_group_offset(self.key_groups, key_group).map(drop)
    }

    fn now(&self) -> i64 {
        ttl_now(self.ttl.as_ref(), &*self.clock)
    }

    /// Decodes stored values with the shared value codec of the store
    /// ([`decode_stored_values`]).
    fn decode_stored<'a>(
        &self,
        stored: impl ExactSizeIterator<Item = &'a [u8]>,
    ) -> Result<(Vec<i64>, Vec<C::Value>)> {
        decode_stored_values(&self.name, &self.rows, &self.codec, stored)
    }

    /// Encodes `(timestamp, value)` pairs with the shared value codec
    /// ([`encode_stored_values`]).
    fn encode_stored(
        &self,
        entries: &[(i64, &C::Value)],
        sink: impl FnMut(usize, &[u8]),
    ) -> Result<()> {
        encode_stored_values(&self.name, &self.rows, &self.codec, entries, sink)
    }

    /// Reads the key in `self.scratch` alone into the working map (from the write-behind
    /// buffer when it holds the key, else from RocksDB).
    fn point_hydrate(&mut self) -> Result<()> {
        let pending = WriteBehind::lock(&self.write_behind)
            .get(&self.scratch)
            .map(|pending| match pending {
                Pending::Put(stored) => Some(stored.to_vec()),
                Pending::Delete => None,
            });
        let stored = if let Some(stored) = pending {
            stored
        } else {
            let st = self.shared.read();
            let cf = st.table_cf(&self.name)?;
            st.db
                .get_pinned_cf(&cf, &self.scratch)
                .map_err(rocks_api("point read"))?
                .map(|v| v.to_vec())
        };
        self.stats.point_hydrations += 1;
        let slot = match stored {
            None => Slot::absent(self.bundle),
            Some(bytes) => {
                let (mut ts, mut values) = self.decode_stored([bytes.as_slice()].into_iter())?;
                match (ts.pop(), values.pop()) {
                    (Some(last_access), Some(value)) => Slot::hit(value, last_access, self.bundle),
                    _ => Slot::absent(self.bundle),
                }
            }
        };
        let key = Key::from(self.scratch.as_slice());
        self.admit(key, slot);
        Ok(())
    }

    /// Inserts a hydrated slot: cached across bundles when the pool grants its memory,
    /// otherwise (and for absent keys) resident for this bundle only.
    fn admit(&mut self, key: Key, mut slot: Slot<C::Value>) {
        let cost = slot
            .value
            .as_ref()
            .map(|v| entry_cost::<C>(&self.codec, key.as_bytes().len(), v));
        match cost {
            Some(cost) if self.reserve_evicting(cost).is_ok() => slot.reserved = cost,
            _ => self.transient_keys.push(key.clone()),
        }
        if let Some(old) = self.working.insert(key, slot) {
            self.reservation.shrink(old.reserved);
        }
    }

    /// Reserves `bytes` for a cache entry; when the pool refuses, evicts clean entries not
    /// used in the open bundle until an eighth of the cache's bytes (at least `bytes`) is
    /// free, and tries once more. The cache is never cleared whole: its size is what the
    /// pool grants.
    fn reserve_evicting(&mut self, bytes: usize) -> Result<()> {
        if self.reservation.try_grow(bytes).is_ok() {
            return Ok(());
        }
        let target = (self.reservation.size() / EVICT_FRACTION).max(bytes);
        let bundle = self.bundle;
        let mut freed = 0;
        self.working.retain(|_, slot| {
            // Entries of the open bundle (every dirty one among them) stay.
            if freed >= target || slot.reserved == 0 || slot.bundle == bundle {
                return true;
            }
            freed += slot.reserved;
            false
        });
        self.reservation.shrink(freed);
        self.reservation.try_grow(bytes)
    }

    /// Drops every cached entry (after a restore or sweep changed RocksDB underneath).
    fn clear_cache(&mut self) {
        self.working.clear();
        self.transient_keys.clear();
        self.reservation.free();
    }

    fn release_slot_reservation(&mut self, reserved: usize) {
        self.reservation.shrink(reserved);
    }

    /// Reads the keys in `miss_bytes` with one batched multi-get (sorted, each once), decodes
    /// the hits with one arrow-row conversion and one codec call, and admits every key.
    fn hydrate_misses(&mut self) -> Result<()> {
        let mut misses: Vec<&[u8]> = Vec::with_capacity(self.miss_ends.len());
        let mut start = 0;
        for &end in &self.miss_ends {
            misses.push(self.miss_bytes.get(start..end).unwrap_or_default());
            start = end;
        }
        // Sorted keys let RocksDB's MultiGet walk each file and the memtable in order; a key
        // named twice is read once.
        misses.sort_unstable();
        misses.dedup();
        let write_behind = Arc::clone(&self.write_behind);
        let (hits, timestamps, values) = {
            // Keys with a pending write are served from the write-behind buffer; the rest
            // (all of them when the buffer is empty) from one batched multi-get.
            let pending = WriteBehind::lock(&write_behind);
            let from_db: Vec<&[u8]> = if pending.is_empty() {
                misses.clone()
            } else {
                misses
                    .iter()
                    .copied()
                    .filter(|key| pending.get(key).is_none())
                    .collect()
            };
            let st = self.shared.read();
            let cf = st.table_cf(&self.name)?;
            let mut results = st.db.batched_multi_get_cf(&cf, &from_db, true).into_iter();
            let mut pinned = Vec::with_capacity(from_db.len());
            let mut found: Vec<Option<usize>> = Vec::with_capacity(misses.len());
            for key in &misses {
                let from_pending = pending.get(key);
                if from_pending.is_none() {
                    let result = results.next().unwrap_or(Ok(None));
                    if let Some(slice) = result.map_err(rocks_api("batched read"))? {
                        found.push(Some(pinned.len()));
                        pinned.push(slice);
                        continue;
                    }
                }
                found.push(None);
            }
            let mut hits = Vec::with_capacity(misses.len());
            let mut stored: Vec<&[u8]> = Vec::with_capacity(misses.len());
            for (i, (key, at)) in misses.iter().zip(&found).enumerate() {
                let bytes = match (pending.get(key), at) {
                    (Some(Pending::Put(bytes)), _) => bytes,
                    (None, Some(at)) => pinned.get(*at).map_or(&[][..], |s| &**s),
                    _ => continue,
                };
                hits.push(i);
                stored.push(bytes);
            }
            // Decoded straight from the pinned slices (which borrow the database) and the
            // buffer's bytes.
            let (timestamps, values) = self.decode_stored(stored.into_iter())?;
            (hits, timestamps, values)
        };
        self.stats.hydration_batches += 1;
        self.stats.hydrated_keys += misses.len() as u64;
        let keys: Vec<Key> = misses.into_iter().map(Key::from).collect();
        let bundle = self.bundle;
        let mut found = hits
            .into_iter()
            .zip(timestamps.into_iter().zip(values))
            .peekable();
        for (i, key) in keys.into_iter().enumerate() {
            let slot = match found.next_if(|(hit, _)| *hit == i) {
                Some((_, (last_access, value))) => Slot::hit(value, last_access, bundle),
                None => Slot::absent(bundle),
            };
            self.admit(key, slot);
        }
        Ok(())
    }

    /// Encodes the values of the dirty keys (in `dirty_keys` order) with one codec call
    /// into `encoded`; returns per dirty key its value's index in `encoded_ends`, or `None`
    /// for a delete.
    fn encode_dirty(&mut self) -> Result<Vec<Option<usize>>> {
        let mut ops = Vec::with_capacity(self.dirty_keys.len());
        let mut entries: Vec<(i64, &C::Value)> = Vec::with_capacity(self.dirty_keys.len());
        for (key, hash) in &self.dirty_keys {
            match self.working.get_hashed(*hash, key.as_bytes()) {
                Some(Slot {
                    value: Some(value),
                    live: true,
                    last_access,
                    ..
                }) => {
                    ops.push(Some(entries.len()));
                    entries.push((*last_access, value));
                }
                _ => ops.push(None),
            }
        }
        let mut encoded = std::mem::take(&mut self.encoded);
        let mut ends = std::mem::take(&mut self.encoded_ends);
        encoded.clear();
        ends.clear();
        let result = self.encode_stored(&entries, |_, value| {
            encoded.extend_from_slice(value);
            ends.push(encoded.len());
        });
        self.encoded = encoded;
        self.encoded_ends = ends;
        result?;
        Ok(ops)
    }

    /// The encoded value number `i` of the last [`encode_dirty`](Self::encode_dirty).
    fn encoded_value(&self, i: usize) -> &[u8] {
        let start = i
            .checked_sub(1)
            .map_or(0, |p| self.encoded_ends.get(p).copied().unwrap_or(0));
        let end = self.encoded_ends.get(i).copied().unwrap_or(start);
        self.encoded.get(start..end).unwrap_or_default()
    }

    /// Writes the dirty keys (`ops` from [`encode_dirty`](Self::encode_dirty)) to RocksDB in
    /// one `WriteBatch`, WAL off.
    fn write_through(&self, ops: &[Option<usize>]) -> Result<()> {
        let st = self.shared.read();
        let cf = st.table_cf(&self.name)?;
        let mut batch = WriteBatch::default();
        for ((key, _), op) in self.dirty_keys.iter().zip(ops) {
            match op {
                Some(i) => batch.put_cf(&cf, key.as_bytes(), self.encoded_value(*i)),
                None => batch.delete_cf(&cf, key.as_bytes()),
            }
        }
        if !batch.is_empty() {
            st.db
                .write_opt(batch, &self.shared.write_options)
                .map_err(rocks_api("commit"))?;
        }
        Ok(())
    }

    /// Puts the dirty keys (`ops` from [`encode_dirty`](Self::encode_dirty)) into the
    /// write-behind buffer, flushing it first when the pool refuses their memory and after
    /// when it is over its limit. `false` when the pool refuses even with the buffer empty
    /// (the caller writes the bundle through).
    fn stage_write_behind(&self, ops: &[Option<usize>]) -> Result<bool> {
        let bound: usize = self
            .dirty_keys
            .iter()
            .zip(ops)
            .map(|((key, _), op)| {
                entry_bound(
                    key.as_bytes(),
                    op.map_or(0, |i| self.encoded_value(i).len()),
                )
            })
            .sum();
        let mut pending = WriteBehind::lock(&self.write_behind);
        if !pending.try_reserve(bound) {
            pending.flush(&self.shared, &self.name)?;
            if !pending.try_reserve(bound) {
                return Ok(false);
            }
        }
        for ((key, _), op) in self.dirty_keys.iter().zip(ops) {
            pending.stage(key.as_bytes(), op.map(|i| self.encoded_value(i)));
        }
        pending.settle();
        if pending.over(self.write_behind_limit) {
            pending.flush(&self.shared, &self.name)?;
        }
        Ok(true)
    }
}

/// Bytes a resident entry reserves: key, slot and the value's heap bytes.
fn entry_cost<C: ValueCodec>(codec: &C, key_len: usize, value: &C::Value) -> usize {
    key_len + size_of::<Slot<C::Value>>() + codec.heap_size(value)
}

/// Marks `slot` (of `key`) dirty, listing the key once per bundle.
fn mark_dirty<V>(
    slot: &mut Slot<V>,
    dirty_keys: &mut Vec<(Key, u64)>,
    key: &[u8],
    hash: u64,
    bundle: u64,
) {
    if slot.dirty_in != bundle {
        slot.dirty_in = bundle;
        dirty_keys.push((Key::from(key), hash));
    }
}

impl<C: ValueCodec> KeyedTable for RocksKeyedTable<C> {
    type Codec = C;

    fn name(&self) -> &str {
        &self.name
    }

    fn key_groups(&self) -> KeyGroupRange {
        self.key_groups
    }

    fn begin_bundle(&mut self, keys: &[(KeyGroup, &[u8])]) -> Result<()> {
        self.bundle_phase.check_begin("begin_bundle")?;
        for (key_group, _) in keys {
            self.check_key_group(*key_group)?;
        }
        let generation = self.shared.generation();
        if generation != self.generation {
            self.clear_cache();
            self.generation = generation;
        }
        self.dirty_keys.clear();
        self.dead_keys.clear();
        self.bundle += 1;
        let bundle = self.bundle;
        // Only misses are read: the working map is a clean cache of committed state. Hits
        // are stamped with the bundle so that no admission below evicts them.
        self.miss_bytes.clear();
        self.miss_ends.clear();
        for (kg, key) in keys {
            composite_key(&mut self.scratch, *kg, self.prefix_bytes, key);
            if let Some(slot) = self.working.get_mut(self.scratch.as_slice()) {
                slot.bundle = bundle;
            } else {
                self.miss_bytes.extend_from_slice(&self.scratch);
                self.miss_ends.push(self.miss_bytes.len());
            }
        }
        if !self.miss_ends.is_empty() {
            self.hydrate_misses()?;
        }
        self.bundle_phase.begin("begin_bundle")?;
        self.shared.open_bundles.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn get(&mut self, key_group: KeyGroup, key: &[u8]) -> Result<Option<&C::Value>> {
        self.check_bundle("get", true)?;
        self.check_key_group(key_group)?;
        let now = self.now();
        composite_key(&mut self.scratch, key_group, self.prefix_bytes, key);
        // One hash for the lookup (and, on a miss, the point read's insert).
        let hash = self.working.hash(&self.scratch);
        if self.working.get_hashed(hash, &self.scratch).is_none() {
            self.point_hydrate()?;
        }
        let Self {
            working,
            scratch,
            ttl,
            dirty_keys,
            dead_keys,
            bundle,
            ..
        } = self;
        let Some(slot) = working.get_mut_hashed(hash, scratch) else {
            return Ok(None);
        };
        slot.bundle = *bundle;
        if !slot.live {
            return Ok(None);
        }
        let read = ttl_read(ttl.as_ref(), slot.last_access, now);
        if read.clears() {
            slot.live = false;
            mark_dirty(slot, dirty_keys, scratch, hash, *bundle);
            dead_keys.push((Key::from(scratch.as_slice()), hash));
        } else if read == TtlRead::LiveRefresh {
            slot.last_access = now;
            mark_dirty(slot, dirty_keys, scratch, hash, *bundle);
        }
        if read.returns_value() {
            Ok(slot.value.as_ref())
        } else {
            Ok(None)
        }
    }

    fn put(&mut self, key_group: KeyGroup, key: &[u8], value: C::Value) -> Result<()> {
        self.check_bundle("put", true)?;
        self.check_key_group(key_group)?;
        composite_key(&mut self.scratch, key_group, self.prefix_bytes, key);
        let now = self.now();
        let needed =
            self.scratch.len() + size_of::<Slot<C::Value>>() + self.codec.heap_size(&value);
        let hash = self.working.hash(&self.scratch);
        let previous = match self.working.get_mut_hashed(hash, &self.scratch) {
            Some(slot) => {
                slot.bundle = self.bundle; // not evicted by the reservation below
                slot.reserved
            }
            None => 0,
        };
        if needed > previous {
            self.reserve_evicting(needed - previous)?;
        } else {
            self.reservation.shrink(previous - needed);
        }
        let Self {
            working,
            scratch,
            dirty_keys,
            bundle,
            ..
        } = self;
        let slot = working.get_or_insert_hashed(hash, scratch, || Slot::absent(*bundle));
        slot.value = Some(value);
        slot.live = true;
        slot.last_access = now;
        slot.reserved = needed;
        mark_dirty(slot, dirty_keys, scratch, hash, *bundle);
        Ok(())
    }

    fn remove(&mut self, key_group: KeyGroup, key: &[u8]) -> Result<()> {
        self.check_bundle("remove", true)?;
        self.check_key_group(key_group)?;
        composite_key(&mut self.scratch, key_group, self.prefix_bytes, key);
        let hash = self.working.hash(&self.scratch);
        if self.working.get_hashed(hash, &self.scratch).is_none() {
            self.point_hydrate()?;
        }
        let Self {
            working,
            scratch,
            dirty_keys,
            dead_keys,
            bundle,
            ..
        } = self;
        let mut freed = 0;
        if let Some(slot) = working.get_mut_hashed(hash, scratch) {
            slot.bundle = *bundle;
            if slot.live {
                slot.live = false;
                slot.value = None;
                freed = std::mem::take(&mut slot.reserved);
                mark_dirty(slot, dirty_keys, scratch, hash, *bundle);
                dead_keys.push((Key::from(scratch.as_slice()), hash));
            }
        }
        self.release_slot_reservation(freed);
        Ok(())
    }

    fn commit_bundle(&mut self) -> Result<()> {
        self.check_bundle("commit_bundle", true)?;
        if self.write_behind_limit == 0 {
            // Keys in ascending order: RocksDB's memtable insert reuses its skip-list splice
            // for sequential keys, which makes a sorted batch markedly cheaper to apply (the
            // write-behind buffer sorts when it flushes).
            self.dirty_keys
                .sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        }
        let ops = self.encode_dirty()?;
        if self.write_behind_limit == 0 || !self.stage_write_behind(&ops)? {
            self.write_through(&ops)?;
        }
        self.stats.written_keys += self.dirty_keys.len() as u64;
        self.stats.bundles += 1;
        // The working map stays a clean cache of committed state: removed and expired keys
        // leave it, as do entries resident for this bundle only.
        let mut freed = 0;
        self.dirty_keys.clear();
        for (key, hash) in self.dead_keys.drain(..) {
            if self
                .working
                .get_hashed(hash, key.as_bytes())
                .is_some_and(|slot| !slot.live)
            {
                freed += self
                    .working
                    .remove(key.as_bytes())
                    .map_or(0, |s| s.reserved);
            }
        }
        for key in self.transient_keys.drain(..) {
            if self
                .working
                .get(key.as_bytes())
                .is_some_and(|s| !s.live || s.reserved == 0)
            {
                freed += self
                    .working
                    .remove(key.as_bytes())
                    .map_or(0, |s| s.reserved);
            }
        }
        self.reservation.shrink(freed);
        self.shared.open_bundles.fetch_sub(1, Ordering::SeqCst);
        self.bundle_phase.end("commit_bundle")
    }

    /// One step of `sweep_column_family`: at most `4 * max_entries` (at least 64) entries
    /// scanned from a cursor, the expired ones among them deleted (at most `max_entries`) in
    /// one write batch; a table without TTL has nothing to sweep. The TTL compaction filter
    /// removes expired entries in the background as well.
    fn sweep_expired(&mut self, max_entries: usize) -> Result<SweepProgress> {
        self.check_bundle("sweep_expired", false)?;
        let Some(ttl) = self.ttl else {
            return Ok(SweepProgress::nothing_to_sweep());
        };
        // The sweep scans RocksDB: committed values still buffered go there first.
        self.flush_write_behind()?;
        let now = self.clock.now_millis();
        let progress = sweep_column_family(
            &self.shared,
            &self.name,
            &ttl,
            now,
            &mut self.sweep_cursor,
            max_entries,
        )?;
        if progress.removed > 0 {
            self.clear_cache();
        }
        Ok(progress)
    }

    fn stats(&self) -> TableStats {
        self.stats
    }
}

impl<C: ValueCodec> Drop for RocksKeyedTable<C> {
    fn drop(&mut self) {
        if self.bundle_phase.is_open() {
            self.shared.open_bundles.fetch_sub(1, Ordering::SeqCst);
        }
        if let Some(cf) = self.staged_cf.take() {
            self.shared.drop_cf(&cf);
        }
    }
}

impl<C: ValueCodec> CanonicalTable for RocksKeyedTable<C> {
    fn table_name(&self) -> &str {
        &self.name
    }

    fn table_key_groups(&self) -> KeyGroupRange {
        self.key_groups
    }

    fn canonical_schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    /// A prefix scan of the key group (RocksDB's order is the key order), expired rows left
    /// out, the values decoded with one arrow-row conversion and one codec call — only here,
    /// when a canonical snapshot asks for them.
    fn export_key_group(&self, key_group: KeyGroup) -> Result<Option<RecordBatch>> {
        self.check_bundle("export_key_group", false)?;
        self.check_key_group(key_group)?;
        self.flush_write_behind()?;
        let now = self.ttl.map(|_| self.clock.now_millis());
        let mut prefix = Vec::with_capacity(2);
        composite_key(&mut prefix, key_group, self.prefix_bytes, &[]);
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut stored: Vec<Vec<u8>> = Vec::new();
        let mut scratch = MemoryReservation::new(Arc::clone(self.reservation.pool()));
        {
            let st = self.shared.read();
            let cf = st.table_cf(&self.name)?;
            let mut options = ReadOptions::default();
            options.set_iterate_upper_bound(key_group_upper_bound(key_group, self.prefix_bytes));
            options.fill_cache(false);
            let mut iter = st.db.raw_iterator_cf_opt(&cf, options);
            iter.seek(&prefix);
            while let Some((key, value)) = iter.item() {
                let expired = match (now, split_value(value)) {
                    (Some(now), Some((ts, _))) => !ttl_exported(self.ttl.as_ref(), ts, now),
                    _ => false,
                };
                if !expired {
                    scratch.try_grow(key.len() + value.len() + 2 * size_of::<Vec<u8>>())?;
                    keys.push(key.get(self.prefix_bytes..).unwrap_or_default().to_vec());
                    stored.push(value.to_vec());
                }
                iter.next();
            }
            iter.status().map_err(rocks_api("export scan"))?;
        }
        if keys.is_empty() {
            return Ok(None);
        }
        let (timestamps, values) = self.decode_stored(stored.iter().map(Vec::as_slice))?;
        let rows: Vec<(&[u8], i64, &C::Value)> = keys
            .iter()
            .zip(&timestamps)
            .zip(&values)
            .map(|((k, ts), v)| (k.as_slice(), if self.ttl.is_some() { *ts } else { 0 }, v))
            .collect();
        encode_canonical_batch(&self.schema, &self.codec, &rows).map(Some)
    }

    /// Decodes the sections once and bulk-loads them into a fresh staging column family with
    /// large write batches (WAL off); the table's visible state is untouched until
    /// [`commit_restore`](CanonicalTable::commit_restore) swaps the family in.
    fn stage_restore(&mut self, batches: Vec<(KeyGroup, RecordBatch)>) -> Result<()> {
        self.check_bundle("restore", false)?;
        self.abort_restore();
        let cf_name = self.shared.create_table_cf(&self.name)?;
        self.staged_cf = Some(cf_name.clone());
        let result = self.fill_staging(&cf_name, &batches);
        if result.is_err() {
            self.abort_restore();
        }
        result
    }

    fn commit_restore(&mut self) {
        let staged = self.staged_cf.take();
        let cf = match staged {
            Some(cf) => cf,
            // Nothing staged: the table becomes empty.
            None => match self.shared.create_table_cf(&self.name) {
                Ok(cf) => cf,
                Err(_) => return self.clear_fallback(),
            },
        };
        self.shared.swap_table_cf(&self.name, &cf);
        self.sweep_cursor = None;
        self.clear_cache();
        // The restored state replaces the committed values not yet written.
        WriteBehind::lock(&self.write_behind).discard();
    }

    fn abort_restore(&mut self) {
        if let Some(cf) = self.staged_cf.take() {
            self.shared.drop_cf(&cf);
        }
    }

    fn table_max_parallelism(&self) -> keygroup::MaxParallelism {
        self.max_parallelism
    }

    fn table_has_ttl(&self) -> bool {
        self.ttl.is_some()
    }
}

impl<C: ValueCodec> RocksKeyedTable<C> {
    /// Decodes every section once, re-encodes the values to the stored layout and hands the
    /// entries, in ascending RocksDB key order, to the shared bulk loader
    /// ([`load_staging`]: write batches, or one ingested SST file for large restores).
    fn fill_staging(&self, cf_name: &str, batches: &[(KeyGroup, RecordBatch)]) -> Result<()> {
        let mut ordered: Vec<&(KeyGroup, RecordBatch)> = batches.iter().collect();
        ordered.sort_by_key(|(kg, _)| *kg);
        let rows: usize = ordered.iter().map(|(_, b)| b.num_rows()).sum();
        load_staging(&self.shared, cf_name, rows, true, |sink| {
            self.load_batches(&ordered, sink)
        })
    }

    fn load_batches(
        &self,
        ordered: &[&(KeyGroup, RecordBatch)],
        sink: &mut Sink<'_>,
    ) -> Result<()> {
        let mut key = Vec::new();
        let mut failure = None;
        for (key_group, record_batch) in ordered.iter().copied() {
            self.check_key_group(*key_group)?;
            let mut staging = MemoryReservation::new(Arc::clone(self.reservation.pool()));
            staging.try_grow(record_batch.get_array_memory_size())?;
            let decoded = decode_canonical_batch(&self.codec, record_batch)?;
            let heap: usize = decoded
                .values
                .iter()
                .map(|v| size_of::<C::Value>() + self.codec.heap_size(v))
                .sum();
            staging.try_grow(heap)?;
            let entries: Vec<(i64, &C::Value)> = decoded
                .last_access
                .iter()
                .copied()
                .zip(&decoded.values)
                .collect();
            self.encode_stored(&entries, |i, value| {
                if failure.is_some() {
                    return;
                }
                if i >= decoded.keys.len() || decoded.keys.is_null(i) {
                    failure = Some(Error::Codec {
                        column: state_api::KEY_COLUMN.to_owned(),
                        reason: "null key",
                    });
                    return;
                }
                composite_key(
                    &mut key,
                    *key_group,
                    self.prefix_bytes,
                    decoded.keys.value(i),
                );
                if let Err(e) = sink(&key, value) {
                    failure = Some(e);
                }
            })?;
            if let Some(e) = failure.take() {
                return Err(e);
            }
        }
        Ok(())
    }

    /// `commit_restore` without a staged family when no new family can be created: delete
    /// every entry in place (best effort; `commit_restore` cannot report failure).
    fn clear_fallback(&mut self) {
        WriteBehind::lock(&self.write_behind).discard();
        self.clear_cache();
        let st = self.shared.read();
        let Ok(cf) = st.table_cf(&self.name) else {
            return;
        };
        let mut batch = WriteBatch::default();
        let mut iter = st.db.raw_iterator_cf(&cf);
        iter.seek_to_first();
        while let Some(key) = iter.key() {
            batch.delete_cf(&cf, key);
            iter.next();
        }
        drop(iter);
        let _ = st.db.write_opt(batch, &self.shared.write_options);
    }
}
