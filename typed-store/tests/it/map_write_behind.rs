//! The write-behind buffer of a complete map table: commits wait in it, each key's last
//! write reaches RocksDB at a flush point (a native checkpoint, `write_pending`, a commit
//! that writes through, dropping the table), a range delete writes the older pending writes
//! first, a limit of 0 writes every commit through, and `write_pending` writes the buffers
//! of several tables (in parallel).

use keygroup::KeyGroup;
use state_api::{
    I64Codec, ManualClock, MapHydration, MapStateStore, MapTable, NativeSnapshot, UserKeyRange,
};
use typed_store::{RocksMapTable, RocksSlot, RocksStore};

use crate::util::{full_config, mp128};

fn kg() -> KeyGroup {
    KeyGroup::new(3).expect("kg")
}

const PREFIX: &[u8] = b"p\0";

fn user_key(i: usize) -> Vec<u8> {
    format!("u{i:03}").into_bytes()
}

/// One bundle: `puts` then `removes`, committed.
fn bundle(m: &mut RocksMapTable<I64Codec>, puts: &[(usize, i64)], removes: &[usize]) {
    m.begin_bundle(MapHydration::none()).expect("begin");
    for (i, v) in puts {
        m.put(kg(), PREFIX, &user_key(*i), *v).expect("put");
    }
    for i in removes {
        m.remove(kg(), PREFIX, &user_key(*i)).expect("remove");
    }
    m.commit_bundle().expect("commit");
}

/// Every entry of `PREFIX` as (user key index, value), read by a table opened anew on the
/// store in `dir` (incomplete: it reads RocksDB).
fn stored(dir: &std::path::Path, slot: &RocksSlot) -> Vec<(String, i64)> {
    stored_in(dir, slot, "m")
}

/// [`stored`] of map table `table`.
fn stored_in(dir: &std::path::Path, slot: &RocksSlot, table: &str) -> Vec<(String, i64)> {
    let clock = ManualClock::new(1);
    let mut store = RocksStore::open(dir, full_config(mp128(), &clock), slot).expect("reopen");
    let mut m = store.open_map_table(table, I64Codec, None).expect("map");
    m.begin_bundle(MapHydration::none()).expect("begin");
    let mut out = Vec::new();
    m.scan(
        kg(),
        PREFIX,
        UserKeyRange::all(),
        state_api::ScanDirection::Forward,
        &mut |k: &[u8], v: &i64| {
            out.push((String::from_utf8_lossy(k).into_owned(), *v));
            std::ops::ControlFlow::Continue(())
        },
    )
    .expect("scan");
    m.commit_bundle().expect("commit");
    out
}

#[test]
fn commits_wait_and_each_keys_last_write_reaches_rocksdb_at_the_flush_points() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(32 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let checkpoint = {
        let mut store =
            RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("open");
        let mut m = store.open_map_table("m", I64Codec, None).expect("map");
        bundle(&mut m, &(0..30).map(|i| (i, 1)).collect::<Vec<_>>(), &[]);
        assert!(m.write_behind_bytes() > 0, "the commit waits in the buffer");
        assert_eq!(m.write_behind_flushes(), 0);
        // A native checkpoint writes the buffer first.
        let checkpoint = store.native_snapshot().expect("checkpoint");
        assert_eq!(m.write_behind_bytes(), 0);
        assert_eq!(m.write_behind_flushes(), 1);
        // Later writes of the same keys, over several bundles: the last one counts.
        bundle(&mut m, &[(0, 2), (1, 2)], &[2]);
        bundle(&mut m, &[(0, 3), (2, 3)], &[1]);
        bundle(&mut m, &[(3, 4)], &[3]);
        assert!(m.write_behind_bytes() > 0);
        store.write_pending().expect("write pending");
        assert_eq!(m.write_behind_bytes(), 0);
        assert_eq!(m.write_behind_flushes(), 2);
        // Pending again; dropping the table writes it.
        bundle(&mut m, &[(4, 5)], &[]);
        assert!(m.write_behind_bytes() > 0);
        checkpoint
    };
    let mut want: Vec<(String, i64)> = (0..30)
        .filter(|i| ![1, 3].contains(i))
        .map(|i| (format!("u{i:03}"), 1))
        .collect();
    for (key, value) in [("u000", 3), ("u002", 3), ("u004", 5)] {
        if let Some(e) = want.iter_mut().find(|(k, _)| k == key) {
            e.1 = value;
        }
    }
    assert_eq!(stored(dir.path(), &slot), want);

    // The checkpoint holds the first bundle's 30 entries.
    let restored = tempfile::tempdir().expect("tmp");
    let root = restored.path().join("s");
    let store =
        RocksStore::open_checkpoint(&checkpoint, &root, full_config(mp128(), &clock), &slot)
            .expect("open checkpoint");
    drop(store);
    let from_checkpoint = stored(&root, &slot);
    assert_eq!(
        from_checkpoint,
        (0..30).map(|i| (format!("u{i:03}"), 1)).collect::<Vec<_>>()
    );
}

