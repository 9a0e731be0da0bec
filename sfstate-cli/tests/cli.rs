//! The `sfstate` binary end to end: inspect (text, JSON, invalid snapshots), dump (an Arrow
//! IPC file read back), verify (plain, rescaled, refused).

#[path = "util/sample.rs"]
mod sample;

use std::path::Path;
use std::process::{Command, Output};

use state_api::arrow_array::{Array, Int64Array};

fn sfstate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sfstate"))
        .args(args)
        .output()
        .expect("run sfstate")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn inspect_lists_every_key_group_and_section() {
    let dir = tempfile::tempdir().unwrap();
    let written = sample::write_sample(dir.path(), 128, 1, 0, 60);
    let out = sfstate(&["inspect", path(dir.path())]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.matches("\nkey group ").count(), written, "{stdout}");
    assert!(stdout.contains("manifest: ok operator \"sample-op\" max parallelism 128"));
    assert!(stdout.contains("section \"counts\""));
    assert!(stdout.contains("value: Int64 not null"), "{stdout}");
    assert!(stdout.trim_end().ends_with("valid"));

    let out = sfstate(&["inspect", path(dir.path()), "--json"]);
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["valid"], true);
    let groups = report["key_groups"].as_array().unwrap();
    assert_eq!(groups.len(), written);
    let rows: u64 = groups
        .iter()
        .flat_map(|g| g["sections"].as_array().unwrap())
        .filter(|s| s["name"] == "counts")
        .map(|s| s["rows"].as_u64().unwrap())
        .sum();
    assert_eq!(rows, 60, "every key once in the counts table");
    assert!(
        groups
            .iter()
            .all(|g| g["manifest"] == "vouched" && g["crc"] == "ok")
    );
    let deadline = groups
        .iter()
        .find(|g| g["key_group"].as_u64().unwrap() % 5 == 0);
    if let Some(g) = deadline {
        assert_eq!(g["header"]["deadline"], 42_000);
    }
}

#[test]
fn inspect_of_a_damaged_snapshot_exits_non_zero_with_the_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    sample::write_sample(dir.path(), 128, 1, 0, 60);
    let c = sfcs_format::DirContainer::open_existing(dir.path()).unwrap();
    let kg = *sfcs_format::Container::key_groups(&c)
        .unwrap()
        .first()
        .unwrap();
    let file = c.key_group_path(kg);
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&file, &bytes).unwrap();
    let out = sfstate(&["inspect", path(dir.path()), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("CRC32C mismatch"),
        "{}",
        text(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["valid"], false);

    std::fs::remove_file(c.manifest_path()).unwrap();
    let out = sfstate(&["inspect", path(dir.path())]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no manifest"),
        "{}",
        text(&out.stderr)
    );

    let out = sfstate(&["inspect"]);
    assert_eq!(out.status.code(), Some(2), "usage error");
}

#[test]
fn dump_writes_an_arrow_ipc_file() {
    let dir = tempfile::tempdir().unwrap();
    sample::write_sample(dir.path(), 128, 1, 0, 60);
    let c = sfcs_format::DirContainer::open_existing(dir.path()).unwrap();
    let kg = *sfcs_format::Container::key_groups(&c)
        .unwrap()
        .first()
        .unwrap();
    let out_file = dir.path().join("counts.arrow");
    let kg_text = kg.to_string();
    let out = sfstate(&[
        "dump",
        path(dir.path()),
        "--key-group",
        &kg_text,
        "--section",
        "counts",
        "-o",
        path(&out_file),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let reader =
        arrow_ipc::reader::FileReader::try_new(std::fs::File::open(&out_file).unwrap(), None)
            .unwrap();
    let batches: Vec<_> = reader.map(Result::unwrap).collect();
    let rows: usize = batches
        .iter()
        .map(state_api::arrow_array::RecordBatch::num_rows)
        .sum();
    assert!(rows > 0);
    let values = batches[0]
        .column(2)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    assert!(values.iter().all(|v| v.is_some_and(|v| v % 10 == 0)));
    assert_eq!(batches[0].schema().field(0).name(), "key");

    let out = sfstate(&[
        "dump",
        path(dir.path()),
        "--key-group",
        &kg_text,
        "--section",
        "nope",
        "-o",
        path(&out_file),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no section \"nope\""));
}

#[test]
fn verify_plans_a_rescale_and_refuses_gaps() {
    let dir = tempfile::tempdir().unwrap();
    for index in 0..3 {
        sample::write_sample(
            &dir.path().join(format!("subtask-{index}")),
            128,
            3,
            index,
            90,
        );
    }
    let out = sfstate(&[
        "verify",
        path(dir.path()),
        "--operator-id",
        "sample-op",
        "--max-parallelism",
        "128",
        "--parallelism",
        "2",
        "--rescale-from",
        "3",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // Target 0 owns 0..=63: all of source subtask 0 (0..=42) and part of 1 (43..=85).
    assert!(
        stdout.contains("target subtask 0 (key groups 0..=63) reads:"),
        "{stdout}"
    );
    assert!(stdout.contains("source subtask 0"), "{stdout}");
    assert!(stdout.contains("key groups 43..=63"), "{stdout}");
    assert!(stdout.contains("ok: a restore at parallelism 2 would succeed"));

    // One directory alone is a snapshot at parallelism 1 only if it covers everything.
    let single = dir.path().join("subtask-1");
    let out = sfstate(&[
        "verify",
        path(&single),
        "--operator-id",
        "sample-op",
        "--max-parallelism",
        "128",
        "--parallelism",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("key group 0 is missing"),
        "{}",
        text(&out.stderr)
    );

    for (flag, value, message) in [
        ("--max-parallelism", "256", "max parallelism mismatch"),
        ("--operator-id", "other", "belongs to operator"),
    ] {
        let mut args = vec![
            "verify",
            path(dir.path()),
            "--operator-id",
            "sample-op",
            "--max-parallelism",
            "128",
            "--parallelism",
            "4",
        ];
        let at = args.iter().position(|a| *a == flag).unwrap();
        args[at + 1] = value;
        let out = sfstate(&args);
        assert_eq!(out.status.code(), Some(1), "{flag}");
        assert!(
            text(&out.stderr).contains(message),
            "{flag}: {}",
            text(&out.stderr)
        );
    }
    // Sources that are not subtasks of the named parallelism.
    let out = sfstate(&[
        "verify",
        path(dir.path()),
        "--operator-id",
        "sample-op",
        "--max-parallelism",
        "128",
        "--parallelism",
        "2",
        "--rescale-from",
        "4",
    ]);
    assert_eq!(out.status.code(), Some(1));
}
