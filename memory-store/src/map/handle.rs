//! The map table handed to operators: its core (`mod.rs`) checked out of the store's reach
//! for each bundle (`checkout.rs`).

use std::ops::ControlFlow;

use keygroup::{KeyGroup, KeyGroupRange};
use state_api::{
    MapHydration, MapTable, Result, ScanDirection, StoreConfig, SweepProgress, TableStats,
    TtlConfig, UserKeyRange, ValueCodec,
};

use super::MapCore;
use crate::checkout::{Checkout, TableMeta, delegate_canonical_table, lost};

/// A map table that keeps decoded entries in one `BTreeMap` per key group, keyed by the full
/// entry key `prefix ‖ user key` (so a prefix scan is one B-tree range: one descent to its
/// first entry, then forward to the first key past it). Keys up to 54 bytes are stored
/// inline in the tree's nodes (no heap block to load per compared key).
///
/// - Everything is resident: [`begin_bundle`](MapTable::begin_bundle) only validates key
///   groups and issues no reads ([`TableStats::hydration_batches`] stays 0).
/// - Writes go to the maps in place, so scans see them directly; a removal leaves a
///   tombstone that the commit purges, and a per-entry bundle epoch counts each dirty entry
///   once in [`TableStats::written_keys`].
/// - [`remove_range`](MapTable::remove_range) marks each entry of the range removed (per-key
///   work proportional to the range, like the per-key deletes typed-store writes).
/// - Memory: every entry reserves `56 (the key) + key length beyond 54 bytes + entry size +
///   32 +` [`ValueCodec::heap_size`] from the store's pool; [`update`](MapTable::update) on a
///   bounded pool keeps a copy of the value to restore if its growth is refused.
/// - Native snapshots are the store's ([`MemoryStore`](crate::MemoryStore)): a bundle takes
///   the table's state out of the store's reach until it commits.
#[derive(Debug)]
pub struct MemoryMapTable<C: ValueCodec> {
    meta: TableMeta,
    cell: Checkout<MapCore<C>>,
}

impl<C: ValueCodec> MemoryMapTable<C> {
    /// An empty map table named `name` in a store with `config`. Opened through
    /// [`MemoryStore`](crate::MemoryStore) it is part of the store's native snapshot; made
    /// with `new` it belongs to no store.
    pub fn new(name: &str, codec: C, ttl: Option<TtlConfig>, config: &StoreConfig) -> Self {
        let core = MapCore::new(name, codec, ttl, config);
        Self {
            meta: TableMeta::of(&core),
            cell: Checkout::new(core),
        }
    }

    /// Live entries (expired entries not yet cleaned up included).
    pub fn len(&self) -> usize {
        self.cell.with(MapCore::len).unwrap_or(0)
    }

    /// Whether the table holds no live entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes this table currently holds from the memory pool.
    pub fn reserved_bytes(&self) -> usize {
        self.cell.with(MapCore::reserved_bytes).unwrap_or(0)
    }

    pub(crate) fn cell(&mut self) -> &mut Checkout<MapCore<C>> {
        &mut self.cell
    }
}

impl<C: ValueCodec> MapTable for MemoryMapTable<C> {
    type Codec = C;

    fn name(&self) -> &str {
        &self.meta.name
    }

    fn key_groups(&self) -> KeyGroupRange {
        self.meta.key_groups
    }

    fn begin_bundle(&mut self, hydrate: MapHydration<'_>) -> Result<()> {
        self.cell.begin_bundle(|core| core.begin_bundle(hydrate))
    }

    fn get(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
    ) -> Result<Option<&C::Value>> {
        self.cell.in_bundle("get")?.get(key_group, prefix, user_key)
    }

    fn put(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
        value: C::Value,
    ) -> Result<()> {
        self.cell
            .in_bundle("put")?
            .put(key_group, prefix, user_key, value)
    }

    fn update<R>(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
        f: impl FnOnce(&mut C::Value) -> R,
    ) -> Result<Option<R>> {
        self.cell
            .in_bundle("update")?
            .update(key_group, prefix, user_key, f)
    }

    fn upsert(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
        insert: impl FnOnce() -> C::Value,
        f: impl FnOnce(&mut C::Value),
    ) -> Result<bool> {
        self.cell
            .in_bundle("upsert")?
            .upsert(key_group, prefix, user_key, insert, f)
    }

    fn prefetch(&mut self, key_group: KeyGroup, prefix: &[u8]) {
        // Outside a bundle there is nothing to serve soon.
        if let Ok(core) = self.cell.in_bundle("prefetch") {
            core.prefetch(key_group, prefix);
        }
    }

    fn remove(&mut self, key_group: KeyGroup, prefix: &[u8], user_key: &[u8]) -> Result<()> {
        self.cell
            .in_bundle("remove")?
            .remove(key_group, prefix, user_key)
    }

    fn remove_range(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        range: UserKeyRange<'_>,
    ) -> Result<u64> {
        self.cell
            .in_bundle("remove_range")?
            .remove_range(key_group, prefix, range)
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
        self.cell
            .in_bundle("scan")?
            .scan(key_group, prefix, range, direction, visit)
    }

    fn commit_bundle(&mut self) -> Result<()> {
        self.cell.commit_bundle(MapCore::commit_bundle)
    }

    fn sweep_expired(&mut self, max_entries: usize) -> Result<SweepProgress> {
        self.cell
            .with_mut(|core| core.sweep_expired(max_entries))
            .unwrap_or_else(|| Err(lost("sweep_expired")))
    }

    fn stats(&self) -> TableStats {
        self.cell.with(MapCore::stats).unwrap_or_default()
    }
}

delegate_canonical_table!(MemoryMapTable);
