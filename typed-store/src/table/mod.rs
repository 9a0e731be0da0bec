//! The RocksDB keyed table: a bundle's working map over one column family. One concern per
//! file: the table's state and its helpers here; `handle.rs` (the public handle, which
//! checks the state out of a store-held slot for a bundle), `bundle.rs` (the `KeyedTable`
//! operations), `hydrate.rs` (reads into the working map, the cache's admission and
//! eviction), `commit.rs` (encoding a commit, write-through and the write-behind flush),
//! `canonical.rs` (export and restore).

mod bundle;
mod canonical;
mod changes;
mod commit;
mod handle;
mod hydrate;

pub(crate) use handle::PendingWrites;
pub use handle::RocksKeyedTable;

use std::mem::size_of;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use arrow_schema::SchemaRef;
use keygroup::{KeyGroup, KeyGroupRange};
use state_api::{
    BundlePhase, BundlePrefetch, Clock, MemoryReservation, Result, StoreConfig, TableStats,
    TtlConfig, ValueCodec, canonical_schema, key_group_offset, ttl_now,
};

use crate::cache::{Key, WorkingMap};
use crate::format::{RowCodec, decode_stored_values, encode_stored_values, prefix_bytes};
use crate::store::Shared;

use changes::Changes;

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
    /// Committed (or changed in the open bundle) and not yet written to RocksDB: the
    /// write-behind state. A pending slot is never evicted.
    pending: bool,
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
            pending: false,
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
            pending: false,
            reserved: 0,
            bundle,
        }
    }
}

/// The state of a keyed table ([`RocksKeyedTable`] describes the behaviour): its working map,
/// bundle bookkeeping and write-behind state.
pub(crate) struct TableCore<C: ValueCodec> {
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
    /// The open bundle's named keys (their working-map hashes, in order), for the gets to
    /// prefetch their slots ahead.
    ahead: BundlePrefetch<u64>,
    scratch: Vec<u8>,
    /// The RocksDB keys `begin_bundle` misses, back to back (`miss_ends` ends each).
    miss_bytes: Vec<u8>,
    miss_ends: Vec<usize>,
    bundle_phase: BundlePhase,
    /// The number of the open (or last) bundle.
    bundle: u64,
    /// What the bundle's changes leave to write (`changes.rs`).
    changes: Changes<C::Value>,
    /// Keys removed or cleared as expired in the open bundle (they leave the working map at
    /// commit unless put again).
    dead_keys: Vec<(Key, u64)>,
    /// Keys resident for this bundle only (absent in RocksDB, or refused by the pool).
    transient_keys: Vec<Key>,
    /// The store generation the cached entries belong to (a native restore bumps it).
    generation: u64,
    /// Whether the working map holds every key the table has (every key with a pending
    /// write is resident, so this is about RocksDB): then a key it lacks is absent, and neither `begin_bundle` nor
    /// a get need look anywhere else. True for a table opened empty; false from the first
    /// eviction, refused admission or cache clear (a restore, a sweep that removed
    /// entries) on.
    complete: bool,
    reservation: MemoryReservation,
    /// Whether the pool has a capacity (an in-place update then keeps a copy to restore).
    bounded_pool: bool,
    /// The column family filled by `stage_restore`, swapped in by `commit_restore`.
    staged_cf: Option<String>,
    sweep_cursor: Option<Vec<u8>>,
    stats: TableStats,
    /// The write-behind limit in bytes ([`Self::pending_bytes`]); 0 writes every commit
    /// through.
    write_behind_limit: usize,
    /// Flushes that wrote at least one key, and the keys they wrote.
    flushes: u64,
    flushed_keys: u64,
    /// A commit's encoded values, back to back (`encoded_ends` ends each).
    encoded: Vec<u8>,
    encoded_ends: Vec<usize>,
}

impl<C: ValueCodec> std::fmt::Debug for TableCore<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableCore")
            .field("name", &self.name)
            .field("key_groups", &self.key_groups)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<C: ValueCodec> TableCore<C> {
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
        let write_behind_limit = shared.slot.write_behind();
        let complete = shared.read().table_is_empty(name)?;
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
            ahead: BundlePrefetch::default(),
            scratch: Vec::new(),
            miss_bytes: Vec::new(),
            miss_ends: Vec::new(),
            bundle_phase: BundlePhase::default(),
            bundle: 0,
            changes: Changes::new(write_behind_limit == 0),
            dead_keys: Vec::new(),
            transient_keys: Vec::new(),
            generation,
            complete,
            reservation: MemoryReservation::new(Arc::clone(config.memory_pool())),
            bounded_pool: config.memory_pool().capacity().is_some(),
            staged_cf: None,
            sweep_cursor: None,
            stats: TableStats::default(),
            write_behind_limit,
            flushes: 0,
            flushed_keys: 0,
            encoded: Vec::new(),
            encoded_ends: Vec::new(),
        })
    }

    pub(crate) fn reserved_bytes(&self) -> usize {
        self.reservation.size()
    }

    /// Whether committed writes wait in the write-behind state.
    pub(crate) fn has_pending(&self) -> bool {
        !self.changes.pending.is_empty()
    }

    pub(crate) fn write_behind_bytes(&self) -> usize {
        self.changes.pending_bytes
    }

    pub(crate) fn bundle_open(&self) -> bool {
        self.bundle_phase.is_open()
    }

    pub(crate) fn write_behind_flushes(&self) -> (u64, u64) {
        (self.flushes, self.flushed_keys)
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

impl<C: ValueCodec> Drop for TableCore<C> {
    /// Writes the pending entries (committed state only, also while a bundle is open; a
    /// failure is lost with the handle, as a crash would lose it), ends an open bundle's
    /// count and drops a staged restore.
    fn drop(&mut self) {
        let _ = self.flush_pending();
        if self.bundle_phase.is_open() {
            self.shared.open_bundles.fetch_sub(1, Ordering::SeqCst);
        }
        if let Some(cf) = self.staged_cf.take() {
            self.shared.drop_cf(&cf);
        }
    }
}
