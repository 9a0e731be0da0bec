//! The `sfstate-bench` command line: which runs, and how their reports are printed.

use std::io::IsTerminal;
use std::path::PathBuf;

#[cfg(feature = "typed")]
use typed_store::MemtableOptions;

use crate::backend::Memory;
#[cfg(feature = "typed")]
use crate::backend::Typed;
use crate::e2e::{Mode, RunReport, RunSpec, run};
use crate::error::{BenchError, BenchResult};
use crate::operator_runs::run_operator;
use crate::workloads::{DEFAULT_EVENTS, DEFAULT_KEYS, GroupAggregate, TopOne, WorkloadId};

/// The usage text.
pub const USAGE: &str = "\
sfstate-bench: the end-to-end state benchmark (issue 8 workloads W1-W4)

USAGE: sfstate-bench [OPTIONS]

  --workload LIST      w1,w2,w3,w4 (default: all); w2, w3 on the operators crate
  --backend LIST       typed,memory (default: both)
  --parallelism LIST   1,2 (default: both); events routed by key group to one store per subtask
  --workers N          W1 / W4: threads running the source and the subtasks (default: one per
                       core, at most parallelism + 1; parallelism + 1 gives each its own thread)
  --per-record on|off  also run typed-store per record at parallelism 1, W1 and W4 (default: on)
  --events N           events (default 2000000; W3 runs N/10; the issue's checksums apply at the default)
  --keys K             distinct keys (default 100000)
  --bundle B           events per bundle, mini-batch off (default 8192: W1, W3, W4)
  --mini-batch B       events per mini-batch, per subtask (default 5000: W2)
  --slot-mib M         typed-store RocksDB slot per subtask (default 128)
  --pool-mib M         typed-store host memory pool per subtask (default 128)
  --write-buffer-mib M typed-store write-buffer size (default: the slot's)
  --inplace on|off     typed-store memtable in-place updates (default: the slot's)
  --write-behind-mib M typed-store write-behind limit per table (value tables and complete
                       map tables), 0 = write-through per bundle (default: the slot's, 32)
  --memtable-bloom R   typed-store memtable bloom ratio, 0 = off (default: the slot's)
  --insert-hint on|off typed-store memtable sequential insert hint (default: the slot's, on)
  --warmup N           untimed runs of each run before its timed one, in the same process
                       (default 0; compat/flink-bench/run.sh passes 1, as Flink gets one)
  --quick              50000 events, 2000 keys: a check that runs in seconds (CI)
  --json               print the reports as JSON (one array) instead of the table
  --dir PATH           where stores and snapshots go (default: the temp directory)
  --no-progress        no progress bar
";

/// Parsed options.
#[derive(Debug, Clone)]
#[expect(clippy::struct_excessive_bools, reason = "command-line switches")]
pub struct Options {
    /// Workloads to run.
    pub workloads: Vec<WorkloadId>,
    /// Run typed-store.
    pub typed: bool,
    /// Run memory-store.
    pub memory: bool,
    /// Parallelisms.
    pub parallelisms: Vec<i32>,
    /// Also run typed-store per record.
    pub per_record: bool,
    /// Events.
    pub events: u64,
    /// Keys.
    pub keys: u64,
    /// Bundle size (mini-batch off).
    pub bundle: usize,
    /// Mini-batch size (W2).
    pub mini_batch: usize,
    /// typed-store slot (MiB).
    pub slot_mib: u64,
    /// typed-store pool (MiB).
    pub pool_mib: usize,
    /// typed-store write buffer (MiB), `None` for the slot's default.
    pub write_buffer_mib: Option<u64>,
    /// typed-store in-place memtable updates, `None` for the slot's default.
    pub inplace: Option<bool>,
    /// typed-store write-behind limit (MiB, 0 = write-through), `None` for the slot's default.
    pub write_behind_mib: Option<usize>,
    /// typed-store memtable bloom ratio, `None` for the slot's default.
    pub memtable_bloom: Option<f64>,
    /// typed-store memtable sequential insert hint, `None` for the slot's default.
    pub insert_hint: Option<bool>,
    /// W1 / W4 worker threads, `None` for one per core (at most parallelism + 1).
    pub workers: Option<usize>,
    /// Untimed runs of each run before its timed one (checked like it, not reported).
    pub warmup: u32,
    /// JSON output.
    pub json: bool,
    /// Working directory.
    pub dir: PathBuf,
    /// Progress bar.
    pub progress: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            workloads: vec![
                WorkloadId::W1,
                WorkloadId::W2,
                WorkloadId::W3,
                WorkloadId::W4,
            ],
            typed: cfg!(feature = "typed"),
            memory: true,
            parallelisms: vec![1, 2],
            per_record: true,
            events: DEFAULT_EVENTS,
            keys: DEFAULT_KEYS,
            bundle: 8192,
            mini_batch: 5000,
            slot_mib: 128,
            pool_mib: 128,
            write_buffer_mib: None,
            inplace: None,
            write_behind_mib: None,
            memtable_bloom: None,
            insert_hint: None,
            workers: None,
            warmup: 0,
            json: false,
            dir: std::env::temp_dir(),
            progress: true,
        }
    }
}

fn usage(msg: impl Into<String>) -> BenchError {
    BenchError::Usage(msg.into())
}

#[expect(
    clippy::needless_pass_by_value,
    reason = "takes the argument iterator's item"
)]
fn number<T: std::str::FromStr>(flag: &str, v: Option<String>) -> BenchResult<T> {
    v.as_deref()
        .and_then(|s| s.replace('_', "").parse().ok())
        .ok_or_else(|| usage(format!("{flag} needs a number")))
}

/// Parses the arguments after the program name. `Ok(None)` for `--help`.
///
/// # Errors
/// [`BenchError::Usage`] for unknown or malformed arguments.
pub fn parse(args: impl IntoIterator<Item = String>) -> BenchResult<Option<Options>> {
    let mut o = Options::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--workload" => {
                let list = args.next().unwrap_or_default();
                o.workloads = list
                    .split(',')
                    .map(|w| WorkloadId::parse(w).ok_or_else(|| usage(format!("workload {w}"))))
                    .collect::<BenchResult<_>>()?;
            }
            "--backend" => {
                let list = args.next().unwrap_or_default();
                o.typed = false;
                o.memory = false;
                for b in list.split(',') {
                    match b {
                        "typed" | "typed-store" | "rocksdb" => o.typed = true,
                        "memory" | "memory-store" => o.memory = true,
                        other => return Err(usage(format!("backend {other}"))),
                    }
                }
            }
            "--parallelism" => {
                let list = args.next().unwrap_or_default();
                o.parallelisms = list
                    .split(',')
                    .map(|p| number::<i32>("--parallelism", Some(p.to_owned())))
                    .collect::<BenchResult<_>>()?;
                if o.parallelisms.iter().any(|&p| !(1..=128).contains(&p)) {
                    return Err(usage("parallelism must be in 1..=128"));
                }
            }
            "--per-record" => {
                o.per_record = match args.next().as_deref() {
                    Some("on") => true,
                    Some("off") => false,
                    _ => return Err(usage("--per-record on|off")),
                };
            }
            "--events" => o.events = number("--events", args.next())?,
            "--keys" => o.keys = number("--keys", args.next())?,
            "--bundle" => o.bundle = number("--bundle", args.next())?,
            "--mini-batch" => o.mini_batch = number("--mini-batch", args.next())?,
            "--slot-mib" => o.slot_mib = number("--slot-mib", args.next())?,
            "--pool-mib" => o.pool_mib = number("--pool-mib", args.next())?,
            "--write-buffer-mib" => {
                o.write_buffer_mib = Some(number("--write-buffer-mib", args.next())?);
            }
            "--write-behind-mib" => {
                o.write_behind_mib = Some(number("--write-behind-mib", args.next())?);
            }
            "--memtable-bloom" => {
                o.memtable_bloom = Some(number("--memtable-bloom", args.next())?);
            }
            "--inplace" => {
                o.inplace = match args.next().as_deref() {
                    Some("on") => Some(true),
                    Some("off") => Some(false),
                    _ => return Err(usage("--inplace on|off")),
                };
            }
            "--insert-hint" => {
                o.insert_hint = match args.next().as_deref() {
                    Some("on") => Some(true),
                    Some("off") => Some(false),
                    _ => return Err(usage("--insert-hint on|off")),
                };
            }
            "--warmup" => o.warmup = number("--warmup", args.next())?,
            "--workers" => match number("--workers", args.next())? {
                0 => return Err(usage("--workers must be positive")),
                n => o.workers = Some(n),
            },
            "--quick" => {
                o.events = 50_000;
                o.keys = 2_000;
            }
            "--json" => o.json = true,
            "--no-progress" => o.progress = false,
            "--dir" => {
                o.dir = PathBuf::from(args.next().ok_or_else(|| usage("--dir needs a path"))?);
            }
            other => return Err(usage(format!("unknown argument {other}"))),
        }
    }
    if o.keys == 0 || o.bundle == 0 || o.mini_batch == 0 {
        return Err(usage("--keys, --bundle and --mini-batch must be positive"));
    }
    Ok(Some(o))
}

