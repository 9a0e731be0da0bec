//! Native checkpoints: consecutive checkpoints share unchanged SST files; restore from one
//! (in place, and into a new store) gives exactly its state.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use keygroup::KeyGroupRange;
use state_api::{
    Error as ApiError, I64Codec, KeyedStateStore, KeyedTable, ManualClock, NativeSnapshot,
    StoreConfig,
};
use typed_store::{RocksSlot, RocksStore};

use crate::util::{full_config, key, mp128, read_all, write_all};

/// (inode, name) of every SST file in `dir`.
fn sst_inodes(dir: &Path) -> HashSet<u64> {
    std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .map(|p| std::fs::metadata(p).expect("meta").ino())
        .collect()
}

#[test]
fn checkpoints_share_sst_files_and_restore_exactly() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(32 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = mp128();
    let keys: Vec<_> = (0..20_000).map(|i| key(i, mp)).collect();
    let mut store =
        RocksStore::open(dir.path().join("s"), full_config(mp, &clock), &slot).expect("open");
    let mut t = store.open_table("t", I64Codec, None).expect("table");
    for chunk in keys.chunks(5_000) {
        write_all(
            &mut t,
            &chunk
                .iter()
                .map(|k| (k.clone(), Some(1)))
                .collect::<Vec<_>>(),
        );
    }
    // A bundle must be committed before a checkpoint.
    t.begin_bundle(&[]).expect("begin");
    let err = store.native_snapshot().expect_err("open bundle");
    assert!(matches!(err, ApiError::BundleState { .. }), "{err}");
    t.commit_bundle().expect("commit");
    let first = store.native_snapshot().expect("checkpoint 1");

    // Change 100 keys and add 100.
    let more: Vec<_> = (20_000..20_100).map(|i| key(i, mp)).collect();
    let mut changes: Vec<_> = keys[..100].iter().map(|k| (k.clone(), Some(2))).collect();
    changes.extend(more.iter().map(|k| (k.clone(), Some(3))));
    write_all(&mut t, &changes);
    let second = store.native_snapshot().expect("checkpoint 2");

    let a = sst_inodes(first.dir());
    let b = sst_inodes(second.dir());
    let shared = a.intersection(&b).count();
    println!(
        "checkpoint 1: {} SST files, checkpoint 2: {} SST files, {} shared (same inode)",
        a.len(),
        b.len(),
        shared
    );
    assert!(
        !a.is_empty() && shared >= 1,
        "unchanged SST files are hard-linked, not copied"
    );
    assert!(
        b.len() > shared,
        "the second checkpoint adds the new writes"
    );

    // More writes, then restore the first checkpoint in place.
    write_all(
        &mut t,
        &keys[..50]
            .iter()
            .map(|k| (k.clone(), None))
            .collect::<Vec<_>>(),
    );
    store.restore_native(&first).expect("restore 1");
    assert_eq!(read_all(&mut t, &keys[..200]), vec![Some(1); 200]);
    assert_eq!(read_all(&mut t, &more), vec![None; more.len()]);

    // The second checkpoint into a new store.
    let mut restored = RocksStore::open_checkpoint(
        &second,
        dir.path().join("r"),
        full_config(mp, &clock),
        &slot,
    )
    .expect("open checkpoint");
    let mut r = restored.open_table("t", I64Codec, None).expect("table");
    let mut expected = vec![Some(2); 100];
    expected.extend(vec![Some(1); 100]);
    assert_eq!(read_all(&mut r, &keys[..200]), expected);
    assert_eq!(read_all(&mut r, &more), vec![Some(3); more.len()]);
    assert_eq!(read_all(&mut r, &keys[19_900..]), vec![Some(1); 100]);
}

/// Copies a checkpoint's files (not hard links: the copy is damaged on purpose).
fn copy_checkpoint(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let path = entry.expect("entry").path();
        std::fs::copy(&path, to.join(path.file_name().expect("name"))).expect("copy");
    }
}

/// The largest SST file of a checkpoint copy.
fn largest_sst(dir: &Path) -> std::path::PathBuf {
    std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .max_by_key(|p| std::fs::metadata(p).expect("meta").len())
        .expect("an SST file")
}

/// Damages a checkpoint copy in place.
type Damage = fn(&Path);

/// The backend error inside a trait method's error.
fn backend(err: &ApiError) -> &typed_store::Error {
    assert!(
        matches!(err, ApiError::InvalidNativeSnapshot { .. }),
        "a damaged checkpoint is an invalid native snapshot: {err}"
    );
    crate::util::backend_error(err).expect("a typed-store error")
}

