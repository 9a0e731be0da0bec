//! Canonical snapshots: the export of a key group and the staged, all-or-nothing restore.

use std::mem::size_of;
use std::sync::Arc;

use arrow_array::{Array, RecordBatch};
use arrow_schema::SchemaRef;
use keygroup::{KeyGroup, KeyGroupRange};
use rocksdb::{ReadOptions, WriteBatch};
use state_api::{
    CanonicalTable, Error, MemoryReservation, Result, ValueCodec, decode_canonical_batch,
    encode_canonical_batch, ttl_exported,
};

use crate::error::rocks_api;
use crate::format::{composite_key, key_group_upper_bound, split_value};
use crate::restore::{Sink, load_staging};

use super::TableCore;

impl<C: ValueCodec> CanonicalTable for TableCore<C> {
    fn table_name(&self) -> &str {
        &self.name
    }

    fn table_key_groups(&self) -> KeyGroupRange {
        self.key_groups
    }

    fn canonical_schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    /// A prefix scan of the key group (RocksDB's order is the key order), expired rows left
    /// out, the values decoded with one arrow-row conversion and one codec call — only here,
    /// when a canonical snapshot asks for them.
    fn export_key_group(&self, key_group: KeyGroup) -> Result<Option<RecordBatch>> {
        self.check_bundle("export_key_group", false)?;
        self.check_key_group(key_group)?;
        // The handle writes the pending entries first (`RocksKeyedTable::export_key_group`).
        let now = self.ttl.map(|_| self.clock.now_millis());
        let mut prefix = Vec::with_capacity(2);
        composite_key(&mut prefix, key_group, self.prefix_bytes, &[]);
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut stored: Vec<Vec<u8>> = Vec::new();
        let mut scratch = MemoryReservation::new(Arc::clone(self.reservation.pool()));
        {
            let st = self.shared.read();
            let cf = st.table_cf(&self.name)?;
            let mut options = ReadOptions::default();
            options.set_iterate_upper_bound(key_group_upper_bound(key_group, self.prefix_bytes));
            options.fill_cache(false);
            let mut iter = st.db.raw_iterator_cf_opt(&cf, options);
            iter.seek(&prefix);
            while let Some((key, value)) = iter.item() {
                let expired = match (now, split_value(value)) {
                    (Some(now), Some((ts, _))) => !ttl_exported(self.ttl.as_ref(), ts, now),
                    _ => false,
                };
                if !expired {
                    scratch.try_grow(key.len() + value.len() + 2 * size_of::<Vec<u8>>())?;
                    keys.push(key.get(self.prefix_bytes..).unwrap_or_default().to_vec());
                    stored.push(value.to_vec());
                }
                iter.next();
            }
            iter.status().map_err(rocks_api("export scan"))?;
        }
        if keys.is_empty() {
            return Ok(None);
        }
        let (timestamps, values) = self.decode_stored(stored.iter().map(Vec::as_slice))?;
        let rows: Vec<(&[u8], i64, &C::Value)> = keys
            .iter()
            .zip(&timestamps)
            .zip(&values)
            .map(|((k, ts), v)| (k.as_slice(), if self.ttl.is_some() { *ts } else { 0 }, v))
            .collect();
        encode_canonical_batch(&self.schema, &self.codec, &rows).map(Some)
    }

    /// Decodes the sections once and bulk-loads them into a fresh staging column family with
    /// large write batches (WAL off); the table's visible state is untouched until
    /// [`commit_restore`](CanonicalTable::commit_restore) swaps the family in.
    fn stage_restore(&mut self, batches: Vec<(KeyGroup, RecordBatch)>) -> Result<()> {
        self.check_bundle("restore", false)?;
        self.abort_restore();
        let cf_name = self.shared.create_table_cf(&self.name)?;
        self.staged_cf = Some(cf_name.clone());
        let result = self.fill_staging(&cf_name, &batches);
        if result.is_err() {
            self.abort_restore();
        }
        result
    }