/// Several tables with pending writes: `write_pending` writes them in parallel, every one
/// of them, each key's last write.
#[test]
fn write_pending_writes_every_tables_buffer() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(32 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let names = ["a", "b", "c", "d", "e"];
    {
        let mut store =
            RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("open");
        let mut tables: Vec<RocksMapTable<I64Codec>> = names
            .iter()
            .map(|name| store.open_map_table(name, I64Codec, None).expect("map"))
            .collect();
        for (t, m) in (0_i64..).zip(&mut tables) {
            bundle(m, &(0..40).map(|i| (i, t)).collect::<Vec<_>>(), &[]);
            bundle(m, &[(0, t + 100)], &[1]);
            assert!(m.write_behind_bytes() > 0);
        }
        store.write_pending().expect("write pending");
        for m in &tables {
            assert_eq!(m.write_behind_bytes(), 0);
            assert_eq!(m.write_behind_flushes(), 1);
        }
        // Nothing written since: dropping the tables writes nothing more.
    }
    for (t, name) in (0_i64..).zip(names) {
        let mut want: Vec<(String, i64)> = (2..40).map(|i| (format!("u{i:03}"), t)).collect();
        want.insert(0, ("u000".to_owned(), t + 100));
        assert_eq!(stored_in(dir.path(), &slot, name), want, "table {name}");
    }
}

#[test]
fn a_range_delete_writes_the_older_pending_writes_first() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(32 << 20).expect("slot");
    let clock = ManualClock::new(1);
    {
        let mut store =
            RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("open");
        let mut m = store.open_map_table("m", I64Codec, None).expect("map");
        bundle(&mut m, &(0..20).map(|i| (i, 1)).collect::<Vec<_>>(), &[]);
        bundle(&mut m, &[(5, 7)], &[]);
        assert!(m.write_behind_bytes() > 0);
        // 20 entries: one `delete_range_cf`, after the pending puts it must cover.
        m.begin_bundle(MapHydration::none()).expect("begin");
        let removed = m
            .remove_range(kg(), PREFIX, UserKeyRange::all())
            .expect("remove range");
        assert_eq!(removed, 20);
        m.commit_bundle().expect("commit");
        assert_eq!(m.write_behind_bytes(), 0, "written through");
        bundle(&mut m, &[(3, 9)], &[]);
    }
    assert_eq!(stored(dir.path(), &slot), vec![("u003".to_owned(), 9)]);
}

#[test]
fn a_limit_of_zero_writes_every_commit_through() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(32 << 20)
        .expect("slot")
        .with_write_behind(0);
    let clock = ManualClock::new(1);
    let mut store =
        RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("open");
    let mut m = store.open_map_table("m", I64Codec, None).expect("map");
    bundle(&mut m, &(0..30).map(|i| (i, 1)).collect::<Vec<_>>(), &[4]);
    assert_eq!(m.write_behind_bytes(), 0);
    assert_eq!(m.write_behind_flushes(), 0);
    drop(m);
    drop(store);
    assert_eq!(stored(dir.path(), &slot).len(), 29);
}
