//! The reads of `begin_bundle`: one iterator seek per named prefix, one batched read of the
//! named entries, one decode of everything.

use std::collections::HashSet;

use rocksdb::ReadOptions;
use state_api::{MapHydration, Result, ValueCodec};

use crate::error::rocks_api;
use crate::format::composite_key;

use super::scan::ReadBatch;
use super::{Entry, RocksMapTable};

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
        // Full keys and the length of their full prefix.
        let mut singles: Vec<(Vec<u8>, usize)> = Vec::new();
        for (kg, prefix, user_key) in hydrate.entries {
            composite_key(&mut self.prefix_scratch, *kg, self.prefix_bytes, prefix);
            if covered.contains(self.prefix_scratch.as_slice()) {
                continue;
            }
            let mut full = self.prefix_scratch.clone();
            full.extend_from_slice(user_key);
            singles.push((full, self.prefix_scratch.len()));
        }
        drop(covered);
        singles.sort_unstable();
        singles.dedup_by(|a, b| a.0 == b.0);
        if prefixes.is_empty() && singles.is_empty() {
            return Ok(());
        }

        let mut scanned = ReadBatch::default();
        // The full-prefix length of each scanned key.
        let mut scanned_splits: Vec<usize> = Vec::new();
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
                        scanned_splits.push(full.len());
                        iter.next();
                    }
                    iter.status().map_err(rocks_api("prefix hydration"))?;
                }
            }
            let results = if singles.is_empty() {
                Vec::new()
            } else {
                let keys: Vec<&[u8]> = singles.iter().map(|(k, _)| k.as_slice()).collect();
                st.db.batched_multi_get_cf(&cf, &keys, true)
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
        for (key, split) in scanned.keys().zip(scanned_splits) {
            if let Some((ts, value)) = decoded.next() {
                let (prefix, user_key) = key.split_at_checked(split).unwrap_or((key, &[]));
                self.admit(prefix, user_key, Entry::stored(ts, value));
            }
        }
        let mut found = hits.into_iter().zip(decoded).peekable();
        for (i, (key, split)) in singles.iter().enumerate() {
            let entry = match found.next_if(|(hit, _)| *hit == i) {
                Some((_, (ts, value))) => Entry::stored(ts, value),
                None => Entry::absent(),
            };
            let (prefix, user_key) = key.split_at_checked(*split).unwrap_or((key, &[]));
            self.admit(prefix, user_key, entry);
        }
        self.hydrated.extend(prefixes);
        Ok(())
    }
}
