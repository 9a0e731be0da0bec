//! The bundle operations of the map table ([`MapTable`]).

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use keygroup::{KeyGroup, KeyGroupRange};
use rocksdb::WriteBatch;
use state_api::{
    MapHydration, MapTable, PREFETCH_AHEAD, PrefetchStages, PrefixEntry, PrefixMap, Result,
    ScanDirection, SweepProgress, TableStats, TtlRead, UserKeyRange, ValueCodec, change_in_place,
    ttl_read, ttl_scan_visible,
};

use crate::error::rocks_api;
use crate::format::{composite_key, encode_stored_values};
use crate::sweep::sweep_column_family;

use super::dirty::{DirtyKeys, KeyList, SplitKey, split_key};
use super::scan::rocks_bounds;
use super::{Entry, RANGE_DELETE_MIN_ENTRIES, RocksMapTable, entry_cost, write_batch_capacity};

impl<C: ValueCodec> MapTable for RocksMapTable<C> {
    type Codec = C;

    fn name(&self) -> &str {
        &self.name
    }

    fn key_groups(&self) -> KeyGroupRange {
        self.key_groups
    }

    fn begin_bundle(&mut self, hydrate: MapHydration<'_>) -> Result<()> {
        self.bundle.check_begin("begin_bundle")?;
        for (key_group, _) in hydrate.prefixes {
            self.check_key_group(*key_group)?;
        }
        for (key_group, _, _) in hydrate.entries {
            self.check_key_group(*key_group)?;
        }
        self.check_generation();
        self.range_deletes.clear();
        self.dirty.clear();
        // A complete table keeps its working set (every entry) and reads nothing.
        self.ahead.clear();
        if !self.complete {
            self.clear_entries();
            self.hydrated.clear();
            if let Err(e) = self.hydrate(hydrate) {
                self.end_bundle();
                return Err(e);
            }
        }
        self.bundle.begin("begin_bundle")?;
        self.shared.open_bundles.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn get(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
    ) -> Result<Option<&C::Value>> {
        self.check_bundle("get", true)?;
        self.check_key_group(key_group)?;
        self.set_keys(key_group, prefix, user_key);
        self.resident()?;
        let now = self.now();
        let ttl = self.ttl;
        let (entries, prefix_scratch, user_key, dirty) = self.scratch_parts();
        let Some(entry) = entries.get_mut(prefix_scratch, user_key) else {
            return Ok(None);
        };
        if !entry.live {
            return Ok(None);
        }
        let read = ttl_read(ttl.as_ref(), entry.last_access, now);
        if read.clears() {
            entry.live = false;
            dirty.mark(entry, prefix_scratch, user_key);
        } else if read == TtlRead::LiveRefresh {
            entry.last_access = now;
            dirty.mark(entry, prefix_scratch, user_key);
        }
        if read.returns_value() {
            Ok(entry.value.as_ref())
        } else {
            Ok(None)
        }
    }

    fn put(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
        value: C::Value,
    ) -> Result<()> {
        self.check_bundle("put", true)?;
        self.check_key_group(key_group)?;
        self.set_keys(key_group, prefix, user_key);
        self.put_scratch(self.scratch_reserved(), value)
    }

    fn update<R>(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
        f: impl FnOnce(&mut C::Value) -> R,
    ) -> Result<Option<R>> {
        self.check_bundle("update", true)?;
        self.check_key_group(key_group)?;
        self.set_keys(key_group, prefix, user_key);
        self.resident()?;
        Ok(match self.update_scratch(f)? {
            Found::Updated(out) => Some(out),
            Found::Invisible { .. } => None,
        })
    }

    /// One search for a visible entry (updated in place), two for a new one (the search
    /// that did not find it, the insert); the default made three or four.
    fn upsert(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
        insert: impl FnOnce() -> C::Value,
        f: impl FnOnce(&mut C::Value),
    ) -> Result<bool> {
        self.check_bundle("upsert", true)?;
        self.check_key_group(key_group)?;
        self.set_keys(key_group, prefix, user_key);
        self.resident()?;
        match self.update_scratch(f)? {
            Found::Updated(()) => Ok(true),
            Found::Invisible { reserved } => {
                self.put_scratch(reserved, insert())?;
                Ok(false)
            }
        }
    }

    /// The prefix's index slot now, its entries [`PREFETCH_STAGE`](state_api::PREFETCH_STAGE)
    /// hints later (`state_api::PrefetchStages`); outside a bundle nothing.
    fn prefetch(&mut self, key_group: KeyGroup, prefix: &[u8]) {
        if !self.bundle.is_open() || self.check_key_group(key_group).is_err() {
            return;
        }
        composite_key(
            &mut self.prefix_scratch,
            key_group,
            self.prefix_bytes,
            prefix,
        );
        let hash = self.entries.prefetch_prefix(&self.prefix_scratch);
        if let Some(earlier) = self.ahead.push(hash) {
            self.entries.prefetch_entries(earlier);
        }
    }

    fn remove(&mut self, key_group: KeyGroup, prefix: &[u8], user_key: &[u8]) -> Result<()> {
        self.check_bundle("remove", true)?;
        self.check_key_group(key_group)?;
        self.set_keys(key_group, prefix, user_key);
        self.resident()?;
        let mut freed = 0;
        let codec = &self.codec;
        let (entries, prefix_scratch, user_key, dirty) = split_scratch(
            &mut self.entries,
            &self.prefix_scratch,
            &self.scratch,
            &mut self.dirty,
        );
        if let Some(entry) = entries.get_mut(prefix_scratch, user_key)
            && entry.live
        {
            entry.live = false;
            dirty.mark(entry, prefix_scratch, user_key);
            if let Some(value) = entry.value.take() {
                freed = codec.heap_size(&value).min(entry.reserved);
                entry.reserved -= freed;
            }
        }
        self.reservation.shrink(freed);
        Ok(())
    }

    /// Every entry of the range becomes a delete of the bundle (committed as one
    /// `delete_range_cf` from 16 entries on). The committed keys of a prefix that is not
    /// hydrated are listed with one iterator seek first (nothing changes when that read
    /// fails).
    fn remove_range(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        range: UserKeyRange<'_>,
    ) -> Result<u64> {
        self.check_bundle("remove_range", true)?;
        self.check_key_group(key_group)?;
        let mut full_prefix = Vec::new();
        composite_key(&mut full_prefix, key_group, self.prefix_bytes, prefix);
        let Some((lo, hi)) = rocks_bounds(&full_prefix, range) else {
            return Ok(0);
        };
        let now = self.now();
        let ttl = self.ttl;
        let committed = if self.prefix_resident(&full_prefix) {
            Vec::new()
        } else {
            self.stats.point_hydrations += 1;
            self.committed_keys(&full_prefix, &lo, hi.as_deref())?
        };
        let mut removed = 0_u64;
        let mut freed = 0;
        let mut overlay_deleted = 0;
        for (user_key, entry) in self
            .entries
            .range_mut(&full_prefix, (range.start(), range.end()))
        {
            if !entry.live {
                continue;
            }
            overlay_deleted += 1;
            if ttl_scan_visible(ttl.as_ref(), entry.last_access, now) {
                removed += 1;
            }
            entry.live = false;
            self.dirty.mark(entry, &full_prefix, user_key);
            if let Some(value) = entry.value.take() {
                let heap = self.codec.heap_size(&value).min(entry.reserved);
                entry.reserved -= heap;
                freed += heap;
            }
        }
        self.reservation.shrink(freed);
        if let Some(hi) = &hi
            && overlay_deleted + committed.len() >= RANGE_DELETE_MIN_ENTRIES
        {
            self.range_deletes.push((lo.clone(), hi.clone()));
        }
        for (key, ts) in committed {
            if ttl_scan_visible(ttl.as_ref(), ts, now) {
                removed += 1;
            }
            let user_key = key.get(full_prefix.len()..).unwrap_or_default();
            let mut entry = Entry::absent();
            self.dirty.mark(&mut entry, &full_prefix, user_key);
            self.admit(&full_prefix, user_key, entry);
        }
        Ok(removed)
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
        self.check_bundle("scan", true)?;
        self.check_key_group(key_group)?;
        // The full prefix and the read buffers are the table's, reused by every scan.
        let mut full_prefix = std::mem::take(&mut self.prefix_scratch);
        composite_key(&mut full_prefix, key_group, self.prefix_bytes, prefix);
        let mut batch = std::mem::take(&mut self.scan_batch);
        let scanned = self.scan_merged(&full_prefix, &mut batch, range, direction, visit);
        self.prefix_scratch = full_prefix;
        self.scan_batch = batch;
        scanned
    }

    fn commit_bundle(&mut self) -> Result<()> {
        self.check_bundle("commit_bundle", true)?;
        let mut written = 0_u64;
        // The keys of the entries this commit deletes (they leave a complete working set).
        let complete = self.complete;
        let mut removed = KeyList::default();
        // The encoded values go into the scans' read buffers (reused, not allocated per
        // commit).
        let mut encoded = std::mem::take(&mut self.scan_batch);
        encoded.clear();
        // A complete table without range deletes in the bundle buffers its writes
        // (`pending.rs`); anything else writes through, after the pending writes.
        let behind = complete && self.write_behind_limit > 0 && self.range_deletes.is_empty();
        if !behind {
            self.pending.flush()?;
        }
        let appended = {
            // The changed entries in key order: from the dirty list when the working set holds
            // every entry (a complete table), else from the bundle's working set itself.
            let dirty = &self.dirty;
            // An incomplete table's dirty entries are found by walking its working set (the
            // bundle's; its dirty list is not read), a complete table's by looking its
            // dirty list up.
            let mut listed = KeyList::default();
            let mut listed_entries = Vec::new();
            if !complete {
                self.entries.for_each_ordered(|prefix, user_key, entry| {
                    if dirty.is_dirty(entry) {
                        listed.push(prefix, user_key);
                        listed_entries.push(entry);
                    }
                });
            }
            let changed: Vec<(SplitKey<'_>, &Entry<C::Value>)> = if complete {
                look_up_dirty(&self.entries, &dirty.sorted())
                    .into_iter()
                    .filter(|(_, entry)| dirty.is_dirty(entry))
                    .collect()
            } else {
                listed.iter().zip(listed_entries).collect()
            };
            let mut puts: Vec<(i64, &C::Value)> = Vec::new();
            for (_, entry) in &changed {
                if entry.live
                    && let Some(value) = &entry.value
                {
                    puts.push((entry.last_access, value));
                }
            }
            encode_stored_values(&self.name, &self.rows, &self.codec, &puts, |_, bytes| {
                encoded.push(&[], bytes);
            })?;
            let mut values = encoded.values();
            let covered = |key: &[u8]| {
                self.range_deletes
                    .iter()
                    .any(|(lower, upper)| lower.as_slice() <= key && key < upper.as_slice())
            };
            // Key and stored value (`None`: a delete) of every write, in key order.
            let mut writes: Vec<(&[u8], Option<&[u8]>)> = Vec::with_capacity(changed.len());
            for &(split, entry) in &changed {
                let key = split.0;
                written += 1;
                if entry.live && entry.value.is_some() {
                    if let Some(bytes) = values.next() {
                        writes.push((key, Some(bytes)));
                    }
                } else {
                    if complete && !entry.live {
                        let (prefix, user_key) = split_key(split);
                        removed.push(prefix, user_key);
                    }
                    if !covered(key) {
                        writes.push((key, None));
                    }
                }
            }
            let appended = behind && self.pending.append(writes.iter().copied());
            if !appended {
                // A refused reservation: the pending writes are older, they go first.
                if behind {
                    self.pending.flush()?;
                }
                self.write_through(&writes, encoded.value_bytes())?;
            }
            appended
        };
        self.scan_batch = encoded;
        self.stats.written_keys += written;
        self.stats.bundles += 1;
        if self.complete {
            self.keep_committed(&removed);
            if appended && self.pending.bytes() > self.write_behind_limit {
                // The commit itself is done: a failed flush keeps the writes pending for the
                // next flush point, which reports it.
                let _ = self.pending.flush();
            }
            // A bounded pool is shared (with the store's other tables, and with other stores
            // of its slot), and nothing evicts across tables: a complete table that leaves
            // it more than half used writes its pending writes, then, if that was not enough,
            // gives its entries back and reads from then on. (A failed flush leaves the table
            // complete; the next flush point reports it.)
            let pool = Arc::clone(self.reservation.pool());
            let crowded = || {
                pool.capacity()
                    .is_some_and(|capacity| pool.used() > capacity / 2)
            };
            if crowded() && self.pending.flush().is_ok() && crowded() {
                let _ = self.drop_clean_entries();
            }
        } else {
            self.end_bundle();
        }
        Ok(())
    }

    /// One step of `sweep_column_family`: at most `4 * max_entries` (at least 64) entries
    /// scanned from a cursor, the expired ones among them deleted (at most `max_entries`) in
    /// one write batch; a table without TTL has nothing to sweep.
    fn sweep_expired(&mut self, max_entries: usize) -> Result<SweepProgress> {
        self.check_bundle("sweep_expired", false)?;
        let Some(ttl) = self.ttl else {
            return Ok(SweepProgress::nothing_to_sweep());
        };
        // The sweep scans RocksDB (a table with TTL is never complete, so nothing is pending;
        // kept for the rule that every read of RocksDB as a whole flushes first).
        self.pending.flush()?;
        let now = self.clock.now_millis();
        sweep_column_family(
            &self.shared,
            &self.name,
            &ttl,
            now,
            &mut self.sweep_cursor,
            max_entries,
        )
    }

    fn stats(&self) -> TableStats {
        self.stats
    }
}

/// The working-set entries of `keys` (sorted), each key's prefix slot prefetched
/// [`PREFETCH_AHEAD`] keys ahead and its entries [`PREFETCH_STAGE`](state_api::PREFETCH_STAGE)
/// keys ahead (after a bundle, the working set is mostly out of the cache).
fn look_up_dirty<'a, V>(
    entries: &'a PrefixMap<Entry<V>>,
    keys: &[SplitKey<'a>],
) -> Vec<(SplitKey<'a>, &'a Entry<V>)> {
    let mut stages = PrefetchStages::default();
    let mut found = Vec::with_capacity(keys.len());
    for (at, key) in keys.iter().enumerate() {
        if let Some(ahead) = keys.get(at + PREFETCH_AHEAD) {
            let (prefix, _) = split_key(*ahead);
            let hash = entries.prefetch_prefix(prefix);
            if let Some(earlier) = stages.push(hash) {
                entries.prefetch_entries(earlier);
            }
        }
        let (prefix, user_key) = split_key(*key);
        if let Some(entry) = entries.get(prefix, user_key) {
            found.push((*key, entry));
        }
    }
    found
}

/// The working set, a full key as (full prefix, user key), and the dirty list.
type ScratchParts<'a, V> = (
    &'a mut PrefixMap<Entry<V>>,
    &'a [u8],
    &'a [u8],
    &'a mut DirtyKeys,
);

