//! The store's directory and registry: the `LIVE` pointer decides which database opens (not
//! the highest `live-<n>`), a failed native restore leaves nothing behind, and a table whose
//! schema check fails is not recorded.

use std::time::Duration;

use state_api::{
    Error as ApiError, F64Codec, I64Codec, KeyedStateStore, ManualClock, NativeSnapshot, TtlConfig,
};
use typed_store::{Error, LIVE_POINTER_FILE, RocksSlot, RocksStore};

use crate::util::{backend_error, full_config, key, mp128, read_all, write_all};

fn live_dirs(root: &std::path::Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root)
        .expect("read root")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("live-"))
        .collect();
    out.sort();
    out
}

/// Regression: a half-restored `live-<n+1>` left in the root (what a failed `create_cf`
/// during `restore_native` used to leave) was opened by the next `RocksStore::open`, because
/// the highest number won. The `LIVE` pointer names the database; leftovers are removed.
#[test]
fn open_follows_the_live_pointer_not_the_highest_directory() {
    let dir = tempfile::tempdir().expect("tmp");
    let root = dir.path().join("s");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = mp128();
    let keys: Vec<_> = (0..50).map(|i| key(i, mp)).collect();
    let checkpoint = {
        let mut store = RocksStore::open(&root, full_config(mp, &clock), &slot).expect("open");
        let mut t = store.open_table("t", I64Codec, None).expect("table");
        write_all(
            &mut t,
            &keys
                .iter()
                .map(|k| (k.clone(), Some(1)))
                .collect::<Vec<_>>(),
        );
        let checkpoint = store.native_snapshot().expect("checkpoint");
        write_all(
            &mut t,
            &keys
                .iter()
                .map(|k| (k.clone(), Some(2)))
                .collect::<Vec<_>>(),
        );
        checkpoint
    };
    let pointer = std::fs::read_to_string(root.join(LIVE_POINTER_FILE)).expect("LIVE file");
    assert_eq!(pointer, "live-0\n");

    // A complete but stale database under a higher number: the checkpoint's state (1s).
    let stale = root.join("live-7");
    std::fs::create_dir_all(&stale).expect("mkdir");
    for entry in std::fs::read_dir(checkpoint.dir()).expect("read checkpoint") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), stale.join(entry.file_name())).expect("copy");
    }

    let mut store = RocksStore::open(&root, full_config(mp, &clock), &slot).expect("reopen");
    let mut t = store.open_table("t", I64Codec, None).expect("table");
    assert_eq!(
        read_all(&mut t, &keys),
        vec![Some(2); keys.len()],
        "the database LIVE names opens, not live-7"
    );
    assert_eq!(live_dirs(&root), ["live-0"], "the leftover is removed");

    // A native restore switches LIVE to the new directory and removes the old one.
    store.restore_native(&checkpoint).expect("restore");
    assert_eq!(read_all(&mut t, &keys), vec![Some(1); keys.len()]);
    let pointer = std::fs::read_to_string(root.join(LIVE_POINTER_FILE)).expect("LIVE file");
    assert_eq!(
        live_dirs(&root),
        [pointer.trim_end()],
        "only the live database"
    );
    drop(t);
    drop(store);
    let mut store = RocksStore::open(&root, full_config(mp, &clock), &slot).expect("reopen");
    let mut t = store.open_table("t", I64Codec, None).expect("table");
    assert_eq!(read_all(&mut t, &keys), vec![Some(1); keys.len()]);
}

/// A native restore that fails after the new database was opened (here: `LIVE.tmp` cannot
/// be written) removes the new directory, keeps `LIVE` and the state, and the next open
/// finds the old database.
#[test]
fn failed_native_restore_leaves_nothing_behind() {
    let dir = tempfile::tempdir().expect("tmp");
    let root = dir.path().join("s");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = mp128();
    let keys: Vec<_> = (0..50).map(|i| key(i, mp)).collect();
    let mut store = RocksStore::open(&root, full_config(mp, &clock), &slot).expect("open");
    let mut t = store.open_table("t", I64Codec, None).expect("table");
    write_all(
        &mut t,
        &keys
            .iter()
            .map(|k| (k.clone(), Some(1)))
            .collect::<Vec<_>>(),
    );
    let checkpoint = store.native_snapshot().expect("checkpoint");
    write_all(
        &mut t,
        &keys
            .iter()
            .map(|k| (k.clone(), Some(2)))
            .collect::<Vec<_>>(),
    );

    // A directory where the pointer's temporary file goes: creating the file fails.
    std::fs::create_dir(root.join("LIVE.tmp")).expect("mkdir");
    let err = store
        .restore_native(&checkpoint)
        .expect_err("pointer write fails");
    assert!(
        matches!(backend_error(&err), Some(Error::Io { .. })),
        "{err}"
    );
    assert!(matches!(err, ApiError::Io { .. }), "an I/O failure: {err}");
    assert_eq!(live_dirs(&root), ["live-0"], "the new database is removed");
    assert_eq!(read_all(&mut t, &keys), vec![Some(2); keys.len()]);
    std::fs::remove_dir(root.join("LIVE.tmp")).expect("rmdir");
    drop(t);
    drop(store);
    let mut store = RocksStore::open(&root, full_config(mp, &clock), &slot).expect("reopen");
    let mut t = store.open_table("t", I64Codec, None).expect("table");
    assert_eq!(read_all(&mut t, &keys), vec![Some(2); keys.len()]);
}

/// Regression: `register_table` recorded a table (and its TTL) before the stored-schema
/// check. A refused open with a TTL then configured the table's column family with that TTL
/// at the next native restore, and a compaction dropped the entries of a table that has no
/// TTL.
#[test]
fn refused_open_records_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let root = dir.path().join("s");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = mp128();
    let keys: Vec<_> = (0..50).map(|i| key(i, mp)).collect();
    {
        let mut store = RocksStore::open(&root, full_config(mp, &clock), &slot).expect("open");
        let mut t = store.open_table("t", I64Codec, None).expect("table");
        write_all(
            &mut t,
            &keys
                .iter()
                .map(|k| (k.clone(), Some(5)))
                .collect::<Vec<_>>(),
        );
    }
    let mut store = RocksStore::open(&root, full_config(mp, &clock), &slot).expect("reopen");
    let ttl = TtlConfig::new(Duration::from_millis(10));
    let err = store
        .open_table("t", F64Codec, Some(ttl))
        .expect_err("other columns");
    assert!(
        matches!(backend_error(&err), Some(Error::TableSchemaMismatch { .. })),
        "{err}"
    );
    let checkpoint = store.native_snapshot().expect("checkpoint");
    store.restore_native(&checkpoint).expect("restore");
    clock.advance(1_000);
    store.compact_table("t").expect("compact");
    let mut t = store
        .open_table("t", I64Codec, None)
        .expect("the name is still free");
    assert_eq!(
        read_all(&mut t, &keys),
        vec![Some(5); keys.len()],
        "no TTL of the refused open reached the table"
    );
}
