//! W2 (group aggregate, mini-batch on) and W3 (inner join) on the `operators` crate: the
//! same generator and key-group routing as [`crate::e2e`], the events handed to the operator
//! as Arrow changelog bundles, its output changelog summed by the checksum sink.
//!
//! - **W2**: `operators::GroupAggregate`, `COUNT(*), SUM(value), MAX(value) GROUP BY key`,
//!   insert-only input, mini-batch on (local-global, as Flink's AUTO strategy), upsert
//!   changelog (`+I`, then `+U`, as W1). A bundle is the next `bundle` events a subtask owns
//!   (Flink's count trigger counts per operator instance). The final table is kept by the sink
//!   (last `+I`/`+U` row per key).
//! - **W3**: `operators::InnerJoin` on `key % (K / 10)` over N / 10 events (200,000 at the
//!   default N): even `i` on the left, odd `i` on the right, both `(join key, i, value)`,
//!   routed by the join key's key group. A bundle of `bundle` generator events is handed over
//!   as two segments, its left rows then its right rows: for an insert-only inner join the
//!   output is the same multiset in any arrival order (each matching pair is emitted once, by
//!   the later of its two rows), and every output row is `+I`, so the final table is the
//!   changelog.
//!
//! A restore onto 3 subtasks is verified by the rows and key groups it applies (both must
//! equal the snapshot's) and, for W2, by probing every key: one event of value 0 per key
//! into the restored operators, whose `+U` rows give back each key's final row.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use operators::{
    AggCall, AggFunction, ChangelogBatch, ChangelogMode, GroupAggSpec, GroupAggregate, InnerJoin,
    JoinSide, JoinSpec, MiniBatch, RowKind, StatefulOperator, schema_of,
};
use state_api::arrow_array::{Array, ArrayRef, Int64Array, RecordBatch};
use state_api::arrow_schema::{DataType, Field, Fields, SchemaRef};
use state_api::keygroup::{BinaryRowWriter, MaxParallelism, Parallelism};
use state_api::sfcs_format::{Container, DirContainer};
use state_api::{I64Codec, KeyedStateStore, MapStateStore, RowCodec, StoreConfig};

use crate::backend::{Backend, dir_bytes};
use crate::e2e::{
    MAX_PARALLELISM, Mode, Phases, RESTORE_PARALLELISM, RunReport, RunSpec, check, check_results,
    key_row, millis, owner_of, owners, peak_rss, reset_peak_rss, thread_cpu_ms,
};
use crate::error::{BenchError, BenchResult};
use crate::workload::{Changelog, FinalTable, Kind, key, rowhash, value};
use crate::workloads::WorkloadId;

/// The operator id of the benchmark's operator (the canonical snapshot's operator id).
const OPERATOR_ID: &str = "bench-op";

/// Rows per output batch of W3's join (the sink takes each as the operator makes it).
const OUTPUT_CHUNK_ROWS: usize = 8192;

/// The events W3 runs: a tenth of N (200,000 at the default N, as the issue says).
pub fn join_events(events: u64) -> u64 {
    events / 10
}

/// W3's join-key modulus: a tenth of K (at least 1).
pub fn join_keys(keys: u64) -> u64 {
    (keys / 10).max(1)
}

/// The events' schema of W2: `(key BIGINT NOT NULL, value BIGINT NOT NULL)`.
fn w2_fields() -> Fields {
    Fields::from(vec![
        Field::new("key", DataType::Int64, false),
        Field::new("value", DataType::Int64, false),
    ])
}

/// One join input's schema: `(jk, i, value)`, all `BIGINT NOT NULL`.
fn w3_fields() -> Fields {
    Fields::from(vec![
        Field::new("jk", DataType::Int64, false),
        Field::new("i", DataType::Int64, false),
        Field::new("value", DataType::Int64, false),
    ])
}

fn w2_spec(bundle: usize) -> GroupAggSpec {
    GroupAggSpec::new(
        w2_fields(),
        vec![0],
        vec![
            AggCall::new(AggFunction::CountStar, vec![]),
            AggCall::new(AggFunction::Sum, vec![1]),
            AggCall::new(AggFunction::Max, vec![1]),
        ],
        true,
    )
    .with_mini_batch(MiniBatch { size: bundle })
    .with_changelog_mode(ChangelogMode::Upsert)
}