/// `full_key` (which starts with `full_prefix`) split, with the working set and dirty list:
/// the borrows a working-set update needs at once.
fn split_scratch<'a, V>(
    entries: &'a mut PrefixMap<Entry<V>>,
    full_prefix: &'a [u8],
    full_key: &'a [u8],
    dirty: &'a mut DirtyKeys,
) -> ScratchParts<'a, V> {
    let user_key = full_key.get(full_prefix.len()..).unwrap_or_default();
    (entries, full_prefix, user_key, dirty)
}

/// What [`RocksMapTable::update_scratch`] did.
enum Found<R> {
    /// The visible value was updated; `f`'s result.
    Updated(R),
    /// No visible value (absent, removed, expired or without a value), `f` not called:
    /// `reserved` is what the entry holds (0 when absent).
    Invisible { reserved: usize },
}

impl<C: ValueCodec> RocksMapTable<C> {
    /// Writes the bundle's range deletes, then `writes` (key and stored value, `None` for a
    /// delete; `value_bytes` of values in all), in one `WriteBatch` with the WAL off.
    fn write_through(&self, writes: &[(&[u8], Option<&[u8]>)], value_bytes: usize) -> Result<()> {
        let st = self.shared.read();
        let cf = st.table_cf(&self.name)?;
        let key_bytes: usize = writes.iter().map(|(key, _)| key.len()).sum();
        let range_bytes: usize = self
            .range_deletes
            .iter()
            .map(|(lower, upper)| lower.len() + upper.len())
            .sum();
        let mut batch = WriteBatch::with_capacity_bytes(write_batch_capacity(
            writes.len() + self.range_deletes.len(),
            key_bytes + value_bytes + range_bytes,
        ));
        // Range deletes first: the puts after them in the batch carry later sequence
        // numbers, so an entry put after a range remove survives it.
        for (lower, upper) in &self.range_deletes {
            batch.delete_range_cf(&cf, lower, upper);
        }
        for (key, value) in writes {
            match value {
                Some(bytes) => batch.put_cf(&cf, key, bytes),
                None => batch.delete_cf(&cf, key),
            }
        }
        if !batch.is_empty() {
            st.db
                .write_opt(batch, &self.shared.write_options)
                .map_err(rocks_api("commit"))?;
        }
        Ok(())
    }

