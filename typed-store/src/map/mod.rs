//! The RocksDB map table: Flink's `MapState` layout in its own column family, a per-bundle
//! working set, and ordered scans merging committed state with the bundle's writes. By
//! concern: the table, its working-set entries and point hydration here; the bundle
//! operations (`MapTable`) in `bundle.rs`; `begin_bundle`'s reads in `hydrate.rs`; the
//! merged scan and committed-range reads in `scan.rs`; canonical export and restore in
//! `restore.rs`.

mod bundle;
mod dirty;
mod hydrate;
mod pending;
mod restore;
mod scan;

use dirty::DirtyKeys;
use pending::PendingMapWrites;
use scan::ReadBatch;
#[cfg(doc)]
use state_api::{Error, MapTable};

use std::collections::HashSet;
use std::mem::size_of;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use arrow_schema::SchemaRef;
use keygroup::{KeyGroup, KeyGroupRange};
use state_api::{
    BundlePhase, Clock, MapStateStore, MemoryReservation, PrefetchStages, PrefixEntry, PrefixMap,
    Result, StoreConfig, TableStats, TtlConfig, ValueCodec, canonical_schema, key_group_offset,
    ttl_now,
};

use crate::error::rocks_api;
use crate::format::{RowCodec, composite_key, decode_stored_values, map_columns, prefix_bytes};
use crate::store::{RocksStore, Shared};

/// An upper bound of the bytes of a `WriteBatch` of `records` records (puts, deletes or
/// range deletes in a column family) holding `payload` bytes of keys and values: RocksDB's
/// 12-byte header, then per record a tag byte, the family id and the lengths as varints (at
/// most 5 bytes each). A batch allocated at this size never grows (growing by doubling
/// copied it and faulted in fresh pages at every step).
fn write_batch_capacity(records: usize, payload: usize) -> usize {
    const RECORD_OVERHEAD: usize = 1 + 3 * 5;
    12 + payload + records * RECORD_OVERHEAD
}

/// A `remove_range` that deletes at least this many entries is committed as one
/// `delete_range_cf` instead of per-key deletes: later seeks into a prefix cleared with
/// per-key deletes step over every point tombstone until a compaction drops them (the
/// `remove_range` figures in the README).
const RANGE_DELETE_MIN_ENTRIES: usize = 16;

/// One entry of the bundle's working set.
#[derive(Debug)]
struct Entry<V> {
    /// The value (kept after an expired read under `ReturnExpiredIfNotCleanedUp`).
    value: Option<V>,
    /// Whether the entry is present (not removed, not cleared as expired).
    live: bool,
    last_access: i64,
    /// The epoch of the bundle that last dirtied it (dirty while it is the current one,
    /// [`DirtyKeys::is_dirty`]; 0: none).
    dirty_in: u64,
    /// Bytes reserved from the pool for it.
    reserved: usize,
}

impl<V> Entry<V> {
    fn absent() -> Self {
        Self {
            value: None,
            live: false,
            last_access: 0,
            dirty_in: 0,
            reserved: 0,
        }
    }

    fn stored(last_access: i64, value: V) -> Self {
        Self {
            value: Some(value),
            live: true,
            last_access,
            dirty_in: 0,
            reserved: 0,
        }
    }
}

