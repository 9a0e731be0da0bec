//! Canonical export and restore of the map table ([`CanonicalTable`]).

use std::mem::size_of;
use std::sync::Arc;

use arrow_array::{Array, RecordBatch};
use arrow_schema::SchemaRef;
use keygroup::{KeyGroup, KeyGroupRange};
use rocksdb::ReadOptions;
use state_api::{
    CanonicalTable, Error, MemoryReservation, Result, ValueCodec, decode_canonical_batch,
    encode_canonical_batch, ttl_exported,
};

use crate::error::rocks_api;
use crate::format::{composite_key, encode_stored_values, key_group_upper_bound, split_value};
use crate::restore::load_staging;

use super::RocksMapTable;
use super::scan::ReadBatch;

impl<C: ValueCodec> CanonicalTable for RocksMapTable<C> {
    fn table_name(&self) -> &str {
        &self.name
    }

    fn table_key_groups(&self) -> KeyGroupRange {
        self.key_groups
    }

    fn canonical_schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    /// One prefix scan of the key group: key column `prefix ‖ user key` (the RocksDB key
    /// without its key-group prefix, [`state_api::map_entry_key`]), RocksDB's order, expired
    /// rows left out, values decoded only here.
    fn export_key_group(&self, key_group: KeyGroup) -> Result<Option<RecordBatch>> {
        self.check_bundle("export_key_group", false)?;
        self.check_key_group(key_group)?;
        // The export reads RocksDB: the pending writes go there first.
        self.pending.flush()?;
        let now = self.ttl.map(|_| self.clock.now_millis());
        let mut prefix = Vec::with_capacity(2);
        composite_key(&mut prefix, key_group, self.prefix_bytes, &[]);
        let mut read = ReadBatch::default();
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
                    scratch.try_grow(key.len() + value.len() + 2 * size_of::<usize>())?;
                    read.push(key.get(self.prefix_bytes..).unwrap_or_default(), value);
                }
                iter.next();
            }
            iter.status().map_err(rocks_api("export scan"))?;
        }
        if read.is_empty() {
            return Ok(None);
        }
        let (timestamps, values) = self.decode(read.values())?;
        let with_ttl = self.ttl.is_some();
        let rows: Vec<(&[u8], i64, &C::Value)> = read
            .keys()
            .zip(&timestamps)
            .zip(&values)
            .map(|((k, ts), v)| (k, if with_ttl { *ts } else { 0 }, v))
            .collect();
        encode_canonical_batch(&self.schema, &self.codec, &rows).map(Some)
    }

    /// Decodes every section once, re-encodes the values to the stored layout and bulk-loads
    /// them into a fresh staging column family (one SST file from 10 000 rows on, else write
    /// batches); the visible state is untouched until `commit_restore` swaps the family in.
    fn stage_restore(&mut self, batches: Vec<(KeyGroup, RecordBatch)>) -> Result<()> {
        self.check_bundle("restore", false)?;
        self.abort_restore();
        let mut ordered: Vec<&(KeyGroup, RecordBatch)> = batches.iter().collect();
        ordered.sort_by_key(|(kg, _)| *kg);
        for (key_group, _) in &ordered {
            self.check_key_group(*key_group)?;
        }
        let rows: usize = ordered.iter().map(|(_, b)| b.num_rows()).sum();
        let cf_name = self.shared.create_table_cf(&self.name)?;
        let loaded = load_staging(&self.shared, &cf_name, rows, true, |sink| {
            let mut key = Vec::new();
            for (key_group, record_batch) in ordered.iter().copied() {
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
                let mut failure = None;
                encode_stored_values(&self.name, &self.rows, &self.codec, &entries, |i, value| {
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
                if let Some(e) = failure {
                    return Err(e);
                }
            }
            Ok(())
        });
        if let Err(e) = loaded {
            self.shared.drop_cf(&cf_name);
            return Err(e);
        }
        self.staged_cf = Some(cf_name);
        Ok(())
    }

    fn commit_restore(&mut self) {
        let cf = match self.staged_cf.take() {
            Some(cf) => cf,
            // Nothing staged: the table becomes empty (a restore always stages, so this is
            // only a caller that never called `stage_restore`).
            None => match self.shared.create_table_cf(&self.name) {
                Ok(cf) => cf,
                Err(_) => return,
            },
        };
        // The pending writes belong to the state the restore replaces.
        self.pending.discard();
        self.shared.swap_table_cf(&self.name, &cf);
        self.sweep_cursor = None;
        // The working set held the old content: dropped, and the table is incomplete.
        self.end_bundle();
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
