//! Crash semantics with the WAL off: a child process writes bundles, takes a checkpoint,
//! keeps committing large bundles and is killed with `SIGKILL` mid-commit; the crashed store is
//! discarded and a store restored from the checkpoint holds exactly the checkpointed state.
//!
//! The child is this test binary re-executed on the ignored test `crash::crash_child` with
//! `TYPED_STORE_CRASH_DIR` set; it never runs on its own.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use state_api::{I64F64StrCodec, KeyedStateStore, ManualClock};
use typed_store::{RocksCheckpoint, RocksSlot, RocksStore};

use crate::util::{full_config, key, mp128, read_all, write_all};

const ENV_DIR: &str = "TYPED_STORE_CRASH_DIR";
const KEYS: usize = 3_000;
const CHECKPOINTED_BUNDLES: usize = 12;

type Row = (i64, f64, Option<String>);

/// The keys bundle `b` writes and their values (bundles before the checkpoint touch 400
/// keys each; later ones every key, with long strings, so a commit takes a while).
fn bundle(b: usize) -> Vec<(usize, Option<Row>)> {
    let b64 = i64::try_from(b).expect("small");
    if b < CHECKPOINTED_BUNDLES {
        (0..400)
            .map(|j| {
                let k = (b * 397 + j * 7) % KEYS;
                // Every fifth bundle removes what it touches at odd positions.
                let value = (b % 5 != 4 || j % 2 == 0).then(|| (b64, 0.25, Some(format!("v{b}"))));
                (k, value)
            })
            .collect()
    } else {
        (0..KEYS)
            .map(|k| (k, Some((b64, -1.0, Some("x".repeat(300))))))
            .collect()
    }
}

/// Runs in the child: writes the checkpointed bundles, checkpoints, then commits until killed.
fn child(dir: &Path) {
    let slot = RocksSlot::try_new(32 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = mp128();
    let keys: Vec<_> = (0..KEYS).map(|i| key(i, mp)).collect();
    let mut store =
        RocksStore::open(dir.join("store"), full_config(mp, &clock), &slot).expect("open");
    let mut t = store.open_table("t", I64F64StrCodec, None).expect("table");
    let mut out = std::io::stdout().lock();
    for b in 0.. {
        let rows: Vec<_> = bundle(b)
            .into_iter()
            .map(|(k, v)| (keys[k].clone(), v))
            .collect();
        write_all(&mut t, &rows);
        if b + 1 == CHECKPOINTED_BUNDLES {
            store
                .checkpoint_to(dir.join("checkpoint"))
                .expect("checkpoint");
            writeln!(out, "CHECKPOINTED").expect("stdout");
        } else if b >= CHECKPOINTED_BUNDLES {
            writeln!(out, "COMMITTED {b}").expect("stdout");
        }
        out.flush().expect("flush");
    }
}

#[test]
#[ignore = "helper: runs only as the child process of crash_mid_commit_restores_checkpoint"]
fn crash_child() {
    if let Some(dir) = std::env::var_os(ENV_DIR) {
        child(Path::new(&dir));
    }
}

#[test]
fn crash_mid_commit_restores_checkpoint() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut process = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "crash::crash_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ENV_DIR, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child");
    let stdout = process.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let started = Instant::now();
    let mut checkpointed = false;
    let mut committed_after = 0;
    while committed_after < 3 {
        let line = lines.next().expect("child exited early").expect("line");
        // libtest may print "test crash::crash_child ... " in front of the first line.
        if line.ends_with("CHECKPOINTED") {
            checkpointed = true;
        } else if line.contains("COMMITTED ") {
            assert!(checkpointed, "commits after the checkpoint follow it");
            committed_after += 1;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "child too slow"
        );
    }
    // The child is now inside its next commit (or between two): SIGKILL.
    std::thread::sleep(Duration::from_millis(15));
    process.kill().expect("SIGKILL");
    let status = process.wait().expect("wait");
    assert!(!status.success(), "the child was killed: {status:?}");

    // Expected: exactly the first CHECKPOINTED_BUNDLES bundles, from a model.
    let mut model: BTreeMap<usize, Row> = BTreeMap::new();
    for b in 0..CHECKPOINTED_BUNDLES {
        for (k, v) in bundle(b) {
            match v {
                Some(v) => model.insert(k, v),
                None => model.remove(&k),
            };
        }
    }
    let slot = RocksSlot::try_new(32 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = mp128();
    let checkpoint = RocksCheckpoint::new(dir.path().join("checkpoint"));
    let mut store = RocksStore::open_checkpoint(
        &checkpoint,
        dir.path().join("restored"),
        full_config(mp, &clock),
        &slot,
    )
    .expect("restore from checkpoint");
    let mut t = store.open_table("t", I64F64StrCodec, None).expect("table");
    let keys: Vec<_> = (0..KEYS).map(|i| key(i, mp)).collect();
    let got = read_all(&mut t, &keys);
    let expected: Vec<Option<Row>> = (0..KEYS).map(|k| model.get(&k).cloned()).collect();
    assert!(
        model.len() > KEYS / 2,
        "the checkpointed state is substantial"
    );
    assert_eq!(got, expected, "exactly the checkpointed state");
}
