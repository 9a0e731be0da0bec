//! `sfstate-bench --quick`: the end-to-end benchmark binary runs every workload on both
//! backends (parallelism 1 and 2, plus typed-store per record for W1 and W4), and every run's checksums
//! agree with the reference model; the binary exits non-zero on any mismatch.

use std::process::Command;

/// The reports of `sfstate-bench --quick --json --no-progress` with `args`, in a fresh
/// directory; fails the test when the binary fails.
fn quick_reports(args: &[&str]) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new(env!("CARGO_BIN_EXE_sfstate-bench"))
        .args(["--quick", "--json", "--no-progress"])
        .args(args)
        .arg("--dir")
        .arg(dir.path())
        .output()
        .expect("run sfstate-bench");
    assert!(
        output.status.success(),
        "sfstate-bench --quick failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let reports: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    reports.as_array().expect("an array of reports").clone()
}

#[test]
fn quick_run_checks_every_workload_and_backend() {
    let reports = &quick_reports(&[]);
    // W1, W4: typed p1, typed p2, typed per-record, memory p1, memory p2; W2, W3 (operators
    // crate): typed p1, p2, memory p1, p2.
    assert_eq!(reports.len(), 18, "{reports:#?}");
    for r in reports {
        assert_eq!(r["restore_verified"], true, "{r}");
        assert!(r["events_per_second"].as_f64().unwrap_or(0.0) > 0.0, "{r}");
    }
    let field = |r: &serde_json::Value, f: &str| r[f].as_str().unwrap_or("").to_owned();
    for (w, runs) in [("w1", 5), ("w2", 4), ("w3", 4), ("w4", 5)] {
        let of: Vec<&serde_json::Value> = reports.iter().filter(|r| r["workload"] == w).collect();
        assert_eq!(of.len(), runs, "{w}");
        // The final table is the same on every backend, mode and parallelism.
        assert!(
            of.iter()
                .all(|r| field(r, "chk_final") == field(of[0], "chk_final")),
            "{w}"
        );
        // The changelog too, except W2's, whose mini-batches are per subtask: there it is
        // the same on both backends at one parallelism.
        for r in &of {
            let same_p = w != "w2" || r["parallelism"] == of[0]["parallelism"];
            if same_p {
                assert_eq!(
                    field(r, "chk_changelog"),
                    field(of[0], "chk_changelog"),
                    "{w}: {r}"
                );
            }
        }
    }
    // W2's final table is W1's (the issue: "chk_final as W1").
    let final_of = |w: &str| {
        reports
            .iter()
            .find(|r| r["workload"] == w)
            .map(|r| field(r, "chk_final"))
    };
    assert_eq!(final_of("w1"), final_of("w2"));
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

/// `--warmup 1` runs each run once untimed first: one report per run, the same checksums as
/// without it (a warm-up's stores are its own; the timed run starts from empty state).
#[test]
fn a_warm_up_run_is_not_reported_and_changes_no_result() {
    let run = |warmup: &str| {
        quick_reports(&[
            "--workload",
            "w1,w3",
            "--backend",
            "memory",
            "--parallelism",
            "1",
            "--warmup",
            warmup,
        ])
        .iter()
        .map(|r| {
            (
                r["workload"].to_string(),
                r["chk_changelog"].to_string(),
                r["chk_final"].to_string(),
                r["rows"].to_string(),
            )
        })
        .collect::<Vec<_>>()
    };
    let cold = run("0");
    assert_eq!(cold.len(), 2, "{cold:?}");
    assert_eq!(run("1"), cold);
}
