//! The bundle operations of the in-memory keyed table ([`KeyedTable`]).

use keygroup::{KeyGroup, KeyGroupRange};
use state_api::{
    FlatEntry, FlatMap, KeyedTable, Result, SweepProgress, TableStats, TtlRead, ValueCodec,
    ttl_read,
};

use super::sweep::Tombstones;
use super::{Entry, KeyedCore, entry_size, mark_dirty};

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
        if let Some(&(ahead, hash)) = self.ahead.advance()
            && let Some(group) = self.groups.get(ahead)
        {
            group.prefetch(hash);
        }
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
        let Some(entry) = groups.get_mut(index).and_then(|g| g.get_mut(key)) else {
            return Ok(None);
        };
        if !entry.live {
            return Ok(None);
        }
        let read = ttl_read(ttl.as_ref(), entry.last_access, now);
        if read.clears() {
            Tombstones {
                counts: tombstones,
                groups: tombstone_groups,
                listed,
            }
            .bury(entry, index);
            mark_dirty(entry, *epoch, dirty_in_bundle);
        } else if read == TtlRead::LiveRefresh {
            entry.last_access = now;
            mark_dirty(entry, *epoch, dirty_in_bundle);
        }
        Ok(read.returns_value().then_some(&entry.value))
    }

    fn put(&mut self, key_group: KeyGroup, key: &[u8], value: C::Value) -> Result<()> {
        self.check_bundle("put", true)?;
        let index = self.group_index(key_group)?;
        let now = self.now();
        let new_heap = self.codec.heap_size(&value);
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
                let entry = occupied.get_mut();
                let old_heap = codec.heap_size(&entry.value);
                if new_heap > old_heap {
                    reservation.try_grow(new_heap - old_heap)?;
                } else {
                    reservation.shrink(old_heap - new_heap);
                }
                if !entry.live {
                    entry.live = true;
                    if let Some(count) = tombstones.get_mut(index) {
                        *count -= 1;
                    }
                }
                entry.value = value;
                entry.last_access = now;
                mark_dirty(entry, *epoch, dirty_in_bundle);
            }
            FlatEntry::Vacant(vacant) => {
                reservation.try_grow(entry_size::<C::Value>(key.len(), new_heap))?;
                vacant.insert(Entry {
                    value,
                    last_access: now,
                    live: true,
                    dirty_epoch: *epoch,
                });
                *dirty_in_bundle += 1;
            }
        }
        Ok(())
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
        if let Some(entry) = groups.get_mut(index).and_then(|g| g.get_mut(key))
            && entry.live
        {
            Tombstones {
                counts: tombstones,
                groups: tombstone_groups,
                listed,
            }
            .bury(entry, index);
            mark_dirty(entry, *epoch, dirty_in_bundle);
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
        self.epoch += 1;
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
