//! One end-to-end run: a workload's events through an operator over a backend's keyed table
//! at parallelism 1 or 2 (one source routing the events by key group to the subtasks, as
//! Flink's harness runs one source subtask and `keyBy`; see `source.rs`; the source and the
//! subtasks run on one worker thread per core, see `pipeline.rs`),
//! then the final table, a canonical snapshot, and a restore onto 3 subtasks that is
//! verified.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use state_api::keygroup::{
    BinaryRowWriter, KeyGroup, LogicalType, MaxParallelism, Parallelism, Value,
    compute_operator_index_for_key_group, decode_row,
};
use state_api::sfcs_format::{Container, DirContainer};
use state_api::{
    CanonicalTable, KeyedStateStore, KeyedTable, MemoryPool, StoreConfig, UnboundedMemoryPool,
    decode_canonical_batch, restore_canonical_snapshot, write_canonical_snapshot,
};

use crate::backend::{Backend, dir_bytes};
use crate::error::{BenchError, BenchResult};
use crate::pipeline::{self, Stream};
use crate::source::{Bundle, Event};
use crate::workload::{Changelog, FinalTable};
use crate::workloads::{Operator, WorkloadId, issue_expected, reference};

/// Flink's default max parallelism for these jobs (key groups 0..128).
pub const MAX_PARALLELISM: i32 = 128;

/// The table every workload keeps its state in.
pub const TABLE: &str = "state";

/// Subtasks the snapshot is restored onto.
pub const RESTORE_PARALLELISM: i32 = 3;

/// How events reach the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Bundles of `bundle` events: one `begin_bundle` naming every key, then
    /// [`Operator::apply`] per event (W1 an upsert, W4 a
    /// get and a put), one commit.
    Bundled,
    /// Flink's access pattern: a bundle of one event (one get and one put per event).
    PerRecord,
}

impl Mode {
    /// The mode's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Bundled => "bundled",
            Mode::PerRecord => "per-record",
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// Events (N).
    pub events: u64,
    /// Distinct keys (K).
    pub keys: u64,
    /// Events per bundle in [`Mode::Bundled`].
    pub bundle: usize,
    /// Subtasks (1 or 2; any positive count works).
    pub parallelism: i32,
    /// Bundled or per record.
    pub mode: Mode,
    /// Where stores and snapshots go (a fresh directory per run is made below it).
    pub dir: PathBuf,
    /// Draw a progress bar.
    pub progress: bool,
    /// W1 / W4: worker threads running the source and the subtasks (`None`: one per core,
    /// at most one per task; see `pipeline.rs`).
    pub workers: Option<usize>,
}

/// What one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// `w1`, `w4`.
    pub workload: &'static str,
    /// `typed`, `memory`.
    pub backend: &'static str,
    /// `bundled`, `per-record`.
    pub mode: &'static str,
    /// Subtasks.
    pub parallelism: i32,
    /// Events.
    pub events: u64,
    /// Keys.
    pub keys: u64,
    /// Events per bundle (1 per record).
    pub bundle: usize,
    /// Threads that ran the events (W1 / W4: the workers running the source and the
    /// subtasks; W2 / W3: one per subtask).
    pub threads: usize,
    /// Wall time of the event processing (all subtasks, threads in parallel).
    pub seconds: f64,
    /// Events per second.
    pub events_per_second: f64,
    /// Events per CPU second of the subtask threads.
    pub events_per_cpu_second: f64,
    /// Output rows per kind, `[+I, -U, +U, -D]`.
    pub rows: [u64; 4],
    /// `chk_changelog` as hex.
    pub chk_changelog: String,
    /// `chk_final` (from the committed state) as hex.
    pub chk_final: String,
    /// Rows of the final table.
    pub final_rows: u64,
    /// Whether the checksums equal the issue's values (`None` at a non-default size, where
    /// only the reference model is compared).
    pub matches_issue: Option<bool>,
    /// Peak resident set of the process during the run (`VmHWM`, reset before it).
    pub peak_rss_bytes: u64,
    /// Bytes the stores hold from their memory pools after the run.
    pub pool_bytes: u64,
    /// Bytes of state on disk after a flush (0 for memory-store).
    pub disk_bytes: u64,
    /// Canonical snapshot: wall time, all subtasks.
    pub snapshot_ms: f64,
    /// Canonical snapshot: bytes in the containers.
    pub snapshot_bytes: u64,
    /// Canonical snapshot: key groups written.
    pub snapshot_key_groups: usize,
    /// Restore onto [`RESTORE_PARALLELISM`] subtasks: wall time.
    pub restore_ms: f64,
    /// Whether the restored subtasks hold exactly the final table.
    pub restore_verified: bool,
    /// Where the subtasks' time went, summed over subtasks.
    pub phases: Phases,
    /// W1 / W4: keys the bundles' batched reads asked the backend for (hydration misses),
    /// summed over subtasks; `None` for the operator runs (W2, W3).
    pub hydrated_keys: Option<u64>,
    /// W1 / W4: keys written by the commits, summed over subtasks.
    pub written_keys: Option<u64>,
}

