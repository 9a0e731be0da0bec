//! The complete map table: a map table without TTL opened on an empty column family keeps
//! every entry in its working set across bundles, so it reads nothing from RocksDB (no
//! hydration, no point read, scans from memory) while every commit reaches RocksDB (through
//! its write-behind buffer, `map_write_behind.rs`, or written through). A pool
//! refusal drops its clean entries and it reads again from then on; a table opened with
//! state, a restore or a native restore is incomplete. No reader sees a difference.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use keygroup::KeyGroup;
use sfcs_format::MemoryContainer;
use state_api::{
    BoundedMemoryPool, I64Codec, KeyedStateStore, ManualClock, MapHydration, MapStateStore,
    MapTable, MemoryPool, NativeSnapshot, ScanDirection, UserKeyRange, restore_canonical_snapshot,
    write_canonical_snapshot,
};
use typed_store::{RocksMapTable, RocksSlot, RocksStore};

use crate::util::{full_config, mp128};

fn kg(v: i32) -> KeyGroup {
    KeyGroup::new(v).expect("kg")
}

fn prefix(p: usize) -> Vec<u8> {
    format!("p{p:03}\0").into_bytes()
}

fn user_key(i: usize) -> Vec<u8> {
    format!("u{i:05}").into_bytes()
}

type Model = BTreeMap<(Vec<u8>, Vec<u8>), i64>;

/// One bundle of `n` puts over 10 prefixes (values from `round`), a remove of every 7th
/// key written and a range remove of prefix 9, applied to the table and the model; the
/// prefixes named for hydration when `named`.
fn bundle(m: &mut RocksMapTable<I64Codec>, model: &mut Model, round: usize, n: usize, named: bool) {
    let prefixes: Vec<Vec<u8>> = (0..10).map(prefix).collect();
    let hydrate: Vec<(KeyGroup, &[u8])> = prefixes.iter().map(|p| (kg(3), p.as_slice())).collect();
    let hydrate = if named {
        MapHydration::prefixes(&hydrate)
    } else {
        MapHydration::none()
    };
    m.begin_bundle(hydrate).expect("begin");
    for i in 0..n {
        let (pre, user) = (prefix(i % 10), user_key(i + round * 7));
        let value = i64::try_from(round * 100_000 + i).expect("small");
        m.put(kg(3), &pre, &user, value).expect("put");
        model.insert((pre.clone(), user.clone()), value);
        if i % 7 == 0 {
            m.remove(kg(3), &pre, &user).expect("remove");
            model.remove(&(pre, user));
        }
    }
    let removed = m
        .remove_range(kg(3), &prefix(9), UserKeyRange::all())
        .expect("remove range");
    let before = model.len();
    model.retain(|(p, _), _| *p != prefix(9));
    assert_eq!(
        usize::try_from(removed).expect("small"),
        before - model.len()
    );
    m.commit_bundle().expect("commit");
}

/// Every visible entry, prefix by prefix, forward and reverse, checked against each other.
fn read_back(m: &mut RocksMapTable<I64Codec>) -> Model {
    let mut out = Model::new();
    m.begin_bundle(MapHydration::none()).expect("begin");
    for p in (0..10).map(prefix) {
        let mut forward = Vec::new();
        m.scan(
            kg(3),
            &p,
            UserKeyRange::all(),
            ScanDirection::Forward,
            &mut |k, v| {
                forward.push((k.to_vec(), *v));
                ControlFlow::Continue(())
            },
        )
        .expect("scan");
        let mut reverse = Vec::new();
        m.scan(
            kg(3),
            &p,
            UserKeyRange::all(),
            ScanDirection::Reverse,
            &mut |k, v| {
                reverse.push((k.to_vec(), *v));
                ControlFlow::Continue(())
            },
        )
        .expect("scan");
        reverse.reverse();
        assert_eq!(forward, reverse);
        for (k, v) in forward {
            assert_eq!(m.get(kg(3), &p, &k).expect("get"), Some(&v));
            out.insert((p.clone(), k), v);
        }
    }
    m.commit_bundle().expect("commit");
    out
}

fn reads(m: &RocksMapTable<I64Codec>) -> (u64, u64, u64) {
    let s = m.stats();
    (s.hydration_batches, s.hydrated_keys, s.point_hydrations)
}

