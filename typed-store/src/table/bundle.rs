//! The bundle contract of `KeyedTable` on the working map.

use std::mem::size_of;
use std::sync::atomic::Ordering;

use keygroup::{KeyGroup, KeyGroupRange};
use state_api::{
    KeyedTable, MemoryReservation, Result, SweepProgress, TableStats, TtlRead, ValueCodec,
    change_in_place, ttl_read,
};

use crate::cache::Key;
use crate::format::composite_key;
use crate::sweep::sweep_column_family;

use super::changes::Changes;
use super::{Slot, TableCore};

impl<C: ValueCodec> KeyedTable for TableCore<C> {
    type Codec = C;

    fn name(&self) -> &str {
        &self.name
    }

    fn key_groups(&self) -> KeyGroupRange {
        self.key_groups
    }

    fn begin_bundle(&mut self, keys: &[(KeyGroup, &[u8])]) -> Result<()> {
        self.bundle_phase.check_begin("begin_bundle")?;
        for (key_group, _) in keys {
            self.check_key_group(*key_group)?;
        }
        let generation = self.shared.generation();
        if generation != self.generation {
            self.clear_cache();
            self.generation = generation;
        }
        self.changes.begin();
        self.dead_keys.clear();
        self.bundle += 1;
        let bundle = self.bundle;
        // Only misses are read: the working map is a clean cache of committed state. Hits
        // are stamped with the bundle so that no admission below evicts them.
        self.miss_bytes.clear();
        self.miss_ends.clear();
        // A complete map has nothing to read: a key it lacks is absent. (Its entries are not
        // stamped, so a pool refusal in this bundle may evict a named key; that makes the map
        // incomplete and the key is read again when it is used.)
        // Every named key is hashed for the gets to prefetch its slot
        // `state_api::PREFETCH_AHEAD` gets ahead.
        self.ahead.begin();
        for (kg, key) in keys {
            composite_key(&mut self.scratch, *kg, self.prefix_bytes, key);
            let hash = self.working.hash(&self.scratch);
            self.ahead.push_keyed(&self.scratch, hash);
            if self.complete {
                continue;
            }
            if let Some(slot) = self.working.get_mut_hashed(hash, self.scratch.as_slice()) {
                slot.bundle = bundle;
            } else {
                self.miss_bytes.extend_from_slice(&self.scratch);
                self.miss_ends.push(self.miss_bytes.len());
            }
        }
        if !self.miss_ends.is_empty() {
            self.hydrate_misses()?;
        }
        for &hash in self.ahead.first() {
            self.working.prefetch(hash);
        }
        self.bundle_phase.begin("begin_bundle")?;
        self.shared.open_bundles.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn get(&mut self, key_group: KeyGroup, key: &[u8]) -> Result<Option<&C::Value>> {
        self.check_bundle("get", true)?;
        let visible = self.visible(key_group, key, false)?;
        Ok(visible.and_then(|found| found.slot.value.as_ref()))
    }

    /// `f` runs on the cached value itself: one search, no copy of the value (a bounded
    /// pool keeps one, to put back if the value grew and the pool refuses the growth),
    /// the slot bracketed once for the commit. A slot resident for this bundle only (the
    /// pool refused to cache it) is changed as a put changes it, which charges the whole
    /// entry.
    fn update<R>(
        &mut self,
        key_group: KeyGroup,
        key: &[u8],
        f: impl FnOnce(&mut C::Value) -> R,
    ) -> Result<Option<R>> {
        self.check_bundle("update", true)?;
        let bounded = self.bounded_pool;
        let Some(Visible {
            slot,
            stored_key,
            hash,
            now,
            bundle,
            codec,
            changes,
            reservation,
        }) = self.visible(key_group, key, true)?
        else {
            return Ok(None);
        };
        if slot.reserved == 0 {
            let Some(mut value) = slot.value.clone() else {
                return Ok(None);
            };
            let out = f(&mut value);
            self.put(key_group, key, value)?;
            return Ok(Some(out));
        }
        changes.before(slot, stored_key, bundle);
        let Some(value) = slot.value.as_mut() else {
            return Ok(None);
        };
        let change = change_in_place(codec, bounded, value, f);
        let growth = change.growth();
        if let Err(refused) = reservation.try_grow(growth) {
            // The slot holds its committed value again while the changed one is written
            // as a put writes it: evicting clean entries to make room, and failing with
            // the value as it was.
            let (out, changed) = change.undo(value);
            let Some(changed) = changed else {
                // No copy to put back (an unbounded pool, which refuses only a count that
                // would overflow): the change stays, recorded for the commit, so that the
                // cache never holds a value RocksDB will not get.
                slot.last_access = now;
                changes.after(slot, stored_key, hash, bundle);
                return Err(refused);
            };
            self.put(key_group, key, changed)?;
            return Ok(Some(out));
        }
        let freed = change.shrinkage().min(slot.reserved);
        reservation.shrink(freed);
        slot.reserved = slot.reserved - freed + growth;
        slot.last_access = now;
        changes.after(slot, stored_key, hash, bundle);
        Ok(Some(change.into_output()))
    }

    fn put(&mut self, key_group: KeyGroup, key: &[u8], value: C::Value) -> Result<()> {
        self.check_bundle("put", true)?;
        self.check_key_group(key_group)?;
        composite_key(&mut self.scratch, key_group, self.prefix_bytes, key);
        let now = self.now();
        let needed =
            self.scratch.len() + size_of::<Slot<C::Value>>() + self.codec.heap_size(&value);
        let hash = self.hash_of_scratch();
        let previous = match self.working.get_mut_hashed(hash, &self.scratch) {
            Some(slot) => {
                slot.bundle = self.bundle; // not evicted by the reservation below
                slot.reserved
            }
            None => 0,
        };
        if needed > previous {
            self.reserve_evicting(needed - previous)?;
        } else {
            self.reservation.shrink(previous - needed);
        }
        let Self {
            working,
            scratch,
            changes,
            bundle,
            ..
        } = self;
        let slot = working.get_or_insert_with_hashed(hash, scratch, || Slot::absent(*bundle));
        changes.before(slot, scratch, *bundle);
        slot.value = Some(value);
        slot.live = true;
        slot.last_access = now;
        slot.reserved = needed;
        changes.after(slot, scratch, hash, *bundle);
        Ok(())
    }

    fn remove(&mut self, key_group: KeyGroup, key: &[u8]) -> Result<()> {
        self.check_bundle("remove", true)?;
        self.check_key_group(key_group)?;
        let hash = self.resident(key_group, key)?;
        let Self {
            working,
            scratch,
            changes,
            dead_keys,
            bundle,
            ..
        } = self;
        let mut freed = 0;
        if let Some(slot) = working.get_mut_hashed(hash, scratch) {
            slot.bundle = *bundle;
            if slot.live {
                changes.before(slot, scratch, *bundle);
                slot.live = false;
                slot.value = None;
                // A removed key with a pending delete stays resident until it is written:
                // its key and slot stay charged.
                let keep = if changes.write_through {
                    0
                } else {
                    scratch.len() + size_of::<Slot<C::Value>>()
                };
                freed = slot.reserved.saturating_sub(keep);
                slot.reserved = slot.reserved.min(keep);
                changes.after(slot, scratch, hash, *bundle);
                dead_keys.push((Key::from(scratch.as_slice()), hash));
            }
        }
        self.release_slot_reservation(freed);
        Ok(())
    }

    fn commit_bundle(&mut self) -> Result<()> {
        self.check_bundle("commit_bundle", true)?;
        let write_through = self.changes.write_through;
        if write_through {
            // Keys in ascending order: RocksDB's memtable insert reuses its skip-list splice
            // for sequential keys, which makes a sorted batch markedly cheaper to apply (a
            // write-behind flush sorts too).
            self.changes
                .dirty
                .sort_unstable_by(|a, b| a.key.as_bytes().cmp(b.key.as_bytes()));
            let ops = self.encode_dirty()?;
            self.write_through(&ops)?;
        }
        // Write-behind: the changed slots are pending already; the commit writes nothing.
        self.stats.written_keys += self.changes.dirty_count;
        self.stats.bundles += 1;
        // The working map stays a clean cache of committed state: removed and expired keys
        // leave it (write-behind: once their delete is written), as do entries resident for
        // this bundle only.
        let mut freed = 0;
        self.changes.begin();
        for (key, hash) in self.dead_keys.drain(..) {
            if self
                .working
                .get_hashed(hash, key.as_bytes())
                .is_some_and(|slot| !slot.live && !slot.pending)
            {
                freed += self
                    .working
                    .remove(key.as_bytes())
                    .map_or(0, |s| s.reserved);
            }
        }
        for key in self.transient_keys.drain(..) {
            if self
                .working
                .get(key.as_bytes())
                .is_some_and(|s| !s.pending && (!s.live || s.reserved == 0))
            {
                freed += self
                    .working
                    .remove(key.as_bytes())
                    .map_or(0, |s| s.reserved);
            }
        }
        self.reservation.shrink(freed);
        self.shared.open_bundles.fetch_sub(1, Ordering::SeqCst);
        self.bundle_phase.end("commit_bundle")?;
        if !write_through && self.changes.pending_bytes > self.write_behind_limit {
            self.flush_pending()?;
        }
        Ok(())
    }

    /// One step of `sweep_column_family`: at most `4 * max_entries` (at least 64) entries
    /// scanned from a cursor, the expired ones among them deleted (at most `max_entries`) in
    /// one write batch; a table without TTL has nothing to sweep. The TTL compaction filter
    /// removes expired entries in the background as well.
    fn sweep_expired(&mut self, max_entries: usize) -> Result<SweepProgress> {
        self.check_bundle("sweep_expired", false)?;
        let Some(ttl) = self.ttl else {
            return Ok(SweepProgress::nothing_to_sweep());
        };
        // The sweep scans RocksDB: pending writes go there first.
        self.flush_pending()?;
        let now = self.clock.now_millis();
        let progress = sweep_column_family(
            &self.shared,
            &self.name,
            &ttl,
            now,
            &mut self.sweep_cursor,
            max_entries,
        )?;
        if progress.removed > 0 {
            self.clear_cache();
        }
        Ok(progress)
    }

    fn stats(&self) -> TableStats {
        self.stats
    }
}

/// A slot a read sees (found by [`TableCore::visible`]), with the parts of the table an
/// update changes next to it.
struct Visible<'a, C: ValueCodec> {
    slot: &'a mut Slot<C::Value>,
    /// The slot's key in the working map (the RocksDB key).
    stored_key: &'a [u8],
    hash: u64,
    now: i64,
    bundle: u64,
    codec: &'a C,
    changes: &'a mut Changes<C::Value>,
    reservation: &'a mut MemoryReservation,
}

