//! The keyed table, the store that opens tables, and their configuration.

use std::sync::Arc;

use keygroup::{
    KeyGroup, KeyGroupRange, MaxParallelism, Parallelism,
    compute_key_group_range_for_operator_index,
};

use crate::codec::ValueCodec;
use crate::error::{Error, Result};
use crate::memory::{MemoryPool, UnboundedMemoryPool};
use crate::snapshot::CanonicalTable;
use crate::sweep::SweepProgress;
use crate::ttl::{Clock, SystemClock, TtlConfig};

/// The value type of a table's codec.
pub type ValueOf<T> = <<T as KeyedTable>::Codec as ValueCodec>::Value;

/// Counters a table keeps so that callers (and the conformance suite) can check the bundle
/// contract. All counters are cumulative since the table was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableStats {
    /// Bundles committed.
    pub bundles: u64,
    /// Batched backend reads issued by [`KeyedTable::begin_bundle`]; at most one per bundle.
    /// A backend that keeps every entry decoded in memory issues none.
    pub hydration_batches: u64,
    /// Keys requested by those batched reads.
    pub hydrated_keys: u64,
    /// Single-key backend reads for keys not named in `begin_bundle`.
    pub point_hydrations: u64,
    /// Keys written (put or deleted) by commits: each dirty key once per bundle.
    pub written_keys: u64,
}

/// A table of values of one [`ValueCodec`], addressed by (key group, key bytes), used in
/// bundles.
///
/// # Bundle contract
///
/// - [`begin_bundle(keys)`](KeyedTable::begin_bundle) opens a bundle and makes every named
///   key resident in the table's working map: a backend with a persistent store fetches all
///   misses with **one batched read** and decodes them with **one**
///   [`ValueCodec::decode`] call. Naming a key twice is allowed.
/// - While the bundle is open, [`get`](KeyedTable::get), [`put`](KeyedTable::put) and
///   [`remove`](KeyedTable::remove) of named keys touch only the working map and allocate
///   nothing for keys already present (lookups borrow the `&[u8]` key).
/// - A key **not** named in `begin_bundle` is still served correctly: the backend hydrates
///   that key alone (a single read, counted in [`TableStats::point_hydrations`]) — correct
///   but slower.
/// - Reads see the bundle's own writes. [`commit_bundle`](KeyedTable::commit_bundle) writes
///   every dirty key **exactly once** (its last value, or a delete) and closes the bundle;
///   afterwards the working map is only a cache of committed state.
/// - Point operations and `commit_bundle` outside a bundle, and `begin_bundle` inside one,
///   return [`Error::BundleState`] and change nothing. Canonical snapshot and restore
///   require a closed bundle (same error).
/// - A key group outside [`key_groups`](KeyedTable::key_groups) is
///   [`Error::KeyGroupOutOfRange`] and changes nothing.
/// - A failed `put` (e.g. [`Error::MemoryExhausted`]) leaves the key as it was.
///
/// # TTL
///
/// With a [`TtlConfig`], every entry carries an 8-byte last-access timestamp (epoch
/// milliseconds from the store's [`Clock`]), set on every `put` and, with
/// [`OnReadAndWrite`](crate::TtlUpdateType::OnReadAndWrite), on every read of an unexpired
/// entry (a write, committed with the bundle). A read that finds an expired entry clears it
/// (a delete committed with the bundle, as Flink's `AbstractTtlDecorator` does) and returns
/// it only under [`ReturnExpiredIfNotCleanedUp`](crate::TtlVisibility::ReturnExpiredIfNotCleanedUp).
/// Without TTL the timestamp is 0.
pub trait KeyedTable {
    /// The table's value codec.
    type Codec: ValueCodec;

    /// The table's name (its canonical section name).
    fn name(&self) -> &str;

    /// The key groups this table may hold.
    fn key_groups(&self) -> KeyGroupRange;

    /// Opens a bundle and hydrates `keys`.
    ///
    /// # Errors
    /// [`Error::BundleState`] when a bundle is open; [`Error::KeyGroupOutOfRange`]; a backend
    /// read or decode failure. On error no bundle is open.
    fn begin_bundle(&mut self, keys: &[(KeyGroup, &[u8])]) -> Result<()>;

    /// The value of `key`, if present (and visible under the TTL settings).
    ///
    /// # Errors
    /// [`Error::BundleState`], [`Error::KeyGroupOutOfRange`], a backend read failure for a
    /// key not named in `begin_bundle`.
    fn get(
        &mut self,
        key_group: KeyGroup,
        key: &[u8],
    ) -> Result<Option<&<Self::Codec as ValueCodec>::Value>>;