/// Runs every run `options` selects, printing each report as it completes (unless JSON),
/// and returns the reports. Stops at the first failure (a mismatch included).
///
/// # Errors
/// The first run's failure.
pub fn run_all(options: &Options) -> BenchResult<Vec<RunReport>> {
    #[cfg(feature = "typed")]
    let memtable = (options.inplace.is_some()
        || options.memtable_bloom.is_some()
        || options.insert_hint.is_some())
    .then(|| {
        let mut m = MemtableOptions::default();
        if let Some(hint) = options.insert_hint {
            m.sequential_insert_hint = hint;
        }
        if let Some(inplace) = options.inplace {
            m.inplace_updates = inplace;
        }
        if let Some(ratio) = options.memtable_bloom {
            m.bloom_ratio = ratio;
        }
        m
    });
    #[cfg(feature = "typed")]
    let typed = Typed {
        slot_bytes: options.slot_mib << 20,
        pool_bytes: options.pool_mib << 20,
        write_buffer_bytes: options.write_buffer_mib.map(|m| m << 20),
        memtable,
        write_behind_bytes: options.write_behind_mib.map(|m| m << 20),
    };
    let progress = options.progress && !options.json && std::io::stderr().is_terminal();
    let mut reports = Vec::new();
    if !options.json {
        println!("{}", preamble(options));
        println!("{}", header());
    }
    for &workload in &options.workloads {
        let mut specs: Vec<(bool, RunSpec)> = Vec::new();
        let on_operators = matches!(workload, WorkloadId::W2 | WorkloadId::W3);
        let spec = |parallelism, mode| RunSpec {
            events: options.events,
            keys: options.keys,
            bundle: if workload == WorkloadId::W2 {
                options.mini_batch
            } else {
                options.bundle
            },
            parallelism,
            mode,
            dir: options.dir.clone(),
            progress,
            workers: options.workers,
        };
        for &p in &options.parallelisms {
            if options.typed {
                specs.push((true, spec(p, Mode::Bundled)));
            }
        }
        if options.typed && options.per_record && !on_operators {
            specs.push((true, spec(1, Mode::PerRecord)));
        }
        for &p in &options.parallelisms {
            if options.memory {
                specs.push((false, spec(p, Mode::Bundled)));
            }
        }
        for (is_typed, spec) in specs {
            let run_once = || match (workload, is_typed) {
                #[cfg(feature = "typed")]
                (WorkloadId::W1, true) => run::<_, GroupAggregate>(&typed, &spec),
                #[cfg(feature = "typed")]
                (WorkloadId::W4, true) => run::<_, TopOne>(&typed, &spec),
                #[cfg(feature = "typed")]
                (WorkloadId::W2 | WorkloadId::W3, true) => run_operator(&typed, workload, &spec),
                #[cfg(not(feature = "typed"))]
                (_, true) => Err(BenchError::Usage(
                    "typed-store is not built in (feature `typed`)".to_owned(),
                )),
                (WorkloadId::W1, false) => run::<_, GroupAggregate>(&Memory, &spec),
                (WorkloadId::W4, false) => run::<_, TopOne>(&Memory, &spec),
                (WorkloadId::W2 | WorkloadId::W3, false) => run_operator(&Memory, workload, &spec),
            };
            // A warm-up run is a whole run (checked the same way); its report is dropped.
            for _ in 0..options.warmup {
                run_once()?;
            }
            let report = run_once()?;
            same_as_other_backends(&reports, &report)?;
            if !options.json {
                println!("{}", line(&report));
            }
            reports.push(report);
        }
    }
    Ok(reports)
}

