//! Regular INNER equi-join on record state: Flink's `StreamingJoinOperator` with both inputs
//! `NoUniqueKey` (`JoinRecordStateViews.InputSideHasNoUniqueKey`).
//!
//! Per side, one map table: prefix = the join key (see [`KeyEncoder`]), user key = the
//! whole record as `BinaryRowData` bytes (`RowKind` erased to `+I`, as Flink erases it before
//! the state update), value = the record's count. A probe is a prefix scan of the other
//! side.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use arrow_schema::{Field, Fields, SchemaRef};
use keygroup::{KeyGroup, RowKind};
use sfcs_format::Container;
use state_api::{
    CanonicalTable, I64Codec, MapHydration, MapStateStore, MapTable, MemoryPool, MemoryReservation,
    RestoreSummary, Row, Scalar, SnapshotSummary, UserKeyRange, restore_canonical_snapshot,
    write_canonical_snapshot,
};

use crate::changelog::{ChangelogBatch, is_accumulate, schema_of, validated_rows};
use crate::condition::{JoinCondition, JoinSide};
use crate::error::{Error, Result};
use crate::key::{KeyEncoder, RecordEncoder};
use crate::spec::JoinSpec;

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
}

/// One input row ready for the join: side, kind, values, key group, key, record bytes,
/// whether the key has a null.
type Work = (JoinSide, RowKind, Row, KeyGroup, Vec<u8>, Vec<u8>, bool);

