//! Regular INNER equi-join on record state: Flink's `StreamingJoinOperator` with both inputs
//! `NoUniqueKey` (`JoinRecordStateViews.InputSideHasNoUniqueKey`).
//!
//! Per side, one map table: prefix = the join key (see [`KeyEncoder`]), user key = the
//! whole record as `BinaryRowData` bytes (`RowKind` erased to `+I`, as Flink erases it before
//! the state update), value = the record's count. A probe is a prefix scan of the other
//! side.
//!
//! A bundle, by module:
//!
//! 1. `bundle.rs`: every segment validated, then every row's join key and record encoded
//!    into one byte arena, each distinct join key interned once (no row, key or record
//!    allocated per input row). Each side's table hydrates what the bundle reads of it: the
//!    join keys the other side's rows probe and the records its own rows update.
//! 2. `probe.rs`: per input row (in arrival order) the other side's records of its key,
//!    from the bundle's probe cache (record bytes in one arena, charged to the pool) or a
//!    prefix scan that fills it; lazily, holding nothing, once the budget or the pool
//!    refuses. Then the row's own side is updated and that side's cache entry of the key
//!    dropped.
//! 3. `output.rs`: each match written from the two records' bytes straight into one Arrow
//!    builder per output column, a batch handed to the sink every `chunk_rows` rows.

mod bundle;
mod output;
mod probe;

use std::sync::Arc;

use arrow_schema::{Field, Fields, SchemaRef};
use sfcs_format::Container;
use state_api::{
    CanonicalTable, I64Codec, MapStateStore, MapTable, MemoryPool, MemoryReservation,
    PREFETCH_AHEAD, RestoreSummary, SnapshotSummary, restore_canonical_snapshot,
    write_canonical_snapshot,
};

use crate::changelog::{ChangelogBatch, is_accumulate, schema_of};
use crate::condition::{JoinCondition, JoinSide};
use crate::error::{Error, Result};
use crate::key::{KeyEncoder, RecordEncoder};
use crate::spec::JoinSpec;

use bundle::BundleInput;
use output::Emitter;
use probe::{CacheBuffers, Layout, Probe, ProbeCache};

/// The state format version of [`InnerJoin`].
pub const JOIN_STATE_VERSION: u32 = 1;

/// Default byte budget of the per-bundle probe cache: 16 MiB.
pub const DEFAULT_PROBE_CACHE_BYTES: usize = 16 << 20;

struct Side<M> {
    fields: Fields,
    keys: KeyEncoder,
    records: RecordEncoder,
    table: M,
}

/// A regular INNER join over a store `S` (see the crate docs for the reproduced semantics).
pub struct InnerJoin<S: MapStateStore> {
    operator_id: String,
    left: Side<S::MapTable<I64Codec>>,
    right: Side<S::MapTable<I64Codec>>,
    condition: Option<JoinCondition>,
    output: SchemaRef,
    pool: Arc<dyn MemoryPool>,
    probe_cache_bytes: usize,
    /// The bundle's encoded input (its buffers are reused).
    input: Box<BundleInput>,
    cache_buffers: Box<CacheBuffers>,
}

impl<S: MapStateStore> InnerJoin<S> {
    /// Opens `<operator_id>.left` and `<operator_id>.right` in `store`.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] (key lists of different lengths or types);
    /// [`Error::Unsupported`] (a non-equi condition outside [`JoinCondition`]'s grammar);
    /// a store error.
    pub fn try_new(operator_id: &str, spec: &JoinSpec, store: &mut S) -> Result<Self> {
        if spec.left_keys.len() != spec.right_keys.len() || spec.left_keys.is_empty() {
            return Err(Error::spec("join key lists differ in length or are empty"));
        }
        for (l, r) in spec.left_keys.iter().zip(&spec.right_keys) {
            let (Some(lf), Some(rf)) = (spec.left.get(*l), spec.right.get(*r)) else {
                return Err(Error::spec("join key column outside its input"));
            };
            if lf.data_type() != rf.data_type() {
                return Err(Error::unsupported(format!(
                    "join keys of different types ({} = {})",
                    lf.data_type(),
                    rf.data_type()
                )));
            }
        }
        let condition = spec
            .non_equi_condition
            .as_deref()
            .map(|c| JoinCondition::parse(c, &spec.left, &spec.right))
            .transpose()?;
        let mp = store.config().max_parallelism();
        let left = Side {
            fields: spec.left.clone(),
            keys: KeyEncoder::try_new(&spec.left, &spec.left_keys, mp)?,
            records: RecordEncoder::try_new(&spec.left)?,
            table: store.open_map_table(&format!("{operator_id}.left"), I64Codec, None)?,
        };
        let right = Side {
            fields: spec.right.clone(),
            keys: KeyEncoder::try_new(&spec.right, &spec.right_keys, mp)?,
            records: RecordEncoder::try_new(&spec.right)?,
            table: store.open_map_table(&format!("{operator_id}.right"), I64Codec, None)?,
        };
        let fields: Vec<Field> = spec
            .left
            .iter()
            .chain(spec.right.iter())
            .map(|f| f.as_ref().clone())
            .collect();
        Ok(Self {
            operator_id: operator_id.to_owned(),
            left,
            right,
            condition,
            output: schema_of(&Fields::from(fields)),
            pool: Arc::clone(store.config().memory_pool()),
            probe_cache_bytes: DEFAULT_PROBE_CACHE_BYTES,
            input: Box::default(),
            cache_buffers: Box::default(),
        })
    }

    /// Sets the byte budget of the per-bundle probe cache (0: always iterate lazily).
    /// Defaults to [`DEFAULT_PROBE_CACHE_BYTES`].
    #[must_use]
    pub fn with_probe_cache_bytes(mut self, bytes: usize) -> Self {
        self.probe_cache_bytes = bytes;
        self
    }