    /// The working-set entry of the full key in `scratch`.
    fn scratch_entry(&mut self) -> Option<&mut Entry<C::Value>> {
        let (entries, prefix, user_key, _) = self.scratch_parts();
        entries.get_mut(prefix, user_key)
    }

    /// The working set, the full key in `scratch` as (full prefix, user key), and the dirty
    /// list, borrowed together.
    fn scratch_parts(&mut self) -> ScratchParts<'_, C::Value> {
        split_scratch(
            &mut self.entries,
            &self.prefix_scratch,
            &self.scratch,
            &mut self.dirty,
        )
    }

    /// Sets the entry in `scratch` (holding `previous` reserved bytes) to `value`, live and
    /// dirty: the reservation, then one search.
    fn put_scratch(&mut self, previous: usize, value: C::Value) -> Result<()> {
        let now = self.now();
        let needed = entry_cost(&self.codec, self.scratch.len(), Some(&value));
        self.reserve_entry(previous, needed)?;
        if !self.entries.has_bucket(&self.prefix_scratch) {
            // A new prefix: its charge (a complete table refused drops its clean entries and
            // asks once more, as for the entry); refused, nothing changes.
            let mut charged = self.charge_prefixes(1);
            if charged.is_err() && self.complete {
                charged = self.drop_clean_entries().and_then(|()| {
                    self.charge_prefixes(usize::from(
                        !self.entries.has_bucket(&self.prefix_scratch),
                    ))
                });
            }
            if let Err(e) = charged {
                self.reservation.shrink(needed.saturating_sub(previous));
                return Err(e);
            }
        }
        let (entries, prefix_scratch, user_key, dirty) = self.scratch_parts();
        // One probe of the prefix index and one search of the prefix.
        let entry = match entries.entry(prefix_scratch, user_key) {
            PrefixEntry::Occupied(entry) => entry,
            PrefixEntry::Vacant(vacant) => vacant.insert(Entry::absent()),
        };
        entry.value = Some(value);
        entry.live = true;
        entry.last_access = now;
        entry.reserved = needed;
        dirty.mark(entry, prefix_scratch, user_key);
        Ok(())
    }

    /// Applies `f` in place to the visible value of the entry in `scratch` (resident), one
    /// search; a value that grew is charged to the pool, and a refusal restores it.
    fn update_scratch<R>(&mut self, f: impl FnOnce(&mut C::Value) -> R) -> Result<Found<R>> {
        let now = self.now();
        let bounded = self.reservation.pool().capacity().is_some();
        let Self {
            entries,
            scratch,
            prefix_scratch,
            codec,
            reservation,
            ttl,
            complete,
            dirty,
            ..
        } = self;
        let user_key = scratch.get(prefix_scratch.len()..).unwrap_or_default();
        let Some(entry) = entries.get_mut(prefix_scratch, user_key) else {
            return Ok(Found::Invisible { reserved: 0 });
        };
        // Visible as a scan sees it (memory-store's rule): an expired entry only under
        // `ReturnExpiredIfNotCleanedUp`, and the update then refreshes it.
        let visible = entry.live && ttl_scan_visible(ttl.as_ref(), entry.last_access, now);
        let Some(value) = entry.value.as_mut().filter(|_| visible) else {
            return Ok(Found::Invisible {
                reserved: entry.reserved,
            });
        };
        let change = change_in_place(codec, bounded, value, f);
        let growth = change.growth();
        if growth == 0 {
            let freed = change.shrinkage().min(entry.reserved);
            reservation.shrink(freed);
            entry.reserved -= freed;
            entry.last_access = now;
            dirty.mark(entry, prefix_scratch, user_key);
            return Ok(Found::Updated(change.into_output()));
        }
        let out = match reservation.try_grow(growth) {
            Ok(()) => change.into_output(),
            Err(e) if !*complete => {
                if change.undo(value).1.is_none() {
                    // No copy to put back (an unbounded pool, which refuses only a count
                    // that would overflow): the change stays, recorded for the commit.
                    entry.last_access = now;
                    dirty.mark(entry, prefix_scratch, user_key);
                }
                return Err(e);
            }
            Err(_) => {
                // A complete table's clean entries can make room; marked dirty for the
                // moment, this one stays while they go (dropping them makes the table
                // incomplete, whose commit does not read the dirty list).
                let was_dirty = std::mem::replace(&mut entry.dirty_in, dirty.epoch());
                let room = self
                    .drop_clean_entries()
                    .and_then(|()| self.reservation.try_grow(growth));
                if let Err(e) = room {
                    if let Some(entry) = self.scratch_entry() {
                        let put_back = entry
                            .value
                            .as_mut()
                            .is_some_and(|value| change.undo(value).1.is_some());
                        // With no copy to put back the change stays, and so does its mark:
                        // the (now incomplete) table's commit writes it.
                        if put_back {
                            entry.dirty_in = was_dirty;
                        }
                    }
                    return Err(e);
                }
                change.into_output()
            }
        };
        let (entries, prefix_scratch, user_key, dirty) = self.scratch_parts();
        if let Some(entry) = entries.get_mut(prefix_scratch, user_key) {
            entry.reserved += growth;
            entry.last_access = now;
            dirty.mark(entry, prefix_scratch, user_key);
        }
        Ok(Found::Updated(out))
    }
}
