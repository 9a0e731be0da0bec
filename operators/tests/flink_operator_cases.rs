//! Replays every Flink 2.3.0 operator case (env `FLINK_OPERATOR_CASES_DIR`, default the
//! committed `testdata/flink-operator-cases`) through the operators and compares as each
//! case says. Prints one line per case; fails on any difference or unreadable case.

mod util;

use util::{Compare, Skip, case_dirs, compare, load, run_parallel, run_single};

const BACKEND: &str = "memory-store";

#[test]
fn flink_operator_cases() {
    let mut failures = Vec::new();
    let mut ok = 0;
    for dir in case_dirs() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let case = match load(&dir) {
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
        match run_single(&case) {
            Ok(out) => match compare(&case, &out, case.compare) {
                Ok(()) => {
                    ok += 1;
                    println!("{name}: ok ({BACKEND}, {} rows)", out.len());
                }
                Err(diff) => {
                    println!("{name}: FAILED ({BACKEND}): {diff}");
                    failures.push(name);
                }
            },
            Err(operators::Error::Unsupported { what }) => println!("{name}: unsupported: {what}"),
            Err(e) => {
                println!("{name}: FAILED ({BACKEND}): error {e}");
                failures.push(name);
            }
        }
    }
    assert!(failures.is_empty(), "failing cases: {failures:?}");
    assert!(ok > 0, "no case ran");
}

/// The same inputs routed by Flink key group to two subtasks give the same final table.
#[test]
fn flink_operator_cases_at_parallelism_2() {
    let mut failures = Vec::new();
    for dir in case_dirs() {
        let Ok(case) = load(&dir) else { continue };
        match run_parallel(&case, None, 2) {
            Ok(out) => {
                if let Err(diff) = compare(&case, &out, Compare::Rescaled) {
                    println!("{}: FAILED at parallelism 2: {diff}", case.name);
                    failures.push(case.name.clone());
                } else {
                    println!("{}: ok at parallelism 2 ({BACKEND})", case.name);
                }
            }
            Err(operators::Error::Unsupported { .. }) => {}
            Err(e) => {
                println!("{}: FAILED at parallelism 2: {e}", case.name);
                failures.push(case.name.clone());
            }
        }
    }
    assert!(failures.is_empty(), "failing cases: {failures:?}");
}

/// Snapshot canonically after bundle 2 at parallelism 2, restore at parallelism 3 and at
/// parallelism 1, continue: the final table equals Flink's.
#[test]
fn flink_operator_cases_snapshot_restore_rescaled() {
    let mut failures = Vec::new();
    for dir in case_dirs() {
        let Ok(case) = load(&dir) else { continue };
        for target in [1, 3] {
            match run_parallel(&case, Some(2), target) {
                Ok(out) => {
                    if let Err(diff) = compare(&case, &out, Compare::Rescaled) {
                        println!("{}: FAILED after restore at {target}: {diff}", case.name);
                        failures.push(case.name.clone());
                    } else {
                        println!(
                            "{}: ok after restore at parallelism {target} ({BACKEND})",
                            case.name
                        );
                    }
                }
                Err(operators::Error::Unsupported { .. }) => {}
                Err(e) => {
                    println!("{}: FAILED after restore at {target}: {e}", case.name);
                    failures.push(case.name.clone());
                }
            }
        }
    }
    assert!(failures.is_empty(), "failing cases: {failures:?}");
}
