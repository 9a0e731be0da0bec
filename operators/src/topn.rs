//! Top-N: `ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..) <= N` on insert-only input
//! (Flink's `AppendOnlyTopNFunction`) and on retracting input (`RetractableTopNFunction`).
//!
//! # State
//!
//! | table | address | value |
//! |---|---|---|
//! | `<id>.rows` (map) | prefix = partition key, user key = sort key ‖ sequence number (8 bytes big-endian) | the input row |
//! | `<id>.seq` (keyed) | partition key | the partition's next sequence number |
//!
//! The sort key is `state_api::encode_sort_key` of the ORDER BY columns (byte order = Java
//! `compareTo` in each column's direction and null placement); the sequence number is the
//! arrival order within the partition, so rows with equal sort keys keep their arrival order
//! (Flink's per-sort-key `List`). The first N entries of the prefix are the top N.
//!
//! State is bounded as Flink bounds it: on insert-only input only the top N rows are kept
//! (a row whose sort key is not better than the N-th row's is rejected, an N+1-th row is
//! evicted); on retracting input every live row is kept (a retraction can bring any row
//! back into the top N).
//!
//! # Changelog
//!
//! With the rank number: for every rank whose row changed, `-U old` / `+U new` at that rank
//! (`+U` alone in upsert mode), `+I` for a rank that was empty, `-D` for a rank that became
//! empty, in rank order. Without it: rows leaving the top N as `-D`, then rows entering as
//! `+I`.
//!
//! `RANK()` and `DENSE_RANK()` are refused with Flink's own error: Flink 2.3.0's streaming
//! planner supports only `ROW_NUMBER` for Top-N.

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, SchemaRef};
use keygroup::{KeyGroup, RowKind};
use sfcs_format::Container;
use state_api::{
    CanonicalTable, I64Codec, KeyedTable, MapHydration, MapStateStore, MapTable, RestoreSummary,
    Row, RowCodec, Scalar, ScanDirection, SnapshotSummary, SortField, UserKeyRange,
    encode_sort_key, restore_canonical_snapshot, write_canonical_snapshot,
};

use crate::changelog::{ChangelogBatch, is_accumulate, schema_of, short_string, validated_rows};
use crate::error::{Error, Result};
use crate::key::KeyEncoder;
use crate::spec::{ChangelogMode, SortColumn};

/// The state format version of [`TopN`] (tables as in the module docs).
pub const TOPN_STATE_VERSION: u32 = 1;

/// The ranking function of the OVER clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RankFunction {
    /// `ROW_NUMBER()`.
    #[default]
    RowNumber,
    /// `RANK()` (refused, as by Flink's streaming planner).
    Rank,
    /// `DENSE_RANK()` (refused, as by Flink's streaming planner).
    DenseRank,
}

/// `ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..) <= N`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TopNSpec {
    /// The input columns.
    pub input: Fields,
    /// Partition key column indexes.
    pub partition_by: Vec<usize>,
    /// The order.
    pub order_by: Vec<SortColumn>,
    /// N (`rn <= N`), at least 1.
    pub rank_limit: u64,
    /// The ranking function.
    pub function: RankFunction,
    /// Whether the output carries the rank number (BIGINT, last column).
    pub output_rank_number: bool,
    /// Whether the input is insert-only (`AppendOnlyTopNFunction`); otherwise
    /// `RetractableTopNFunction`.
    pub input_insert_only: bool,
    /// The requested changelog mode.
    pub changelog_mode: ChangelogMode,
}

impl TopNSpec {
    /// A `ROW_NUMBER` Top-N of insert-only input in changelog mode all.
    pub fn new(
        input: Fields,
        partition_by: Vec<usize>,
        order_by: Vec<SortColumn>,
        rank_limit: u64,
        output_rank_number: bool,
    ) -> Self {
        Self {
            input,
            partition_by,
            order_by,
            rank_limit,
            function: RankFunction::RowNumber,
            output_rank_number,
            input_insert_only: true,
            changelog_mode: ChangelogMode::All,
        }
    }

    /// Declares a retracting input. Defaults to insert-only.
    #[must_use]
    pub fn with_retracting_input(mut self) -> Self {
        self.input_insert_only = false;
        self
    }