impl RunReport {
    /// `workload/backend/mode/pN`.
    pub fn label(&self) -> String {
        format!(
            "{}/{}/{}/p{}",
            self.workload, self.backend, self.mode, self.parallelism
        )
    }
}

/// Where a subtask's wall time went (bundled mode; per record everything is `process`).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Phases {
    /// Generating events, building key rows and key groups, routing (W1 / W4: the source's,
    /// beside the subtasks; W2 / W3: each subtask's own).
    pub generate_ms: f64,
    /// `begin_bundle`: naming the bundle's keys, finding misses, the batched read, decoding
    /// (hydration).
    pub begin_ms: f64,
    /// `get` / operator / `put` per event (working map and operator).
    pub process_ms: f64,
    /// `commit_bundle`: encoding the dirty values, the write batch, the RocksDB write.
    pub commit_ms: f64,
    /// W2 / W3: the checksum sink reading the operator's output batches (W1 / W4 sum
    /// their rows inside `process_ms`).
    pub sink_ms: f64,
    /// CPU time of the threads that ran the run (W1 / W4: the workers running the source
    /// and the subtasks; W2 / W3: the subtask threads) and of the stores' last flush
    /// ([`Backend::finish`]), from
    /// `CLOCK_THREAD_CPUTIME_ID`, robust to a loaded machine where wall time is not.
    pub cpu_ms: f64,
    /// CPU time per phase (generate: the source's; begin, process, commit: the subtasks'),
    /// measured per bundle in the bundled W1 / W4 runs (zeros elsewhere): the
    /// per-event cost breakdown that a loaded machine does not distort.
    pub cpu_split_ms: [f64; 4],
}

impl Phases {
    pub(crate) fn add(&mut self, other: &Phases) {
        self.generate_ms += other.generate_ms;
        self.begin_ms += other.begin_ms;
        self.process_ms += other.process_ms;
        self.commit_ms += other.commit_ms;
        self.sink_ms += other.sink_ms;
        self.cpu_ms += other.cpu_ms;
        for (mine, theirs) in self.cpu_split_ms.iter_mut().zip(other.cpu_split_ms) {
            *mine += theirs;
        }
    }
}

/// CPU time of the calling thread in milliseconds: `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`,
/// one system call (the W1 / W4 subtasks read it four times per bundle; reading
/// `/proc/thread-self/schedstat` instead cost ~4 us a read, a few percent of a W1 run).
pub(crate) fn thread_cpu_ms() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    #[expect(clippy::cast_precision_loss, reason = "a duration for display")]
    let ms = t.tv_sec as f64 * 1e3 + t.tv_nsec as f64 / 1e6;
    ms
}

/// Writes the BIGINT key row of `key` (kind INSERT, Flink's key-selector form) and returns
/// its key group.
#[inline]
pub fn key_row(writer: &mut BinaryRowWriter, key: u64, mp: MaxParallelism) -> KeyGroup {
    writer.reset();
    writer.write_long(0, key.cast_signed());
    writer.key_group(mp)
}

/// The subtask that owns each key group at `parallelism`.
pub(crate) fn owners(mp: MaxParallelism, parallelism: Parallelism) -> Vec<i32> {
    (0..mp.get())
        .filter_map(|kg| KeyGroup::new(kg).ok())
        .map(|kg| compute_operator_index_for_key_group(mp, parallelism, kg))
        .collect()
}

