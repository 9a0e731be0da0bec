//! The event-time window aggregate over `TUMBLE`, `HOP` and `CUMULATE` (Flink's
//! `SlicingWindowOperator` with `SliceUnsharedWindowAggProcessor` /
//! `SliceSharedWindowAggProcessor`, planned as `LocalWindowAggregate -> GlobalWindowAggregate`
//! or one-phase `WindowAggregate`).
//!
//! # State
//!
//! | table | address | value |
//! |---|---|---|
//! | `<id>.acc` (map) | prefix = group key, user key = slice end (8 bytes, sign-flipped big-endian: byte order = time order) | the slice's accumulators (the group aggregate's accumulator row) |
//! | `<id>.companions` (map, only with DISTINCT, or MIN/MAX/FIRST/LAST on retracting input) | prefix = group key ‖ slice end (8 bytes), user key = a companion key (`companion_key`: tag ‖ sort key of the value, or FIRST/LAST order entries) | value count (1 for order entries) |
//! | `<id>.timers` (event-time timers) | key = group key, namespace = window end (8 bytes, sign-flipped BE), timestamp = the window's fire time | — |
//! | `<id>.watermark` (keyed) | every key group of the store's range, key = empty | the current watermark |
//!
//! Accumulators live per (key, slice) with the slice end as namespace (Flink's slicing).
//! Each window whose end is still unfired gets one timer per key when the key's first row
//! of one of its slices arrives; the timer's time is the window's `end - 1` converted to an
//! epoch instant (`toEpochMillsForTimer`). **Merging happens at fire time**: a HOP or
//! CUMULATE window is the merge (the aggregate functions' `merge`) of the slices of its key
//! whose ends lie in `(window start, window end]`, read with one ordered scan of the key's
//! prefix; a TUMBLE window is its single slice. Slices are range-deleted when their last
//! window fires.
//!
//! # Late rows
//!
//! A row counts in every window of its slice that has not fired at the current watermark
//! (`isWindowFired`: `watermark >= timer time of end - 1`); a row with no such window is
//! dropped and counted in [`WindowAggregate::late_rows`]. Nothing is buffered, so Flink
//! 2.3.0's `TIMESTAMP_LTZ` data loss (rows buffered past a local window end whose timer has
//! already passed) cannot happen here: see the crate README.

mod assigner;
mod spec;
mod zone;

use std::collections::HashMap;
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, SchemaRef, TimeUnit};
use keygroup::{KeyGroup, KeyGroupRange, RowKind};
use sfcs_format::Container;
use state_api::{
    CanonicalTable, I64Codec, KeyedTable, MapHydration, MapStateStore, MapTable, RestoreSummary,
    Row, RowCodec, Scalar, ScanDirection, SnapshotSummary, TimeDomain, TimerStateStore, TimerTable,
    UserKeyRange, flip_timestamp, restore_canonical_snapshot, unflip_timestamp,
    write_canonical_snapshot,
};

use self::assigner::Slicing;
pub use self::assigner::WindowKind;
pub use self::spec::{AggPhases, WindowAggSpec};
pub use self::zone::ShiftZone;
use crate::changelog::{ChangelogBatch, is_accumulate, schema_of, short_string, validated_rows};
use crate::error::{Error, Result};
use crate::group_agg::acc::{self, LocalCompanion, StateCompanion};
use crate::group_agg::plan::{self, Plan, Projection};
use crate::key::KeyEncoder;
use crate::spec::GroupAggSpec;
use crate::value::{avg, count_of};

/// The state format version of [`WindowAggregate`] (tables as in the module docs).
/// Version 2: the companions' user keys of the group aggregate's version 2.
pub const WINDOW_AGG_STATE_VERSION: u32 = 2;

/// An event-time window aggregate over a store `S` (see the module docs).
pub struct WindowAggregate<S: MapStateStore + TimerStateStore> {
    operator_id: String,
    spec: WindowAggSpec,
    plan: Plan,
    slicing: Slicing,
    zone: ShiftZone,
    time_unit: TimeUnit,
    keys: KeyEncoder,
    acc: S::MapTable<RowCodec>,
    companions: Option<S::MapTable<I64Codec>>,
    timers: S::TimerTable,
    watermark_table: S::Table<I64Codec>,
    key_groups: KeyGroupRange,
    watermark: i64,
    late_rows: u64,
    output: SchemaRef,
    pool: Arc<dyn state_api::MemoryPool>,
}