    /// Sets the ranking function. Defaults to `ROW_NUMBER`.
    #[must_use]
    pub fn with_function(mut self, function: RankFunction) -> Self {
        self.function = function;
        self
    }

    /// Sets the changelog mode. Defaults to [`ChangelogMode::All`].
    #[must_use]
    pub fn with_changelog_mode(mut self, mode: ChangelogMode) -> Self {
        self.changelog_mode = mode;
        self
    }
}

/// A Top-N over a store `S` (see the module docs).
pub struct TopN<S: MapStateStore> {
    operator_id: String,
    spec: TopNSpec,
    limit: usize,
    keys: KeyEncoder,
    sort_fields: Vec<SortField>,
    rows: S::MapTable<RowCodec>,
    seq: S::Table<I64Codec>,
    output: SchemaRef,
    pool: Arc<dyn state_api::MemoryPool>,
}

/// One ranked entry: user key (sort key ‖ sequence) and row.
type Entry = (Vec<u8>, Row);

/// Record identity for a retraction: equal values, floats by bits (`BinaryRowData.equals`).
fn same_record(a: &[Scalar], b: &[Scalar]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Scalar::Float64(p), Scalar::Float64(q)) => p.to_bits() == q.to_bits(),
            (Scalar::Float32(p), Scalar::Float32(q)) => p.to_bits() == q.to_bits(),
            _ => x == y,
        })
}