    /// The operator id (the snapshot's operator id).
    pub fn operator_id(&self) -> &str {
        &self.operator_id
    }

    /// The output schema: the left columns, then the right columns.
    pub fn output_schema(&self) -> &SchemaRef {
        &self.output
    }

    /// Processes one bundle: `segments` in arrival order, each a batch of one side. The
    /// bundle's whole output is one batch; [`process_bundle_chunked`](Self::process_bundle_chunked)
    /// bounds it.
    ///
    /// # Errors
    /// Input errors of any segment before any state changes; a store error.
    pub fn process_bundle(
        &mut self,
        segments: &[(JoinSide, &ChangelogBatch)],
    ) -> Result<ChangelogBatch> {
        let mut chunks = Vec::new();
        self.process_bundle_chunked(segments, usize::MAX, &mut |b| {
            chunks.push(b);
            Ok(())
        })?;
        Ok(chunks
            .pop()
            .unwrap_or_else(|| ChangelogBatch::empty(&self.output)))
    }

    /// Processes one bundle like [`process_bundle`](Self::process_bundle), handing the output
    /// to `sink` in order as batches of at most `chunk_rows` rows (at least 1) while the
    /// bundle runs: a probe that iterates lazily (its cache reservation refused) never holds
    /// more than one chunk of output, whatever the number of matches (a key with 10k records
    /// times their counts).
    ///
    /// # Errors
    /// Input errors of any segment before any state changes (nothing reached `sink`); a
    /// store error, or `sink`'s error, which stops the bundle (chunks already handed over
    /// stay delivered; the bundle's state changes are not committed).
    pub fn process_bundle_chunked(
        &mut self,
        segments: &[(JoinSide, &ChangelogBatch)],
        chunk_rows: usize,
        sink: &mut dyn FnMut(ChangelogBatch) -> Result<()>,
    ) -> Result<()> {
        // Validate and encode everything first.
        self.input
            .encode(segments, &mut self.left, &mut self.right)?;
        let input = &self.input;
        let mut out = Emitter::try_new(
            &self.output,
            self.left.records.types(),
            self.right.records.types(),
            chunk_rows,
            sink,
        )?;
        let (left_reads, right_reads) = (input.reads(JoinSide::Left), input.reads(JoinSide::Right));
        self.left.table.begin_bundle(left_reads.hydration())?;
        if let Err(e) = self.right.table.begin_bundle(right_reads.hydration()) {
            self.left.table.commit_bundle()?;
            return Err(e.into());
        }
        let mut cache = ProbeCache::new(
            input.keys.len(),
            self.probe_cache_bytes,
            MemoryReservation::new(Arc::clone(&self.pool)),
            std::mem::take(&mut *self.cache_buffers),
        );
        let (left, right) = (&mut self.left, &mut self.right);
        let probe = Probe {
            condition: self.condition.as_ref(),
            input,
            left: Layout::of(&left.records),
            right: Layout::of(&right.records),
        };
        for (at, row) in input.rows.iter().enumerate() {
            // The row `PREFETCH_AHEAD` rows on probes one table and updates the other, both
            // under its join key: both tables are told (a hint, see `MapTable::prefetch`).
            if let Some(key) = input
                .rows
                .get(at + PREFETCH_AHEAD)
                .and_then(|ahead| input.keys.get(ahead.key))
            {
                let prefix = input.slice(&key.bytes);
                left.table.prefetch(key.key_group, prefix);
                right.table.prefetch(key.key_group, prefix);
            }
            let is_left = row.side == JoinSide::Left;
            let Some(key) = input.keys.get(row.key) else {
                continue;
            };
            let (kg, prefix) = (key.key_group, input.slice(&key.bytes));
            let record = input.slice(&row.record);
            let (own, other) = if is_left {
                (&mut left.table, &mut right.table)
            } else {
                (&mut right.table, &mut left.table)
            };
            if !row.null_key {
                probe.run(row, kg, prefix, other, &mut cache, &mut out)?;
            }
            let changed = if is_accumulate(row.kind) {
                // One search for the record's count: +1, or a new record counted once.
                own.upsert(kg, prefix, record, || 1, |count| *count += 1)?;
                true
            } else {
                match own.get(kg, prefix, record)?.copied() {
                    Some(c) if c > 1 => {
                        own.put(kg, prefix, record, c - 1)?;
                        true
                    }
                    Some(_) => {
                        own.remove(kg, prefix, record)?;
                        true
                    }
                    // A retraction of a record not in state changes nothing.
                    None => false,
                }
            };
            if changed {
                cache.invalidate(is_left, row.key);
            }
        }
        *self.cache_buffers = cache.finish();
        out.flush()?;
        self.input.clear();
        self.left.table.commit_bundle()?;
        self.right.table.commit_bundle()?;
        Ok(())
    }

    fn tables(&self) -> [&dyn CanonicalTable; 2] {
        [&self.left.table, &self.right.table]
    }

    /// Writes the canonical snapshot of both sides into `container`.
    ///
    /// # Errors
    /// A state-api error.
    pub fn snapshot(&self, container: &mut dyn Container) -> Result<SnapshotSummary> {
        Ok(write_canonical_snapshot(
            &self.operator_id,
            None,
            &self.tables(),
            container,
            &self.pool,
        )?)
    }

    /// Replaces the state with this store's key groups from `sources`.
    ///
    /// # Errors
    /// A state-api error; on error the state is unchanged.
    pub fn restore(&mut self, sources: &[&dyn Container]) -> Result<RestoreSummary> {
        Ok(restore_canonical_snapshot(
            &self.operator_id,
            sources,
            &mut [&mut self.left.table, &mut self.right.table],
            &self.pool,
        )?)
    }
}