/// One row's place: key group, key bytes, slice end, whether any window still counts it.
struct Placed {
    key_group: KeyGroup,
    key: Vec<u8>,
    slice_end: i64,
}

/// The namespace bytes of a slice or window end.
fn ns(end: i64) -> [u8; 8] {
    flip_timestamp(end)
}

fn ns_value(bytes: &[u8]) -> Result<i64> {
    let arr: [u8; 8] = bytes.try_into().map_err(|_| Error::CorruptState {
        table: "window state",
        reason: "a slice or window namespace is not 8 bytes",
    })?;
    Ok(unflip_timestamp(arr))
}

fn companion_prefix(key: &[u8], slice_end: i64) -> Vec<u8> {
    let mut p = Vec::with_capacity(key.len() + 8);
    p.extend_from_slice(key);
    p.extend_from_slice(&ns(slice_end));
    p
}

/// Millis (floored) of a timestamp value in `unit`.
fn millis_of(v: i64, unit: TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => v.saturating_mul(1000),
        TimeUnit::Millisecond => v,
        TimeUnit::Microsecond => v.div_euclid(1000),
        TimeUnit::Nanosecond => v.div_euclid(1_000_000),
    }
}

impl<S: MapStateStore + TimerStateStore> WindowAggregate<S> {
    /// Plans `spec` and opens its tables in `store` (`<operator_id>.acc`,
    /// `<operator_id>.companions` when needed, `<operator_id>.timers`,
    /// `<operator_id>.watermark`).
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] (Flink's HOP / CUMULATE size errors, a time column that is not
    /// a timestamp, an unknown time zone), [`Error::Unsupported`], a store error.
    pub fn try_new(operator_id: &str, spec: WindowAggSpec, store: &mut S) -> Result<Self> {
        let slicing = Slicing::try_new(spec.window, spec.offset_ms)?;
        let time_field = spec.input.get(spec.time_column).ok_or_else(|| {
            Error::spec(format!(
                "time column {} outside the input",
                spec.time_column
            ))
        })?;
        let (time_unit, ltz) = match time_field.data_type() {
            DataType::Timestamp(unit, tz) => (*unit, tz.is_some()),
            other => {
                return Err(Error::spec(format!(
                    "the window time column must be TIMESTAMP or TIMESTAMP_LTZ, not {other}"
                )));
            }
        };
        let zone = if ltz {
            ShiftZone::parse(&spec.local_time_zone)?
        } else {
            ShiftZone::utc()
        };
        let mut agg_spec = GroupAggSpec::new(
            spec.input.clone(),
            spec.group_by.clone(),
            spec.aggregates.clone(),
            spec.input_insert_only,
        );
        agg_spec.output_names.clone_from(&spec.output_names);
        let plan = plan::plan(&agg_spec)?;
        if !plan.two_phase && !matches!(spec.window, WindowKind::Tumble { .. }) {
            // Slices shared by several windows need the functions' `merge`; Flink's planner
            // checks for it and refuses FIRST_VALUE / LAST_VALUE (with or without retraction).
            let (function, class) = match plan.phys.iter().find(|p| !p.mergeable()) {
                Some(p) if p.kind == plan::PhysKind::Last => ("LAST_VALUE", "LastValue"),
                _ => ("FIRST_VALUE", "FirstValue"),
            };
            let retract = if spec.input_insert_only {
                ""
            } else {
                "WithRetract"
            };
            return Err(Error::refused(format!(
                "Could not find an implementation method 'merge' in class \
                 'org.apache.flink.table.runtime.functions.aggregate.{class}{retract}AggFunction' \
                 for function '{function}' (HOP / CUMULATE windows merge slices)"
            )));
        }
        let keys = KeyEncoder::try_new(
            &spec.input,
            &spec.group_by,
            store.config().max_parallelism(),
        )?;
        let acc = store.open_map_table(
            &format!("{operator_id}.acc"),
            RowCodec::try_new(plan.acc_fields.clone())?,
            None,
        )?;
        let companions = if plan.companion_tags > 0 {
            Some(store.open_map_table(&format!("{operator_id}.companions"), I64Codec, None)?)
        } else {
            None
        };
        let timers =
            store.open_timer_table(&format!("{operator_id}.timers"), TimeDomain::EventTime)?;
        let watermark_table =
            store.open_table(&format!("{operator_id}.watermark"), I64Codec, None)?;
        let mut out: Vec<Field> = plan.output.iter().map(|f| f.as_ref().clone()).collect();
        out.push(Field::new(
            "window_start",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        ));
        out.push(Field::new(
            "window_end",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        ));
        Ok(Self {
            operator_id: operator_id.to_owned(),
            key_groups: store.config().key_groups(),
            pool: Arc::clone(store.config().memory_pool()),
            output: schema_of(&Fields::from(out)),
            spec,
            plan,
            slicing,
            zone,
            time_unit,
            keys,
            acc,
            companions,
            timers,
            watermark_table,
            watermark: i64::MIN,
            late_rows: 0,
        })
    }

    /// The output schema: group keys, aggregates, `window_start`, `window_end`
    /// (`TIMESTAMP(3)`; local date-times for a `TIMESTAMP_LTZ` time column).
    pub fn output_schema(&self) -> &SchemaRef {
        &self.output
    }

    /// The input columns.
    pub fn input_fields(&self) -> &Fields {
        &self.spec.input
    }

    /// The operator id.
    pub fn operator_id(&self) -> &str {
        &self.operator_id
    }

    /// The current watermark (`i64::MIN` before the first).
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }

    /// Rows dropped because every window of theirs had fired (since this instance opened).
    pub fn late_rows(&self) -> u64 {
        self.late_rows
    }

    /// Registered timers (one per open (key, window)).
    pub fn pending_timers(&self) -> usize {
        self.timers.len()
    }

    /// The shift time zone in use (UTC for a TIMESTAMP time column).
    pub fn shift_zone(&self) -> &ShiftZone {
        &self.zone
    }

    /// Accumulates one bundle of rows (between two watermarks) into the slices. Window
    /// aggregates emit only when a watermark fires windows.
    ///
    /// # Errors
    /// Input errors (before any state changes): [`Error::MissingColumn`],
    /// [`Error::WrongType`], [`Error::NullInNonNullable`] (also for a null time attribute),
    /// [`Error::RowKind`] for a retraction into an insert-only plan; a store error.
    pub fn process_bundle(&mut self, input: &ChangelogBatch) -> Result<()> {
        let rows = validated_rows(&self.spec.input, input)?;
        let kinds = input.kinds();
        if self.spec.input_insert_only
            && let Some(row) = kinds.iter().position(|k| !is_accumulate(*k))
        {
            return Err(Error::RowKind {
                row,
                kind: short_string(kinds.get(row).copied().unwrap_or_default()).to_owned(),
                reason: "retraction into a window aggregate planned for insert-only input",
            });
        }
        // Place every row first (input errors before any state change).
        let mut placed: Vec<Option<Placed>> = Vec::with_capacity(rows.len());
        for (i, row) in rows.iter().enumerate() {
            let ts = match row.get(self.spec.time_column) {
                Some(Scalar::Timestamp(v)) => millis_of(*v, self.time_unit),
                _ => {
                    return Err(Error::NullInNonNullable {
                        index: self.spec.time_column,
                        row: i,
                    });
                }
            };
            let slice_end = self.slicing.slice_end(self.zone.to_local(ts));
            let last = self.slicing.last_window_end(slice_end);
            if self.zone.is_fired(last, self.watermark) {
                placed.push(None);
                continue;
            }
            let mut key = Vec::new();
            let key_group = self.keys.encode(row, &mut key)?;
            placed.push(Some(Placed {
                key_group,
                key,
                slice_end,
            }));
        }
        let late = placed.iter().filter(|p| p.is_none()).count();
        self.late_rows = self.late_rows.saturating_add(late as u64);
        let slice_keys: Vec<[u8; 8]> = placed.iter().flatten().map(|p| ns(p.slice_end)).collect();
        let entries: Vec<(KeyGroup, &[u8], &[u8])> = placed
            .iter()
            .flatten()
            .zip(&slice_keys)
            .map(|(p, s)| (p.key_group, p.key.as_slice(), s.as_slice()))
            .collect();
        let prefixes: Vec<Vec<u8>> = placed
            .iter()
            .flatten()
            .map(|p| companion_prefix(&p.key, p.slice_end))
            .collect();
        self.acc.begin_bundle(MapHydration::entries(&entries))?;
        if let Some(c) = self.companions.as_mut() {
            let named: Vec<(KeyGroup, &[u8])> = placed
                .iter()
                .flatten()
                .zip(&prefixes)
                .map(|(p, pre)| (p.key_group, pre.as_slice()))
                .collect();
            if let Err(e) = c.begin_bundle(MapHydration::prefixes(&named)) {
                self.acc.commit_bundle()?;
                return Err(e.into());
            }
        }
        let result = match self.spec.phases {
            AggPhases::TwoPhase if self.plan.two_phase => self.two_phase(&rows, kinds, &placed),
            _ => self.one_phase(&rows, kinds, &placed),
        };
        let commit = self.commit_all();
        result?;
        commit
    }

    fn commit_all(&mut self) -> Result<()> {
        self.acc.commit_bundle()?;
        if let Some(c) = self.companions.as_mut() {
            c.commit_bundle()?;
        }
        self.timers.commit()?;
        Ok(())
    }

    /// The slice accumulator of `(key, slice_end)`, created (with its windows' timers) when
    /// absent.
    fn slice_acc(&mut self, p: &Placed) -> Result<Row> {
        let user_key = ns(p.slice_end);
        if let Some(a) = self.acc.get(p.key_group, &p.key, &user_key)? {
            return Ok(a.clone());
        }
        for w in self.slicing.windows_of_slice(p.slice_end) {
            if !self.zone.is_fired(w, self.watermark) {
                let at = self.zone.timer_time(w.saturating_sub(1));
                self.timers.register(p.key_group, at, &p.key, &ns(w))?;
            }
        }
        Ok(acc::create(&self.plan))
    }

    fn one_phase(
        &mut self,
        rows: &[Row],
        kinds: &[RowKind],
        placed: &[Option<Placed>],
    ) -> Result<()> {
        let mut key_buf = Vec::new();
        let mut local = LocalCompanion::default();
        for ((row, kind), p) in rows.iter().zip(kinds).zip(placed) {
            let Some(p) = p else { continue };
            let mut state = self.slice_acc(p)?;
            let accumulate = is_accumulate(*kind);
            match self.companions.as_mut() {
                Some(table) => {
                    let prefix = companion_prefix(&p.key, p.slice_end);
                    let mut c = StateCompanion {
                        table,
                        key_group: p.key_group,
                        prefix: &prefix,
                    };
                    acc::apply_row(
                        &self.plan,
                        &mut state,
                        row,
                        accumulate,
                        &mut c,
                        &mut key_buf,
                    )?;
                }
                None => {
                    acc::apply_row(
                        &self.plan,
                        &mut state,
                        row,
                        accumulate,
                        &mut local,
                        &mut key_buf,
                    )?;
                }
            }
            self.acc.put(p.key_group, &p.key, &ns(p.slice_end), state)?;
        }
        Ok(())
    }

    /// Local pre-aggregation per (key, slice) over the bundle, then one merge into the state
    /// per (key, slice) (`LocalSlicingWindowAggOperator` -> `SlicingWindowOperator` with the
    /// global aggregate's `merge`).
    fn two_phase(
        &mut self,
        rows: &[Row],
        kinds: &[RowKind],
        placed: &[Option<Placed>],
    ) -> Result<()> {
        let mut key_buf = Vec::new();
        let mut index: HashMap<(&[u8], i64), usize> = HashMap::new();
        let mut groups: Vec<(usize, Row, LocalCompanion)> = Vec::new();
        for (i, ((row, kind), p)) in rows.iter().zip(kinds).zip(placed).enumerate() {
            let Some(p) = p else { continue };
            let g = *index
                .entry((p.key.as_slice(), p.slice_end))
                .or_insert_with(|| {
                    groups.push((i, acc::create(&self.plan), LocalCompanion::default()));
                    groups.len() - 1
                });
            if let Some((_, local, companion)) = groups.get_mut(g) {
                acc::apply_row(
                    &self.plan,
                    local,
                    row,
                    is_accumulate(*kind),
                    companion,
                    &mut key_buf,
                )?;
            }
        }
        for (first, local, local_companion) in groups {
            let Some(Some(p)) = placed.get(first) else {
                continue;
            };
            let mut state = self.slice_acc(p)?;
            match self.companions.as_mut() {
                Some(table) => {
                    let prefix = companion_prefix(&p.key, p.slice_end);
                    let mut c = StateCompanion {
                        table,
                        key_group: p.key_group,
                        prefix: &prefix,
                    };
                    acc::merge(
                        &self.plan,
                        &mut state,
                        &local,
                        &local_companion,
                        &mut c,
                        &mut key_buf,
                    )?;
                }
                None => acc::merge(
                    &self.plan,
                    &mut state,
                    &local,
                    &local_companion,
                    &mut LocalCompanion::default(),
                    &mut key_buf,
                )?,
            }
            self.acc.put(p.key_group, &p.key, &ns(p.slice_end), state)?;
        }
        Ok(())
    }

    /// Advances the watermark to `watermark` and fires every window whose timer is due: one
    /// `+I` per (key, window) with counted rows, in timer order (fire time, key group, key,
    /// window end). A watermark that does not advance fires nothing.
    ///
    /// # Errors
    /// A store error; [`Error::CorruptState`] for state that does not decode.
    pub fn process_watermark(&mut self, watermark: i64) -> Result<ChangelogBatch> {
        if watermark <= self.watermark {
            return Ok(ChangelogBatch::empty(&self.output));
        }
        self.watermark = watermark;
        let mut due = Vec::new();
        while let Some(t) = self.timers.pop_due(watermark)? {
            due.push(t);
        }
        let mut out = Vec::new();
        if !due.is_empty() {
            let named: Vec<(KeyGroup, &[u8])> = due
                .iter()
                .map(|t| (t.key_group, t.key.as_slice()))
                .collect();
            self.acc.begin_bundle(MapHydration::prefixes(&named))?;
            if let Some(c) = self.companions.as_mut()
                && let Err(e) = c.begin_bundle(MapHydration::none())
            {
                self.acc.commit_bundle()?;
                return Err(e.into());
            }
            let mut result = Ok(());
            for t in &due {
                result = ns_value(&t.namespace)
                    .and_then(|end| self.fire(t.key_group, &t.key, end, &mut out));
                if result.is_err() {
                    break;
                }
            }
            let commit = self.commit_all();
            result?;
            commit?;
        }
        self.store_watermark()?;
        ChangelogBatch::from_rows(&self.output, &out)
    }

    /// Emits the window ending at `end` of `key` and drops the slices it was the last
    /// window of.
    fn fire(
        &mut self,
        kg: KeyGroup,
        key: &[u8],
        end: i64,
        out: &mut Vec<(RowKind, Row)>,
    ) -> Result<()> {
        let start = self.slicing.window_start_of(end);
        let (lo, hi) = (ns(start), ns(end));
        let mut slices: Vec<(i64, Row)> = Vec::new();
        let mut bad = false;
        self.acc.scan(
            kg,
            key,
            UserKeyRange::new(Bound::Excluded(&lo), Bound::Included(&hi)),
            ScanDirection::Forward,
            &mut |k, v| {
                if let Ok(se) = ns_value(k) {
                    slices.push((se, v.clone()));
                    ControlFlow::Continue(())
                } else {
                    bad = true;
                    ControlFlow::Break(())
                }
            },
        )?;
        if bad {
            return Err(Error::CorruptState {
                table: "window acc",
                reason: "a slice key is not 8 bytes",
            });
        }
        let merged = match slices.as_slice() {
            [] => None,
            [(_, only)] => Some(only.clone()),
            _ => Some(self.merge_slices(kg, key, &slices)?),
        };
        if let Some(merged) = merged
            && !acc::count_is_zero(&self.plan, &merged)
        {
            let mut row = self.keys.decode(key)?;
            row.extend(self.project(&acc::values(&self.plan, &merged)));
            row.push(Scalar::Timestamp(start));
            row.push(Scalar::Timestamp(end));
            out.push((RowKind::Insert, row));
        }
        if let Some((lo, hi)) = self.slicing.expired_by(end) {
            let (lo_b, hi_b) = (ns(lo), ns(hi));
            let range = UserKeyRange::new(Bound::Excluded(&lo_b), Bound::Included(&hi_b));
            if let Some(c) = self.companions.as_mut() {
                for (se, _) in slices.iter().filter(|(se, _)| *se > lo && *se <= hi) {
                    c.remove_range(kg, &companion_prefix(key, *se), UserKeyRange::all())?;
                }
            }
            self.acc.remove_range(kg, key, range)?;
        }
        Ok(())
    }

    /// Merges the slices of one window into fresh accumulators (with their companions).
    fn merge_slices(&mut self, kg: KeyGroup, key: &[u8], slices: &[(i64, Row)]) -> Result<Row> {
        let mut merged = acc::create(&self.plan);
        let mut merged_companion = LocalCompanion::default();
        let mut key_buf = Vec::new();
        for (se, slice) in slices {
            let mut theirs = LocalCompanion::default();
            if let Some(c) = self.companions.as_mut() {
                c.scan(
                    kg,
                    &companion_prefix(key, *se),
                    UserKeyRange::all(),
                    ScanDirection::Forward,
                    &mut |k, v| {
                        theirs.entries.insert(k.to_vec(), *v);
                        ControlFlow::Continue(())
                    },
                )?;
            }
            acc::merge(
                &self.plan,
                &mut merged,
                slice,
                &theirs,
                &mut merged_companion,
                &mut key_buf,
            )?;
        }
        Ok(merged)
    }

    /// The node's values projected to the query's aggregates (`$SUM0`/`COUNT` → `SUM`,
    /// `AVG`, as the group aggregate's `Calc`).
    fn project(&self, node: &[Scalar]) -> Vec<Scalar> {
        let value = |phys: usize| -> Scalar {
            let skipped = self
                .plan
                .phys
                .iter()
                .take(phys)
                .filter(|p| p.kind == plan::PhysKind::Count1)
                .count();
            node.get(phys - skipped).cloned().unwrap_or(Scalar::Null)
        };
        self.plan
            .projections
            .iter()
            .map(|projection| match projection {
                Projection::Phys(i) => value(*i),
                Projection::SumOrNull { sum, count } => {
                    if count_of(&value(*count)) == 0 {
                        Scalar::Null
                    } else {
                        value(*sum)
                    }
                }
                Projection::Avg { sum, count, result } => {
                    let s = value(*sum);
                    let sum_type = self
                        .plan
                        .phys
                        .get(*sum)
                        .map_or(DataType::Null, |p| p.result_type.clone());
                    if s.is_null() {
                        Scalar::Null
                    } else {
                        avg(&s, count_of(&value(*count)), &sum_type, result)
                    }
                }
            })
            .collect()
    }

    /// Writes the current watermark under every key group of the range (so any restore
    /// finds it in the key groups it takes).
    fn store_watermark(&mut self) -> Result<()> {
        let groups: Vec<KeyGroup> = self.key_groups.iter().collect();
        let named: Vec<(KeyGroup, &[u8])> = groups.iter().map(|g| (*g, &[][..])).collect();
        self.watermark_table.begin_bundle(&named)?;
        for g in &groups {
            self.watermark_table.put(*g, &[], self.watermark)?;
        }
        self.watermark_table.commit_bundle()?;
        Ok(())
    }

    fn tables(&self) -> Vec<&dyn CanonicalTable> {
        let mut t: Vec<&dyn CanonicalTable> = vec![&self.acc];
        if let Some(c) = &self.companions {
            t.push(c);
        }
        t.push(&self.timers);
        t.push(&self.watermark_table);
        t
    }

    /// Writes the canonical snapshot of the operator (slices, companions, pending timers,
    /// the current watermark) into `container`.
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

    /// Replaces the operator's state with the key groups of this store's range found in
    /// `sources` (snapshots of any parallelism), all or nothing. The current watermark
    /// becomes the smallest watermark stored in those key groups (`i64::MIN` if none).
    ///
    /// # Errors
    /// A state-api error; on error the state is unchanged.
    pub fn restore(&mut self, sources: &[&dyn Container]) -> Result<RestoreSummary> {
        let mut tables: Vec<&mut dyn CanonicalTable> = vec![&mut self.acc];
        if let Some(c) = self.companions.as_mut() {
            tables.push(c);
        }
        tables.push(&mut self.timers);
        tables.push(&mut self.watermark_table);
        let summary =
            restore_canonical_snapshot(&self.operator_id, sources, &mut tables, &self.pool)?;
        let groups: Vec<KeyGroup> = self.key_groups.iter().collect();
        let named: Vec<(KeyGroup, &[u8])> = groups.iter().map(|g| (*g, &[][..])).collect();
        self.watermark_table.begin_bundle(&named)?;
        let mut min: Option<i64> = None;
        for g in &groups {
            if let Some(w) = self.watermark_table.get(*g, &[])? {
                min = Some(min.map_or(*w, |m| m.min(*w)));
            }
        }
        self.watermark_table.commit_bundle()?;
        self.watermark = min.unwrap_or(i64::MIN);
        Ok(summary)
    }
}

impl<S: MapStateStore + TimerStateStore> crate::driver::StatefulOperator for WindowAggregate<S> {
    fn operator_id(&self) -> &str {
        &self.operator_id
    }

    fn state_version(&self) -> u32 {
        WINDOW_AGG_STATE_VERSION
    }

    fn output_schema(&self) -> &SchemaRef {
        &self.output
    }

    fn snapshot(&self, container: &mut dyn Container) -> Result<SnapshotSummary> {
        WindowAggregate::snapshot(self, container)
    }

    fn restore(&mut self, sources: &[&dyn Container]) -> Result<RestoreSummary> {
        WindowAggregate::restore(self, sources)
    }
}