fn w3_spec() -> JoinSpec {
    JoinSpec::new(w3_fields(), w3_fields(), vec![0], vec![0])
}

/// A batch of `BIGINT` columns (all rows `+I`).
fn batch_of(schema: &SchemaRef, columns: Vec<Vec<i64>>) -> BenchResult<ChangelogBatch> {
    let rows = columns.first().map_or(0, Vec::len);
    let arrays: Vec<ArrayRef> = columns
        .into_iter()
        .map(|c| Arc::new(Int64Array::from(c)) as ArrayRef)
        .collect();
    let batch = RecordBatch::try_new(Arc::clone(schema), arrays)
        .map_err(|e| BenchError::Usage(format!("building an input batch: {e}")))?;
    Ok(ChangelogBatch::try_new(batch, vec![RowKind::Insert; rows])?)
}

/// The `BIGINT` columns of an output batch.
fn long_columns(out: &ChangelogBatch) -> BenchResult<Vec<&Int64Array>> {
    out.batch()
        .columns()
        .iter()
        .map(|c| {
            c.as_any()
                .downcast_ref::<Int64Array>()
                .filter(|a| a.null_count() == 0)
                .ok_or_else(|| BenchError::Usage("an output column is not BIGINT NOT NULL".into()))
        })
        .collect()
}

fn kind_of(kind: RowKind) -> Kind {
    match kind {
        RowKind::Insert => Kind::Insert,
        RowKind::UpdateBefore => Kind::UpdateBefore,
        RowKind::UpdateAfter => Kind::UpdateAfter,
        RowKind::Delete => Kind::Delete,
    }
}

/// The checksum sink of an operator's output: the changelog, and (W2) the final table as
/// the last `+I`/`+U` row hash per key (`-D` removes the key).
#[derive(Debug, Default)]
struct Sink {
    out: Changelog,
    /// W2: key -> row hash of its current row (foldhash: with std's `SipHash` this map was
    /// ~12 % of a W2 subtask's time; Flink's harness keeps its map only in the untimed check
    /// run, sfstate's keeps it in every run so that every run checks `chk_final`).
    last: HashMap<i64, u64, foldhash::fast::RandomState>,
}

impl Sink {
    /// Takes a W2 output batch `(key, count, sum, max)`.
    fn group_rows(&mut self, batch: &ChangelogBatch) -> BenchResult<()> {
        let cols = long_columns(batch)?;
        let [k, c, s, m] = cols.as_slice() else {
            return Err(BenchError::Usage("W2 output is not 4 columns".into()));
        };
        for (r, kind) in batch.kinds().iter().enumerate() {
            let row = [k.value(r), c.value(r), s.value(r), m.value(r)].map(i64::cast_unsigned);
            self.out.emit(kind_of(*kind), &row);
            match kind {
                RowKind::Insert | RowKind::UpdateAfter => {
                    self.last.insert(k.value(r), rowhash(&row));
                }
                RowKind::Delete => {
                    self.last.remove(&k.value(r));
                }
                RowKind::UpdateBefore => {}
            }
        }
        Ok(())
    }

    /// Takes a W3 output batch `(jk, li, lv, jk, ri, rv)` as `(jk, li, lv, ri, rv)`.
    fn join_rows(&mut self, batch: &ChangelogBatch) -> BenchResult<()> {
        let cols = long_columns(batch)?;
        let [jk, li, lv, _, ri, rv] = cols.as_slice() else {
            return Err(BenchError::Usage("W3 output is not 6 columns".into()));
        };
        for (r, kind) in batch.kinds().iter().enumerate() {
            let row = [
                jk.value(r),
                li.value(r),
                lv.value(r),
                ri.value(r),
                rv.value(r),
            ]
            .map(i64::cast_unsigned);
            self.out.emit(kind_of(*kind), &row);
        }
        Ok(())
    }

    fn final_table(&self, workload: WorkloadId) -> FinalTable {
        if workload == WorkloadId::W3 {
            return FinalTable {
                rows: (self.out.rows[0] + self.out.rows[2])
                    .saturating_sub(self.out.rows[1] + self.out.rows[3]),
                checksum: self.out.checksum,
            };
        }
        let mut t = FinalTable::default();
        for h in self.last.values() {
            t.rows += 1;
            t.checksum = t.checksum.wrapping_add(*h);
        }
        t
    }
}

