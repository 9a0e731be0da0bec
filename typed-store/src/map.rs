//! The RocksDB map table: Flink's `MapState` layout in its own column family, a per-bundle
//! working set, and ordered scans merging committed state with the bundle's writes.

use std::collections::{BTreeMap, HashSet};
use std::mem::size_of;
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use arrow_array::{Array, RecordBatch};
use arrow_schema::SchemaRef;
use keygroup::{KeyGroup, KeyGroupRange};
use rocksdb::{ReadOptions, WriteBatch};
use state_api::{
    BundlePhase, CanonicalTable, Clock, Error, MapHydration, MapStateStore, MapTable,
    MemoryReservation, Result, ScanDirection, StoreConfig, SweepProgress, TableStats, TtlConfig,
    TtlRead, UserKeyRange, ValueCodec, canonical_schema, decode_canonical_batch,
    encode_canonical_batch, full_key_bounds, key_group_offset, ttl_exported, ttl_now, ttl_read,
    ttl_scan_visible,
};

use crate::error::rocks_api;
use crate::format::{
    RowCodec, composite_key, decode_stored_values, encode_stored_values, key_group_upper_bound,
    map_columns, prefix_bytes, split_value,
};
use crate::restore::load_staging;
use crate::store::{RocksStore, Shared};
use crate::sweep::sweep_column_family;

/// A `remove_range` that deletes at least this many entries is committed as one
/// `delete_range_cf` instead of per-key deletes: later seeks into a prefix cleared with
/// per-key deletes step over every point tombstone until a compaction drops them (the
/// `remove_range` figures in the README).
const RANGE_DELETE_MIN_ENTRIES: usize = 16;

/// Committed entries a scan decodes at once, first and at most: a scan starts with one
/// entry (so `first` decodes one value) and grows the batch fourfold up to the maximum.
const SCAN_BATCH_FIRST: usize = 1;
const SCAN_BATCH_MAX: usize = 256;

/// One entry of the bundle's working set.
#[derive(Debug)]
struct Entry<V> {
    /// The value (kept after an expired read under `ReturnExpiredIfNotCleanedUp`).
    value: Option<V>,
    /// Whether the entry is present (not removed, not cleared as expired).
    live: bool,
    last_access: i64,
    /// Whether commit writes it (a put when live, else a delete).
    dirty: bool,
    /// Bytes reserved from the pool for it.
    reserved: usize,
}

impl<V> Entry<V> {
    fn absent() -> Self {
        Self {
            value: None,
            live: false,
            last_access: 0,
            dirty: false,
            reserved: 0,
        }
    }

    fn stored(last_access: i64, value: V) -> Self {
        Self {
            value: Some(value),
            live: true,
            last_access,
            dirty: false,
            reserved: 0,
        }
    }
}

/// Bytes a resident entry reserves: key, entry and the value's heap bytes.
fn entry_cost<C: ValueCodec>(codec: &C, key_len: usize, value: Option<&C::Value>) -> usize {
    key_len + size_of::<Entry<C::Value>>() + value.map_or(0, |v| codec.heap_size(v))
}

/// Inclusive lower and exclusive upper bound (`None`: unbounded) over full RocksDB keys of
/// `range` inside `full_prefix` (key-group prefix ‖ prefix), or `None` when it is empty.
fn rocks_bounds(full_prefix: &[u8], range: UserKeyRange<'_>) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    if range.is_empty() {
        return None;
    }
    let (lo, hi) = full_key_bounds(full_prefix, range);
    // The successor of `k` among byte strings is `k ‖ 0x00`.
    let successor = |mut k: Vec<u8>| {
        k.push(0);
        k
    };
    let lo = match lo {
        Bound::Included(k) => k,
        Bound::Excluded(k) => successor(k),
        Bound::Unbounded => full_prefix.to_vec(),
    };
    let hi = match hi {
        Bound::Included(k) => Some(successor(k)),
        Bound::Excluded(k) => Some(k),
        Bound::Unbounded => None,
    };
    if hi.as_ref().is_some_and(|hi| *hi <= lo) {
        return None;
    }
    Some((lo, hi))
}

/// Committed entries read from RocksDB for one scan step: keys and stored values in flat
/// buffers (no allocation per entry), decoded together.
#[derive(Debug, Default)]
struct ReadBatch {
    keys: Vec<u8>,
    key_ends: Vec<usize>,
    values: Vec<u8>,
    value_ends: Vec<usize>,
}