pub(crate) fn owner_of(owners: &[i32], kg: KeyGroup) -> i32 {
    owners.get(kg.index()).copied().unwrap_or(-1)
}

/// One subtask of a W1 / W4 run: its table, its output, where its time went.
struct Subtask<'t, T> {
    table: &'t mut T,
    out: Changelog,
    phases: Phases,
    keys: KeyList,
}

/// The allocation of a bundle's `(key group, key row)` list, kept from bundle to bundle: a
/// fresh list of 8,192 keys is 192 KiB, which glibc maps and unmaps for every bundle (its
/// pages faulted in again each time: ~5 % of a W1 subtask's time).
#[derive(Default)]
struct KeyList(Vec<(KeyGroup, &'static [u8])>);

impl KeyList {
    /// Calls `f` with the keys of `events`, in order.
    fn with<R>(&mut self, events: &[Event], f: impl FnOnce(&[(KeyGroup, &[u8])]) -> R) -> R {
        let mut named = relabel(std::mem::take(&mut self.0));
        named.extend(events.iter().map(|e| (e.key_group, &e.row[..])));
        let result = f(&named);
        named.clear();
        self.0 = relabel(named);
        result
    }
}

/// An empty list's allocation as a list of rows borrowed for another lifetime: no element is
/// converted (there is none); std collects a `filter_map` over a vector's own iterator into
/// that vector's allocation.
#[expect(
    clippy::unnecessary_filter_map,
    reason = "the map changes the rows' lifetime, which a filter cannot"
)]
fn relabel<'b>(list: Vec<(KeyGroup, &[u8])>) -> Vec<(KeyGroup, &'b [u8])> {
    debug_assert!(list.is_empty());
    list.into_iter().filter_map(|_| None).collect()
}

/// Runs one bundle through `O`: one `begin_bundle` naming its keys, [`Operator::apply`] per
/// event (W1 one upsert, W4 a get and, on a new winner, a put), one commit.
fn process_bundled<O: Operator, T: KeyedTable<Codec = O::Codec>>(
    subtask: &mut Subtask<'_, T>,
    bundle: &Bundle,
) -> BenchResult<()> {
    let Subtask {
        table,
        out,
        phases,
        keys,
    } = subtask;
    let t1 = Instant::now();
    let c1 = thread_cpu_ms();
    keys.with(&bundle.events, |named| table.begin_bundle(named))?;
    let t2 = Instant::now();
    let c2 = thread_cpu_ms();
    for e in &bundle.events {
        O::apply(*table, e.key_group, &e.row, (e.i, e.key, e.value), out)?;
    }
    let t3 = Instant::now();
    let c3 = thread_cpu_ms();
    table.commit_bundle()?;
    let t4 = Instant::now();
    let c4 = thread_cpu_ms();
    for (phase, cpu) in phases.cpu_split_ms[1..]
        .iter_mut()
        .zip([c2 - c1, c3 - c2, c4 - c3])
    {
        *phase += cpu;
    }
    phases.begin_ms += millis(t2 - t1);
    phases.process_ms += millis(t3 - t2);
    phases.commit_ms += millis(t4 - t3);
    Ok(())
}

/// Runs a bundle's events one per bundle (one get, one put), Flink's access pattern.
fn process_per_record<O: Operator, T: KeyedTable<Codec = O::Codec>>(
    subtask: &mut Subtask<'_, T>,
    bundle: &Bundle,
) -> BenchResult<()> {
    let Subtask {
        table, out, phases, ..
    } = subtask;
    let started = Instant::now();
    for e in &bundle.events {
        let row = &e.row[..];
        table.begin_bundle(&[(e.key_group, row)])?;
        let state = table.get(e.key_group, row)?.copied();
        if let Some(next) = O::on_event(e.i, e.key, e.value, state.as_ref(), out) {
            table.put(e.key_group, row, next)?;
        }
        table.commit_bundle()?;
    }
    phases.process_ms += millis(started.elapsed());
    Ok(())
}

