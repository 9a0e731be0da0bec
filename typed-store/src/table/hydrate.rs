//! Reads into the working map: point reads, the batched hydration of a bundle's misses, and
//! the pool-bounded cache's admission and eviction (pending slots are never evicted).

use state_api::{Result, ValueCodec};

use crate::cache::Key;
use crate::error::rocks_api;

use super::{EVICT_FRACTION, Slot, TableCore, entry_cost};

impl<C: ValueCodec> TableCore<C> {
    /// Reads the key in `self.scratch` alone into the working map (from RocksDB: every key
    /// with a pending write is resident).
    pub(super) fn point_hydrate(&mut self) -> Result<()> {
        let stored = {
            let st = self.shared.read();
            let cf = st.table_cf(&self.name)?;
            st.db
                .get_pinned_cf(&cf, &self.scratch)
                .map_err(rocks_api("point read"))?
                .map(|v| v.to_vec())
        };
        self.stats.point_hydrations += 1;
        let slot = match stored {
            None => Slot::absent(self.bundle),
            Some(bytes) => {
                let (mut ts, mut values) = self.decode_stored([bytes.as_slice()].into_iter())?;
                match (ts.pop(), values.pop()) {
                    (Some(last_access), Some(value)) => Slot::hit(value, last_access, self.bundle),
                    _ => Slot::absent(self.bundle),
                }
            }
        };
        let key = Key::from(self.scratch.as_slice());
        self.admit(key, slot);
        Ok(())
    }

    /// Inserts a hydrated slot: cached across bundles when the pool grants its memory,
    /// otherwise (and for absent keys) resident for this bundle only.
    pub(super) fn admit(&mut self, key: Key, mut slot: Slot<C::Value>) {
        let cost = slot
            .value
            .as_ref()
            .map(|v| entry_cost::<C>(&self.codec, key.as_bytes().len(), v));
        match cost {
            Some(cost) if self.reserve_evicting(cost).is_ok() => slot.reserved = cost,
            Some(_) => {
                // A stored key left out of the cache: the map no longer holds every key.
                self.complete = false;
                self.transient_keys.push(key.clone());
            }
            None => self.transient_keys.push(key.clone()),
        }
        if let Some(old) = self.working.insert(key, slot) {
            self.reservation.shrink(old.reserved);
        }
    }

    /// Reserves `bytes` for a cache entry; when the pool refuses, evicts clean entries not
    /// used in the open bundle until an eighth of the cache's bytes (at least `bytes`) is
    /// free, and tries once more. The cache is never cleared whole: its size is what the
    /// pool grants.
    pub(super) fn reserve_evicting(&mut self, bytes: usize) -> Result<()> {
        if self.reservation.try_grow(bytes).is_ok() {
            return Ok(());
        }
        self.evict(bytes);
        if self.reservation.try_grow(bytes).is_ok() {
            return Ok(());
        }
        // Pending slots cannot be evicted: write them, then evict again.
        if !self.changes.pending.is_empty() {
            self.flush_pending()?;
            self.evict(bytes);
        }
        self.reservation.try_grow(bytes)
    }

    /// Evicts clean entries not used in the open bundle until an eighth of the cache's bytes
    /// (at least `bytes`) is free.
    fn evict(&mut self, bytes: usize) {
        let target = (self.reservation.size() / EVICT_FRACTION).max(bytes);
        let bundle = self.bundle;
        let mut freed = 0;
        self.working.retain(|_, slot| {
            // Entries of the open bundle (every dirty one among them) and pending writes stay.
            if freed >= target || slot.reserved == 0 || slot.bundle == bundle || slot.pending {
                return true;
            }
            freed += slot.reserved;
            false
        });
        if freed > 0 {
            self.complete = false;
        }
        self.reservation.shrink(freed);
    }

    /// Drops every cached entry (after a restore or sweep changed RocksDB underneath).
    pub(super) fn clear_cache(&mut self) {
        self.complete = false;
        self.changes.discard_pending();
        self.working.clear();
        self.transient_keys.clear();
        self.reservation.free();
    }

    pub(super) fn release_slot_reservation(&mut self, reserved: usize) {
        self.reservation.shrink(reserved);
    }

    /// Reads the keys in `miss_bytes` with one batched multi-get (sorted, each once), decodes
    /// the hits with one arrow-row conversion and one codec call, and admits every key.
    pub(super) fn hydrate_misses(&mut self) -> Result<()> {
        let mut misses: Vec<&[u8]> = Vec::with_capacity(self.miss_ends.len());
        let mut start = 0;
        for &end in &self.miss_ends {
            misses.push(self.miss_bytes.get(start..end).unwrap_or_default());
            start = end;
        }
        // Sorted keys let RocksDB's MultiGet walk each file and the memtable in order; a key
        // named twice is read once.
        misses.sort_unstable();
        misses.dedup();
        let (hits, timestamps, values) = {
            // Every key with a pending write is resident, so misses are RocksDB's.
            let st = self.shared.read();
            let cf = st.table_cf(&self.name)?;
            let pinned = st
                .db
                .batched_multi_get_cf(&cf, &misses, true)
                .into_iter()
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(rocks_api("batched read"))?;
            let mut hits = Vec::with_capacity(misses.len());
            let mut stored: Vec<&[u8]> = Vec::with_capacity(misses.len());
            for (i, value) in pinned.iter().enumerate() {
                if let Some(bytes) = value.as_deref() {
                    hits.push(i);
                    stored.push(bytes);
                }
            }
            // Decoded straight from the pinned slices (which borrow the database).
            let (timestamps, values) = self.decode_stored(stored.into_iter())?;
            (hits, timestamps, values)
        };
        self.stats.hydration_batches += 1;
        self.stats.hydrated_keys += misses.len() as u64;
        let keys: Vec<Key> = misses.into_iter().map(Key::from).collect();
        let bundle = self.bundle;
        let mut found = hits
            .into_iter()
            .zip(timestamps.into_iter().zip(values))
            .peekable();
        for (i, key) in keys.into_iter().enumerate() {
            let slot = match found.next_if(|(hit, _)| *hit == i) {
                Some((_, (last_access, value))) => Slot::hit(value, last_access, bundle),
                None => Slot::absent(bundle),
            };
            self.admit(key, slot);
        }
        Ok(())
    }
}