/// Decoded records of one (side, join key) reused by the probes of a bundle.
type Decoded = Vec<(Row, i64)>;

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
        let mut work: Vec<Work> = Vec::new();
        for (side, batch) in segments {
            let s = match side {
                JoinSide::Left => &mut self.left,
                JoinSide::Right => &mut self.right,
            };
            let rows = validated_rows(&s.fields, batch)?;
            for (row, kind) in rows.into_iter().zip(batch.kinds()) {
                let mut key = Vec::new();
                let kg = s.keys.encode(&row, &mut key)?;
                let record = s.records.encode(&row)?;
                let null_key = s.keys.has_null(&row);
                work.push((*side, *kind, row, kg, key, record, null_key));
            }
        }
        let prefixes: Vec<(KeyGroup, &[u8])> = work.iter().map(|w| (w.3, w.4.as_slice())).collect();
        self.left
            .table
            .begin_bundle(MapHydration::prefixes(&prefixes))?;
        if let Err(e) = self
            .right
            .table
            .begin_bundle(MapHydration::prefixes(&prefixes))
        {
            self.left.table.commit_bundle()?;
            return Err(e.into());
        }
        let mut out = Emitter {
            rows: Vec::new(),
            chunk_rows: chunk_rows.max(1),
            schema: Arc::clone(&self.output),
            sink,
        };
        let mut cache: HashMap<(bool, Vec<u8>), Decoded> = HashMap::new();
        let mut reservation = MemoryReservation::new(Arc::clone(&self.pool));
        for (side, kind, row, kg, key, record, null_key) in &work {
            let is_left = *side == JoinSide::Left;
            if !null_key {
                self.probe(
                    is_left,
                    *kind,
                    row,
                    *kg,
                    key,
                    &mut cache,
                    &mut reservation,
                    &mut out,
                )?;
            }
            let own = if is_left {
                &mut self.left.table
            } else {
                &mut self.right.table
            };
            let count = own.get(*kg, key, record)?.copied();
            let changed = if is_accumulate(*kind) {
                own.put(*kg, key, record, count.unwrap_or(0) + 1)?;
                true
            } else {
                match count {
                    Some(c) if c > 1 => {
                        own.put(*kg, key, record, c - 1)?;
                        true
                    }
                    Some(_) => {
                        own.remove(*kg, key, record)?;
                        true
                    }
                    // A retraction of a record not in state changes nothing.
                    None => false,
                }
            };
            if changed {
                cache.remove(&(is_left, key.clone()));
            }
        }
        reservation.free();
        out.flush()?;
        self.left.table.commit_bundle()?;
        self.right.table.commit_bundle()?;
        Ok(())
    }

    /// Emits the matches of `row` with the other side's records of `key`, each `count`
    /// times, with `row`'s kind.
    #[expect(clippy::too_many_arguments, reason = "one probe's context")]
    fn probe(
        &mut self,
        is_left: bool,
        kind: RowKind,
        row: &[Scalar],
        kg: KeyGroup,
        key: &[u8],
        cache: &mut HashMap<(bool, Vec<u8>), Decoded>,
        reservation: &mut MemoryReservation,
        out: &mut Emitter<'_>,
    ) -> Result<()> {
        let cache_key = (!is_left, key.to_vec());
        if let Some(decoded) = cache.get(&cache_key) {
            return emit(self.condition.as_ref(), is_left, kind, row, decoded, out);
        }
        let condition = self.condition.as_ref();
        let budget = self.probe_cache_bytes;
        let other = if is_left {
            &mut self.right
        } else {
            &mut self.left
        };
        let (table, records) = (&mut other.table, &other.records);
        // Decode into the cache while the reservation grows; once it is refused, emit what
        // was decoded and go on lazily, one record at a time (holding nothing more).
        let mut decoded: Decoded = Vec::new();
        let mut cached_bytes = 0usize;
        let mut lazy = false;
        let mut failure = None;
        table.scan(
            kg,
            key,
            UserKeyRange::all(),
            state_api::ScanDirection::Forward,
            &mut |record, count| {
                let r = match records.decode(record) {
                    Ok(r) => r,
                    Err(e) => {
                        failure = Some(e);
                        return ControlFlow::Break(());
                    }
                };
                if !lazy {
                    let bytes = record.len() * 2 + std::mem::size_of::<(Row, i64)>();
                    if cached_bytes + bytes <= budget && reservation.try_grow(bytes).is_ok() {
                        cached_bytes += bytes;
                        decoded.push((r, *count));
                        return ControlFlow::Continue(());
                    }
                    lazy = true;
                    let emitted = emit(condition, is_left, kind, row, &decoded, out);
                    decoded = Vec::new();
                    reservation.shrink(cached_bytes);
                    if let Err(e) = emitted {
                        failure = Some(e);
                        return ControlFlow::Break(());
                    }
                }
                if let Err(e) = emit(condition, is_left, kind, row, &[(r, *count)], out) {
                    failure = Some(e);
                    return ControlFlow::Break(());
                }
                ControlFlow::Continue(())
            },
        )?;
        if let Some(e) = failure {
            return Err(e);
        }
        if !lazy {
            emit(condition, is_left, kind, row, &decoded, out)?;
            cache.insert(cache_key, decoded);
        }
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

/// The output of a bundle under construction, handed to the sink every `chunk_rows` rows.
struct Emitter<'a> {
    rows: Vec<(RowKind, Row)>,
    chunk_rows: usize,
    schema: SchemaRef,
    sink: &'a mut dyn FnMut(ChangelogBatch) -> Result<()>,
}

impl Emitter<'_> {
    fn push(&mut self, kind: RowKind, row: Row) -> Result<()> {
        self.rows.push((kind, row));
        if self.rows.len() >= self.chunk_rows {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands the pending rows (if any) to the sink.
    fn flush(&mut self) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let batch = ChangelogBatch::from_rows(&self.schema, &self.rows)?;
        self.rows.clear();
        (self.sink)(batch)
    }
}

fn emit(
    condition: Option<&JoinCondition>,
    is_left: bool,
    kind: RowKind,
    row: &[Scalar],
    others: &[(Row, i64)],
    out: &mut Emitter<'_>,
) -> Result<()> {
    for (other, count) in others {
        let (l, r) = if is_left {
            (row, other.as_slice())
        } else {
            (other.as_slice(), row)
        };
        if condition.is_some_and(|c| !c.eval(l, r)) {
            continue;
        }
        for _ in 0..*count {
            let mut joined = Vec::with_capacity(l.len() + r.len());
            joined.extend_from_slice(l);
            joined.extend_from_slice(r);
            out.push(kind, joined)?;
        }
    }
    Ok(())
}
