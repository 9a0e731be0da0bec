//! Writes to RocksDB: a write-through commit's dirty values encoded once into one
//! `WriteBatch`, and the write-behind flush of the pending slots.
//!
//! Write-behind: a committed value stays in its working-map slot, marked pending, until a
//! flush writes every pending key in one `WriteBatch` (keys ascending, WAL off). A key
//! committed in many bundles is written once per flush, and a commit writes nothing. The
//! flush points: more pending keys than the limit (`RocksSlot::with_write_behind`) after a
//! commit; the pool refusing memory that evicting clean entries cannot free (pending slots
//! are never evicted); anything that reads RocksDB as a whole (a native checkpoint of the
//! store, a canonical export, a TTL sweep, `RocksStore::flush_table` / `compact_table`); and
//! dropping the table. A flush while a bundle is open writes committed state only: for a
//! key the bundle changed, the committed write kept when the bundle first changed it, or
//! nothing when RocksDB already holds it (`changes.rs`). Because every key with a pending
//! write is resident, a read of a key the working map lacks goes to RocksDB alone. A
//! restore (canonical or native) replaces the state and drops what is pending. With the
//! WAL off, what a crash loses is the same as with write-through: a crashed store is
//! discarded and state comes back from the last checkpoint.

use std::collections::HashMap;

use rocksdb::WriteBatch;
use state_api::{Result, ValueCodec};

use crate::error::rocks_api;

use super::TableCore;
use super::changes::pending_cost;

/// A key's write in a flush: `(last access, value)`, or `None` for a delete.
type Write<'a, V> = Option<(i64, &'a V)>;

impl<C: ValueCodec> TableCore<C> {
    /// Encodes the values of the dirty keys (in `dirty` order) with one codec call into
    /// `encoded`; returns per dirty key its value's index in `encoded_ends`, or `None` for a
    /// delete.
    pub(super) fn encode_dirty(&mut self) -> Result<Vec<Option<usize>>> {
        let dirty = &self.changes.dirty;
        let mut ops = Vec::with_capacity(dirty.len());
        let mut entries: Vec<(i64, &C::Value)> = Vec::with_capacity(dirty.len());
        for dirty in dirty {
            match &dirty.write {
                Some((last_access, value)) => {
                    ops.push(Some(entries.len()));
                    entries.push((*last_access, value));
                }
                None => ops.push(None),
            }
        }
        let mut encoded = std::mem::take(&mut self.encoded);
        let mut ends = std::mem::take(&mut self.encoded_ends);
        let result = self.encode_back_to_back(&entries, &mut encoded, &mut ends);
        self.encoded = encoded;
        self.encoded_ends = ends;
        result?;
        Ok(ops)
    }