/// One of the two operators over a store.
enum Op<S: MapStateStore> {
    Group(GroupAggregate<S>),
    Join(InnerJoin<S>),
}

impl<S: MapStateStore> Op<S> {
    fn open(workload: WorkloadId, bundle: usize, store: &mut S) -> BenchResult<Self> {
        Ok(match workload {
            WorkloadId::W3 => Op::Join(InnerJoin::try_new(OPERATOR_ID, &w3_spec(), store)?),
            _ => Op::Group(GroupAggregate::try_new(
                OPERATOR_ID,
                w2_spec(bundle),
                store,
            )?),
        })
    }

    fn stateful(&self) -> &dyn StatefulOperator {
        match self {
            Op::Group(g) => g,
            Op::Join(j) => j,
        }
    }

    fn stateful_mut(&mut self) -> &mut dyn StatefulOperator {
        match self {
            Op::Group(g) => g,
            Op::Join(j) => j,
        }
    }
}

/// Subtask `index`'s events of one bundle, as the operator's input columns.
#[derive(Default)]
struct Columns {
    /// W2: key, value. W3 (per side): join key, i, value.
    a: Vec<i64>,
    b: Vec<i64>,
    c: Vec<i64>,
}

impl Columns {
    fn len(&self) -> usize {
        self.a.len()
    }

    /// The columns of the bundle, leaving empty columns of the same capacity (so the next
    /// bundle's pushes do not regrow them from nothing).
    fn take(&mut self) -> Vec<Vec<i64>> {
        let fresh = |col: &mut Vec<i64>| std::mem::replace(col, Vec::with_capacity(col.len()));
        let cols = vec![fresh(&mut self.a), fresh(&mut self.b), fresh(&mut self.c)];
        cols.into_iter().filter(|c| !c.is_empty()).collect()
    }
}

/// Runs subtask `index`'s share of a W2 run: bundles of `bundle` owned events.
fn run_group<S: MapStateStore>(
    op: &mut GroupAggregate<S>,
    spec: &RunSpec,
    owners: &[i32],
    index: i32,
    progress: Option<&indicatif::ProgressBar>,
) -> BenchResult<(Sink, Phases)> {
    let mp = MaxParallelism::new(MAX_PARALLELISM)?;
    let schema = schema_of(&w2_fields());
    let mut writer = BinaryRowWriter::new(1);
    let mut sink = Sink::default();
    let mut phases = Phases::default();
    let cpu_start = thread_cpu_ms();
    let mut cols = Columns::default();
    let mut t0 = Instant::now();
    for i in 0..spec.events {
        let k = key(i, spec.keys);
        if owner_of(owners, key_row(&mut writer, k, mp)) == index {
            cols.a.push(k.cast_signed());
            cols.b.push(value(i).cast_signed());
        }
        let last = i + 1 == spec.events;
        if cols.len() >= spec.bundle || (last && cols.len() > 0) {
            let input = batch_of(&schema, cols.take())?;
            let t1 = Instant::now();
            let out = op.process_bundle(&input)?;
            let t2 = Instant::now();
            sink.group_rows(&out)?;
            let t3 = Instant::now();
            phases.generate_ms += millis(t1 - t0);
            phases.process_ms += millis(t2 - t1);
            phases.sink_ms += millis(t3 - t2);
            t0 = t3;
        }
        if i % 8192 == 8191
            && let Some(bar) = progress
        {
            bar.inc(8192);
        }
    }
    phases.cpu_ms = thread_cpu_ms() - cpu_start;
    Ok((sink, phases))
}

