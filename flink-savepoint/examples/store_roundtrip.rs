//! A memory-store table through a Flink savepoint and back.
//!
//! ```text
//! store_roundtrip snapshot --out CONTAINER_DIR [--keys N]
//!     fills a memory-store table (max parallelism 256, one subtask) with N deterministic
//!     rows and writes its canonical snapshot (operator "group aggregate") into an
//!     sfcs-format directory container (hand it to `write-savepoint --from`)
//! store_roundtrip restore --from SAVEPOINT --uid UID --parallelism P [--keys N]
//!     restores the table at parallelism P, every subtask straight from the savepoint
//!     (`state_api::restore_canonical_snapshot` over the `SavepointReader` container), and
//!     checks every row; exit status 1 on any difference
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use flink_savepoint::{OperatorSelector, SavepointReader};
use keygroup::{KeyGroup, MaxParallelism, Parallelism};
use memory_store::MemoryStore;
use sfcs_format::DirContainer;
use state_api::{
    I64Codec, KeyedStateStore, KeyedTable, MemoryPool, StoreConfig, UnboundedMemoryPool,
};

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
            eprintln!("store_roundtrip: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> AnyResult<bool> {
    let mut args = std::env::args().skip(1);
    let command = args.next().unwrap_or_default();
    let (mut out, mut from, mut uid, mut parallelism, mut keys) =
        (None, None, None, 1_i32, 5000_i64);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--out" => out = Some(PathBuf::from(value)),
            "--from" => from = Some(PathBuf::from(value)),
            "--uid" => uid = Some(value),
            "--parallelism" => parallelism = value.parse()?,
            "--keys" => keys = value.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let mp = MaxParallelism::new(MAX_PARALLELISM)?;
    let pool: Arc<dyn MemoryPool> = Arc::new(UnboundedMemoryPool::new());
    let rows: Vec<_> = (0..keys).map(|i| row(mp, i)).collect::<AnyResult<_>>()?;
    match command.as_str() {
        "snapshot" => {
            let out = out.ok_or("--out is required")?;
            let config = StoreConfig::for_subtask(mp, Parallelism::new(1)?, 0)?;
            let mut store = MemoryStore::new(config);
            let mut table = store.open_table("counts", I64Codec, None)?;
            let refs: Vec<(KeyGroup, &[u8])> =
                rows.iter().map(|(kg, k, _)| (*kg, k.as_slice())).collect();
            table.begin_bundle(&refs)?;
            for (kg, k, v) in &rows {
                table.put(*kg, k, *v)?;
            }
            table.commit_bundle()?;
            let mut container = DirContainer::open(&out)?;
            state_api::write_canonical_snapshot(OPERATOR, None, &[&table], &mut container, &pool)?;
            println!("snapshot of {} rows into {}", rows.len(), out.display());
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
                let mut store = MemoryStore::new(config);
                let mut table = store.open_table("counts", I64Codec, None)?;
                let summary = state_api::restore_canonical_snapshot(
                    OPERATOR,
                    &[&savepoint],
                    &mut [&mut table],
                    &pool,
                )?;
                restored += summary.rows;
                let mine: Vec<_> = rows
                    .iter()
                    .filter(|(kg, _, _)| range.contains(*kg))
                    .collect();
                let refs: Vec<(KeyGroup, &[u8])> =
                    mine.iter().map(|(kg, k, _)| (*kg, k.as_slice())).collect();
                table.begin_bundle(&refs)?;
                for (kg, k, v) in &mine {
                    if table.get(*kg, k)?.copied() != Some(*v) {
                        wrong += 1;
                    }
                }
                table.commit_bundle()?;
                if table.len() != mine.len() {
                    wrong += 1;
                }
            }
            println!(
                "restored {restored} rows of {} at parallelism {parallelism} from {}: {wrong} differences",
                rows.len(),
                from.display()
            );
            Ok(wrong == 0 && restored == rows.len())
        }
        _ => Err("usage: store_roundtrip snapshot|restore …".into()),
    }
}
