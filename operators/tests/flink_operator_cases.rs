//! Replays every Flink 2.3.0 operator case (env `FLINK_OPERATOR_CASES_DIR`, default the
//! committed `testdata/flink-operator-cases`) through the operators and compares as each
//! case says. Prints one line per case; fails on any difference or unreadable case.
//!
//! Backends: memory-store. typed-store joins with one more line per test once its map
//! tables are in main (`impl Backend for Rocks` in `util`).

mod util;

use std::path::PathBuf;

use util::{
    Backend, Compare, Memory, Skip, case_dirs, case_dirs_in, compare, generated_cases_dir, load,
    run_parallel, run_single,
};

/// Every case on memory-store, compared as the case says.
#[test]
fn flink_operator_cases() {
    replay(&Memory, &case_dirs());
}

/// The cases of the project's own Flink 2.3.0 harness (`compat/flink-operators`).
#[test]
fn flink_operator_cases_generated() {
    replay(&Memory, &case_dirs_in(&generated_cases_dir()));
}

/// The same inputs routed by Flink key group to two subtasks give the same final table.
#[test]
fn flink_operator_cases_at_parallelism_2() {
    rescaled(&Memory, None, &[2]);
}

/// Snapshot canonically after bundle 2 at parallelism 2, restore at parallelism 1 and at
/// parallelism 3, continue: the final table equals Flink's.
#[test]
fn flink_operator_cases_snapshot_restore_rescaled() {
    rescaled(&Memory, Some(2), &[1, 3]);
}

fn replay<B: Backend>(backend: &B, dirs: &[PathBuf]) {
    let mut failures = Vec::new();
    let mut ok = 0;
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let case = match load(dir) {
            Ok(c) => c,
            Err(Ok(Skip::Unsupported(what))) => {
                println!("{name}: unsupported: {what}");
                continue;
            }
            Err(Err(msg)) => {
                println!("{name}: cannot read: {msg}");
                failures.push(name);
                continue;
            }
        };
        match run_single(backend, &case) {
            Ok(out) => match compare(&case, &out, case.compare) {
                Ok(()) => {
                    ok += 1;
                    println!("{name}: ok ({}, {} rows)", B::NAME, out.len());
                }
                Err(diff) => {
                    println!("{name}: FAILED ({}): {diff}", B::NAME);
                    failures.push(name);
                }
            },
            Err(operators::Error::Unsupported { what }) => println!("{name}: unsupported: {what}"),
            Err(e) => {
                println!("{name}: FAILED ({}): error {e}", B::NAME);
                failures.push(name);
            }
        }
    }
    assert!(failures.is_empty(), "failing cases: {failures:?}");
    assert!(ok > 0, "no case ran");
}

/// Runs every supported case at parallelism 2; with `snapshot_after`, snapshots after that
/// bundle and continues at each of `targets`.
fn rescaled<B: Backend>(backend: &B, snapshot_after: Option<usize>, targets: &[i32]) {
    let mut failures = Vec::new();
    for dir in case_dirs() {
        let Ok(case) = load(&dir) else { continue };
        for &target in targets {
            let what = match snapshot_after {
                Some(k) => {
                    format!("snapshot after bundle {k} at parallelism 2, restore at {target}")
                }
                None => "parallelism 2".to_owned(),
            };
            match run_parallel(backend, &case, snapshot_after, target) {
                Ok(out) => match compare(&case, &out, Compare::Rescaled) {
                    Ok(()) => println!("{}: ok ({}, {what})", case.name, B::NAME),
                    Err(diff) => {
                        println!("{}: FAILED ({}, {what}): {diff}", case.name, B::NAME);
                        failures.push(case.name.clone());
                    }
                },
                Err(operators::Error::Unsupported { .. }) => {}
                Err(e) => {
                    println!("{}: FAILED ({}, {what}): {e}", case.name, B::NAME);
                    failures.push(case.name.clone());
                }
            }
        }
    }
    assert!(failures.is_empty(), "failing cases: {failures:?}");
}