    /// Encodes `entries` into `encoded`, back to back (`ends` ends each), both cleared first.
    fn encode_back_to_back(
        &self,
        entries: &[(i64, &C::Value)],
        encoded: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<()> {
        encoded.clear();
        ends.clear();
        self.encode_stored(entries, |_, value| {
            encoded.extend_from_slice(value);
            ends.push(encoded.len());
        })
    }

    /// The encoded value number `i` of the last [`encode_dirty`](Self::encode_dirty).
    pub(super) fn encoded_value(&self, i: usize) -> &[u8] {
        let start = i
            .checked_sub(1)
            .map_or(0, |p| self.encoded_ends.get(p).copied().unwrap_or(0));
        let end = self.encoded_ends.get(i).copied().unwrap_or(start);
        self.encoded.get(start..end).unwrap_or_default()
    }

    /// Writes the dirty keys (`ops` from [`encode_dirty`](Self::encode_dirty)) to RocksDB in
    /// one `WriteBatch`, WAL off.
    pub(super) fn write_through(&self, ops: &[Option<usize>]) -> Result<()> {
        let st = self.shared.read();
        let cf = st.table_cf(&self.name)?;
        let mut batch = WriteBatch::default();
        for (dirty, op) in self.changes.dirty.iter().zip(ops) {
            match op {
                Some(i) => batch.put_cf(&cf, dirty.key.as_bytes(), self.encoded_value(*i)),
                None => batch.delete_cf(&cf, dirty.key.as_bytes()),
            }
        }
        if !batch.is_empty() {
            st.db
                .write_opt(batch, &self.shared.write_options)
                .map_err(rocks_api("commit"))?;
        }
        Ok(())
    }

    /// Writes every pending key to RocksDB in one `WriteBatch` (keys ascending, WAL off) and
    /// clears their pending marks; removed keys then leave the working map. While a bundle
    /// is open, keys it changed keep their marks and only their committed writes go out. On
    /// error nothing is cleared.
    pub(crate) fn flush_pending(&mut self) -> Result<()> {
        if self.changes.pending.is_empty() {
            return Ok(());
        }
        let open = self.bundle_phase.is_open();
        let bundle = self.bundle;
        let count = {
            let committed: HashMap<&[u8], Write<'_, C::Value>> = if open {
                self.changes
                    .undo
                    .iter()
                    .map(|(key, write)| (key.as_bytes(), write.as_ref().map(|(t, v)| (*t, v))))
                    .collect()
            } else {
                HashMap::new()
            };
            let mut writes: Vec<(&[u8], Write<'_, C::Value>)> =
                Vec::with_capacity(self.changes.pending.len());
            for (key, hash) in &self.changes.pending {
                let Some(slot) = self.working.get_hashed(*hash, key.as_bytes()) else {
                    continue;
                };
                if open && slot.dirty_in == bundle {
                    if let Some(write) = committed.get(key.as_bytes()) {
                        writes.push((key.as_bytes(), *write));
                    }
                    continue;
                }
                let write = match (&slot.value, slot.live) {
                    (Some(value), true) => Some((slot.last_access, value)),
                    _ => None,
                };
                writes.push((key.as_bytes(), write));
            }
            writes.sort_unstable_by(|a, b| a.0.cmp(b.0));
            let entries: Vec<(i64, &C::Value)> = writes.iter().filter_map(|(_, w)| *w).collect();
            let mut encoded = std::mem::take(&mut self.encoded);
            let mut ends = std::mem::take(&mut self.encoded_ends);
            let result = self.encode_back_to_back(&entries, &mut encoded, &mut ends);
            let written = result.and_then(|()| {
                let st = self.shared.read();
                let cf = st.table_cf(&self.name)?;
                let mut batch = WriteBatch::default();
                let mut values = ends.iter();
                let mut start = 0;
                for (key, write) in &writes {
                    if write.is_some() {
                        let end = values.next().copied().unwrap_or(start);
                        batch.put_cf(&cf, key, encoded.get(start..end).unwrap_or_default());
                        start = end;
                    } else {
                        batch.delete_cf(&cf, key);
                    }
                }
                st.db
                    .write_opt(batch, &self.shared.write_options)
                    .map_err(rocks_api("write-behind flush"))
            });
            self.encoded = encoded;
            self.encoded_ends = ends;
            written?;
            writes.len() as u64
        };
        let pending = std::mem::take(&mut self.changes.pending);
        let mut kept = Vec::new();
        let mut freed = 0;
        for (key, hash) in pending {
            let Some(slot) = self.working.get_mut_hashed(hash, key.as_bytes()) else {
                continue;
            };
            if open && slot.dirty_in == bundle {
                kept.push((key, hash));
                continue;
            }
            slot.pending = false;
            if !slot.live {
                freed += self
                    .working
                    .remove(key.as_bytes())
                    .map_or(0, |s| s.reserved);
            }
        }
        self.release_slot_reservation(freed);
        self.changes.pending_bytes = kept
            .iter()
            .map(|(key, _)| pending_cost::<C::Value>(key.as_bytes().len()))
            .sum();
        self.changes.pending = kept;
        if count > 0 {
            self.flushes += 1;
            self.flushed_keys += count;
        }
        Ok(())
    }
}