/// Fails when an earlier run of the same workload, mode and parallelism on another backend
/// produced different checksums (at parallelism 1 and 2 every backend must agree; W2's
/// changelog depends on the parallelism through its per-subtask mini-batches).
fn same_as_other_backends(done: &[RunReport], report: &RunReport) -> BenchResult<()> {
    for other in done.iter().filter(|r| {
        r.workload == report.workload
            && r.parallelism == report.parallelism
            && r.mode == report.mode
    }) {
        if (&other.chk_changelog, &other.chk_final) != (&report.chk_changelog, &report.chk_final) {
            return Err(BenchError::BackendsDisagree {
                run: report.label(),
                other: other.label(),
                got: format!("{} / {}", report.chk_changelog, report.chk_final),
                expected: format!("{} / {}", other.chk_changelog, other.chk_final),
            });
        }
    }
    Ok(())
}

fn mib(bytes: u64) -> String {
    #[expect(clippy::cast_precision_loss, reason = "display")]
    let m = bytes as f64 / f64::from(1 << 20);
    format!("{m:.1}")
}

/// The line above the table: sizes and layout shared by every run.
fn preamble(options: &Options) -> String {
    format!(
        "events {} (W3: {}) keys {} bundle {} (mini-batch off; W2 mini-batch {}), max parallelism 128, typed-store slot {} MiB, W1 / W4 on {} worker threads",
        options.events,
        crate::operator_runs::join_events(options.events),
        options.keys,
        options.bundle,
        options.mini_batch,
        options.slot_mib,
        options.workers.map_or_else(
            || "min(cores, parallelism + 1)".to_owned(),
            |n| n.to_string()
        )
    )
}

