//! A memory-store or typed-store (`RocksDB`) table through a Flink savepoint and back.
//!
//! ```text
//! savepoint_roundtrip snapshot --backend memory|typed --out CONTAINER_DIR [--keys N]
//!     fills a table of that backend (max parallelism 256, one subtask) with N deterministic
//!     rows and writes its canonical snapshot (operator "group aggregate") into an
//!     sfcs-format directory container (hand it to `write-savepoint --from`)
//! savepoint_roundtrip restore --backend memory|typed --from SAVEPOINT --uid UID --parallelism P [--keys N]
//!     restores the table into that backend at parallelism P, every subtask straight from the
//!     savepoint (`state_api::restore_canonical_snapshot` over the `SavepointReader`
//!     container), and checks every row of the subtask's key groups and the number of rows
//!     restored; exit status 1 on any difference
//! ```
//!
//! `--backend` defaults to `memory`. The typed-store stores live in a temporary directory.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use flink_savepoint::{OperatorSelector, SavepointReader};
use keygroup::{KeyGroup, MaxParallelism, Parallelism};
use memory_store::MemoryStore;
use sfcs_format::DirContainer;
use state_api::{
    CanonicalTable, I64Codec, KeyedStateStore, KeyedTable, MemoryPool, StoreConfig,
    UnboundedMemoryPool,
};
use typed_store::{RocksSlot, RocksStore};

