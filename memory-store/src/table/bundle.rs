//! The bundle operations of the in-memory keyed table ([`KeyedTable`]).

use keygroup::{KeyGroup, KeyGroupRange};
use state_api::{
    CacheLineAligned, FlatEntry, FlatMap, FlatVacantEntry, KeyedTable, MemoryReservation, Result,
    SweepProgress, TableStats, TtlRead, ValueCodec, change_in_place, ttl_read,
};

use super::sweep::Tombstones;
use super::{Entry, KeyedCore, LIVE, entry_size, is_live, mark_dirty};

impl<C: ValueCodec> KeyedTable for KeyedCore<C> {
    type Codec = C;

    fn name(&self) -> &str {
        &self.name
    }

    fn key_groups(&self) -> KeyGroupRange {
        self.key_groups
    }

    fn begin_bundle(&mut self, keys: &[(KeyGroup, &[u8])]) -> Result<()> {
        self.bundle.check_begin("begin_bundle")?;
        // Everything is resident: the named keys are only validated and hashed, for the
        // gets to prefetch their slots `state_api::PREFETCH_AHEAD` gets ahead.
        self.ahead.begin();
        for (key_group, key) in keys {
            let index = self.group_index(*key_group)?;
            if let Some(group) = self.groups.get(index) {
                self.ahead.push((index, group.hash(key)));
            }
        }
        for &(index, hash) in self.ahead.first() {
            if let Some(group) = self.groups.get(index) {
                group.prefetch(hash);
            }
        }
        self.bundle.begin("begin_bundle")?;
        self.dirty_in_bundle = 0;
        Ok(())
    }

    fn get(&mut self, key_group: KeyGroup, key: &[u8]) -> Result<Option<&C::Value>> {
        self.check_bundle("get", true)?;
        let index = self.group_index(key_group)?;
        self.prefetch_next();
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
        let Some((word, entry)) = groups.get_mut(index).and_then(|g| g.get_mut_with_word(key))
        else {
            return Ok(None);
        };
        if !is_live(*word) {
            return Ok(None);
        }
        let read = ttl_read(ttl.as_ref(), entry.last_access, now);
        if read.clears() {
            Tombstones {
                counts: tombstones,
                groups: tombstone_groups,
                listed,
            }
            .bury(word, index);
            mark_dirty(word, *epoch, dirty_in_bundle);
        } else if read == TtlRead::LiveRefresh {
            entry.last_access = now;
            mark_dirty(word, *epoch, dirty_in_bundle);
        }
        Ok(read.returns_value().then_some(&entry.value))
    }

    fn put(&mut self, key_group: KeyGroup, key: &[u8], value: C::Value) -> Result<()> {
        self.check_bundle("put", true)?;
        let index = self.group_index(key_group)?;
        let now = self.now();
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
        match group.entry(key) {
            FlatEntry::Occupied(mut occupied) => {
                let (word, entry) = occupied.get_mut_with_word();
                overwrite(codec, reservation, tombstones, index, (word, entry), value)?;
                entry.last_access = now;
                mark_dirty(word, *epoch, dirty_in_bundle);
            }
            FlatEntry::Vacant(vacant) => {
                insert_new(codec, reservation, vacant, key.len(), value, now, *epoch)?;
                *dirty_in_bundle += 1;
            }
        }
        Ok(())
    }

    /// In place: one search, no clone (a bounded pool keeps a copy to restore when it
    /// refuses the value's growth). TTL as a get then a put: an expired value that the read
    /// would return (`ReturnExpiredIfNotCleanedUp`) is updated, one it would hide is cleared.
    fn update<R>(
        &mut self,
        key_group: KeyGroup,
        key: &[u8],
        f: impl FnOnce(&mut C::Value) -> R,
    ) -> Result<Option<R>> {
        self.check_bundle("update", true)?;
        let index = self.group_index(key_group)?;
        self.prefetch_next();
        let now = self.now();
        let Self {
            groups,
            codec,
            ttl,
            epoch,
            dirty_in_bundle,
            tombstones,
            tombstone_groups,
            listed,
            reservation,
            bounded_pool,
            ..
        } = self;
        let Some((word, entry)) = groups.get_mut(index).and_then(|g| g.get_mut_with_word(key))
        else {
            return Ok(None);
        };
        if !is_live(*word) {
            return Ok(None);
        }
        if !ttl_read(ttl.as_ref(), entry.last_access, now).returns_value() {
            Tombstones {
                counts: tombstones,
                groups: tombstone_groups,
                listed,
            }
            .bury(word, index);
            mark_dirty(word, *epoch, dirty_in_bundle);
            return Ok(None);
        }
        let out = change_in_place(codec, *bounded_pool, &mut entry.value, f)
            .charge(reservation, &mut entry.value)?;
        entry.last_access = now;
        mark_dirty(word, *epoch, dirty_in_bundle);
        Ok(Some(out))
    }

