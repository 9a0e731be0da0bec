//! The reads of `begin_bundle`: one iterator seek per named prefix, one batched read of the
//! named entries, one decode of everything.

use std::collections::HashSet;

use rocksdb::ReadOptions;
use state_api::{InlineMapKey, MapHydration, Result, ValueCodec};

use crate::error::rocks_api;
use crate::format::composite_key;

use super::scan::ReadBatch;
use super::{Entry, RocksMapTable, entry_cost};

impl<C: ValueCodec> RocksMapTable<C> {
    /// Every read of `begin_bundle`: one iterator seek per distinct prefix, one batched read
    /// of the single entries not covered by a prefix, one decode of everything.
    pub(super) fn hydrate(&mut self, hydrate: MapHydration<'_>) -> Result<()> {
        let mut prefixes: Vec<Vec<u8>> = hydrate
            .prefixes
            .iter()
            .map(|(kg, p)| {
                let mut full = Vec::new();
                composite_key(&mut full, *kg, self.prefix_bytes, p);
                full
            })
            .collect();
        prefixes.sort_unstable();
        prefixes.dedup();
        let covered: HashSet<&[u8]> = prefixes.iter().map(Vec::as_slice).collect();
        let mut singles: Vec<Vec<u8>> = Vec::new();
        for (kg, prefix, user_key) in hydrate.entries {
            composite_key(&mut self.prefix_scratch, *kg, self.prefix_bytes, prefix);
            if covered.contains(self.prefix_scratch.as_slice()) {
                continue;
            }
            let mut full = self.prefix_scratch.clone();
            full.extend_from_slice(user_key);
            singles.push(full);
        }
        drop(covered);
        singles.sort_unstable();
        singles.dedup();
        if prefixes.is_empty() && singles.is_empty() {
            return Ok(());
        }

        let mut scanned = ReadBatch::default();
        let decoded = {
            let st = self.shared.read();
            let cf = st.table_cf(&self.name)?;
            // One iterator for every prefix (sorted, so its seeks move forward), bounded
            // above by the last prefix's successor; each prefix ends at its first key
            // outside it.
            if let Some(last) = prefixes.last() {
                let mut options = ReadOptions::default();
                if let Some(upper) = state_api::prefix_successor(last) {
                    options.set_iterate_upper_bound(upper);
                }
                let mut iter = st.db.raw_iterator_cf_opt(&cf, options);
                for full in &prefixes {
                    iter.seek(full);
                    while let Some((key, value)) = iter.item() {
                        if !key.starts_with(full) {
                            break;
                        }
                        scanned.push(key, value);
                        iter.next();
                    }
                    iter.status().map_err(rocks_api("prefix hydration"))?;
                }
            }
            let results = if singles.is_empty() {
                Vec::new()
            } else {
                st.db.batched_multi_get_cf(&cf, &singles, true)
            };
            let mut hits = Vec::with_capacity(results.len());
            let mut pinned = Vec::with_capacity(results.len());
            for (i, result) in results.into_iter().enumerate() {
                if let Some(slice) = result.map_err(rocks_api("batched read"))? {
                    hits.push(i);
                    pinned.push(slice);
                }
            }
            let stored: Vec<&[u8]> = scanned
                .values()
                .chain(pinned.iter().map(|s| &**s))
                .collect();
            let decoded = self.decode(stored.iter().copied())?;
            (hits, decoded)
        };
        let (hits, (timestamps, values)) = decoded;
        self.stats.hydration_batches += 1;
        self.stats.hydrated_keys += (singles.len() + scanned.len()) as u64;
        let mut decoded = timestamps.into_iter().zip(values);
        let mut read: Vec<(InlineMapKey, Entry<C::Value>)> =
            Vec::with_capacity(scanned.len() + singles.len());
        for key in scanned.keys() {
            if let Some((ts, value)) = decoded.next() {
                read.push((InlineMapKey::from(key), Entry::stored(ts, value)));
            }
        }
        let mut found = hits.into_iter().zip(decoded).peekable();
        for (i, key) in singles.into_iter().enumerate() {
            let entry = match found.next_if(|(hit, _)| *hit == i) {
                Some((_, (ts, value))) => Entry::stored(ts, value),
                None => Entry::absent(),
            };
            read.push((InlineMapKey::from(key.as_slice()), entry));
        }
        self.install(read);
        self.hydrated.extend(prefixes);
        Ok(())
    }

    /// Admits the entries `begin_bundle` read: into an empty working set in one pass (the
    /// prefix entries and the singles are two sorted, disjoint runs — the singles exclude
    /// hydrated prefixes — so the sort merges them and the map is bulk-built without a
    /// search per entry), else one by one.
    fn install(&mut self, mut read: Vec<(InlineMapKey, Entry<C::Value>)>) {
        if !self.entries.is_empty() {
            for (key, entry) in read {
                self.admit(key, entry);
            }
            return;
        }
        for (key, entry) in &mut read {
            let cost = entry_cost(&self.codec, key.len(), entry.value.as_ref());
            if self.reservation.try_grow(cost).is_ok() {
                entry.reserved = cost;
            }
        }
        read.sort_by(|a, b| a.0.cmp(&b.0));
        self.entries = read.into_iter().collect();
    }
}
