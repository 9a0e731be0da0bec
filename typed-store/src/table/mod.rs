//! The RocksDB keyed table: a bundle's working map over one column family. One concern per
//! file: the table and its helpers here; `bundle.rs` (the `KeyedTable` impl), `hydrate.rs`
//! (reads into the working map, the cache's admission and eviction), `commit.rs` (encoding
//! a commit, write-through and the write-behind hand-off), `canonical.rs` (export and
//! restore).

mod bundle;
mod canonical;
mod commit;
mod hydrate;

use std::mem::size_of;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use arrow_schema::SchemaRef;
use keygroup::{KeyGroup, KeyGroupRange};
use state_api::{
    BundlePhase, Clock, MemoryReservation, Result, StoreConfig, TableStats, TtlConfig, ValueCodec,
    canonical_schema, key_group_offset, ttl_now,
};

use crate::cache::{Key, WorkingMap};
use crate::format::{RowCodec, decode_stored_values, encode_stored_values, prefix_bytes};
use crate::store::Shared;
use crate::write_behind::{SharedWriteBehind, WriteBehind};

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
    /// The key's place in the table's dirty list while `dirty_in` is the open bundle.
    dirty_at: usize,
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
            dirty_at: 0,
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
            dirty_at: 0,
            reserved: 0,
            bundle,
        }
    }
}

/// A key dirtied in the open bundle and what its commit writes: `(last access, value)`, or
/// `None` for a delete. The record is a copy of the slot's state, kept current by every
/// change of a dirty slot, so that a commit encodes from this list in order without looking
/// up a key again (a lookup is a cache miss per key in a large working map).
#[derive(Debug)]
struct Dirty<V> {
    key: Key,
    write: Option<(i64, V)>,
}

/// A keyed table stored in its own RocksDB column family.
///
/// - [`begin_bundle`](state_api::KeyedTable::begin_bundle) fetches every named key that is not cached
///   with **one** `batched_multi_get_cf` (pinned values, input order, keys need not be
///   sorted) and decodes all hits with one arrow-row conversion and one
///   [`ValueCodec::decode`] into the working map. A key not named is fetched alone with
///   `get_pinned_cf` (counted in [`TableStats::point_hydrations`]) and stays resident.
///   While the working map is **complete** (the table was opened empty and has evicted
///   nothing since), a key it lacks is absent: nothing is looked up or read.
/// - Every change of a dirty key updates its entry in the bundle's dirty list (the value to
///   write or a delete), so a commit encodes that list in order without a lookup per key.
/// - [`commit_bundle`](state_api::KeyedTable::commit_bundle) encodes the dirty values with one
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
///   reservation is tried once more. A `put` still refused is [`Error::MemoryExhausted`](state_api::Error::MemoryExhausted) and
///   leaves the key as it was; a hydrated value still refused is kept for the bundle only.
/// - TTL: Flink's rules on read (see [`KeyedTable`](state_api::KeyedTable)), the TTL compaction filter in the
///   background, and [`sweep_expired`](state_api::KeyedTable::sweep_expired) as a bounded scan.
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
    /// Keys dirtied in the open bundle, each once, with what their commit writes.
    dirty: Vec<Dirty<C::Value>>,
    /// Keys removed or cleared as expired in the open bundle (they leave the working map at
    /// commit unless put again).
    dead_keys: Vec<(Key, u64)>,
    /// Keys resident for this bundle only (absent in RocksDB, or refused by the pool).
    transient_keys: Vec<Key>,
    /// The store generation the cached entries belong to (a native restore bumps it).
    generation: u64,
    /// Whether the working map holds every key the table has (in RocksDB or the
    /// write-behind buffer): then a key it lacks is absent, and neither `begin_bundle` nor
    /// a get need look anywhere else. True for a table opened empty; false from the first
    /// eviction, refused admission or cache clear (a restore, a sweep that removed
    /// entries) on.
    complete: bool,
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
        let complete =
            WriteBehind::lock(&write_behind).is_empty() && shared.read().table_is_empty(name)?;
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
            dirty: Vec::new(),
            dead_keys: Vec::new(),
            transient_keys: Vec::new(),
            generation,
            complete,
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
}

/// Bytes a resident entry reserves: key, slot and the value's heap bytes.
fn entry_cost<C: ValueCodec>(codec: &C, key_len: usize, value: &C::Value) -> usize {
    key_len + size_of::<Slot<C::Value>>() + codec.heap_size(value)
}

/// Marks `slot` (of `key`) dirty in `bundle` after a change, listing the key once per bundle
/// with the write its commit makes: the slot's value and last access while it is live, a
/// delete otherwise.
fn mark_dirty<V: Clone>(slot: &mut Slot<V>, dirty: &mut Vec<Dirty<V>>, key: &[u8], bundle: u64) {
    let write = match (&slot.value, slot.live) {
        (Some(value), true) => Some((slot.last_access, value.clone())),
        _ => None,
    };
    if slot.dirty_in == bundle
        && let Some(listed) = dirty.get_mut(slot.dirty_at)
    {
        listed.write = write;
        return;
    }
    slot.dirty_in = bundle;
    slot.dirty_at = dirty.len();
    dirty.push(Dirty {
        key: Key::from(key),
        write,
    });
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