impl<C: ValueCodec> TableCore<C> {
    /// The working-map hash of the key in `scratch`: `begin_bundle`'s when the operation
    /// serves the key named at its position (a bundle read in the order it was named: one
    /// hash per key and bundle), computed now otherwise.
    #[inline]
    fn hash_of_scratch(&self) -> u64 {
        self.ahead
            .served_item(&self.scratch)
            .copied()
            .unwrap_or_else(|| self.working.hash(&self.scratch))
    }

    /// Puts `key`'s RocksDB key in `scratch` and its slot in the working map (a point read
    /// when the map may lack it); returns its hash: one for the lookup and, on a miss, the
    /// point read's insert, taken from `begin_bundle` when this operation serves the key
    /// named at its position.
    fn resident(&mut self, key_group: KeyGroup, key: &[u8]) -> Result<u64> {
        composite_key(&mut self.scratch, key_group, self.prefix_bytes, key);
        let hash = self.hash_of_scratch();
        if !self.complete && self.working.get_hashed(hash, &self.scratch).is_none() {
            self.point_hydrate()?;
        }
        Ok(hash)
    }

    /// Finds `key`'s slot (read from RocksDB first when the working map may lack it) and
    /// applies Flink's TTL to the read as a get does: an expired value the read clears
    /// is removed (it leaves the working map at commit unless written again), a read that
    /// refreshes re-stamps the access. A caller that `writes` the slot next stamps it
    /// itself: its read neither refreshes nor clears a value it still returns (an expired
    /// one under `ReturnExpiredIfNotCleanedUp`). `None` when the read sees no value.
    fn visible(
        &mut self,
        key_group: KeyGroup,
        key: &[u8],
        writes: bool,
    ) -> Result<Option<Visible<'_, C>>> {
        self.check_key_group(key_group)?;
        let (ahead, due) = self.ahead.advance_staged(C::PREFETCH_HEAP);
        if let Some(hash) = ahead {
            self.working.prefetch(hash);
        }
        // A value with heap data (a row's cells): the key whose slot was prefetched a stage
        // ago has it cached now, so its cells can be asked for.
        if let Some(hash) = due
            && let Some(Some(value)) = self
                .working
                .get_by_hash_for_hint(hash)
                .map(|slot| slot.value.as_ref())
        {
            self.codec.prefetch_heap(value);
        }
        let now = self.now();
        let hash = self.resident(key_group, key)?;
        let Self {
            working,
            scratch,
            ttl,
            changes,
            dead_keys,
            bundle,
            codec,
            reservation,
            ..
        } = self;
        let bundle = *bundle;
        let Some(slot) = working.get_mut_hashed(hash, scratch) else {
            return Ok(None);
        };
        slot.bundle = bundle;
        if !slot.live {
            return Ok(None);
        }
        let read = ttl_read(ttl.as_ref(), slot.last_access, now);
        if read.clears() && !(writes && read.returns_value()) {
            changes.before(slot, scratch, bundle);
            slot.live = false;
            changes.after(slot, scratch, hash, bundle);
            dead_keys.push((Key::from(scratch.as_slice()), hash));
        } else if read == TtlRead::LiveRefresh && !writes {
            changes.before(slot, scratch, bundle);
            slot.last_access = now;
            changes.after(slot, scratch, hash, bundle);
        }
        if !read.returns_value() || slot.value.is_none() {
            return Ok(None);
        }
        Ok(Some(Visible {
            slot,
            stored_key: scratch,
            hash,
            now,
            bundle,
            codec,
            changes,
            reservation,
        }))
    }
}