    /// Sets the value of `key` (and, with TTL, its timestamp to now).
    ///
    /// # Errors
    /// [`Error::BundleState`], [`Error::KeyGroupOutOfRange`], [`Error::MemoryExhausted`].
    fn put(
        &mut self,
        key_group: KeyGroup,
        key: &[u8],
        value: <Self::Codec as ValueCodec>::Value,
    ) -> Result<()>;

    /// Applies `f` to the visible value of `key` and writes the result (TTL timestamp
    /// refreshed); returns `None` without calling `f` when there is no visible value.
    ///
    /// The default clones the value and [`put`](KeyedTable::put)s it back; backends override
    /// it to update in place.
    ///
    /// # Errors
    /// As [`get`](KeyedTable::get) and [`put`](KeyedTable::put); on error the value is as
    /// it was.
    fn update<R>(
        &mut self,
        key_group: KeyGroup,
        key: &[u8],
        f: impl FnOnce(&mut <Self::Codec as ValueCodec>::Value) -> R,
    ) -> Result<Option<R>>
    where
        Self: Sized,
    {
        let Some(mut value) = self.get(key_group, key)?.cloned() else {
            return Ok(None);
        };
        let out = f(&mut value);
        self.put(key_group, key, value)?;
        Ok(Some(out))
    }

    /// Applies `f` in place to the visible value of `key` as [`update`](KeyedTable::update)
    /// does, or, when there is no visible value, sets it to `insert()` as
    /// [`put`](KeyedTable::put) does; returns `true` when it updated and `false` when it
    /// inserted. State written on every event (a running count, sum or max) is one upsert
    /// per event instead of a get and a put. The default is `update`, then `put` when that
    /// found nothing; a backend may override it to find the key once.
    ///
    /// # Errors
    /// As `update` and `put`; on error the value is as it was.
    fn upsert(
        &mut self,
        key_group: KeyGroup,
        key: &[u8],
        insert: impl FnOnce() -> <Self::Codec as ValueCodec>::Value,
        f: impl FnOnce(&mut <Self::Codec as ValueCodec>::Value),
    ) -> Result<bool>
    where
        Self: Sized,
    {
        if self.update(key_group, key, f)?.is_some() {
            return Ok(true);
        }
        self.put(key_group, key, insert())?;
        Ok(false)
    }

    /// Removes `key` (a no-op for an absent key, still counted as a write if the key was
    /// present).
    ///
    /// # Errors
    /// [`Error::BundleState`], [`Error::KeyGroupOutOfRange`].
    fn remove(&mut self, key_group: KeyGroup, key: &[u8]) -> Result<()>;

    /// Writes every dirty key once and closes the bundle.
    ///
    /// # Errors
    /// [`Error::BundleState`] when no bundle is open; a backend write failure (the bundle
    /// then stays open with its writes pending, so the commit can be retried).
    fn commit_bundle(&mut self) -> Result<()>;

    /// One bounded step of the sweep of expired entries, resuming where the previous call
    /// stopped; the contract is [`SweepProgress`]'s (at most `max_entries` removed, `wrapped`
    /// when a pass over the whole table completed). Outside a bundle only.
    ///
    /// # Errors
    /// [`Error::BundleState`] when a bundle is open; a backend failure.
    fn sweep_expired(&mut self, max_entries: usize) -> Result<SweepProgress>;

    /// The table's counters.
    fn stats(&self) -> TableStats;
}

/// A backend's store: opens named tables that share its key-group range, clock and memory
/// pool. One store holds the state of one operator subtask.
///
/// Several tables of one operator snapshot into one envelope per key group with
/// [`write_canonical_snapshot`](crate::write_canonical_snapshot).
pub trait KeyedStateStore {
    /// The backend's table type for codec `C`.
    type Table<C: ValueCodec>: KeyedTable<Codec = C> + CanonicalTable;

    /// The store's configuration.
    fn config(&self) -> &StoreConfig;

    /// Opens (creates) the table `name` with `codec` and optional TTL.
    ///
    /// # Errors
    /// [`Error::TableExists`] when `name` is already open in this store; a backend failure.
    fn open_table<C: ValueCodec>(
        &mut self,
        name: &str,
        codec: C,
        ttl: Option<TtlConfig>,
    ) -> Result<Self::Table<C>>;
}

