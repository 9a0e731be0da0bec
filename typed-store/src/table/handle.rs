//! The public handle of a keyed table. The table's state ([`TableCore`]) lives in a slot
//! shared with the store, so that the store's flush points (a native checkpoint, `flush_table`,
//! `compact_table`, a native restore's discard) reach the pending writes of every table; for a
//! bundle the handle checks the state out of the slot (one lock at `begin_bundle`, one at
//! `commit_bundle`) so that get, put and remove take no lock.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use keygroup::{KeyGroup, KeyGroupRange, MaxParallelism};
use state_api::{CanonicalTable, KeyedTable, Result, SweepProgress, TableStats, ValueCodec};

use super::TableCore;

/// What the store asks of a table's state through its slot.
pub(crate) trait PendingWrites: Send + Sync {
    /// Writes the table's pending entries to RocksDB. `BundleState` while the table's state
    /// is checked out for a bundle.
    fn flush(&self) -> Result<()>;

    /// Whether [`flush`](PendingWrites::flush) has anything to do: pending entries, or a
    /// state checked out for a bundle (whose flush is the error to report).
    fn has_pending(&self) -> bool;

    /// Drops the pending entries and the cache (a native restore replaced the state).
    fn discard(&self);
}

/// The store-held slot of a table's state: `None` while a bundle has it checked out.
pub(crate) struct CoreSlot<C: ValueCodec> {
    core: Mutex<Option<Box<TableCore<C>>>>,
}

impl<C: ValueCodec> CoreSlot<C> {
    fn lock(&self) -> MutexGuard<'_, Option<Box<TableCore<C>>>> {
        // A panic in a table operation leaves the state as that operation left it; the
        // next operation's own checks apply.
        self.core.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<C: ValueCodec> PendingWrites for CoreSlot<C> {
    fn flush(&self) -> Result<()> {
        match self.lock().as_mut() {
            Some(core) => core.flush_pending(),
            None => Err(closed("flush a table in an open bundle")),
        }
    }

    fn has_pending(&self) -> bool {
        self.lock().as_ref().is_none_or(|core| core.has_pending())
    }

    fn discard(&self) {
        if let Some(core) = self.lock().as_mut() {
            core.clear_cache();
        }
    }
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
///   [`ValueCodec::encode`] and one arrow-row conversion and writes them in **one**
///   `WriteBatch` with the WAL off when the write-behind limit is 0; otherwise (the default,
///   see [`RocksSlot::with_write_behind`](crate::RocksSlot::with_write_behind)) committed
///   values stay in the working map as **pending** entries and reach RocksDB in one sorted
///   `WriteBatch` per flush (`commit.rs`). No flush is
///   forced; the working map then stays a **clean cache** of committed state, so hot keys of
///   later bundles need no read. Removed and expired keys
///   leave it; it is cleared whole only after a restore or a sweep that removed entries
///   (RocksDB changed underneath).
/// - The working map is a [`FlatMap`](state_api::FlatMap) (open addressing, foldhash) over
///   RocksDB keys stored inline up to 22 bytes: a get, put or remove hashes its key once and
///   allocates nothing for a key already resident; dirty keys are listed inline too.
///   `begin_bundle` hashes the named keys, and get number `n` prefetches the slot of the
///   `n + 16`th ([`BundlePrefetch`](state_api::BundlePrefetch)).
/// - Memory: every resident entry (pending write or cached value) reserves
///   `key length + size_of::<Slot<V>>() +` [`ValueCodec::heap_size`] from the store's pool,
///   so the cache is as large as the pool grants. When the pool refuses, clean entries not
///   used in the open bundle are evicted until an eighth of the cache's bytes is free and the
///   reservation is tried once more. A `put` still refused is [`Error::MemoryExhausted`](state_api::Error::MemoryExhausted) and
///   leaves the key as it was; a hydrated value still refused is kept for the bundle only.
/// - TTL: Flink's rules on read (see [`KeyedTable`](state_api::KeyedTable)), the TTL compaction filter in the
///   background, and [`sweep_expired`](state_api::KeyedTable::sweep_expired) as a bounded scan.
pub struct RocksKeyedTable<C: ValueCodec> {
    slot: Arc<CoreSlot<C>>,
    /// The state while a bundle has it checked out.
    out: Option<Box<TableCore<C>>>,
    name: String,
    key_groups: KeyGroupRange,
    schema: SchemaRef,
    max_parallelism: MaxParallelism,
    has_ttl: bool,
}

impl<C: ValueCodec> std::fmt::Debug for RocksKeyedTable<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksKeyedTable")
            .field("name", &self.name)
            .field("key_groups", &self.key_groups)
            .field("in_bundle", &self.out.is_some())
            .finish_non_exhaustive()
    }
}

impl<C: ValueCodec> RocksKeyedTable<C> {
    pub(crate) fn new(core: TableCore<C>) -> Self {
        Self {
            name: core.name.clone(),
            key_groups: core.key_groups,
            schema: Arc::clone(&core.schema),
            max_parallelism: core.max_parallelism,
            has_ttl: core.ttl.is_some(),
            slot: Arc::new(CoreSlot {
                core: Mutex::new(Some(Box::new(core))),
            }),
            out: None,
        }
    }

    /// The slot the store keeps (weakly) to reach the pending writes.
    pub(crate) fn pending_writes(&self) -> std::sync::Weak<dyn PendingWrites> {
        let slot: Arc<dyn PendingWrites> = self.slot.clone();
        Arc::downgrade(&slot)
    }

    /// Runs `f` on the state, wherever it is.
    fn with<R>(&self, f: impl FnOnce(&TableCore<C>) -> R) -> Option<R> {
        match &self.out {
            Some(core) => Some(f(core)),
            None => self.slot.lock().as_deref().map(f),
        }
    }

