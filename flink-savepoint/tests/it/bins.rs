//! The command-line tools end to end: `read-savepoint --to-container` commits a container
//! that `write-savepoint` writes back (plain and Snappy-framed) with every key group; a
//! container with no committed generation is refused.

use std::process::Command;

use flink_savepoint::{OperatorSelector, SavepointReader};
use sfcs_format::{Container, DirContainer};

use crate::roundtrip::{assert_same, extract};
use crate::util::committed_sample;

#[test]
fn extracted_containers_are_committed_and_written_back_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let sample = committed_sample("p2-rocksdb-files-mp256-multichunk");
    let selector = OperatorSelector::Uid("native-op".into());
    let original = SavepointReader::open(&sample, &selector).unwrap();
    let container = tmp.path().join("container");
    let run = Command::new(env!("CARGO_BIN_EXE_read-savepoint"))
        .arg(&sample)
        .args(["--uid", "native-op", "--to-container"])
        .arg(&container)
        .output()
        .unwrap();
    assert!(run.status.success());
    let committed = DirContainer::open_existing(&container).unwrap();
    assert!(committed.committed_generation().is_some());
    assert_eq!(committed.key_groups().unwrap().len(), 18);
    assert!(committed.get_manifest().unwrap().is_some());
    for compression in ["none", "snappy"] {
        let out = tmp.path().join(format!("sp-{compression}"));
        let run = Command::new(env!("CARGO_BIN_EXE_write-savepoint"))
            .arg("--from")
            .arg(&container)
            .args(["--uid", "native-op", "--max-parallelism", "256"])
            .args(["--parallelism", "3", "--compression", compression, "--out"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(run.status.success());
        let back = SavepointReader::open(&out, &selector).unwrap();
        assert_eq!(back.verify(None).unwrap(), 18);
        assert_same(&extract(&original), &back);
    }
}

#[test]
fn an_uncommitted_container_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let container = tmp.path().join("container");
    let mut c = DirContainer::open(&container).unwrap();
    c.begin_generation().unwrap();
    sfcs_format::write_envelope(&mut c, 3, "op", None, b"payload").unwrap();
    let out = tmp.path().join("sp");
    let output = Command::new(env!("CARGO_BIN_EXE_write-savepoint"))
        .arg("--from")
        .arg(&container)
        .args([
            "--uid",
            "u",
            "--max-parallelism",
            "8",
            "--parallelism",
            "1",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("no committed snapshot"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!out.join("_metadata").exists());
}