/// Runs subtask `index`'s share of a W3 run: bundles of `bundle` generator events, its left
/// rows then its right rows.
fn run_join<S: MapStateStore>(
    op: &mut InnerJoin<S>,
    spec: &RunSpec,
    owners: &[i32],
    index: i32,
    progress: Option<&indicatif::ProgressBar>,
) -> BenchResult<(Sink, Phases)> {
    let mp = MaxParallelism::new(MAX_PARALLELISM)?;
    let schema = schema_of(&w3_fields());
    let (events, modulus) = (join_events(spec.events), join_keys(spec.keys));
    let mut writer = BinaryRowWriter::new(1);
    let mut sink = Sink::default();
    let mut phases = Phases::default();
    let cpu_start = thread_cpu_ms();
    let bundle = spec.bundle.max(1) as u64;
    let mut start = 0;
    while start < events {
        let end = (start + bundle).min(events);
        let t0 = Instant::now();
        let (mut left, mut right) = (Columns::default(), Columns::default());
        for i in start..end {
            let jk = key(i, spec.keys) % modulus;
            if owner_of(owners, key_row(&mut writer, jk, mp)) != index {
                continue;
            }
            let side = if i % 2 == 0 { &mut left } else { &mut right };
            side.a.push(jk.cast_signed());
            side.b.push(i.cast_signed());
            side.c.push(value(i).cast_signed());
        }
        let (l, r) = (
            batch_of(&schema, left.take())?,
            batch_of(&schema, right.take())?,
        );
        let mut segments: Vec<(JoinSide, &ChangelogBatch)> = Vec::new();
        if l.num_rows() > 0 {
            segments.push((JoinSide::Left, &l));
        }
        if r.num_rows() > 0 {
            segments.push((JoinSide::Right, &r));
        }
        let t1 = Instant::now();
        // The sink takes each chunk while the bundle runs; its time is counted as the sink's.
        let mut sink_failure = None;
        let mut in_sink = Duration::ZERO;
        let processed = op.process_bundle_chunked(&segments, OUTPUT_CHUNK_ROWS, &mut |out| {
            let started = Instant::now();
            if let Err(e) = sink.join_rows(&out) {
                sink_failure = Some(e);
            }
            in_sink += started.elapsed();
            Ok(())
        });
        processed?;
        if let Some(e) = sink_failure {
            return Err(e);
        }
        let t2 = Instant::now();
        phases.generate_ms += millis(t1 - t0);
        phases.process_ms += millis((t2 - t1).saturating_sub(in_sink));
        phases.sink_ms += millis(in_sink);
        if let Some(bar) = progress {
            bar.inc(end - start);
        }
        start = end;
    }
    phases.cpu_ms = thread_cpu_ms() - cpu_start;
    Ok((sink, phases))
}

/// The reference model of W2: per subtask, bundles of `bundle` owned events, one `+I`/`+U`
/// per key touched in a bundle carrying the key's aggregate after the bundle.
///
/// # Errors
/// A parallelism outside Flink's range.
pub fn reference_w2(
    events: u64,
    keys: u64,
    bundle: usize,
    parallelism: i32,
) -> BenchResult<(Changelog, FinalTable)> {
    let mp = MaxParallelism::new(MAX_PARALLELISM)?;
    let owners = owners(mp, Parallelism::new(parallelism)?);
    let mut writer = BinaryRowWriter::new(1);
    let mut state: HashMap<u64, [u64; 3]> = HashMap::new();
    let mut out = Changelog::default();
    let parts = usize::try_from(parallelism).unwrap_or(1);
    let mut pending: Vec<Vec<u64>> = vec![Vec::new(); parts];
    let mut touched: Vec<HashMap<u64, bool>> = vec![HashMap::new(); parts];
    let flush =
        |keys_of: &mut HashMap<u64, bool>, state: &HashMap<u64, [u64; 3]>, out: &mut Changelog| {
            for (k, was_new) in keys_of.drain() {
                if let Some(&[c, s, m]) = state.get(&k) {
                    let kind = if was_new {
                        Kind::Insert
                    } else {
                        Kind::UpdateAfter
                    };
                    out.emit(kind, &[k, c, s, m]);
                }
            }
        };
    for i in 0..events {
        let k = key(i, keys);
        let owner = usize::try_from(owner_of(&owners, key_row(&mut writer, k, mp))).unwrap_or(0);
        let v = value(i);
        let was_new = !state.contains_key(&k);
        let e = state.entry(k).or_insert([0, 0, 0]);
        *e = [e[0] + 1, e[1].wrapping_add(v), e[2].max(v)];
        if let (Some(p), Some(t)) = (pending.get_mut(owner), touched.get_mut(owner)) {
            p.push(k);
            t.entry(k).or_insert(was_new);
            if p.len() >= bundle {
                p.clear();
                flush(t, &state, &mut out);
            }
        }
    }
    for t in &mut touched {
        flush(t, &state, &mut out);
    }
    let mut table = FinalTable::default();
    for (k, [c, s, m]) in &state {
        table.add(&[*k, *c, *s, *m]);
    }
    Ok((out, table))
}

