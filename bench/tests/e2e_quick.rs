//! `sfstate-bench --quick`: the end-to-end benchmark binary runs every workload on both
//! backends (parallelism 1 and 2, plus typed-store per record), and every run's checksums
//! agree with the reference model; the binary exits non-zero on any mismatch.

use std::process::Command;

#[test]
fn quick_run_checks_every_workload_and_backend() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new(env!("CARGO_BIN_EXE_sfstate-bench"))
        .args(["--quick", "--json", "--no-progress", "--dir"])
        .arg(dir.path())
        .output()
        .expect("run sfstate-bench");
    assert!(
        output.status.success(),
        "sfstate-bench --quick failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let reports: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let reports = reports.as_array().expect("an array of reports");
    // 2 workloads x (typed p1, typed p2, typed per-record, memory p1, memory p2)
    assert_eq!(reports.len(), 10, "{reports:#?}");
    for r in reports {
        assert_eq!(r["restore_verified"], true, "{r}");
        assert!(r["events_per_second"].as_f64().unwrap_or(0.0) > 0.0, "{r}");
    }
    // Both backends and both modes agree on the checksums of each workload.
    for w in ["w1", "w4"] {
        let sums: Vec<(&str, &str)> = reports
            .iter()
            .filter(|r| r["workload"] == w)
            .map(|r| {
                (
                    r["chk_changelog"].as_str().unwrap_or(""),
                    r["chk_final"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(sums.len(), 5);
        assert!(sums.iter().all(|s| *s == sums[0]), "{w}: {sums:?}");
    }
}

#[test]
fn a_bad_argument_is_a_usage_error() {
    let status = Command::new(env!("CARGO_BIN_EXE_sfstate-bench"))
        .arg("--no-such-flag")
        .output()
        .expect("run sfstate-bench")
        .status;
    assert_eq!(status.code(), Some(2));
}