const OPERATOR: &str = "group aggregate";
const MAX_PARALLELISM: i32 = 256;

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Row `i`: key `user-<i>` in key group `i * 7919 % 256`, value `i² − 3`.
fn row(mp: MaxParallelism, i: i64) -> AnyResult<(KeyGroup, Vec<u8>, i64)> {
    let kg = i32::try_from(i * 7919 % i64::from(MAX_PARALLELISM))?;
    Ok((
        mp.key_group(kg)?,
        format!("user-{i}").into_bytes(),
        i * i - 3,
    ))
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("savepoint_roundtrip: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The rows of the example: (key group, key, value).
type Rows = [(KeyGroup, Vec<u8>, i64)];

/// Which sfstate backend holds the table.
#[derive(Clone, Copy)]
enum Backend {
    Memory,
    Typed,
}

/// Opens table `counts` in a store of `backend` for `config` and runs `f` on it.
fn with_table<R>(
    backend: Backend,
    config: StoreConfig,
    scratch: &std::path::Path,
    f: impl FnOnce(&mut dyn Table) -> AnyResult<R>,
) -> AnyResult<R> {
    match backend {
        Backend::Memory => {
            let mut store = MemoryStore::new(config);
            let mut table = store.open_table("counts", I64Codec, None)?;
            f(&mut table)
        }
        Backend::Typed => {
            let slot = RocksSlot::try_new(64 << 20)?;
            let mut store = RocksStore::open(scratch, config, &slot)?;
            let mut table = store.open_table("counts", I64Codec, None)?;
            f(&mut table)
        }
    }
}

/// What the example needs of a table, object-safe over both backends.
trait Table: CanonicalTable {
    /// Writes `rows` in one bundle.
    fn fill(&mut self, rows: &Rows) -> AnyResult<()>;
    /// Counts the rows of `rows` whose value differs (or is absent).
    fn differences(&mut self, rows: &[&(KeyGroup, Vec<u8>, i64)]) -> AnyResult<usize>;
}

impl<T: KeyedTable<Codec = I64Codec> + CanonicalTable> Table for T {
    fn fill(&mut self, rows: &Rows) -> AnyResult<()> {
        let refs: Vec<(KeyGroup, &[u8])> =
            rows.iter().map(|(kg, k, _)| (*kg, k.as_slice())).collect();
        self.begin_bundle(&refs)?;
        for (kg, k, v) in rows {
            self.put(*kg, k, *v)?;
        }
        self.commit_bundle()?;
        Ok(())
    }

    fn differences(&mut self, rows: &[&(KeyGroup, Vec<u8>, i64)]) -> AnyResult<usize> {
        let refs: Vec<(KeyGroup, &[u8])> =
            rows.iter().map(|(kg, k, _)| (*kg, k.as_slice())).collect();
        self.begin_bundle(&refs)?;
        let mut wrong = 0;
        for (kg, k, v) in rows {
            if self.get(*kg, k)?.copied() != Some(*v) {
                wrong += 1;
            }
        }
        self.commit_bundle()?;
        Ok(wrong)
    }
}

fn run() -> AnyResult<bool> {
    let mut args = std::env::args().skip(1);
    let command = args.next().unwrap_or_default();
    let (mut out, mut from, mut uid, mut parallelism, mut keys) =
        (None, None, None, 1_i32, 5000_i64);
    let mut backend = Backend::Memory;
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--out" => out = Some(PathBuf::from(value)),
            "--from" => from = Some(PathBuf::from(value)),
            "--uid" => uid = Some(value),
            "--parallelism" => parallelism = value.parse()?,
            "--keys" => keys = value.parse()?,
            "--backend" => {
                backend = match value.as_str() {
                    "memory" => Backend::Memory,
                    "typed" => Backend::Typed,
                    other => return Err(format!("unknown backend {other}").into()),
                }
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let name = match backend {
        Backend::Memory => "memory-store",
        Backend::Typed => "typed-store",
    };
    let mp = MaxParallelism::new(MAX_PARALLELISM)?;
    let pool: Arc<dyn MemoryPool> = Arc::new(UnboundedMemoryPool::new());
    let rows: Vec<_> = (0..keys).map(|i| row(mp, i)).collect::<AnyResult<_>>()?;
    let scratch = tempfile::tempdir()?;
    match command.as_str() {
        "snapshot" => {
            let out = out.ok_or("--out is required")?;
            let config = StoreConfig::for_subtask(mp, Parallelism::new(1)?, 0)?;
            with_table(backend, config, scratch.path(), |table| {
                table.fill(&rows)?;
                let mut container = DirContainer::open(&out)?;
                let tables: [&dyn CanonicalTable; 1] = [&*table];
                state_api::write_canonical_snapshot(
                    OPERATOR,
                    None,
                    &tables,
                    &mut container,
                    &pool,
                )?;
                Ok(())
            })?;
            println!(
                "snapshot of {} {name} rows into {}",
                rows.len(),
                out.display()
            );
            Ok(true)
        }
        "restore" => {
            let from = from.ok_or("--from is required")?;
            let uid = uid.ok_or("--uid is required")?;
            let savepoint = SavepointReader::open(&from, &OperatorSelector::Uid(uid))?;
            let p = Parallelism::new(parallelism)?;
            let (mut restored, mut wrong) = (0, 0);
            for index in 0..parallelism {
                let config = StoreConfig::for_subtask(mp, p, index)?;
                let range = config.key_groups();
                let mine: Vec<_> = rows
                    .iter()
                    .filter(|(kg, _, _)| range.contains(*kg))
                    .collect();
                let dir = scratch.path().join(format!("subtask-{index}"));
                with_table(backend, config, &dir, |table| {
                    let mut targets: [&mut dyn CanonicalTable; 1] = [&mut *table];
                    let summary = state_api::restore_canonical_snapshot(
                        OPERATOR,
                        &[&savepoint],
                        &mut targets,
                        &pool,
                    )?;
                    restored += summary.rows;
                    if summary.rows != mine.len() {
                        wrong += 1;
                    }
                    wrong += table.differences(&mine)?;
                    Ok(())
                })?;
            }
            println!(
                "restored {restored} rows of {} into {name} at parallelism {parallelism} from {}: {wrong} differences",
                rows.len(),
                from.display()
            );
            Ok(wrong == 0 && restored == rows.len())
        }
        _ => Err("usage: savepoint_roundtrip snapshot|restore …".into()),
    }
}