/// The reference model of W3: every (left, right) pair with the same join key, once.
pub fn reference_w3(events: u64, keys: u64) -> (Changelog, FinalTable) {
    let (n, modulus) = (join_events(events), join_keys(keys));
    let mut sides: HashMap<u64, [Vec<(u64, u64)>; 2]> = HashMap::new();
    let mut out = Changelog::default();
    for i in 0..n {
        let jk = key(i, keys) % modulus;
        let v = value(i);
        let entry = sides.entry(jk).or_default();
        let (own, other) = if i % 2 == 0 { (0, 1) } else { (1, 0) };
        if let Some(records) = entry.get(other) {
            for &(oi, ov) in records {
                let row = if own == 0 {
                    [jk, i, v, oi, ov]
                } else {
                    [jk, oi, ov, i, v]
                };
                out.emit(Kind::Insert, &row);
            }
        }
        if let Some(records) = entry.get_mut(own) {
            records.push((i, v));
        }
    }
    let table = FinalTable {
        rows: out.total(),
        checksum: out.checksum,
    };
    (out, table)
}

/// Probes every key of a restored W2 state: one event `(key, 0)` per key routed to its
/// subtask; each `+U (key, count + 1, sum, max)` gives back the key's row
/// `(key, count, sum, max)`. Returns the final table so recovered.
fn probe_w2<S: MapStateStore>(
    ops: &mut [Op<S>],
    owners: &[i32],
    keys: u64,
) -> BenchResult<FinalTable> {
    let mp = MaxParallelism::new(MAX_PARALLELISM)?;
    let schema = schema_of(&w2_fields());
    let mut writer = BinaryRowWriter::new(1);
    let mut per: Vec<Vec<i64>> = vec![Vec::new(); ops.len()];
    for k in 0..keys {
        let owner = usize::try_from(owner_of(owners, key_row(&mut writer, k, mp))).unwrap_or(0);
        if let Some(p) = per.get_mut(owner) {
            p.push(k.cast_signed());
        }
    }
    let mut table = FinalTable::default();
    for (op, ks) in ops.iter_mut().zip(per) {
        let Op::Group(group) = op else { continue };
        let zeros = vec![0; ks.len()];
        let out = group.process_bundle(&batch_of(&schema, vec![ks, zeros])?)?;
        let cols = long_columns(&out)?;
        let [k, c, s, m] = cols.as_slice() else {
            return Err(BenchError::Usage("W2 output is not 4 columns".into()));
        };
        for (r, kind) in out.kinds().iter().enumerate() {
            // A key without state comes back as +I (count 1): not part of the final table.
            if *kind == RowKind::UpdateAfter {
                table.add(
                    &[k.value(r), c.value(r) - 1, s.value(r), m.value(r)].map(i64::cast_unsigned),
                );
            }
        }
    }
    Ok(table)
}

/// The stores of one parallelism and their operators.
type Opened<S> = (Vec<S>, Vec<Op<S>>);

fn open_ops<B>(
    backend: &B,
    workload: WorkloadId,
    bundle: usize,
    parallelism: i32,
    dir: &Path,
) -> BenchResult<Opened<B::Store>>
where
    B: Backend,
    B::Store: MapStateStore,
{
    let mp = MaxParallelism::new(MAX_PARALLELISM)?;
    let p = Parallelism::new(parallelism)?;
    let mut stores = Vec::new();
    let mut ops = Vec::new();
    for index in 0..parallelism {
        let config = StoreConfig::for_subtask(mp, p, index)?;
        let mut store = backend.open(config, &dir.join(format!("subtask-{index}")))?;
        ops.push(Op::open(workload, bundle, &mut store)?);
        stores.push(store);
    }
    Ok((stores, ops))
}

