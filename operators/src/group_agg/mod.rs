//! The non-windowed group aggregate: Flink's `GroupAggFunction` (mini-batch off),
//! `MiniBatchLocalGroupAggFunction` → `MiniBatchGlobalGroupAggFunction` (mini-batch on,
//! every aggregate mergeable) and `MiniBatchGroupAggFunction` (mini-batch on, one phase).

pub(crate) mod acc;
mod grouped;
pub(crate) mod plan;

use std::sync::Arc;

use arrow_schema::SchemaRef;
use keygroup::{KeyGroup, RowKind};
use sfcs_format::Container;
use state_api::{
    CanonicalTable, I64Codec, KeyedTable, MapHydration, MapStateStore, MapTable, RestoreSummary,
    Row, RowCodec, RowReader, Scalar, SnapshotSummary, TtlConfig, UserKeyRange,
    restore_canonical_snapshot, write_canonical_snapshot,
};

use self::acc::LocalCompanion;
use self::grouped::Grouped;
use self::plan::{Plan, Projection};
use crate::changelog::{ChangelogBatch, FlatRows, is_accumulate, schema_of, validated_reader};
use crate::error::{Error, Result};
use crate::key::KeyEncoder;
use crate::spec::{ChangelogMode, GroupAggSpec};
use crate::value::{avg, count_of, field_eq};

/// The state format version of [`GroupAggregate`]: accumulator rows (one field per
/// accumulator of the node, see the crate docs) and companion entries (user keys in
/// `companion_key`). Version 2: companion keys are `state_api` sort keys, and
/// FIRST/LAST with retraction keep order entries.
pub const GROUP_AGG_STATE_VERSION: u32 = 2;

/// A non-windowed GROUP BY over a store `S` (see the crate docs for the reproduced
/// semantics).
pub struct GroupAggregate<S: MapStateStore> {
    operator_id: String,
    plan: Plan,
    spec: GroupAggSpec,
    keys: KeyEncoder,
    acc: S::Table<RowCodec>,
    companions: Option<S::MapTable<I64Codec>>,
    output: SchemaRef,
    pool: Arc<dyn state_api::MemoryPool>,
}

/// A bundle's output rows.
type Out = FlatRows;

impl<S: MapStateStore> GroupAggregate<S> {
    /// Plans `spec` and opens its tables in `store` (`<operator_id>.acc` and, when a
    /// MIN/MAX with retraction or a DISTINCT needs them, `<operator_id>.companions`).
    ///
    /// # Errors
    /// [`Error::InvalidSpec`], [`Error::Unsupported`], a store error.
    pub fn try_new(operator_id: &str, spec: GroupAggSpec, store: &mut S) -> Result<Self> {
        let plan = plan::plan(&spec)?;
        let keys = KeyEncoder::try_new(
            &spec.input,
            &spec.group_by,
            store.config().max_parallelism(),
        )?;
        let ttl = spec.state_ttl.map(TtlConfig::new);
        let acc = store.open_table(
            &format!("{operator_id}.acc"),
            RowCodec::try_new(plan.acc_fields.clone())?,
            ttl,
        )?;
        let companions = if plan.companion_tags > 0 {
            Some(store.open_map_table(&format!("{operator_id}.companions"), I64Codec, ttl)?)
        } else {
            None
        };
        Ok(Self {
            operator_id: operator_id.to_owned(),
            output: schema_of(&plan.output),
            plan,
            spec,
            keys,
            acc,
            companions,
            pool: Arc::clone(store.config().memory_pool()),
        })
    }

    /// The output schema: the group keys, then one column per aggregate.
    pub fn output_schema(&self) -> &SchemaRef {
        &self.output
    }

    /// The operator id (the snapshot's operator id).
    pub fn operator_id(&self) -> &str {
        &self.operator_id
    }