/// A backend-defined (native) snapshot of a whole **store**: every table the store holds
/// (keyed, map and timer tables) at one point, e.g. a RocksDB checkpoint of the operator's
/// database. Implemented by a backend's [`KeyedStateStore`]; native snapshots belong to the
/// binary and backend that wrote them, the canonical snapshot is the portable path.
///
/// # Contract (checked by the `conformance` suite's `native_*` cases)
///
/// - Granularity: one snapshot covers every table of the store, taken at one point; a
///   restore replaces the state of every table together. A table open in the store but not
///   in the snapshot becomes empty; a table in the snapshot that is not open yet holds the
///   snapshot's state when it is opened after the restore.
/// - Committed state only: [`native_snapshot`](NativeSnapshot::native_snapshot) and
///   [`restore_native`](NativeSnapshot::restore_native) are refused with
///   [`Error::BundleState`] while any table of the store has an open bundle or a timer table
///   has uncommitted changes; the refusal changes nothing.
/// - All or nothing: a failed restore leaves every table as it was.
/// - A snapshot that is incomplete, damaged, not this backend's, of a store of another max
///   parallelism or key-group range, or whose table of an open name has another schema is
///   [`Error::InvalidNativeSnapshot`] (the backend's reason as its `source`).
/// - A snapshot is independent of later writes and of later snapshots: it can be restored
///   any number of times.
pub trait NativeSnapshot {
    /// The backend's snapshot type.
    type Snapshot;

    /// Takes a snapshot of the committed state of every table of the store.
    ///
    /// # Errors
    /// [`Error::BundleState`] while a bundle is open or timer changes are uncommitted; a
    /// backend failure ([`Error::Io`], ...).
    fn native_snapshot(&mut self) -> Result<Self::Snapshot>;

    /// Replaces the state of every table of the store with `snapshot`, all or nothing.
    ///
    /// # Errors
    /// [`Error::BundleState`] as for [`native_snapshot`](NativeSnapshot::native_snapshot);
    /// [`Error::InvalidNativeSnapshot`]; [`Error::MemoryExhausted`]; a backend failure. On
    /// error the state of every table is unchanged.
    fn restore_native(&mut self, snapshot: &Self::Snapshot) -> Result<()>;
}

/// What a store is opened with: its subtask's key groups, the clock and the memory pool.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StoreConfig {
    max_parallelism: MaxParallelism,
    key_groups: KeyGroupRange,
    memory_pool: Arc<dyn MemoryPool>,
    clock: Arc<dyn Clock>,
}

impl StoreConfig {
    /// A store owning `key_groups` of `max_parallelism`, with an [`UnboundedMemoryPool`] and
    /// the [`SystemClock`].
    ///
    /// # Errors
    /// [`Error::KeyGroupOutOfRange`] when the range reaches past the max parallelism.
    pub fn try_new(max_parallelism: MaxParallelism, key_groups: KeyGroupRange) -> Result<Self> {
        if !key_groups.is_empty() && key_groups.end() >= max_parallelism.get() {
            return Err(Error::KeyGroupOutOfRange {
                key_group: key_groups.end(),
                range: max_parallelism.key_groups(),
            });
        }
        Ok(Self {
            max_parallelism,
            key_groups,
            memory_pool: Arc::new(UnboundedMemoryPool::new()),
            clock: Arc::new(SystemClock),
        })
    }

    /// The configuration of subtask `operator_index` of `parallelism`.
    ///
    /// # Errors
    /// The `keygroup` preconditions as [`Error::KeyGroup`].
    pub fn for_subtask(
        max_parallelism: MaxParallelism,
        parallelism: Parallelism,
        operator_index: i32,
    ) -> Result<Self> {
        let index = parallelism.check_operator_index(operator_index)?;
        let range =
            compute_key_group_range_for_operator_index(max_parallelism, parallelism, index)?;
        Self::try_new(max_parallelism, range)
    }

    /// Sets the memory pool. Defaults to an [`UnboundedMemoryPool`].
    #[must_use]
    pub fn with_memory_pool(mut self, pool: Arc<dyn MemoryPool>) -> Self {
        self.memory_pool = pool;
        self
    }

    /// Sets the clock. Defaults to the [`SystemClock`].
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The max parallelism (number of key groups of the operator).
    pub fn max_parallelism(&self) -> MaxParallelism {
        self.max_parallelism
    }

    /// The key groups the store owns.
    pub fn key_groups(&self) -> KeyGroupRange {
        self.key_groups
    }

    /// The memory pool.
    pub fn memory_pool(&self) -> &Arc<dyn MemoryPool> {
        &self.memory_pool
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_rejects_range_past_max_parallelism() {
        let mp = MaxParallelism::new(128).unwrap();
        let err = StoreConfig::try_new(mp, KeyGroupRange::new(100, 128).unwrap()).unwrap_err();
        assert!(
            matches!(err, Error::KeyGroupOutOfRange { key_group: 128, .. }),
            "{err}"
        );
        let c = StoreConfig::for_subtask(mp, Parallelism::new(3).unwrap(), 1).unwrap();
        assert_eq!((c.key_groups().start(), c.key_groups().end()), (43, 85));
        let err = StoreConfig::for_subtask(mp, Parallelism::new(3).unwrap(), 3).unwrap_err();
        assert!(matches!(err, Error::KeyGroup(_)), "{err}");
    }
}