impl ReadBatch {
    fn clear(&mut self) {
        self.keys.clear();
        self.key_ends.clear();
        self.values.clear();
        self.value_ends.clear();
    }

    fn push(&mut self, key: &[u8], value: &[u8]) {
        self.keys.extend_from_slice(key);
        self.key_ends.push(self.keys.len());
        self.values.extend_from_slice(value);
        self.value_ends.push(self.values.len());
    }

    fn len(&self) -> usize {
        self.key_ends.len()
    }

    fn is_empty(&self) -> bool {
        self.key_ends.is_empty()
    }

    fn slices<'a>(buf: &'a [u8], ends: &'a [usize]) -> impl ExactSizeIterator<Item = &'a [u8]> {
        ends.iter().enumerate().map(move |(i, &end)| {
            let start = if i == 0 {
                0
            } else {
                ends.get(i - 1).copied().unwrap_or(0)
            };
            buf.get(start..end).unwrap_or_default()
        })
    }

    fn keys(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        Self::slices(&self.keys, &self.key_ends)
    }

    fn values(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        Self::slices(&self.values, &self.value_ends)
    }
}

/// A map table stored in its own RocksDB column family.
///
/// # Stored layout
///
/// One column family per map table. Key: `key-group prefix ‖ prefix ‖ user key` (the prefix
/// is the operator's key ‖ namespace as `keygroup::CompositeKeyBuilder` builds it without
/// its key-group prefix, the user key the map key's bytes), so that an entry's key is the
/// RocksDB key Flink's `RocksDBMapState` writes when the caller passes Flink's serialized
/// user key. Value: exactly a keyed table's value (8-byte big-endian TTL timestamp +
/// arrow-row bytes, see the crate docs), encoded and checked by the same code.
///
/// Worked example: max parallelism 128, key group 5, prefix `k\0` (key `k`, void
/// namespace), user key `u`, timestamp 0, an `I64Codec` value 7: key `05 6b 00 75`, value
/// `00 00 00 00 00 00 00 00 01 80 00 00 00 00 00 00 07`.
///
/// # Behaviour
///
/// - [`begin_bundle`](MapTable::begin_bundle) reads each named prefix with **one** iterator
///   seek (`iterate_upper_bound` at the prefix's successor) and the named single entries with
///   **one** `batched_multi_get_cf` (sorted keys), and decodes everything it read with one
///   arrow-row conversion and one [`ValueCodec::decode`] into the bundle's working set (an
///   ordered map of full keys).
/// - Point reads of entries not hydrated are one `get_pinned_cf` each
///   ([`TableStats::point_hydrations`]); a named prefix answers misses without a read.
/// - [`scan`](MapTable::scan) of a hydrated prefix is served from memory; otherwise it merges
///   a RocksDB iterator (forward: `seek` to the lower bound; reverse: `seek_to_last` under
///   the upper bound; both bounds set on the `ReadOptions`, `status()` checked when the
///   iterator ends) with the working set's writes, removes and range removes, decoding
///   committed values in small batches (1, then 4, 16, … 256) and skipping entries the
///   working set shadows or TTL hides before decoding; a scan that reads RocksDB counts one
///   point hydration.
/// - [`remove_range`](MapTable::remove_range) turns every entry of the range into a delete
///   of the bundle's working set (reads in the bundle see it at once); the commit writes one
///   `delete_range_cf` for a range of at least 16 entries and per-key deletes below (see the
///   crate README for the measurement).
/// - [`update`](MapTable::update) changes the value in place; with a bounded pool a copy is
///   kept to undo a change the pool refuses.
/// - [`commit_bundle`](MapTable::commit_bundle) encodes the dirty values with one encode and
///   one arrow-row conversion and writes every dirty entry once, in key order, in one
///   `WriteBatch` with the WAL off; the working set is then dropped.
/// - Memory: every resident entry reserves `key + size_of::<Entry<V>>() + heap_size` from the
///   pool until the bundle ends; a `put` the pool refuses is [`Error::MemoryExhausted`] and
///   changes nothing; hydrated entries the pool refuses are kept unreserved for the bundle.
/// - TTL: as [`MapTable`] documents; the TTL compaction filter of the store applies to the
///   table's column family, and [`sweep_expired`](MapTable::sweep_expired) is a bounded scan.
pub struct RocksMapTable<C: ValueCodec> {
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
    /// The bundle's working set by full key (key-group prefix ‖ prefix ‖ user key).
    entries: BTreeMap<Vec<u8>, Entry<C::Value>>,
    /// Full prefixes (key-group prefix ‖ prefix) whose committed entries are all resident.
    hydrated: HashSet<Vec<u8>>,
    /// Ranges `[lower, upper)` of full keys the bundle cleared of at least
    /// [`RANGE_DELETE_MIN_ENTRIES`] entries: committed with one `delete_range_cf` each.
    range_deletes: Vec<(Vec<u8>, Vec<u8>)>,
    bundle: BundlePhase,
    scratch: Vec<u8>,
    prefix_scratch: Vec<u8>,
    reservation: MemoryReservation,
    staged_cf: Option<String>,
    sweep_cursor: Option<Vec<u8>>,
    stats: TableStats,
}