impl<S: MapStateStore> TopN<S> {
    /// Opens `spec`'s tables in `store` (`<operator_id>.rows`, `<operator_id>.seq`).
    ///
    /// # Errors
    /// [`Error::RefusedByFlink`] for RANK / `DENSE_RANK` (Flink's message);
    /// [`Error::Unsupported`] for an order column
    /// type without a sort key; [`Error::InvalidSpec`] for N = 0 or a column outside the
    /// input; a store error.
    pub fn try_new(operator_id: &str, spec: TopNSpec, store: &mut S) -> Result<Self> {
        match spec.function {
            RankFunction::RowNumber => {}
            RankFunction::Rank => {
                return Err(Error::refused(
                    "RANK() on streaming table is not supported currently",
                ));
            }
            RankFunction::DenseRank => {
                return Err(Error::refused(
                    "DENSE_RANK() on streaming table is not supported currently",
                ));
            }
        }
        let limit = usize::try_from(spec.rank_limit)
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| Error::spec(format!("rank limit {}", spec.rank_limit)))?;
        let mut sort_fields = Vec::with_capacity(spec.order_by.len());
        for c in &spec.order_by {
            let field = spec.input.get(c.column).ok_or_else(|| {
                Error::spec(format!("order column {} outside the input", c.column))
            })?;
            sort_fields.push(
                SortField::new(field.data_type().clone())
                    .with_descending(c.descending)
                    .with_nulls_last(c.nulls_last),
            );
        }
        let keys = KeyEncoder::try_new(
            &spec.input,
            &spec.partition_by,
            store.config().max_parallelism(),
        )?;
        let rows = store.open_map_table(
            &format!("{operator_id}.rows"),
            RowCodec::try_new(spec.input.clone())?,
            None,
        )?;
        let seq = store.open_table(&format!("{operator_id}.seq"), I64Codec, None)?;
        let mut out: Vec<Field> = spec.input.iter().map(|f| f.as_ref().clone()).collect();
        if spec.output_rank_number {
            out.push(Field::new("rn", DataType::Int64, false));
        }
        Ok(Self {
            operator_id: operator_id.to_owned(),
            limit,
            keys,
            sort_fields,
            rows,
            seq,
            output: schema_of(&Fields::from(out)),
            pool: Arc::clone(store.config().memory_pool()),
            spec,
        })
    }

    /// The output schema: the input columns (+ `rn` BIGINT).
    pub fn output_schema(&self) -> &SchemaRef {
        &self.output
    }

    /// The operator id.
    pub fn operator_id(&self) -> &str {
        &self.operator_id
    }

    /// The first `n` entries of `prefix`.
    fn head(&mut self, kg: KeyGroup, prefix: &[u8], n: usize) -> Result<Vec<Entry>> {
        let mut out = Vec::with_capacity(n.min(1024));
        self.rows.scan(
            kg,
            prefix,
            UserKeyRange::all(),
            ScanDirection::Forward,
            &mut |k, v| {
                out.push((k.to_vec(), v.clone()));
                if out.len() >= n {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        )?;
        Ok(out)
    }

    fn output_row(&self, row: &[Scalar], rank: usize) -> Row {
        let mut r = row.to_vec();
        if self.spec.output_rank_number {
            r.push(Scalar::Int64(i64::try_from(rank).unwrap_or(i64::MAX)));
        }
        r
    }

    /// Processes one bundle and returns its changelog.
    ///
    /// # Errors
    /// Input errors before any state change ([`Error::MissingColumn`], [`Error::WrongType`],
    /// [`Error::NullInNonNullable`], [`Error::RowKind`] for a retraction into an insert-only
    /// Top-N); a store error.
    pub fn process_bundle(&mut self, input: &ChangelogBatch) -> Result<ChangelogBatch> {
        let rows = validated_rows(&self.spec.input, input)?;
        let kinds = input.kinds();
        if self.spec.input_insert_only
            && let Some(row) = kinds.iter().position(|k| !is_accumulate(*k))
        {
            return Err(Error::RowKind {
                row,
                kind: short_string(kinds.get(row).copied().unwrap_or_default()).to_owned(),
                reason: "retraction into a Top-N planned for insert-only input",
            });
        }
        let mut placed = Vec::with_capacity(rows.len());
        for row in &rows {
            let mut key = Vec::new();
            let kg = self.keys.encode(row, &mut key)?;
            let values: Vec<Scalar> = self
                .spec
                .order_by
                .iter()
                .map(|c| row.get(c.column).cloned().unwrap_or(Scalar::Null))
                .collect();
            let mut sort_key = Vec::new();
            encode_sort_key(&values, &self.sort_fields, &mut sort_key)?;
            placed.push((kg, key, sort_key));
        }
        let named: Vec<(KeyGroup, &[u8])> = placed
            .iter()
            .map(|(kg, k, _)| (*kg, k.as_slice()))
            .collect();
        self.rows.begin_bundle(MapHydration::prefixes(&named))?;
        if let Err(e) = self.seq.begin_bundle(&named) {
            self.rows.commit_bundle()?;
            return Err(e.into());
        }
        let mut out = Vec::new();
        let mut result = Ok(());
        for ((row, kind), (kg, key, sort_key)) in rows.iter().zip(kinds).zip(&placed) {
            result = self.apply(*kg, key, sort_key, row, is_accumulate(*kind), &mut out);
            if result.is_err() {
                break;
            }
        }
        let c1 = self.rows.commit_bundle();
        let c2 = self.seq.commit_bundle();
        result?;
        c1?;
        c2?;
        ChangelogBatch::from_rows(&self.output, &out)
    }

    fn apply(
        &mut self,
        kg: KeyGroup,
        key: &[u8],
        sort_key: &[u8],
        row: &Row,
        accumulate: bool,
        out: &mut Vec<(RowKind, Row)>,
    ) -> Result<()> {
        let n = self.limit;
        let old = self.head(kg, key, n.saturating_add(1))?;
        if accumulate {
            if self.spec.input_insert_only
                && old.len() >= n
                && old.get(n - 1).is_some_and(|(worst, _)| {
                    sort_key >= worst.get(..worst.len() - 8).unwrap_or(&[])
                })
            {
                // `checkSortKeyInBufferRange`: not better than the N-th row.
                return Ok(());
            }
            let next = self.seq.get(kg, key)?.copied().unwrap_or(0);
            self.seq.put(kg, key, next.wrapping_add(1))?;
            let mut user_key = sort_key.to_vec();
            user_key.extend_from_slice(&next.to_be_bytes());
            self.rows.put(kg, key, &user_key, row.clone())?;
        } else {
            let mut hi = sort_key.to_vec();
            hi.extend_from_slice(&[0xff; 8]);
            let mut found = None;
            self.rows.scan(
                kg,
                key,
                UserKeyRange::new(
                    std::ops::Bound::Included(sort_key),
                    std::ops::Bound::Included(&hi),
                ),
                ScanDirection::Forward,
                &mut |k, v| {
                    if k.len() == sort_key.len() + 8 && same_record(v, row) {
                        found = Some(k.to_vec());
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                },
            )?;
            // A retraction of a row not in state changes nothing (Flink logs it).
            let Some(user_key) = found else {
                return Ok(());
            };
            self.rows.remove(kg, key, &user_key)?;
        }
        let new = self.head(kg, key, n.saturating_add(1))?;
        if self.spec.input_insert_only
            && let Some((evicted, _)) = new.get(n)
        {
            self.rows.remove(kg, key, evicted)?;
        }
        if new.is_empty() {
            self.seq.remove(kg, key)?;
        }
        let old_top = old.get(..n.min(old.len())).unwrap_or(&[]);
        let new_top = new.get(..n.min(new.len())).unwrap_or(&[]);
        if self.spec.output_rank_number {
            self.emit_ranked(old_top, new_top, out);
        } else {
            Self::emit_unranked(old_top, new_top, out);
        }
        Ok(())
    }

    fn emit_ranked(&self, old: &[Entry], new: &[Entry], out: &mut Vec<(RowKind, Row)>) {
        for rank in 0..old.len().max(new.len()) {
            match (old.get(rank), new.get(rank)) {
                (Some(o), Some(n)) if o.0 != n.0 => {
                    if self.spec.changelog_mode == ChangelogMode::All {
                        out.push((RowKind::UpdateBefore, self.output_row(&o.1, rank + 1)));
                    }
                    out.push((RowKind::UpdateAfter, self.output_row(&n.1, rank + 1)));
                }
                (None, Some(n)) => out.push((RowKind::Insert, self.output_row(&n.1, rank + 1))),
                (Some(o), None) => out.push((RowKind::Delete, self.output_row(&o.1, rank + 1))),
                _ => {}
            }
        }
    }

    fn emit_unranked(old: &[Entry], new: &[Entry], out: &mut Vec<(RowKind, Row)>) {
        let old_keys: HashSet<&[u8]> = old.iter().map(|o| o.0.as_slice()).collect();
        let new_keys: HashSet<&[u8]> = new.iter().map(|n| n.0.as_slice()).collect();
        let left: Vec<(RowKind, Row)> = old
            .iter()
            .filter(|o| !new_keys.contains(o.0.as_slice()))
            .map(|o| (RowKind::Delete, o.1.clone()))
            .collect();
        let entered: Vec<(RowKind, Row)> = new
            .iter()
            .filter(|n| !old_keys.contains(n.0.as_slice()))
            .map(|n| (RowKind::Insert, n.1.clone()))
            .collect();
        out.extend(left);
        out.extend(entered);
    }

    /// Writes the canonical snapshot (rows and sequence numbers) into `container`.
    ///
    /// # Errors
    /// A state-api error.
    pub fn snapshot(&self, container: &mut dyn Container) -> Result<SnapshotSummary> {
        let tables: Vec<&dyn CanonicalTable> = vec![&self.rows, &self.seq];
        Ok(write_canonical_snapshot(
            &self.operator_id,
            None,
            &tables,
            container,
            &self.pool,
        )?)
    }

    /// Replaces the state with the key groups of this store's range found in `sources`.
    ///
    /// # Errors
    /// A state-api error; on error the state is unchanged.
    pub fn restore(&mut self, sources: &[&dyn Container]) -> Result<RestoreSummary> {
        let mut tables: Vec<&mut dyn CanonicalTable> = vec![&mut self.rows, &mut self.seq];
        Ok(restore_canonical_snapshot(
            &self.operator_id,
            sources,
            &mut tables,
            &self.pool,
        )?)
    }
}

impl<S: MapStateStore> crate::driver::StatefulOperator for TopN<S> {
    fn operator_id(&self) -> &str {
        &self.operator_id
    }

    fn state_version(&self) -> u32 {
        TOPN_STATE_VERSION
    }

    fn output_schema(&self) -> &SchemaRef {
        &self.output
    }

    fn snapshot(&self, container: &mut dyn Container) -> Result<SnapshotSummary> {
        TopN::snapshot(self, container)
    }

    fn restore(&mut self, sources: &[&dyn Container]) -> Result<RestoreSummary> {
        TopN::restore(self, sources)
    }
}

impl<S: MapStateStore> crate::driver::OneInputOperator for TopN<S> {
    fn process_bundle(&mut self, input: &ChangelogBatch) -> Result<ChangelogBatch> {
        TopN::process_bundle(self, input)
    }
}