    /// Runs `f` on the state mutably, wherever it is.
    fn with_mut<R>(&mut self, f: impl FnOnce(&mut TableCore<C>) -> R) -> Option<R> {
        match &mut self.out {
            Some(core) => Some(f(core)),
            None => self.slot.lock().as_deref_mut().map(f),
        }
    }

    /// The state of the open bundle, or the error of an operation outside one.
    fn in_bundle(&mut self, operation: &'static str) -> Result<&mut TableCore<C>> {
        match self.out.as_deref_mut() {
            Some(core) => Ok(core),
            None => Err(closed(operation)),
        }
    }

    /// Bytes this table's working map (pending writes and cached values) currently holds
    /// from the memory pool.
    pub fn reserved_bytes(&self) -> usize {
        self.with(TableCore::reserved_bytes).unwrap_or(0)
    }

    /// What the table's pending writes (committed values not yet in RocksDB) count against
    /// the write-behind limit: key and slot bytes of each pending key (their memory is the
    /// cache's, already in [`reserved_bytes`](Self::reserved_bytes)).
    pub fn write_behind_bytes(&self) -> usize {
        self.with(TableCore::write_behind_bytes).unwrap_or(0)
    }

    /// `(flushes, keys)`: how often the pending writes were written to RocksDB and how many
    /// keys were written (with write-through, `(0, 0)`: every commit writes directly).
    pub fn write_behind_flushes(&self) -> (u64, u64) {
        self.with(TableCore::write_behind_flushes).unwrap_or((0, 0))
    }
}

/// The `BundleState` error of `operation` outside a bundle; also what an operation gets when
/// the state is neither checked out nor in its slot (a panic while it was out).
fn closed(operation: &'static str) -> state_api::Error {
    state_api::Error::BundleState {
        operation,
        requires_open: true,
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
        if let Some(core) = self.out.as_deref_mut() {
            // A bundle is open: the state's own check reports it.
            return core.begin_bundle(keys);
        }
        let mut core = self
            .slot
            .lock()
            .take()
            .ok_or_else(|| closed("begin_bundle"))?;
        match core.begin_bundle(keys) {
            Ok(()) => {
                self.out = Some(core);
                Ok(())
            }
            Err(e) => {
                *self.slot.lock() = Some(core);
                Err(e)
            }
        }
    }

    fn get(&mut self, key_group: KeyGroup, key: &[u8]) -> Result<Option<&C::Value>> {
        self.in_bundle("get")?.get(key_group, key)
    }

    fn put(&mut self, key_group: KeyGroup, key: &[u8], value: C::Value) -> Result<()> {
        self.in_bundle("put")?.put(key_group, key, value)
    }

    fn update<R>(
        &mut self,
        key_group: KeyGroup,
        key: &[u8],
        f: impl FnOnce(&mut C::Value) -> R,
    ) -> Result<Option<R>> {
        self.in_bundle("update")?.update(key_group, key, f)
    }

    fn upsert(
        &mut self,
        key_group: KeyGroup,
        key: &[u8],
        insert: impl FnOnce() -> C::Value,
        f: impl FnOnce(&mut C::Value),
    ) -> Result<bool> {
        self.in_bundle("upsert")?.upsert(key_group, key, insert, f)
    }

    fn remove(&mut self, key_group: KeyGroup, key: &[u8]) -> Result<()> {
        self.in_bundle("remove")?.remove(key_group, key)
    }

    fn commit_bundle(&mut self) -> Result<()> {
        let core = self.in_bundle("commit_bundle")?;
        let result = core.commit_bundle();
        // Back into the slot once the bundle is closed (a failed commit leaves it open).
        if !core.bundle_open()
            && let Some(core) = self.out.take()
        {
            *self.slot.lock() = Some(core);
        }
        result
    }

    fn sweep_expired(&mut self, max_entries: usize) -> Result<SweepProgress> {
        self.with_mut(|core| core.sweep_expired(max_entries))
            .unwrap_or_else(|| Err(closed("sweep_expired")))
    }

    fn stats(&self) -> TableStats {
        self.with(TableCore::stats).unwrap_or_default()
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

    /// Writes the pending entries first (the export reads RocksDB), then a prefix scan of the
    /// key group.
    fn export_key_group(&self, key_group: KeyGroup) -> Result<Option<RecordBatch>> {
        if let Some(core) = self.out.as_deref() {
            // In a bundle: the state's own check refuses.
            return core.export_key_group(key_group);
        }
        let mut guard = self.slot.lock();
        let core = guard
            .as_deref_mut()
            .ok_or_else(|| closed("export_key_group"))?;
        core.flush_pending()?;
        core.export_key_group(key_group)
    }

    fn stage_restore(&mut self, batches: Vec<(KeyGroup, RecordBatch)>) -> Result<()> {
        self.with_mut(|core| core.stage_restore(batches))
            .unwrap_or_else(|| Err(closed("restore")))
    }

    fn commit_restore(&mut self) {
        self.with_mut(TableCore::commit_restore);
    }

    fn abort_restore(&mut self) {
        self.with_mut(TableCore::abort_restore);
    }

    fn table_max_parallelism(&self) -> MaxParallelism {
        self.max_parallelism
    }

    fn table_has_ttl(&self) -> bool {
        self.has_ttl
    }
}

impl<C: ValueCodec> Drop for RocksKeyedTable<C> {
    /// The state is dropped here (the store holds its slot weakly), writing its pending
    /// entries first (see `TableCore`'s drop).
    fn drop(&mut self) {
        drop(self.out.take());
        // Taken out of the slot first, dropped after the lock is released (the drop may
        // close the store, whose own flush visits this slot).
        let parked = self.slot.lock().take();
        drop(parked);
    }
}
