//! The keyed table handed to operators: its core (`mod.rs`) checked out of the store's reach
//! for each bundle (`checkout.rs`).

use keygroup::{KeyGroup, KeyGroupRange};
use state_api::{
    KeyedTable, Result, StoreConfig, SweepProgress, TableStats, TtlConfig, ValueCodec,
};

use super::KeyedCore;
use crate::checkout::{Checkout, TableMeta, delegate_canonical_table, lost};

/// A keyed table that keeps decoded values in one hash map per key group.
///
/// - Everything is resident, so [`begin_bundle`](KeyedTable::begin_bundle) only validates
///   the named keys and hashes them: it issues no reads ([`TableStats::hydration_batches`]
///   and `point_hydrations` stay 0). Get number `n` of a bundle prefetches the slot of the
///   `n + 16`th named key, so gets in the order the keys were named find their slots in the
///   cache; a get of a key not named is correct, only not prefetched.
/// - Writes go to the maps in place; a per-entry bundle epoch makes each dirty key count
///   once in [`TableStats::written_keys`]. Removals leave tombstones that a commit purges
///   from a key group once they are a quarter of it (amortised O(1) per removal, no
///   allocation), and [`sweep_expired`](KeyedTable::sweep_expired) purges too.
/// - Memory: every entry reserves its key's heap bytes (0 up to 22 bytes, stored inline),
///   two slots of its group's [`FlatMap`](state_api::FlatMap)
///   ([`FlatMap::ENTRY_BYTES`](state_api::FlatMap::ENTRY_BYTES)) and
///   [`ValueCodec::heap_size`] from the store's pool; a write the pool refuses fails with
///   [`Error::MemoryExhausted`](state_api::Error::MemoryExhausted) and changes nothing.
///   Restore stages the new content (reserved in addition to the old) before replacing it.
/// - TTL: expiry on read (Flink's rule) plus an incremental sweep.
/// - Native snapshots are the store's ([`MemoryStore`](crate::MemoryStore)): between
///   bundles the table's state sits where the store can copy or replace it; a bundle takes
///   it out of the store's reach until it commits.
#[derive(Debug)]
pub struct MemoryKeyedTable<C: ValueCodec> {
    meta: TableMeta,
    cell: Checkout<KeyedCore<C>>,
}

impl<C: ValueCodec> MemoryKeyedTable<C> {
    /// An empty table named `name` in a store with `config`. Opened through
    /// [`MemoryStore`](crate::MemoryStore) it is part of the store's native snapshot; made
    /// with `new` it belongs to no store.
    pub fn new(name: &str, codec: C, ttl: Option<TtlConfig>, config: &StoreConfig) -> Self {
        let core = KeyedCore::new(name, codec, ttl, config);
        Self {
            meta: TableMeta::of(&core),
            cell: Checkout::new(core),
        }
    }

    /// Live entries (expired entries not yet cleaned up included).
    pub fn len(&self) -> usize {
        self.cell.with(KeyedCore::len).unwrap_or(0)
    }

    /// Whether the table holds no live entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes this table currently holds from the memory pool.
    pub fn reserved_bytes(&self) -> usize {
        self.cell.with(KeyedCore::reserved_bytes).unwrap_or(0)
    }

    pub(crate) fn cell(&mut self) -> &mut Checkout<KeyedCore<C>> {
        &mut self.cell
    }
}

impl<C: ValueCodec> KeyedTable for MemoryKeyedTable<C> {
    type Codec = C;

    fn name(&self) -> &str {
        &self.meta.name
    }

    fn key_groups(&self) -> KeyGroupRange {
        self.meta.key_groups
    }

    fn begin_bundle(&mut self, keys: &[(KeyGroup, &[u8])]) -> Result<()> {
        self.cell.begin_bundle(|core| core.begin_bundle(keys))
    }

    fn get(&mut self, key_group: KeyGroup, key: &[u8]) -> Result<Option<&C::Value>> {
        self.cell.in_bundle("get")?.get(key_group, key)
    }

    fn put(&mut self, key_group: KeyGroup, key: &[u8], value: C::Value) -> Result<()> {
        self.cell.in_bundle("put")?.put(key_group, key, value)
    }

    fn update<R>(
        &mut self,
        key_group: KeyGroup,
        key: &[u8],
        f: impl FnOnce(&mut C::Value) -> R,
    ) -> Result<Option<R>> {
        self.cell.in_bundle("update")?.update(key_group, key, f)
    }

    fn upsert(
        &mut self,
        key_group: KeyGroup,
        key: &[u8],
        insert: impl FnOnce() -> C::Value,
        f: impl FnOnce(&mut C::Value),
    ) -> Result<bool> {
        self.cell
            .in_bundle("upsert")?
            .upsert(key_group, key, insert, f)
    }

    fn remove(&mut self, key_group: KeyGroup, key: &[u8]) -> Result<()> {
        self.cell.in_bundle("remove")?.remove(key_group, key)
    }

    fn commit_bundle(&mut self) -> Result<()> {
        self.cell.commit_bundle(KeyedCore::commit_bundle)
    }

    fn sweep_expired(&mut self, max_entries: usize) -> Result<SweepProgress> {
        self.cell
            .with_mut(|core| core.sweep_expired(max_entries))
            .unwrap_or_else(|| Err(lost("sweep_expired")))
    }

    fn stats(&self) -> TableStats {
        self.cell.with(KeyedCore::stats).unwrap_or_default()
    }
}

delegate_canonical_table!(MemoryKeyedTable);

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use keygroup::MaxParallelism;
    use state_api::{CanonicalTable, Error, I64Codec, ManualClock};

    use super::*;

    #[test]
    fn a_bundle_checks_the_core_out_and_the_commit_back_in() {
        let mp = MaxParallelism::new(8).unwrap();
        let config = StoreConfig::try_new(mp, mp.key_groups())
            .unwrap()
            .with_clock(Arc::new(ManualClock::new(0)));
        let mut t = MemoryKeyedTable::new("t", I64Codec, None, &config);
        let kg = KeyGroup::new(3).unwrap();
        assert!(matches!(t.get(kg, b"k"), Err(Error::BundleState { .. })));
        t.begin_bundle(&[]).unwrap();
        assert!(t.cell.is_held());
        // A second begin fails and leaves the bundle open.
        assert!(matches!(
            t.begin_bundle(&[]),
            Err(Error::BundleState { .. })
        ));
        assert!(t.cell.is_held());
        t.put(kg, b"k", 7).unwrap();
        t.commit_bundle().unwrap();
        assert!(!t.cell.is_held());
        assert_eq!(t.len(), 1);
        // A failed begin (key group out of range) leaves the core at home.
        let other = KeyGroupRange::new(0, 3).unwrap();
        let small = StoreConfig::try_new(mp, other).unwrap();
        let mut s = MemoryKeyedTable::new("s", I64Codec, None, &small);
        assert!(
            s.begin_bundle(&[(KeyGroup::new(7).unwrap(), b"k")])
                .is_err()
        );
        assert!(!s.cell.is_held());
        assert_eq!(t.stats().bundles, 1);
        assert_eq!(t.table_name(), "t");
    }
}