impl<C: ValueCodec> std::fmt::Debug for RocksMapTable<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksMapTable")
            .field("name", &self.name)
            .field("key_groups", &self.key_groups)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<C: ValueCodec> RocksMapTable<C> {
    fn new(
        name: &str,
        codec: C,
        ttl: Option<TtlConfig>,
        config: &StoreConfig,
        shared: Arc<Shared>,
    ) -> Result<Self> {
        let fields = codec.fields();
        let rows = RowCodec::try_new(name, &fields)?;
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
            entries: BTreeMap::new(),
            hydrated: HashSet::new(),
            range_deletes: Vec::new(),
            bundle: BundlePhase::default(),
            scratch: Vec::new(),
            prefix_scratch: Vec::new(),
            reservation: MemoryReservation::new(Arc::clone(config.memory_pool())),
            staged_cf: None,
            sweep_cursor: None,
            stats: TableStats::default(),
        })
    }

    /// Bytes this table currently holds from the memory pool (the bundle's working set).
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

    fn check_key_group(&self, key_group: KeyGroup) -> Result<()> {
        key_group_offset(self.key_groups, key_group).map(drop)
    }

    fn now(&self) -> i64 {
        ttl_now(self.ttl.as_ref(), &*self.clock)
    }

    /// Writes the full key of (`key_group`, `prefix`, `user_key`) into `scratch` and the full
    /// prefix into `prefix_scratch`.
    fn set_keys(&mut self, key_group: KeyGroup, prefix: &[u8], user_key: &[u8]) {
        composite_key(
            &mut self.prefix_scratch,
            key_group,
            self.prefix_bytes,
            prefix,
        );
        self.scratch.clear();
        self.scratch.extend_from_slice(&self.prefix_scratch);
        self.scratch.extend_from_slice(user_key);
    }

    /// Decodes stored values with one arrow-row conversion and one codec call.
    fn decode<'a>(
        &self,
        stored: impl ExactSizeIterator<Item = &'a [u8]>,
    ) -> Result<(Vec<i64>, Vec<C::Value>)> {
        decode_stored_values(&self.name, &self.rows, &self.codec, stored)
    }

    /// Inserts a hydrated entry, reserving its memory when the pool grants it.
    fn admit(&mut self, key: Vec<u8>, mut entry: Entry<C::Value>) {
        let cost = entry_cost(&self.codec, key.len(), entry.value.as_ref());
        if self.reservation.try_grow(cost).is_ok() {
            entry.reserved = cost;
        }
        if let Some(old) = self.entries.insert(key, entry) {
            self.reservation.shrink(old.reserved);
        }
    }

    /// Makes the entry whose full key is in `scratch` resident (one point read unless its
    /// prefix is hydrated).
    fn resident(&mut self) -> Result<()> {
        if self.entries.contains_key(self.scratch.as_slice())
            || self.hydrated.contains(self.prefix_scratch.as_slice())
        {
            return Ok(());
        }
        let stored = {
            let st = self.shared.read();
            let cf = st.table_cf(&self.name)?;
            st.db
                .get_pinned_cf(&cf, &self.scratch)
                .map_err(rocks_api("point read"))?
                .map(|v| v.to_vec())
        };
        self.stats.point_hydrations += 1;
        let entry = match stored {
            None => Entry::absent(),
            Some(bytes) => {
                let (mut ts, mut values) = self.decode([bytes.as_slice()].into_iter())?;
                match (ts.pop(), values.pop()) {
                    (Some(ts), Some(value)) => Entry::stored(ts, value),
                    _ => Entry::absent(),
                }
            }
        };
        self.admit(self.scratch.clone(), entry);
        Ok(())
    }

    /// Drops the working set and its reservation, and closes the bundle.
    fn end_bundle(&mut self) {
        self.entries.clear();
        self.hydrated.clear();
        self.range_deletes.clear();
        self.reservation.free();
        if self.bundle.is_open() {
            self.bundle = BundlePhase::default();
            self.shared.open_bundles.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Every read of `begin_bundle`: one iterator seek per distinct prefix, one batched read
    /// of the single entries not covered by a prefix, one decode of everything.
    fn hydrate(&mut self, hydrate: MapHydration<'_>) -> Result<()> {
        let mut prefixes: Vec<Vec<u8>> = hydrate
            .prefixes
            .iter()
            .map(|(kg, p)| {
                let mut full = Vec::new();
                composite_key(&mut full, *kg, self.prefix_bytes, p);
                full
            })
            .collect();
        prefixes.sort_unstable();
        prefixes.dedup();
        let covered: HashSet<&[u8]> = prefixes.iter().map(Vec::as_slice).collect();
        let mut singles: Vec<Vec<u8>> = Vec::new();
        for (kg, prefix, user_key) in hydrate.entries {
            composite_key(&mut self.prefix_scratch, *kg, self.prefix_bytes, prefix);
            if covered.contains(self.prefix_scratch.as_slice()) {
                continue;
            }
            let mut full = self.prefix_scratch.clone();
            full.extend_from_slice(user_key);
            singles.push(full);
        }
        drop(covered);
        singles.sort_unstable();
        singles.dedup();
        if prefixes.is_empty() && singles.is_empty() {
            return Ok(());
        }

        let mut scanned = ReadBatch::default();
        let decoded = {
            let st = self.shared.read();
            let cf = st.table_cf(&self.name)?;
            for full in &prefixes {
                let mut options = ReadOptions::default();
                if let Some(upper) = state_api::prefix_successor(full) {
                    options.set_iterate_upper_bound(upper);
                }
                let mut iter = st.db.raw_iterator_cf_opt(&cf, options);
                iter.seek(full);
                while let Some((key, value)) = iter.item() {
                    scanned.push(key, value);
                    iter.next();
                }
                iter.status().map_err(rocks_api("prefix hydration"))?;
            }
            let results = if singles.is_empty() {
                Vec::new()
            } else {
                st.db.batched_multi_get_cf(&cf, &singles, true)
            };
            let mut hits = Vec::with_capacity(results.len());
            let mut pinned = Vec::with_capacity(results.len());
            for (i, result) in results.into_iter().enumerate() {
                if let Some(slice) = result.map_err(rocks_api("batched read"))? {
                    hits.push(i);
                    pinned.push(slice);
                }
            }
            let stored: Vec<&[u8]> = scanned
                .values()
                .chain(pinned.iter().map(|s| &**s))
                .collect();
            let decoded = self.decode(stored.iter().copied())?;
            (hits, decoded)
        };
        let (hits, (timestamps, values)) = decoded;
        self.stats.hydration_batches += 1;
        self.stats.hydrated_keys += (singles.len() + scanned.len()) as u64;
        let mut decoded = timestamps.into_iter().zip(values);
        for key in scanned.keys() {
            if let Some((ts, value)) = decoded.next() {
                self.admit(key.to_vec(), Entry::stored(ts, value));
            }
        }
        let mut found = hits.into_iter().zip(decoded).peekable();
        for (i, key) in singles.into_iter().enumerate() {
            let entry = match found.next_if(|(hit, _)| *hit == i) {
                Some((_, (ts, value))) => Entry::stored(ts, value),
                None => Entry::absent(),
            };
            self.admit(key, entry);
        }
        self.hydrated.extend(prefixes);
        Ok(())
    }

    /// Full keys and timestamps of the committed entries in `[lo, hi)` that the working set
    /// does not hold.
    fn committed_keys(&self, lo: &[u8], hi: Option<&[u8]>) -> Result<Vec<(Vec<u8>, i64)>> {
        let st = self.shared.read();
        let cf = st.table_cf(&self.name)?;
        let mut options = ReadOptions::default();
        if let Some(hi) = hi {
            options.set_iterate_upper_bound(hi);
        }
        let mut iter = st.db.raw_iterator_cf_opt(&cf, options);
        iter.seek(lo);
        let mut out = Vec::new();
        while let Some((key, value)) = iter.item() {
            if !self.entries.contains_key(key) {
                let ts = split_value(value).map_or(0, |(ts, _)| ts);
                out.push((key.to_vec(), ts));
            }
            iter.next();
        }
        iter.status().map_err(rocks_api("range scan"))?;
        Ok(out)
    }
}

/// Working-set entries of a scan's range, in scan order.
type OverlayIter<'a, V> = Box<dyn Iterator<Item = (&'a Vec<u8>, &'a Entry<V>)> + 'a>;

/// The working-set side of a merged scan.
type Overlay<'a, V> = std::iter::Peekable<OverlayIter<'a, V>>;

/// Visits the overlay entries before `bound` (all when `None`) in scan order; `Break` when the
/// visitor stopped.
fn drain_overlay<V, F>(
    overlay: &mut Overlay<'_, V>,
    bound: Option<&[u8]>,
    forward: bool,
    skip: usize,
    visible: &dyn Fn(&Entry<V>) -> bool,
    visit: &mut F,
) -> ControlFlow<()>
where
    F: FnMut(&[u8], &V) -> ControlFlow<()> + ?Sized,
{
    while let Some((key, _)) = overlay.peek() {
        let before = bound.is_none_or(|b| {
            if forward {
                key.as_slice() < b
            } else {
                key.as_slice() > b
            }
        });
        if !before {
            break;
        }
        if let Some((key, entry)) = overlay.next()
            && visible(entry)
            && let Some(value) = &entry.value
        {
            visit(key.get(skip..).unwrap_or_default(), value)?;
        }
    }
    ControlFlow::Continue(())
}

impl<C: ValueCodec> MapTable for RocksMapTable<C> {
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
            self.check_key_group(*key_group)?;
        }
        for (key_group, _, _) in hydrate.entries {
            self.check_key_group(*key_group)?;
        }
        self.entries.clear();
        self.hydrated.clear();
        self.range_deletes.clear();
        self.reservation.free();
        if let Err(e) = self.hydrate(hydrate) {
            self.end_bundle();
            return Err(e);
        }
        self.bundle.begin("begin_bundle")?;
        self.shared.open_bundles.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn get(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
    ) -> Result<Option<&C::Value>> {
        self.check_bundle("get", true)?;
        self.check_key_group(key_group)?;
        self.set_keys(key_group, prefix, user_key);
        self.resident()?;
        let now = self.now();
        let ttl = self.ttl;
        let Some(entry) = self.entries.get_mut(self.scratch.as_slice()) else {
            return Ok(None);
        };
        if !entry.live {
            return Ok(None);
        }
        let read = ttl_read(ttl.as_ref(), entry.last_access, now);
        if read.clears() {
            entry.live = false;
            entry.dirty = true;
        } else if read == TtlRead::LiveRefresh {
            entry.last_access = now;
            entry.dirty = true;
        }
        if read.returns_value() {
            Ok(entry.value.as_ref())
        } else {
            Ok(None)
        }
    }

    fn put(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
        value: C::Value,
    ) -> Result<()> {
        self.check_bundle("put", true)?;
        self.check_key_group(key_group)?;
        self.set_keys(key_group, prefix, user_key);
        let now = self.now();
        let needed = entry_cost(&self.codec, self.scratch.len(), Some(&value));
        let previous = self
            .entries
            .get(self.scratch.as_slice())
            .map_or(0, |e| e.reserved);
        if needed > previous {
            self.reservation.try_grow(needed - previous)?;
        } else {
            self.reservation.shrink(previous - needed);
        }
        let entry = match self.entries.get_mut(self.scratch.as_slice()) {
            Some(entry) => entry,
            None => self
                .entries
                .entry(self.scratch.clone())
                .or_insert_with(Entry::absent),
        };
        entry.value = Some(value);
        entry.live = true;
        entry.last_access = now;
        entry.dirty = true;
        entry.reserved = needed;
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
        self.check_key_group(key_group)?;
        self.set_keys(key_group, prefix, user_key);
        self.resident()?;
        let now = self.now();
        let bounded = self.reservation.pool().capacity().is_some();
        let Self {
            entries,
            scratch,
            codec,
            reservation,
            ttl,
            ..
        } = self;
        let Some(entry) = entries.get_mut(scratch.as_slice()) else {
            return Ok(None);
        };
        if !entry.live {
            return Ok(None);
        }
        // Visible as a scan sees it (memory-store's rule): an expired entry only under
        // `ReturnExpiredIfNotCleanedUp`, and the update then refreshes it.
        if !ttl_scan_visible(ttl.as_ref(), entry.last_access, now) {
            return Ok(None);
        }
        let Some(value) = entry.value.as_mut() else {
            return Ok(None);
        };
        let before = codec.heap_size(value);
        let backup = bounded.then(|| value.clone());
        let out = f(value);
        let after = codec.heap_size(value);
        if after > before {
            if let Err(e) = reservation.try_grow(after - before) {
                if let Some(backup) = backup {
                    *value = backup;
                }
                return Err(e);
            }
            entry.reserved += after - before;
        } else {
            let freed = (before - after).min(entry.reserved);
            reservation.shrink(freed);
            entry.reserved -= freed;
        }
        entry.last_access = now;
        entry.dirty = true;
        Ok(Some(out))
    }

    fn remove(&mut self, key_group: KeyGroup, prefix: &[u8], user_key: &[u8]) -> Result<()> {
        self.check_bundle("remove", true)?;
        self.check_key_group(key_group)?;
        self.set_keys(key_group, prefix, user_key);
        self.resident()?;
        let mut freed = 0;
        if let Some(entry) = self.entries.get_mut(self.scratch.as_slice())
            && entry.live
        {
            entry.live = false;
            entry.dirty = true;
            if let Some(value) = entry.value.take() {
                freed = self.codec.heap_size(&value).min(entry.reserved);
                entry.reserved -= freed;
            }
        }
        self.reservation.shrink(freed);
        Ok(())
    }

    /// Every entry of the range becomes a delete of the bundle (committed as one
    /// `delete_range_cf` from 16 entries on). The committed keys of a prefix that is not
    /// hydrated are listed with one iterator seek first (nothing changes when that read
    /// fails).
    fn remove_range(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        range: UserKeyRange<'_>,
    ) -> Result<u64> {
        self.check_bundle("remove_range", true)?;
        self.check_key_group(key_group)?;
        let mut full_prefix = Vec::new();
        composite_key(&mut full_prefix, key_group, self.prefix_bytes, prefix);
        let Some((lo, hi)) = rocks_bounds(&full_prefix, range) else {
            return Ok(0);
        };
        let now = self.now();
        let ttl = self.ttl;
        let committed = if self.hydrated.contains(&full_prefix) {
            Vec::new()
        } else {
            self.stats.point_hydrations += 1;
            self.committed_keys(&lo, hi.as_deref())?
        };
        let mut removed = 0_u64;
        let upper = hi.clone().map_or(Bound::Unbounded, Bound::Excluded);
        let mut freed = 0;
        let mut overlay_deleted = 0;
        for (_, entry) in self.entries.range_mut((Bound::Included(lo.clone()), upper)) {
            if !entry.live {
                continue;
            }
            overlay_deleted += 1;
            if ttl_scan_visible(ttl.as_ref(), entry.last_access, now) {
                removed += 1;
            }
            entry.live = false;
            entry.dirty = true;
            if let Some(value) = entry.value.take() {
                let heap = self.codec.heap_size(&value).min(entry.reserved);
                entry.reserved -= heap;
                freed += heap;
            }
        }
        self.reservation.shrink(freed);
        if let Some(hi) = &hi
            && overlay_deleted + committed.len() >= RANGE_DELETE_MIN_ENTRIES
        {
            self.range_deletes.push((lo.clone(), hi.clone()));
        }
        for (key, ts) in committed {
            if ttl_scan_visible(ttl.as_ref(), ts, now) {
                removed += 1;
            }
            let mut entry = Entry::absent();
            entry.dirty = true;
            self.admit(key, entry);
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
        self.check_key_group(key_group)?;
        let mut full_prefix = Vec::new();
        composite_key(&mut full_prefix, key_group, self.prefix_bytes, prefix);
        let Some((lo, hi)) = rocks_bounds(&full_prefix, range) else {
            return Ok(());
        };
        let now = self.now();
        let ttl = self.ttl;
        let skip = full_prefix.len();
        let forward = direction == ScanDirection::Forward;
        let upper = hi.clone().map_or(Bound::Unbounded, Bound::Excluded);
        let in_range = self.entries.range((Bound::Included(lo.clone()), upper));
        let boxed: OverlayIter<'_, C::Value> = if forward {
            Box::new(in_range)
        } else {
            Box::new(in_range.rev())
        };
        let mut overlay: Overlay<'_, C::Value> = boxed.peekable();
        let visible =
            |e: &Entry<C::Value>| e.live && ttl_scan_visible(ttl.as_ref(), e.last_access, now);

        if self.hydrated.contains(&full_prefix) {
            let _ = drain_overlay(&mut overlay, None, forward, skip, &visible, visit);
            return Ok(());
        }

        let st = self.shared.read();
        let cf = st.table_cf(&self.name)?;
        let mut options = ReadOptions::default();
        options.set_iterate_lower_bound(lo.clone());
        if let Some(hi) = &hi {
            options.set_iterate_upper_bound(hi.clone());
        }
        let mut iter = st.db.raw_iterator_cf_opt(&cf, options);
        if forward {
            iter.seek(&lo);
        } else {
            iter.seek_to_last();
        }
        let mut batch = ReadBatch::default();
        let mut batch_size = SCAN_BATCH_FIRST;
        let mut stopped = false;
        while !stopped {
            batch.clear();
            while batch.len() < batch_size {
                let Some((key, value)) = iter.item() else {
                    break;
                };
                let shadowed = self.entries.contains_key(key);
                let shown = split_value(value)
                    .is_none_or(|(ts, _)| ttl_scan_visible(ttl.as_ref(), ts, now));
                if !shadowed && shown {
                    batch.push(key, value);
                }
                if forward {
                    iter.next();
                } else {
                    iter.prev();
                }
            }
            let exhausted = !iter.valid();
            if exhausted {
                iter.status().map_err(rocks_api("scan"))?;
            }
            let (_, values) = self.decode(batch.values())?;
            for (key, value) in batch.keys().zip(&values) {
                if drain_overlay(&mut overlay, Some(key), forward, skip, &visible, visit).is_break()
                    || visit(key.get(skip..).unwrap_or_default(), value).is_break()
                {
                    stopped = true;
                    break;
                }
            }
            if exhausted && !stopped {
                let _ = drain_overlay(&mut overlay, None, forward, skip, &visible, visit);
                stopped = true;
            }
            batch_size = (batch_size * 4).min(SCAN_BATCH_MAX);
        }
        drop(iter);
        drop(cf);
        drop(st);
        drop(overlay);
        self.stats.point_hydrations += 1;
        Ok(())
    }

    fn commit_bundle(&mut self) -> Result<()> {
        self.check_bundle("commit_bundle", true)?;
        let mut written = 0_u64;
        {
            let st = self.shared.read();
            let cf = st.table_cf(&self.name)?;
            let mut puts: Vec<(i64, &C::Value)> = Vec::new();
            for entry in self.entries.values() {
                if entry.dirty
                    && entry.live
                    && let Some(value) = &entry.value
                {
                    puts.push((entry.last_access, value));
                }
            }
            let mut encoded = ReadBatch::default();
            encode_stored_values(&self.name, &self.rows, &self.codec, &puts, |_, bytes| {
                encoded.push(&[], bytes);
            })?;
            let mut values = encoded.values();
            let mut batch = WriteBatch::default();
            // Range deletes first: the puts after them in the batch carry later sequence
            // numbers, so an entry put after a range remove survives it.
            for (lower, upper) in &self.range_deletes {
                batch.delete_range_cf(&cf, lower, upper);
            }
            let covered = |key: &[u8]| {
                self.range_deletes
                    .iter()
                    .any(|(lower, upper)| lower.as_slice() <= key && key < upper.as_slice())
            };
            for (key, entry) in &self.entries {
                if !entry.dirty {
                    continue;
                }
                written += 1;
                if entry.live && entry.value.is_some() {
                    if let Some(bytes) = values.next() {
                        batch.put_cf(&cf, key, bytes);
                    }
                } else if !covered(key) {
                    batch.delete_cf(&cf, key);
                }
            }
            if !batch.is_empty() {
                st.db
                    .write_opt(batch, &self.shared.write_options)
                    .map_err(rocks_api("commit"))?;
            }
        }
        self.stats.written_keys += written;
        self.stats.bundles += 1;
        self.end_bundle();
        Ok(())
    }

    /// One step of `sweep_column_family`: at most `4 * max_entries` (at least 64) entries
    /// scanned from a cursor, the expired ones among them deleted (at most `max_entries`) in
    /// one write batch; a table without TTL has nothing to sweep.
    fn sweep_expired(&mut self, max_entries: usize) -> Result<SweepProgress> {
        self.check_bundle("sweep_expired", false)?;
        let Some(ttl) = self.ttl else {
            return Ok(SweepProgress::nothing_to_sweep());
        };
        let now = self.clock.now_millis();
        sweep_column_family(
            &self.shared,
            &self.name,
            &ttl,
            now,
            &mut self.sweep_cursor,
            max_entries,
        )
    }

    fn stats(&self) -> TableStats {
        self.stats
    }
}