/// The table header.
pub fn header() -> String {
    format!(
        "{:<24} {:>6} {:>11} {:>11} {:>8} {:>8} {:>18} {:>18} {:>5} {:>8} {:>7} {:>7} {:>8} {:>8} {:>9} {:>8}  {}",
        "run",
        "bundle",
        "events/s",
        "ev/cpu-s",
        "+I",
        "+U",
        "chk_changelog",
        "chk_final",
        "issue",
        "peakRSS",
        "poolMiB",
        "diskMiB",
        "snap_ms",
        "snapMiB",
        "restore3",
        "verified",
        "ms gen/begin/proc/commit/sink (wall) | cpu ms gen/begin/proc/commit"
    )
}

/// One report as a table line.
pub fn line(r: &RunReport) -> String {
    format!(
        "{:<24} {:>6} {:>11.0} {:>11.0} {:>8} {:>8} {:>18} {:>18} {:>5} {:>8} {:>7} {:>7} {:>8.1} {:>8} {:>7.1}ms {:>8}  {:.0}/{:.0}/{:.0}/{:.0}/{:.0} | {:.0}/{:.0}/{:.0}/{:.0}",
        r.label(),
        r.bundle,
        r.events_per_second,
        r.events_per_cpu_second,
        r.rows[0],
        r.rows[2],
        r.chk_changelog,
        r.chk_final,
        match r.matches_issue {
            Some(true) => "ok",
            Some(false) => "FAIL",
            None => "n/a",
        },
        mib(r.peak_rss_bytes),
        mib(r.pool_bytes),
        mib(r.disk_bytes),
        r.snapshot_ms,
        mib(r.snapshot_bytes),
        r.restore_ms,
        if r.restore_verified { "ok" } else { "FAIL" },
        r.phases.generate_ms,
        r.phases.begin_ms,
        r.phases.process_ms,
        r.phases.commit_ms,
        r.phases.sink_ms,
        r.phases.cpu_split_ms[0],
        r.phases.cpu_split_ms[1],
        r.phases.cpu_split_ms[2],
        r.phases.cpu_split_ms[3]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_quick() {
        let args = [
            "--workload",
            "w4",
            "--backend",
            "memory",
            "--quick",
            "--json",
        ];
        let o = parse(args.iter().map(|s| (*s).to_owned()))
            .unwrap()
            .unwrap();
        assert_eq!(o.workloads, [WorkloadId::W4]);
        assert!(o.memory && !o.typed && o.json);
        assert_eq!((o.events, o.keys), (50_000, 2_000));
        assert_eq!(o.warmup, 0);
        let o = parse(["--warmup".to_owned(), "2".to_owned()])
            .unwrap()
            .unwrap();
        assert_eq!(o.warmup, 2);
        assert!(parse(["--warmup".to_owned(), "x".to_owned()]).is_err());
        assert_eq!(o.workers, None);
        let o = parse(["--workers".to_owned(), "3".to_owned()])
            .unwrap()
            .unwrap();
        assert_eq!(o.workers, Some(3));
        assert!(parse(["--workers".to_owned(), "0".to_owned()]).is_err());
        assert!(parse(["--bogus".to_owned()]).is_err());
        assert!(parse(["--help".to_owned()]).unwrap().is_none());
    }
}
