//! Native checkpoints: consecutive checkpoints share unchanged SST files; restore from one
//! (in place, and into a new store) gives exactly its state.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use state_api::{
    Error as ApiError, I64Codec, KeyedStateStore, KeyedTable, ManualClock, NativeSnapshot,
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