impl<C: ValueCodec> Drop for RocksMapTable<C> {
    fn drop(&mut self) {
        self.end_bundle();
        if let Some(cf) = self.staged_cf.take() {
            self.shared.drop_cf(&cf);
        }
    }
}

impl<C: ValueCodec> CanonicalTable for RocksMapTable<C> {
    fn table_name(&self) -> &str {
        &self.name
    }

    fn table_key_groups(&self) -> KeyGroupRange {
        self.key_groups
    }

    fn canonical_schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    /// One prefix scan of the key group: key column `prefix ‖ user key` (the RocksDB key
    /// without its key-group prefix, [`state_api::map_entry_key`]), RocksDB's order, expired
    /// rows left out, values decoded only here.
    fn export_key_group(&self, key_group: KeyGroup) -> Result<Option<RecordBatch>> {
        self.check_bundle("export_key_group", false)?;
        self.check_key_group(key_group)?;
        let now = self.ttl.map(|_| self.clock.now_millis());
        let mut prefix = Vec::with_capacity(2);
        composite_key(&mut prefix, key_group, self.prefix_bytes, &[]);
        let mut read = ReadBatch::default();
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
                    scratch.try_grow(key.len() + value.len() + 2 * size_of::<usize>())?;
                    read.push(key.get(self.prefix_bytes..).unwrap_or_default(), value);
                }
                iter.next();
            }
            iter.status().map_err(rocks_api("export scan"))?;
        }
        if read.is_empty() {
            return Ok(None);
        }
        let (timestamps, values) = self.decode(read.values())?;
        let with_ttl = self.ttl.is_some();
        let rows: Vec<(&[u8], i64, &C::Value)> = read
            .keys()
            .zip(&timestamps)
            .zip(&values)
            .map(|((k, ts), v)| (k, if with_ttl { *ts } else { 0 }, v))
            .collect();
        encode_canonical_batch(&self.schema, &self.codec, &rows).map(Some)
    }

    /// Decodes every section once, re-encodes the values to the stored layout and bulk-loads
    /// them into a fresh staging column family (one SST file from 10 000 rows on, else write
    /// batches); the visible state is untouched until `commit_restore` swaps the family in.
    fn stage_restore(&mut self, batches: Vec<(KeyGroup, RecordBatch)>) -> Result<()> {
        self.check_bundle("restore", false)?;
        self.abort_restore();
        let mut ordered: Vec<&(KeyGroup, RecordBatch)> = batches.iter().collect();
        ordered.sort_by_key(|(kg, _)| *kg);
        for (key_group, _) in &ordered {
            self.check_key_group(*key_group)?;
        }
        let rows: usize = ordered.iter().map(|(_, b)| b.num_rows()).sum();
        let cf_name = self.shared.create_table_cf(&self.name)?;
        let loaded = load_staging(&self.shared, &cf_name, rows, true, |sink| {
            let mut key = Vec::new();
            for (key_group, record_batch) in ordered.iter().copied() {
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
                let mut failure = None;
                encode_stored_values(&self.name, &self.rows, &self.codec, &entries, |i, value| {
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
                if let Some(e) = failure {
                    return Err(e);
                }
            }
            Ok(())
        });
        if let Err(e) = loaded {
            self.shared.drop_cf(&cf_name);
            return Err(e);
        }
        self.staged_cf = Some(cf_name);
        Ok(())
    }

    fn commit_restore(&mut self) {
        let cf = match self.staged_cf.take() {
            Some(cf) => cf,
            // Nothing staged: the table becomes empty (a restore always stages, so this is
            // only a caller that never called `stage_restore`).
            None => match self.shared.create_table_cf(&self.name) {
                Ok(cf) => cf,
                Err(_) => return,
            },
        };
        self.shared.swap_table_cf(&self.name, &cf);
        self.sweep_cursor = None;
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

impl MapStateStore for RocksStore {
    type MapTable<C: ValueCodec> = RocksMapTable<C>;

    /// Opens the map table `name` in its own column family (created when new; its stored
    /// columns are checked against the codec's when it exists).
    fn open_map_table<C: ValueCodec>(
        &mut self,
        name: &str,
        codec: C,
        ttl: Option<TtlConfig>,
    ) -> Result<RocksMapTable<C>> {
        self.names.check_free(name)?;
        let fields = codec.fields();
        RowCodec::try_new(name, &fields)?;
        self.register_table(name, &map_columns(&fields), ttl)?;
        let table = RocksMapTable::new(name, codec, ttl, &self.config, Arc::clone(&self.shared))?;
        self.names.register(name)?;
        Ok(table)
    }
}