/// Bytes a resident entry reserves: key, entry and the value's heap bytes.
fn entry_cost<C: ValueCodec>(codec: &C, key_len: usize, value: Option<&C::Value>) -> usize {
    key_len + size_of::<Entry<C::Value>>() + value.map_or(0, |v| codec.heap_size(v))
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
/// - **Complete tables.** A table without TTL opened on an empty column family keeps every
///   entry in its working set across bundles: `begin_bundle` reads nothing, a prefix or
///   entry the set lacks is absent, scans are served from memory, and each commit's changes
///   go to its write-behind buffer (below) or straight through. The first
///   reservation the pool refuses, or a commit that leaves a bounded pool more than half
///   used even after its write-behind buffer is written (the pool is shared and nothing
///   evicts across tables), writes the buffer and drops the clean entries
///   and the table reads as below from then on (as does a table opened with state, after a
///   restore, or after a native restore of the store).
/// - [`begin_bundle`](MapTable::begin_bundle) (of a table that is not complete) reads each
///   named prefix with **one** iterator
///   seek (`iterate_upper_bound` at the prefix's successor) and the named single entries with
///   **one** `batched_multi_get_cf` (sorted keys), and decodes everything it read with one
///   arrow-row conversion and one [`ValueCodec::decode`] into the bundle's working set (a
///   [`PrefixMap`](state_api::PrefixMap) by full prefix and user key: a hash index of the
///   full prefixes, each prefix's entries ordered by user key).
/// - Point reads of entries not hydrated are one `get_pinned_cf` each
///   ([`TableStats::point_hydrations`]); a named prefix answers misses without a read.
/// - [`scan`](MapTable::scan) of a hydrated prefix is served from memory; otherwise it merges
///   a RocksDB iterator (forward: `seek` to the lower bound; reverse: `seek_to_last` under
///   the upper bound; both bounds set on the `ReadOptions`, `status()` checked when the
///   iterator ends) with the working set's writes, removes and range removes, decoding
///   committed values in batches (1, then 16, 256, 256, …) and skipping entries the
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
///   `WriteBatch` with the WAL off; the working set is then dropped (a complete table keeps
///   it, clean). A complete table's commit without range deletes writes nothing: its
///   encoded writes wait in the table's write-behind buffer (`pending.rs`; bytes reserved
///   from the pool) until the buffer passes the slot's write-behind limit
///   ([`RocksSlot::with_write_behind`](crate::RocksSlot::with_write_behind); 0 writes every
///   commit through), the table stops being complete, a commit writes through, the table is
///   exported or dropped, or the store flushes (a native checkpoint,
///   [`RocksStore::write_pending`], `flush_table`, `compact_table`); then one sorted
///   `WriteBatch` writes each key's last write (RocksDB's memtable inserts cost far less in
///   such dense batches; see the crate README). A restore discards it.
/// - Memory: every resident entry reserves `key + size_of::<Entry<V>>() + heap_size` from the
///   pool, and every prefix with resident entries
///   [`PrefixMap::PREFIX_BYTES`](state_api::PrefixMap::PREFIX_BYTES), while it is resident
///   (until the bundle ends, or until it is removed from a complete table); a `put` the
///   pool refuses (after a complete table dropped its clean entries) is
///   [`Error::MemoryExhausted`] and changes nothing; hydrated entries (and prefixes) the pool
///   refuses are kept unreserved for the bundle.
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
    /// The bundle's working set (every entry, while complete) by full prefix (key-group
    /// prefix ‖ prefix) and user key.
    entries: PrefixMap<Entry<C::Value>>,
    /// [`PrefixMap::PREFIX_BYTES`] per prefix of `entries` (at most that: a hydrated
    /// prefix the pool refuses is kept unreserved, as its entries are).
    prefixes_reserved: MemoryReservation,
    /// Prefetch hints in flight: the full prefixes' hashes.
    ahead: PrefetchStages<u64>,
    /// Full prefixes (key-group prefix ‖ prefix) whose committed entries are all resident.
    hydrated: HashSet<Vec<u8>, foldhash::fast::RandomState>,
    /// Ranges `[lower, upper)` of full keys the bundle cleared of at least
    /// [`RANGE_DELETE_MIN_ENTRIES`] entries: committed with one `delete_range_cf` each.
    range_deletes: Vec<(Vec<u8>, Vec<u8>)>,
    bundle: BundlePhase,
    scratch: Vec<u8>,
    prefix_scratch: Vec<u8>,
    /// The read buffers of scans, kept between scans (at most [`SCAN_BATCH_MAX`] entries).
    scan_batch: ReadBatch,
    reservation: MemoryReservation,
    /// Whether the working set holds every entry the table has (then it is kept across
    /// bundles, a prefix it lacks has no entries, and nothing is read from RocksDB). True for
    /// a table without TTL opened with an empty column family; false for good from the
    /// first pool refusal that drops the clean entries, a restore or a native restore on.
    /// (With TTL the compaction filter drops expired entries underneath a cache, so such a
    /// table is never complete.)
    complete: bool,
    /// The store generation the working set belongs to (a native restore bumps it).
    generation: u64,
    /// The keys the open bundle changed (read by the commit of a complete table).
    dirty: DirtyKeys,
    /// A complete table's committed writes not yet in RocksDB (`pending.rs`), shared with
    /// the store's flush points.
    pending: Arc<PendingMapWrites>,
    /// The slot's write-behind limit (0: every commit writes through).
    write_behind_limit: usize,
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
        let complete = ttl.is_none() && shared.read().table_is_empty(name)?;
        let generation = shared.generation();
        let pending = Arc::new(PendingMapWrites::new(
            name,
            Arc::clone(&shared),
            Arc::clone(config.memory_pool()),
        ));
        let weak: Weak<PendingMapWrites> = Arc::downgrade(&pending);
        shared.register_pending(name, weak);
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
            entries: PrefixMap::new(),
            prefixes_reserved: MemoryReservation::new(Arc::clone(config.memory_pool())),
            ahead: PrefetchStages::default(),
            hydrated: HashSet::default(),
            range_deletes: Vec::new(),
            bundle: BundlePhase::default(),
            scratch: Vec::new(),
            prefix_scratch: Vec::new(),
            scan_batch: ReadBatch::default(),
            reservation: MemoryReservation::new(Arc::clone(config.memory_pool())),
            complete,
            generation,
            dirty: DirtyKeys::default(),
            pending,
            write_behind_limit,
            staged_cf: None,
            sweep_cursor: None,
            stats: TableStats::default(),
        })
    }

    /// Bytes this table currently holds from the memory pool for its working set (the
    /// bundle's, or every entry while the table is complete); the write-behind buffer's are
    /// [`write_behind_bytes`](Self::write_behind_bytes).
    pub fn reserved_bytes(&self) -> usize {
        self.reservation.size() + self.prefixes_reserved.size()
    }

    /// Bytes of committed writes waiting in the write-behind buffer (a complete table's;
    /// reserved from the memory pool).
    pub fn write_behind_bytes(&self) -> usize {
        self.pending.bytes()
    }

    /// Write-behind flushes that wrote something so far.
    pub fn write_behind_flushes(&self) -> u64 {
        self.pending.flushes()
    }

    /// The user key of the full key in `scratch` (after the full prefix in
    /// `prefix_scratch`).
    fn scratch_user_key(&self) -> &[u8] {
        self.scratch
            .get(self.prefix_scratch.len()..)
            .unwrap_or_default()
    }

    /// Sets the prefix charge to what the working set's prefixes need, `extra` more
    /// prefixes included; a growth the pool refuses is an error and changes nothing.
    fn charge_prefixes(&mut self, extra: usize) -> Result<()> {
        // This table charges by the prefix count, not by the map's releases.
        let _ = self.entries.take_released();
        let need = (self.entries.prefixes() + extra) * PrefixMap::<Entry<C::Value>>::PREFIX_BYTES;
        self.prefixes_reserved.try_resize(need)
    }

    /// Empties the working set and gives back everything it reserved.
    fn clear_entries(&mut self) {
        self.entries = PrefixMap::new();
        self.reservation.free();
        self.prefixes_reserved.free();
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

    /// Inserts a hydrated entry of `prefix ‖ user_key`, reserving its memory (and its
    /// prefix's, when it opens one) when the pool grants it.
    fn admit(&mut self, prefix: &[u8], user_key: &[u8], mut entry: Entry<C::Value>) {
        let cost = entry_cost(
            &self.codec,
            prefix.len() + user_key.len(),
            entry.value.as_ref(),
        );
        if self.reservation.try_grow(cost).is_ok() {
            entry.reserved = cost;
        }
        let opened = match self.entries.entry(prefix, user_key) {
            PrefixEntry::Occupied(old) => {
                self.reservation.shrink(old.reserved);
                *old = entry;
                false
            }
            PrefixEntry::Vacant(vacant) => {
                let opens = vacant.opens_prefix();
                vacant.insert(entry);
                opens
            }
        };
        if opened {
            // Refused: the prefix stays unreserved, as a refused entry does.
            let _ = self.charge_prefixes(0);
        }
    }

    /// Makes the entry whose full key is in `scratch` resident (one point read unless its
    /// prefix is hydrated).
    fn resident(&mut self) -> Result<()> {
        // The prefix first: a complete table answers without a search.
        if self.prefix_resident(self.prefix_scratch.as_slice())
            || self
                .entries
                .get(&self.prefix_scratch, self.scratch_user_key())
                .is_some()
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
        let (prefix, key) = (
            std::mem::take(&mut self.prefix_scratch),
            std::mem::take(&mut self.scratch),
        );
        self.admit(&prefix, key.get(prefix.len()..).unwrap_or_default(), entry);
        (self.prefix_scratch, self.scratch) = (prefix, key);
        Ok(())
    }

    /// Whether every committed entry of `full_prefix` is in the working set.
    fn prefix_resident(&self, full_prefix: &[u8]) -> bool {
        self.complete || self.hydrated.contains(full_prefix)
    }

    /// Bytes the entry in `scratch` holds from the pool (0 when absent).
    fn scratch_reserved(&self) -> usize {
        self.entries
            .get(&self.prefix_scratch, self.scratch_user_key())
            .map_or(0, |e| e.reserved)
    }

    /// Reserves what the entry in `scratch` needs, `needed` bytes in all, beyond the
    /// `previous` it holds ([`scratch_reserved`](Self::scratch_reserved), known to the caller:
    /// no search); a complete table the pool refuses drops its clean entries (becoming
    /// incomplete; the entry may be one of them) and asks once more.
    fn reserve_entry(&mut self, previous: usize, needed: usize) -> Result<()> {
        let grant = |reservation: &mut MemoryReservation, previous: usize| {
            if needed > previous {
                reservation.try_grow(needed - previous)
            } else {
                reservation.shrink(previous - needed);
                Ok(())
            }
        };
        match grant(&mut self.reservation, previous) {
            Err(_) if self.complete => {
                self.drop_clean_entries()?;
                let previous = self.scratch_reserved();
                grant(&mut self.reservation, previous)
            }
            result => result,
        }
    }

    /// Makes the table incomplete: writes the pending writes (an incomplete table reads
    /// RocksDB), then drops every entry the open bundle has not changed (they equal
    /// RocksDB's) and their reservations; the bundle's changes stay and shadow RocksDB as in
    /// any incomplete bundle.
    ///
    /// # Errors
    /// The flush's; the table then stays complete and unchanged.
    fn drop_clean_entries(&mut self) -> Result<()> {
        self.pending.flush()?;
        self.complete = false;
        self.hydrated.clear();
        let mut freed = 0;
        let epoch = self.dirty.epoch();
        self.entries.retain(|_, _, entry| {
            if entry.dirty_in == epoch {
                return true;
            }
            freed += entry.reserved;
            false
        });
        self.reservation.shrink(freed);
        // Fewer prefixes: a shrink, which cannot fail.
        let _ = self.charge_prefixes(0);
        Ok(())
    }

    /// Before a bundle: a native restore since the last one (a new store generation) changed
    /// RocksDB underneath, so the working set is dropped and the table is incomplete.
    fn check_generation(&mut self) {
        let generation = self.shared.generation();
        if generation != self.generation {
            self.generation = generation;
            self.complete = false;
            self.pending.discard();
            self.clear_entries();
        }
    }

    /// After a successful commit of a complete table: the working set stays as the committed
    /// state (`removed`, the keys of the entries the commit deleted, leave it; the rest turns
    /// clean with the dirty list's epoch, no search) and the bundle closes.
    fn keep_committed(&mut self, removed: &dirty::KeyList) {
        let mut freed = 0;
        for key in removed.iter() {
            let (prefix, user_key) = dirty::split_key(key);
            if let Some(entry) = self.entries.remove(prefix, user_key) {
                freed += entry.reserved;
            }
        }
        self.reservation.shrink(freed);
        let _ = self.charge_prefixes(0);
        self.dirty.clear();
        self.range_deletes.clear();
        self.close_bundle();
    }

    fn close_bundle(&mut self) {
        if self.bundle.is_open() {
            self.bundle = BundlePhase::default();
            self.shared.open_bundles.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Drops the working set and its reservation (the table is incomplete from then on), and
    /// closes the bundle.
    fn end_bundle(&mut self) {
        self.complete = false;
        self.dirty.clear();
        self.clear_entries();
        self.hydrated.clear();
        self.range_deletes.clear();
        self.close_bundle();
    }
}

impl<C: ValueCodec> Drop for RocksMapTable<C> {
    fn drop(&mut self) {
        // Committed writes reach RocksDB (a failure here has no caller to tell; the store's
        // next checkpoint would have written them, and it cannot now).
        let _ = self.pending.flush();
        self.end_bundle();
        if let Some(cf) = self.staged_cf.take() {
            self.shared.drop_cf(&cf);
        }
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