    fn commit_restore(&mut self) {
        let staged = self.staged_cf.take();
        let cf = match staged {
            Some(cf) => cf,
            // Nothing staged: the table becomes empty.
            None => match self.shared.create_table_cf(&self.name) {
                Ok(cf) => cf,
                Err(_) => return self.clear_fallback(),
            },
        };
        self.shared.swap_table_cf(&self.name, &cf);
        self.sweep_cursor = None;
        // The restored state replaces the committed values not yet written.
        self.clear_cache();
    }

    fn abort_restore(&mut self) {
        if let Some(cf) = self.staged_cf.take() {
            self.shared.drop_cf(&cf);
        }
    }

    fn table_max_parallelism(&self) -> keygroup::MaxParallelism {
        self.max_parallelism
    }

    fn table_has_ttl(&self) -> bool {
        self.ttl.is_some()
    }
}

impl<C: ValueCodec> TableCore<C> {
    /// Decodes every section once, re-encodes the values to the stored layout and hands the
    /// entries, in ascending RocksDB key order, to the shared bulk loader
    /// ([`load_staging`]: write batches, or one ingested SST file for large restores).
    fn fill_staging(&self, cf_name: &str, batches: &[(KeyGroup, RecordBatch)]) -> Result<()> {
        let mut ordered: Vec<&(KeyGroup, RecordBatch)> = batches.iter().collect();
        ordered.sort_by_key(|(kg, _)| *kg);
        let rows: usize = ordered.iter().map(|(_, b)| b.num_rows()).sum();
        load_staging(&self.shared, cf_name, rows, true, |sink| {
            self.load_batches(&ordered, sink)
        })
    }

    fn load_batches(
        &self,
        ordered: &[&(KeyGroup, RecordBatch)],
        sink: &mut Sink<'_>,
    ) -> Result<()> {
        let mut key = Vec::new();
        let mut failure = None;
        for (key_group, record_batch) in ordered.iter().copied() {
            self.check_key_group(*key_group)?;
            let mut staging = MemoryReservation::new(Arc::clone(self.reservation.pool()));
            staging.try_grow(record_batch.get_array_memory_size())?;
            let decoded = decode_canonical_batch(&self.codec, record_batch)?;
            let heap: usize = decoded
                .values
                .iter()
                .map(|v| size_of::<C::Value>() + self.codec.heap_size(v))
                .sum();
            staging.try_grow(heap)?;
            let entries: Vec<(i64, &C::Value)> = decoded
                .last_access
                .iter()
                .copied()
                .zip(&decoded.values)
                .collect();
            self.encode_stored(&entries, |i, value| {
                if failure.is_some() {
                    return;
                }
                if i >= decoded.keys.len() || decoded.keys.is_null(i) {
                    failure = Some(Error::Codec {
                        column: state_api::KEY_COLUMN.to_owned(),
                        reason: "null key",
                    });
                    return;
                }
                composite_key(
                    &mut key,
                    *key_group,
                    self.prefix_bytes,
                    decoded.keys.value(i),
                );
                if let Err(e) = sink(&key, value) {
                    failure = Some(e);
                }
            })?;
            if let Some(e) = failure.take() {
                return Err(e);
            }
        }
        Ok(())
    }

    /// `commit_restore` without a staged family when no new family can be created: delete
    /// every entry in place (best effort; `commit_restore` cannot report failure).
    fn clear_fallback(&mut self) {
        self.clear_cache();
        let st = self.shared.read();
        let Ok(cf) = st.table_cf(&self.name) else {
            return;
        };
        let mut batch = WriteBatch::default();
        let mut iter = st.db.raw_iterator_cf(&cf);
        iter.seek_to_first();
        while let Some(key) = iter.key() {
            batch.delete_cf(&cf, key);
            iter.next();
        }
        drop(iter);
        let _ = st.db.write_opt(batch, &self.shared.write_options);
    }
}