/// Runs W2 or W3 on `backend` as `spec` says (bundled only), checks the checksums against the
/// reference model (and the issue's values at the default size), snapshots, restores onto 3
/// subtasks and verifies the restore.
///
/// # Errors
/// Any backend or operator failure; [`BenchError::Mismatch`] when a result differs.
#[expect(clippy::too_many_lines, reason = "one run's steps, in order")]
pub fn run_operator<B>(backend: &B, workload: WorkloadId, spec: &RunSpec) -> BenchResult<RunReport>
where
    B: Backend,
    B::Store: MapStateStore,
    <B::Store as KeyedStateStore>::Table<RowCodec>: Send,
    <B::Store as MapStateStore>::MapTable<I64Codec>: Send,
{
    if spec.mode != Mode::Bundled {
        return Err(BenchError::Usage(format!(
            "{} runs bundled only",
            workload.name()
        )));
    }
    let run_dir = tempfile::Builder::new()
        .prefix(&format!(
            "{}-{}-p{}-",
            workload.name(),
            backend.name(),
            spec.parallelism
        ))
        .tempdir_in(&spec.dir)?;
    let mp = MaxParallelism::new(MAX_PARALLELISM)?;
    let owners = owners(mp, Parallelism::new(spec.parallelism)?);
    let (mut stores, mut ops) = open_ops(
        backend,
        workload,
        spec.bundle,
        spec.parallelism,
        &run_dir.path().join("run"),
    )?;
    let label = format!(
        "{}/{}/bundled/p{}",
        workload.name(),
        backend.name(),
        spec.parallelism
    );
    let events = match workload {
        WorkloadId::W3 => join_events(spec.events),
        _ => spec.events,
    };
    let progress = crate::e2e::progress_bar(spec.progress, events, &label);

    reset_peak_rss();
    let started = Instant::now();
    let results: Vec<BenchResult<(Sink, Phases)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = ops
            .iter_mut()
            .zip(0..)
            .map(|(op, index)| {
                let owners = &owners;
                let bar = if index == 0 { progress.as_ref() } else { None };
                scope.spawn(move || match op {
                    Op::Group(g) => run_group(g, spec, owners, index, bar),
                    Op::Join(j) => run_join(j, spec, owners, index, bar),
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(BenchError::Thread)))
            .collect()
    });
    // Part of the timed run: every committed write reaches the store's state (each
    // subtask's store on its own thread, as the subtasks ran).
    let finish_cpu_ms = crate::backend::finish_all(backend, &mut stores)?;
    let elapsed = started.elapsed();
    let peak_rss_bytes = peak_rss();
    if let Some(bar) = &progress {
        bar.finish_and_clear();
    }
    let mut out = Changelog::default();
    let mut final_table = FinalTable::default();
    let mut phases = Phases::default();
    for result in results {
        let (sink, subtask) = result?;
        out.merge(&sink.out);
        final_table.merge(&sink.final_table(workload));
        phases.add(&subtask);
    }
    phases.cpu_ms += finish_cpu_ms;
    let pool_bytes = stores
        .iter()
        .map(|s| s.config().memory_pool().used() as u64)
        .sum();
    let tables: &[&str] = match workload {
        WorkloadId::W3 => &["bench-op.left", "bench-op.right"],
        _ => &["bench-op.acc"],
    };
    let mut disk_bytes = 0;
    for store in &stores {
        disk_bytes += backend.disk_bytes(store, tables)?;
    }

    // Canonical snapshot of every subtask.
    let mut containers = Vec::new();
    let (mut snapshot_key_groups, mut snapshot_rows) = (0, 0);
    let snapshot_started = Instant::now();
    for (index, op) in ops.iter().enumerate() {
        let mut container = DirContainer::open(run_dir.path().join(format!("snapshot-{index}")))?;
        let summary = op.stateful().snapshot(&mut container)?;
        snapshot_key_groups += summary.key_groups;
        snapshot_rows += summary.rows;
        containers.push(container);
    }
    let snapshot_ms = millis(snapshot_started.elapsed());
    let mut snapshot_bytes = 0;
    for index in 0..containers.len() {
        snapshot_bytes += dir_bytes(&run_dir.path().join(format!("snapshot-{index}")))?;
    }
    let subtask_threads = ops.len();
    drop(ops);
    drop(stores);

    // Restore onto 3 subtasks.
    let (restored_stores, mut restored) = open_ops(
        backend,
        workload,
        spec.bundle,
        RESTORE_PARALLELISM,
        &run_dir.path().join("restore"),
    )?;
    let sources: Vec<&dyn Container> = containers.iter().map(|c| c as &dyn Container).collect();
    let (mut restored_key_groups, mut restored_rows) = (0, 0);
    let restore_started = Instant::now();
    for op in &mut restored {
        let summary = op.stateful_mut().restore(&sources)?;
        restored_key_groups += summary.key_groups;
        restored_rows += summary.rows;
    }
    let restore_ms = millis(restore_started.elapsed());
    let probed = match workload {
        WorkloadId::W3 => None,
        _ => Some(probe_w2(
            &mut restored,
            &crate::e2e::owners(mp, Parallelism::new(RESTORE_PARALLELISM)?),
            spec.keys,
        )?),
    };
    drop(restored);
    drop(restored_stores);

    // Checks.
    let want = match workload {
        WorkloadId::W3 => reference_w3(spec.events, spec.keys),
        _ => reference_w2(spec.events, spec.keys, spec.bundle, spec.parallelism)?,
    };
    let matches_issue = check_results(&label, workload, spec, &out, &final_table, &want)?;
    check(
        &label,
        "restored key groups",
        restored_key_groups as u64,
        snapshot_key_groups as u64,
    )?;
    check(
        &label,
        "restored rows",
        restored_rows as u64,
        snapshot_rows as u64,
    )?;
    if let Some(probed) = probed {
        check(
            &label,
            "restored chk_final (probe)",
            probed.checksum,
            final_table.checksum,
        )?;
        check(
            &label,
            "restored rows (probe)",
            probed.rows,
            final_table.rows,
        )?;
    }

    let seconds = elapsed.as_secs_f64();
    #[expect(clippy::cast_precision_loss, reason = "a rate for display")]
    let events_per_second = events as f64 / seconds.max(1e-9);
    #[expect(clippy::cast_precision_loss, reason = "a rate for display")]
    let events_per_cpu_second = events as f64 * 1e3 / phases.cpu_ms.max(1e-6);
    Ok(RunReport {
        workload: workload.name(),
        backend: backend.name(),
        mode: Mode::Bundled.name(),
        parallelism: spec.parallelism,
        events,
        keys: spec.keys,
        bundle: spec.bundle,
        threads: subtask_threads,
        seconds,
        events_per_second,
        events_per_cpu_second,
        rows: out.rows,
        chk_changelog: format!("{:#018x}", out.checksum),
        chk_final: format!("{:#018x}", final_table.checksum),
        final_rows: final_table.rows,
        matches_issue,
        peak_rss_bytes,
        pool_bytes,
        disk_bytes,
        snapshot_ms,
        snapshot_bytes,
        snapshot_key_groups,
        restore_ms,
        restore_verified: true,
        phases,
        hydrated_keys: None,
        written_keys: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::{
        DEFAULT_EVENTS, DEFAULT_KEYS, GroupAggregate as W1, issue_expected, reference,
    };

    #[test]
    fn w3_reference_matches_the_issue() {
        let (out, table) = reference_w3(DEFAULT_EVENTS, DEFAULT_KEYS);
        let want = issue_expected(WorkloadId::W3, DEFAULT_EVENTS, DEFAULT_KEYS).unwrap();
        assert_eq!(Some(out.total()), want.rows);
        assert_eq!(table.checksum, want.final_checksum);
        assert_eq!(out.rows, [998_209, 0, 0, 0]);
    }

    #[test]
    fn w2_reference_final_is_w1_final_at_any_parallelism() {
        let (_, w1) = reference::<W1>(200_000, 10_000);
        for p in [1, 2] {
            let (out, table) = reference_w2(200_000, 10_000, 5_000, p).unwrap();
            assert_eq!(table, w1, "p{p}");
            // One row per key per bundle it was touched in: fewer than the events.
            assert!(out.total() < 200_000 && out.rows[0] == 10_000, "{out:?}");
        }
    }
}