    /// Processes one bundle (mini-batch: one Flink mini-batch) and returns its changelog.
    ///
    /// # Errors
    /// Input errors ([`Error::MissingColumn`], [`Error::WrongType`],
    /// [`Error::NullInNonNullable`], [`Error::RowKind`] for a retraction into an
    /// insert-only aggregate) before any state changes; a store error.
    pub fn process_bundle(&mut self, input: &ChangelogBatch) -> Result<ChangelogBatch> {
        // The rows are read from the columns as each is needed, into reused buffers: no
        // vector of values per input row.
        let rows = validated_reader(&self.spec.input, input)?;
        let kinds = input.kinds();
        if self.spec.input_insert_only
            && let Some(row) = kinds.iter().position(|k| !is_accumulate(*k))
        {
            return Err(Error::RowKind {
                row,
                kind: crate::changelog::short_string(kinds.get(row).copied().unwrap_or_default())
                    .to_owned(),
                reason: "retraction into an aggregate planned for insert-only input",
            });
        }
        let batch_keys = self.keys.encode_batch(&rows)?;
        let keys = batch_keys.keys();
        // A mini-batch changes each key once, in the order of its first row: it names exactly
        // those keys, in that order, so that the table's prefetches (one per operation, a
        // fixed distance ahead in the named order) stay in step with the operations. Naming
        // every row's key let them fall behind by one per repeated key.
        let grouped = self.spec.mini_batch.map(|_| Self::group_rows(&keys));
        match &grouped {
            Some(grouped) => {
                let distinct: Vec<(KeyGroup, &[u8])> = grouped
                    .iter()
                    .filter_map(|(first, _)| keys.get(first).copied())
                    .collect();
                self.acc.begin_bundle(&distinct)?;
            }
            None => self.acc.begin_bundle(&keys)?,
        }
        // Companions are not hydrated: a group's companion prefix holds one entry per distinct
        // element (100k for a large group), and loading it whole every bundle made each
        // update O(group) -- the hydration pathology map tables exist to avoid. Point reads of
        // the touched elements and one ordered seek per edge go to the store instead.
        if let Some(c) = self.companions.as_mut()
            && let Err(e) = c.begin_bundle(MapHydration::none())
        {
            self.acc.commit_bundle()?;
            return Err(e.into());
        }
        let mut out = Out::default();
        let result = match &grouped {
            None => self.per_row(&rows, kinds, &keys, &mut out),
            Some(grouped) if self.plan.two_phase => {
                self.local_global(&rows, kinds, &keys, grouped, &mut out)
            }
            Some(grouped) => self.one_phase(&rows, kinds, &keys, grouped, &mut out),
        };
        result?;
        self.acc.commit_bundle()?;
        if let Some(c) = self.companions.as_mut() {
            c.commit_bundle()?;
        }
        out.finish(&self.output)
    }

    /// Appends to `out` the `kind` row of the group of input row `input` (its group-by
    /// values) with node values `node`.
    fn push_output(&self, out: &mut Out, kind: RowKind, input: &[Scalar], node: &[Scalar]) {
        let row = out.row(kind);
        row.extend(
            self.spec
                .group_by
                .iter()
                .map(|&g| input.get(g).cloned().unwrap_or(Scalar::Null)),
        );
        for projection in &self.plan.projections {
            row.push(match projection {
                Projection::Phys(i) => self.node_value(node, *i),
                Projection::SumOrNull { sum, count } => {
                    if count_of(&self.node_value(node, *count)) == 0 {
                        Scalar::Null
                    } else {
                        self.node_value(node, *sum)
                    }
                }
                Projection::Avg { sum, count, result } => {
                    let n = count_of(&self.node_value(node, *count));
                    let s = self.node_value(node, *sum);
                    let sum_type = self
                        .plan
                        .phys
                        .get(*sum)
                        .map_or(arrow_schema::DataType::Null, |p| p.result_type.clone());
                    if s.is_null() {
                        Scalar::Null
                    } else {
                        avg(&s, n, &sum_type, result)
                    }
                }
            });
        }
    }

    /// The node value of aggregate `phys` (the hidden count1 is not in `node`).
    fn node_value(&self, node: &[Scalar], phys: usize) -> Scalar {
        let skipped = self
            .plan
            .phys
            .iter()
            .take(phys)
            .filter(|p| p.kind == plan::PhysKind::Count1)
            .count();
        node.get(phys - skipped).cloned().unwrap_or(Scalar::Null)
    }