/// The final table held by `table`: its committed state, key group by key group.
fn final_table<O: Operator, T: KeyedTable<Codec = O::Codec> + CanonicalTable>(
    table: &T,
) -> BenchResult<FinalTable> {
    let codec = O::codec();
    let mut total = FinalTable::default();
    for key_group in table.key_groups() {
        let Some(batch) = table.export_key_group(key_group)? else {
            continue;
        };
        let decoded = decode_canonical_batch(&codec, &batch)?;
        for (row, state) in decoded.keys.iter().zip(&decoded.values) {
            let key = match decode_row(&[LogicalType::BigInt], row.unwrap_or_default())?.first() {
                Some(Value::BigInt(k)) => k.cast_unsigned(),
                _ => {
                    return Err(BenchError::Usage(
                        "a state key is not a BIGINT row".to_owned(),
                    ));
                }
            };
            O::final_row(key, state, &mut total);
        }
    }
    Ok(total)
}

/// A progress bar over `events` labelled `label`, when `on`.
pub(crate) fn progress_bar(on: bool, events: u64, label: &str) -> Option<ProgressBar> {
    on.then(|| {
        let bar = ProgressBar::new(events);
        bar.set_style(
            ProgressStyle::with_template("{msg:>24} [{bar:40}] {pos}/{len} events {per_sec}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(label.to_owned());
        bar
    })
}

/// Resets the process's peak RSS (`VmHWM`) to the current RSS (Linux `clear_refs` 5).
pub(crate) fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak RSS in bytes (`VmHWM` of `/proc/self/status`), 0 where unknown.
pub fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

pub(crate) fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

pub(crate) fn check(run: &str, what: &'static str, got: u64, expected: u64) -> BenchResult<()> {
    if got == expected {
        Ok(())
    } else {
        Err(BenchError::Mismatch {
            run: run.to_owned(),
            what,
            got,
            expected,
        })
    }
}

/// Checks a run's changelog and final table against the reference model's `want`, then
/// against the issue's values at the default size; returns whether they match the issue
/// (`None` at another size).
pub(crate) fn check_results(
    label: &str,
    workload: WorkloadId,
    spec: &RunSpec,
    out: &Changelog,
    final_table: &FinalTable,
    want: &(Changelog, FinalTable),
) -> BenchResult<Option<bool>> {
    let (want_out, want_final) = want;
    check(label, "output rows", out.total(), want_out.total())?;
    for (got, want) in out.rows.iter().zip(want_out.rows) {
        check(label, "output rows of one kind", *got, want)?;
    }
    check(label, "chk_changelog", out.checksum, want_out.checksum)?;
    check(
        label,
        "chk_final",
        final_table.checksum,
        want_final.checksum,
    )?;
    check(label, "final rows", final_table.rows, want_final.rows)?;
    let expected = issue_expected(workload, spec.events, spec.keys);
    let matches_issue = expected.map(|e| {
        e.rows.is_none_or(|r| r == out.total())
            && e.changelog.is_none_or(|c| c == out.checksum)
            && e.final_checksum == final_table.checksum
    });
    if let (Some(false), Some(e)) = (matches_issue, expected) {
        return Err(BenchError::Mismatch {
            run: label.to_owned(),
            what: "issue checksums (chk_final)",
            got: final_table.checksum,
            expected: e.final_checksum,
        });
    }
    Ok(matches_issue)
}

/// The stores and tables of one parallelism.
struct Subtasks<S: KeyedStateStore, O: Operator> {
    stores: Vec<S>,
    tables: Vec<S::Table<O::Codec>>,
}

fn open_subtasks<B: Backend, O: Operator>(
    backend: &B,
    parallelism: i32,
    dir: &Path,
) -> BenchResult<Subtasks<B::Store, O>> {
    let mp = MaxParallelism::new(MAX_PARALLELISM)?;
    let p = Parallelism::new(parallelism)?;
    let mut stores = Vec::new();
    let mut tables = Vec::new();
    for index in 0..parallelism {
        let config = StoreConfig::for_subtask(mp, p, index)?;
        let mut store = backend.open(config, &dir.join(format!("subtask-{index}")))?;
        tables.push(store.open_table(TABLE, O::codec(), None)?);
        stores.push(store);
    }
    Ok(Subtasks { stores, tables })
}

/// Runs `O` on `backend` as `spec` says, checks every checksum against the reference model
/// (and the issue's values at the default size), snapshots, restores onto 3 subtasks and
/// verifies the restore.
///
/// # Errors
/// Any backend failure; [`BenchError::Mismatch`] when a result differs from the expected one.
#[expect(clippy::too_many_lines, reason = "one run's steps, in order")]
pub fn run<B, O>(backend: &B, spec: &RunSpec) -> BenchResult<RunReport>
where
    B: Backend,
    O: Operator,
    <B::Store as KeyedStateStore>::Table<O::Codec>: Send,
{
    let run_dir = tempfile::Builder::new()
        .prefix(&format!(
            "{}-{}-{}-p{}-",
            O::ID.name(),
            backend.name(),
            spec.mode.name(),
            spec.parallelism
        ))
        .tempdir_in(&spec.dir)?;
    let mp = MaxParallelism::new(MAX_PARALLELISM)?;
    let owners = owners(mp, Parallelism::new(spec.parallelism)?);
    let mut subtasks =
        open_subtasks::<B, O>(backend, spec.parallelism, &run_dir.path().join("run"))?;
    let label = format!(
        "{}/{}/{}/p{}",
        O::ID.name(),
        backend.name(),
        spec.mode.name(),
        spec.parallelism
    );

    let progress = progress_bar(spec.progress, spec.events, &label);

    reset_peak_rss();
    let started = Instant::now();
    let workers = spec
        .workers
        .unwrap_or_else(|| pipeline::default_workers(subtasks.tables.len()));
    let stream = Stream {
        events: spec.events,
        keys: spec.keys,
        bundle: spec.bundle,
        owners: &owners,
    };
    let mut running: Vec<Subtask<'_, _>> = subtasks
        .tables
        .iter_mut()
        .map(|table| Subtask {
            table,
            out: Changelog::default(),
            phases: Phases::default(),
            keys: KeyList::default(),
        })
        .collect();
    let pool = pipeline::run(
        stream,
        &mut running,
        workers,
        progress.as_ref(),
        match spec.mode {
            Mode::Bundled => &process_bundled::<O, _>,
            Mode::PerRecord => &process_per_record::<O, _>,
        },
    );
    let results: Vec<(Changelog, Phases)> =
        running.into_iter().map(|s| (s.out, s.phases)).collect();
    // Part of the timed run: every committed write reaches the store's state (each
    // subtask's store on its own thread, as the subtasks ran).
    let finish_cpu_ms = crate::backend::finish_all(backend, &mut subtasks.stores)?;
    let elapsed = started.elapsed();
    let peak_rss_bytes = peak_rss();
    if let Some(bar) = &progress {
        bar.finish_and_clear();
    }
    // A subtask's error explains a source that could not go on: it is the one reported.
    let pool = pool?;
    let mut out = Changelog::default();
    let mut phases = Phases::default();
    for (changelog, subtask) in &results {
        out.merge(changelog);
        phases.add(subtask);
    }
    phases.generate_ms = pool.generate_ms;
    phases.cpu_ms = pool.cpu_ms + finish_cpu_ms;
    if spec.mode == Mode::Bundled {
        phases.cpu_split_ms[0] = pool.generate_cpu_ms;
    }

    // The final table, from the committed state of every subtask.
    let mut final_state = FinalTable::default();
    for table in &subtasks.tables {
        final_state.merge(&final_table::<O, _>(table)?);
    }
    let stats: Vec<state_api::TableStats> = subtasks.tables.iter().map(KeyedTable::stats).collect();
    let hydrated_keys = stats.iter().map(|s| s.hydrated_keys).sum();
    let written_keys = stats.iter().map(|s| s.written_keys).sum();
    let pool_bytes = subtasks
        .stores
        .iter()
        .map(|s| s.config().memory_pool().used() as u64)
        .sum();
    let mut disk_bytes = 0;
    for store in &subtasks.stores {
        disk_bytes += backend.disk_bytes(store, &[TABLE])?;
    }

    // Canonical snapshot of every subtask into its own directory container.
    let snapshot_pool: Arc<dyn MemoryPool> = Arc::new(UnboundedMemoryPool::new());
    let operator_id = format!("bench-{}", O::ID.name());
    let mut containers = Vec::new();
    let mut snapshot_key_groups = 0;
    let snapshot_started = Instant::now();
    for (index, table) in subtasks.tables.iter().enumerate() {
        let mut container = DirContainer::open(run_dir.path().join(format!("snapshot-{index}")))?;
        let tables: [&dyn CanonicalTable; 1] = [table];
        let summary =
            write_canonical_snapshot(&operator_id, None, &tables, &mut container, &snapshot_pool)?;
        snapshot_key_groups += summary.key_groups;
        containers.push(container);
    }
    let snapshot_ms = millis(snapshot_started.elapsed());
    let mut snapshot_bytes = 0;
    for index in 0..containers.len() {
        snapshot_bytes += dir_bytes(&run_dir.path().join(format!("snapshot-{index}")))?;
    }
    drop(subtasks);

    // Restore onto 3 subtasks and verify that together they hold exactly the final table.
    let mut restored = open_subtasks::<B, O>(
        backend,
        RESTORE_PARALLELISM,
        &run_dir.path().join("restore"),
    )?;
    let sources: Vec<&dyn Container> = containers.iter().map(|c| c as &dyn Container).collect();
    let restore_started = Instant::now();
    for table in &mut restored.tables {
        let mut tables: [&mut dyn CanonicalTable; 1] = [table];
        restore_canonical_snapshot(&operator_id, &sources, &mut tables, &snapshot_pool)?;
    }
    let restore_ms = millis(restore_started.elapsed());
    let mut final_restored = FinalTable::default();
    for table in &restored.tables {
        final_restored.merge(&final_table::<O, _>(table)?);
    }
    drop(restored);

    // Checks: the reference model, the issue's figures, the restore.
    let matches_issue = check_results(
        &label,
        O::ID,
        spec,
        &out,
        &final_state,
        &reference::<O>(spec.events, spec.keys),
    )?;
    check(
        &label,
        "restored chk_final",
        final_restored.checksum,
        final_state.checksum,
    )?;
    check(
        &label,
        "restored rows",
        final_restored.rows,
        final_state.rows,
    )?;

    let seconds = elapsed.as_secs_f64();
    #[expect(clippy::cast_precision_loss, reason = "a rate for display")]
    let events_per_second = spec.events as f64 / seconds.max(1e-9);
    #[expect(clippy::cast_precision_loss, reason = "a rate for display")]
    let events_per_cpu_second = spec.events as f64 * 1e3 / phases.cpu_ms.max(1e-6);
    Ok(RunReport {
        workload: O::ID.name(),
        backend: backend.name(),
        mode: spec.mode.name(),
        parallelism: spec.parallelism,
        events: spec.events,
        keys: spec.keys,
        threads: workers,
        bundle: match spec.mode {
            Mode::Bundled => spec.bundle,
            Mode::PerRecord => 1,
        },
        seconds,
        events_per_second,
        events_per_cpu_second,
        rows: out.rows,
        chk_changelog: format!("{:#018x}", out.checksum),
        chk_final: format!("{:#018x}", final_state.checksum),
        final_rows: final_state.rows,
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
        hydrated_keys: Some(hydrated_keys),
        written_keys: Some(written_keys),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bundle's keys come out in order, and the list's allocation serves the next bundle.
    #[test]
    fn key_list_names_the_keys_and_keeps_its_allocation() {
        let event = |i: u8| Event {
            i: u64::from(i),
            key: 0,
            value: 0,
            key_group: KeyGroup::new(i32::from(i)).unwrap(),
            row: [i; 16],
        };
        let events: Vec<Event> = (0..100).map(event).collect();
        let mut keys = KeyList::default();
        let seen = keys.with(&events, |named| {
            named
                .iter()
                .map(|(kg, row)| (kg.get(), row[0]))
                .collect::<Vec<_>>()
        });
        assert_eq!(
            seen,
            (0..100).map(|i| (i32::from(i), i)).collect::<Vec<_>>()
        );
        let capacity = keys.0.capacity();
        assert!(capacity >= 100 && keys.0.is_empty());
        let fewer = keys.with(&events[..10], |named| named.len());
        assert_eq!((fewer, keys.0.capacity()), (10, capacity));
    }
}