#[test]
fn a_map_table_opened_empty_reads_nothing_and_keeps_its_state_across_bundles() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mut store =
        RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("open");
    let mut m = store.open_map_table("m", I64Codec, None).expect("map");
    let mut model = Model::new();
    for round in 0..5 {
        bundle(&mut m, &mut model, round, 300, true);
    }
    assert_eq!(read_back(&mut m), model);
    assert_eq!(reads(&m), (0, 0, 0), "a complete table reads nothing");
    assert!(m.reserved_bytes() > 0, "its entries stay resident, charged");

    // Every commit was written through: a canonical snapshot (RocksDB's content) and a
    // table reopened on it hold the same entries, and that table reads them.
    let mut container = MemoryContainer::new();
    let pool = Arc::clone(store.config().memory_pool());
    write_canonical_snapshot("op", None, &[&m], &mut container, &pool).expect("snapshot");
    drop((m, store));
    let mut store =
        RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("reopen");
    let mut reopened = store.open_map_table("m", I64Codec, None).expect("map");
    assert_eq!(read_back(&mut reopened), model);
    assert!(
        reads(&reopened).0 + reads(&reopened).2 > 0,
        "opened with state: it reads"
    );

    // Restored into a fresh store's (empty, hence complete) table: the restore makes it
    // incomplete, and it serves the restored entries.
    let dir2 = tempfile::tempdir().expect("tmp");
    let mut store2 =
        RocksStore::open(dir2.path(), full_config(mp128(), &clock), &slot).expect("open");
    let mut fresh = store2.open_map_table("m", I64Codec, None).expect("map");
    bundle(&mut fresh, &mut Model::new(), 9, 50, true); // state that the restore replaces
    let pool2 = Arc::clone(store2.config().memory_pool());
    restore_canonical_snapshot("op", &[&container], &mut [&mut fresh], &pool2).expect("restore");
    assert_eq!(read_back(&mut fresh), model);
    assert!(reads(&fresh).0 + reads(&fresh).2 > 0);
}

#[test]
fn a_refusal_mid_bundle_drops_the_clean_entries_and_the_bundle_goes_on() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let capacity = 64 << 10;
    let pool: Arc<BoundedMemoryPool> = Arc::new(BoundedMemoryPool::new(capacity));
    let config = full_config(mp128(), &clock).with_memory_pool(pool.clone());
    let mut store = RocksStore::open(dir.path(), config, &slot).expect("open");
    let mut m = store.open_map_table("m", I64Codec, None).expect("map");
    let mut model = Model::new();
    bundle(&mut m, &mut model, 0, 500, false);
    let resident = m.reserved_bytes();
    assert!(
        resident > 0 && resident <= capacity / 2,
        "complete after the first bundle, under half the pool: {resident}"
    );
    // A bundle of new keys whose changes fit the pool alone but not beside the resident
    // entries: it succeeds only because the refusal drops those (clean) entries.
    let per_entry = resident / model.len();
    let n = capacity / per_entry - 100;
    assert!(n * per_entry + resident > capacity);
    bundle(&mut m, &mut model, 1_000, n, false);
    assert_eq!(
        m.reserved_bytes(),
        0,
        "incomplete: nothing kept after the commit"
    );
    assert_eq!(read_back(&mut m), model);
    assert!(reads(&m).2 > 0, "it reads again");
}

#[test]
fn a_refusing_pool_makes_the_table_incomplete_and_nothing_is_lost() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    // Room for a few hundred resident entries: 3,000 entries overflow it.
    let pool: Arc<BoundedMemoryPool> = Arc::new(BoundedMemoryPool::new(64 << 10));
    let config = full_config(mp128(), &clock).with_memory_pool(pool.clone());
    let mut store = RocksStore::open(dir.path(), config, &slot).expect("open");
    let mut m = store.open_map_table("m", I64Codec, None).expect("map");
    let mut model = Model::new();
    // Nothing named for hydration: an incomplete table's hydration of every prefix would
    // take the whole pool, as before this table kept anything across bundles.
    for round in 0..10 {
        bundle(&mut m, &mut model, round, 300, false);
        assert!(pool.used() <= 64 << 10);
    }
    assert!(reads(&m).2 > 0, "the refusal made it read again");
    assert_eq!(read_back(&mut m), model);
}

#[test]
fn a_native_restore_drops_the_complete_working_set() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mut store =
        RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("open");
    let mut m = store.open_map_table("m", I64Codec, None).expect("map");
    let mut model = Model::new();
    bundle(&mut m, &mut model, 0, 200, true);
    let snapshot = store.native_snapshot().expect("snapshot");
    let saved = model.clone();
    bundle(&mut m, &mut model, 1, 200, true);
    assert_ne!(model, saved);
    store.restore_native(&snapshot).expect("restore");
    assert_eq!(
        read_back(&mut m),
        saved,
        "the restored state, not the cached one"
    );
}