    fn equal(&self, a: &[Scalar], b: &[Scalar]) -> bool {
        self.spec.state_ttl.is_none()
            && a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| field_eq(x, y))
    }

    fn emit_update(&self, out: &mut Out, input: &[Scalar], prev: &[Scalar], new: &[Scalar]) {
        if self.spec.changelog_mode == ChangelogMode::All {
            self.push_output(out, RowKind::UpdateBefore, input, prev);
        }
        self.push_output(out, RowKind::UpdateAfter, input, new);
    }

    fn clear_group(&mut self, kg: KeyGroup, key: &[u8]) -> Result<()> {
        self.acc.remove(kg, key)?;
        if let Some(c) = self.companions.as_mut() {
            c.remove_range(kg, key, UserKeyRange::all())?;
        }
        Ok(())
    }

    /// `GroupAggFunction.processElement` for every row. A group's accumulator is changed
    /// where the store keeps it (`KeyedTable::update`: no copy of it per row); a new
    /// group's is created, changed and put.
    fn per_row(
        &mut self,
        rows: &RowReader<'_>,
        kinds: &[RowKind],
        keys: &[(KeyGroup, &[u8])],
        out: &mut Out,
    ) -> Result<()> {
        let mut key_buf = Vec::new();
        let (mut prev, mut new, mut row) = (Vec::new(), Vec::new(), Vec::new());
        for (i, (kind, (kg, key))) in kinds.iter().zip(keys).enumerate() {
            rows.read_into(i, &mut row)?;
            let row = row.as_slice();
            let accumulate = is_accumulate(*kind);
            let Self {
                acc: table,
                companions,
                plan,
                ..
            } = self;
            // The row applied to an accumulator (`acc::change_observed`).
            let mut step = |acc: &mut Row| {
                acc::change_observed(plan, acc, &mut prev, &mut new, |acc| {
                    acc::with_companion(companions, *kg, key, |c| {
                        acc::apply_row(plan, acc, row, accumulate, c, &mut key_buf)
                    })
                })
            };
            let (first_row, zero) = match table.update(*kg, key, &mut step)? {
                Some(zero) => (false, zero?),
                None if !accumulate => continue,
                None => create_group(table, *kg, key, acc::create(plan), step)?,
            };
            self.finish_key(out, *kg, key, row, first_row, zero, &prev, &new)?;
        }
        Ok(())
    }

    /// Groups the bundle's rows by key in first-touch order (see [`Grouped`]).
    fn group_rows(keys: &[(KeyGroup, &[u8])]) -> Grouped {
        Grouped::of(keys.iter().map(|(_, key)| *key))
    }

    /// Mini-batch, two phases: a local accumulator per key, merged into the state once.
    fn local_global(
        &mut self,
        rows: &RowReader<'_>,
        kinds: &[RowKind],
        keys: &[(KeyGroup, &[u8])],
        grouped: &Grouped,
        out: &mut Out,
    ) -> Result<()> {
        let mut key_buf = Vec::new();
        // Buffers reused from key to key: a fresh local accumulator is a copy of `fresh`
        // into `local`'s allocation.
        let fresh = acc::create(&self.plan);
        let mut local = fresh.clone();
        let (mut prev, mut new, mut row) = (Vec::new(), Vec::new(), Vec::new());
        for (first, members) in grouped.iter() {
            local.clone_from(&fresh);
            let mut local_companion = LocalCompanion::default();
            for &i in members {
                let Some(kind) = kinds.get(i) else {
                    continue;
                };
                rows.read_into(i, &mut row)?;
                acc::apply_row(
                    &self.plan,
                    &mut local,
                    &row,
                    is_accumulate(*kind),
                    &mut local_companion,
                    &mut key_buf,
                )?;
            }
            let Some((kg, key)) = keys.get(first) else {
                continue;
            };
            rows.read_into(first, &mut row)?;
            let Self {
                acc: table,
                companions,
                plan,
                ..
            } = self;
            // The local accumulator merged into the group's (`acc::change_observed`).
            let mut merge = |state: &mut Row| {
                acc::change_observed(plan, state, &mut prev, &mut new, |state| {
                    acc::with_companion(companions, *kg, key, |c| {
                        acc::merge(plan, state, &local, &local_companion, c, &mut key_buf)
                    })
                })
            };
            // The group's accumulator is merged into where the store keeps it; a new
            // group's is created, merged into and put.
            let (first_row, zero) = if let Some(zero) = table.update(*kg, key, &mut merge)? {
                (false, zero?)
            } else {
                create_group(table, *kg, key, fresh.clone(), merge)?
            };
            self.finish_key(out, *kg, key, &row, first_row, zero, &prev, &new)?;
        }
        Ok(())
    }

    /// Mini-batch, one phase (`MiniBatchGroupAggFunction`): the key's rows applied to its
    /// state accumulator in order, one change at the end.
    fn one_phase(
        &mut self,
        rows: &RowReader<'_>,
        kinds: &[RowKind],
        keys: &[(KeyGroup, &[u8])],
        grouped: &Grouped,
        out: &mut Out,
    ) -> Result<()> {
        let mut key_buf = Vec::new();
        let (mut prev, mut new) = (Vec::new(), Vec::new());
        let (mut first_values, mut row) = (Vec::new(), Vec::new());
        for (first, mut members) in grouped.iter() {
            let Some((kg, key)) = keys.get(first) else {
                continue;
            };
            rows.read_into(first, &mut first_values)?;
            let Self {
                acc: table,
                companions,
                plan,
                ..
            } = self;
            // The key's rows applied to an accumulator in order (`acc::change_observed`).
            let mut apply = |state: &mut Row, members: &[usize]| {
                acc::change_observed(plan, state, &mut prev, &mut new, |state| {
                    for &i in members {
                        let Some(kind) = kinds.get(i) else {
                            continue;
                        };
                        rows.read_into(i, &mut row)?;
                        let accumulate = is_accumulate(*kind);
                        acc::with_companion(companions, *kg, key, |c| {
                            acc::apply_row(plan, state, &row, accumulate, c, &mut key_buf)
                        })?;
                    }
                    Ok(())
                })
            };
            // The group's accumulator is changed where the store keeps it; a new group's,
            // its leading retractions dropped, is created, changed and put.
            let (first_row, zero) =
                if let Some(zero) = table.update(*kg, key, |state| apply(state, members))? {
                    (false, zero?)
                } else {
                    let skip = members
                        .iter()
                        .take_while(|&&i| kinds.get(i).is_some_and(|k| !is_accumulate(*k)))
                        .count();
                    members = members.get(skip..).unwrap_or_default();
                    if members.is_empty() {
                        continue;
                    }
                    create_group(table, *kg, key, acc::create(plan), |state| {
                        apply(state, members)
                    })?
                };
            self.finish_key(out, *kg, key, &first_values, first_row, zero, &prev, &new)?;
        }
        Ok(())
    }

    /// The end of a group's change (a row, or a mini-batch's rows of the group): its output,
    /// its accumulator already written (or, its count `zero`, the group cleared here).
    #[expect(clippy::too_many_arguments, reason = "the per-key end of a change")]
    fn finish_key(
        &mut self,
        out: &mut Out,
        kg: KeyGroup,
        key: &[u8],
        row: &[Scalar],
        first_row: bool,
        zero: bool,
        prev: &[Scalar],
        new: &[Scalar],
    ) -> Result<()> {
        if zero {
            if !first_row {
                self.push_output(out, RowKind::Delete, row, prev);
            }
            self.clear_group(kg, key)?;
        } else if first_row {
            self.push_output(out, RowKind::Insert, row, new);
        } else if !self.equal(prev, new) {
            self.emit_update(out, row, prev, new);
        }
        Ok(())
    }

    fn tables(&self) -> Vec<&dyn CanonicalTable> {
        let mut t: Vec<&dyn CanonicalTable> = vec![&self.acc];
        if let Some(c) = &self.companions {
            t.push(c);
        }
        t
    }

    /// Writes the canonical snapshot of the operator's tables (one envelope per key group
    /// with rows, operator id = this operator's id) into `container`.
    ///
    /// # Errors
    /// A state-api error (e.g. a bundle open).
    pub fn snapshot(&self, container: &mut dyn Container) -> Result<SnapshotSummary> {
        Ok(write_canonical_snapshot(
            &self.operator_id,
            None,
            &self.tables(),
            container,
            &self.pool,
        )?)
    }

    /// Replaces the operator's state with the key groups of this store's range found in
    /// `sources` (snapshots of any parallelism), all or nothing.
    ///
    /// # Errors
    /// A state-api error; on error the state is unchanged.
    pub fn restore(&mut self, sources: &[&dyn Container]) -> Result<RestoreSummary> {
        let mut tables: Vec<&mut dyn CanonicalTable> = vec![&mut self.acc];
        if let Some(c) = self.companions.as_mut() {
            tables.push(c);
        }
        Ok(restore_canonical_snapshot(
            &self.operator_id,
            sources,
            &mut tables,
            &self.pool,
        )?)
    }
}

/// A group without an accumulator in the store: `acc`, fresh, goes through `change` and is
/// put unless its count is then zero. Returns `(first_row, zero)`, `first_row` being true.
fn create_group<T: KeyedTable<Codec = RowCodec>>(
    table: &mut T,
    key_group: KeyGroup,
    key: &[u8],
    mut acc: Row,
    change: impl FnOnce(&mut Row) -> Result<bool>,
) -> Result<(bool, bool)> {
    let zero = change(&mut acc)?;
    if !zero {
        table.put(key_group, key, acc)?;
    }
    Ok((true, zero))
}