/// A damaged native checkpoint — a truncated RocksDB MANIFEST, a missing checkpoint manifest
/// (an interrupted checkpoint), an extra file, missing CURRENT, an empty directory, a flipped
/// byte in an SST data block, a truncated SST — is refused with a typed error, in place and into a new
/// store, and the target keeps exactly its state.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one table of damages, each checked two ways"
)]
fn damaged_checkpoints_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(32 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = mp128();
    let keys: Vec<_> = (0..20_000).map(|i| key(i, mp)).collect();
    let mut store =
        RocksStore::open(dir.path().join("s"), full_config(mp, &clock), &slot).expect("open");
    let mut t = store.open_table("t", I64Codec, None).expect("table");
    write_all(
        &mut t,
        &keys
            .iter()
            .map(|k| (k.clone(), Some(1)))
            .collect::<Vec<_>>(),
    );
    let good = store.native_snapshot().expect("checkpoint");
    // The target's state differs from the checkpoint's.
    write_all(
        &mut t,
        &keys[..300]
            .iter()
            .map(|k| (k.clone(), Some(2)))
            .collect::<Vec<_>>(),
    );
    let before = read_all(&mut t, &keys);

    let damages: [(&str, Damage); 7] = [
        ("truncated RocksDB MANIFEST", |d| {
            let manifest = std::fs::read_dir(d)
                .expect("read dir")
                .map(|e| e.expect("entry").path())
                .find(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("MANIFEST-"))
                })
                .expect("a MANIFEST");
            let len = std::fs::metadata(&manifest).expect("meta").len();
            std::fs::OpenOptions::new()
                .write(true)
                .open(&manifest)
                .expect("open")
                .set_len(len / 2)
                .expect("truncate");
        }),
        ("no checkpoint manifest (interrupted checkpoint)", |d| {
            std::fs::remove_file(d.join(typed_store::CHECKPOINT_MANIFEST_FILE)).expect("rm");
        }),
        ("an extra file", |d| {
            std::fs::write(d.join("000999.sst"), b"not an sst").expect("write");
        }),
        ("missing CURRENT", |d| {
            std::fs::remove_file(d.join("CURRENT")).expect("rm");
        }),
        ("empty directory", |d| {
            for entry in std::fs::read_dir(d).expect("read dir") {
                std::fs::remove_file(entry.expect("entry").path()).expect("rm");
            }
        }),
        ("flipped byte in an SST", |d| {
            let sst = largest_sst(d);
            let mut bytes = std::fs::read(&sst).expect("read");
            let mid = bytes.len() / 3;
            bytes[mid] ^= 0x5a;
            std::fs::write(&sst, bytes).expect("write");
        }),
        ("truncated SST", |d| {
            let sst = largest_sst(d);
            let len = std::fs::metadata(&sst).expect("meta").len();
            std::fs::OpenOptions::new()
                .write(true)
                .open(&sst)
                .expect("open")
                .set_len(len / 2)
                .expect("truncate");
        }),
    ];
    for (n, (what, damage)) in damages.iter().enumerate() {
        let copy = dir.path().join(format!("damaged-{n}"));
        copy_checkpoint(good.dir(), &copy);
        damage(&copy);
        let broken = typed_store::RocksCheckpoint::new(&copy);

        let err = store.restore_native(&broken).expect_err(what);
        assert!(
            matches!(
                backend(&err),
                typed_store::Error::InvalidCheckpoint { .. }
                    | typed_store::Error::Rocks {
                        kind: typed_store::RocksErrorKind::Corruption
                            | typed_store::RocksErrorKind::Io,
                        ..
                    }
            ),
            "{what}: {err}"
        );
        assert_eq!(read_all(&mut t, &keys), before, "{what}: target unchanged");

        let into_new = RocksStore::open_checkpoint(
            &broken,
            dir.path().join(format!("new-{n}")),
            full_config(mp, &clock),
            &slot,
        );
        assert!(into_new.is_err(), "{what}: opened into a new store");
    }
    // The undamaged checkpoint still restores.
    store.restore_native(&good).expect("restore good");
    assert_eq!(read_all(&mut t, &keys), vec![Some(1); keys.len()]);
}

#[test]
fn open_checkpoint_refuses_another_key_group_range() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = mp128();
    let half = KeyGroupRange::new(0, 63).expect("range");
    let config = || {
        StoreConfig::try_new(mp, half)
            .expect("config")
            .with_clock(std::sync::Arc::new(clock.clone()))
    };
    let mut store = RocksStore::open(dir.path().join("s"), config(), &slot).expect("open");
    let mut t = store.open_table("t", I64Codec, None).expect("table");
    let keys: Vec<_> = (0..200)
        .map(|i| key(i, mp))
        .filter(|(kg, _)| half.contains(*kg))
        .collect();
    write_all(
        &mut t,
        &keys
            .iter()
            .map(|k| (k.clone(), Some(1)))
            .collect::<Vec<_>>(),
    );
    let checkpoint = store.native_snapshot().expect("checkpoint");

    let err = RocksStore::open_checkpoint(
        &checkpoint,
        dir.path().join("full"),
        full_config(mp, &clock),
        &slot,
    )
    .expect_err("another key-group range");
    assert!(
        matches!(err, typed_store::Error::InvalidCheckpoint { .. }),
        "{err}"
    );
    assert!(
        !dir.path().join("full").join("live-0").exists(),
        "nothing of the refused checkpoint stays behind"
    );
    let mut same =
        RocksStore::open_checkpoint(&checkpoint, dir.path().join("same"), config(), &slot)
            .expect("same range");
    let mut r = same.open_table("t", I64Codec, None).expect("table");
    assert_eq!(read_all(&mut r, &keys), vec![Some(1); keys.len()]);
}