    /// One search: a visible value is updated in place (as `update`), a tombstone or a value
    /// the read would hide is overwritten with `insert()` and a missing key inserted where
    /// the search ended (as `put`).
    fn upsert(
        &mut self,
        key_group: KeyGroup,
        key: &[u8],
        insert: impl FnOnce() -> C::Value,
        f: impl FnOnce(&mut C::Value),
    ) -> Result<bool> {
        self.check_bundle("upsert", true)?;
        let index = self.group_index(key_group)?;
        self.prefetch_next();
        let now = self.now();
        let Self {
            groups,
            codec,
            ttl,
            epoch,
            dirty_in_bundle,
            tombstones,
            reservation,
            bounded_pool,
            ..
        } = self;
        let Some(group) = groups.get_mut(index) else {
            return Ok(false);
        };
        match group.entry(key) {
            FlatEntry::Occupied(mut occupied) => {
                let (word, entry) = occupied.get_mut_with_word();
                let visible = is_live(*word)
                    && ttl_read(ttl.as_ref(), entry.last_access, now).returns_value();
                if visible {
                    change_in_place(codec, *bounded_pool, &mut entry.value, f)
                        .charge(reservation, &mut entry.value)?;
                } else {
                    overwrite(
                        codec,
                        reservation,
                        tombstones,
                        index,
                        (word, entry),
                        insert(),
                    )?;
                }
                entry.last_access = now;
                mark_dirty(word, *epoch, dirty_in_bundle);
                Ok(visible)
            }
            FlatEntry::Vacant(vacant) => {
                insert_new(codec, reservation, vacant, key.len(), insert(), now, *epoch)?;
                *dirty_in_bundle += 1;
                Ok(false)
            }
        }
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
        if let Some((word, _)) = groups.get_mut(index).and_then(|g| g.get_mut_with_word(key))
            && is_live(*word)
        {
            Tombstones {
                counts: tombstones,
                groups: tombstone_groups,
                listed,
            }
            .bury(word, index);
            mark_dirty(word, *epoch, dirty_in_bundle);
        }
        Ok(())
    }

    fn commit_bundle(&mut self) -> Result<()> {
        self.bundle.require_open("commit_bundle")?;
        let candidates = std::mem::take(&mut self.tombstone_groups);
        for index in candidates {
            let (Some(&count), Some(len)) = (
                self.tombstones.get(index),
                self.groups.get(index).map(FlatMap::len),
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
        self.next_epoch();
        self.bundle.end("commit_bundle")
    }

    /// One step of the tombstone-and-TTL sweep (`sweep.rs`): whole key groups from a cursor,
    /// the work of one call bounded by `max_entries` plus the size of one key group; at most
    /// `max_entries` removed; `wrapped` when the cursor passed the last key group.
    fn sweep_expired(&mut self, max_entries: usize) -> Result<SweepProgress> {
        self.sweep_step(max_entries)
    }

    fn stats(&self) -> TableStats {
        self.stats
    }
}

/// Replaces a stored entry's value with `value` (live or a tombstone, which it revives),
/// reserving the growth of its heap bytes first; refused, nothing changes.
fn overwrite<C: ValueCodec>(
    codec: &C,
    reservation: &mut MemoryReservation,
    tombstones: &mut [usize],
    index: usize,
    (word, entry): (&mut u32, &mut Entry<C::Value>),
    value: C::Value,
) -> Result<()> {
    reservation.try_replace(codec.heap_size(&entry.value), codec.heap_size(&value))?;
    if !is_live(*word) {
        *word |= LIVE;
        if let Some(count) = tombstones.get_mut(index) {
            *count -= 1;
        }
    }
    entry.value = value;
    Ok(())
}

/// Inserts a new entry of `value` (its key `key_len` bytes) where a search ended, dirty in
/// bundle `epoch`, reserving its bytes first; refused, nothing is inserted.
fn insert_new<C: ValueCodec>(
    codec: &C,
    reservation: &mut MemoryReservation,
    vacant: FlatVacantEntry<'_, Entry<C::Value>, CacheLineAligned>,
    key_len: usize,
    value: C::Value,
    now: i64,
    epoch: u32,
) -> Result<()> {
    reservation.try_grow(entry_size::<C::Value>(key_len, codec.heap_size(&value)))?;
    vacant.insert_with_word(
        LIVE | epoch,
        Entry {
            value,
            last_access: now,
        },
    );
    Ok(())
}
