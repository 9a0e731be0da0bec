//! Map tables on RocksDB: the stored bytes, one seek per hydrated prefix, scans of prefixes
//! not hydrated merged with the bundle's writes (forward and reverse), TTL compaction, and
//! the canonical restore through both bulk loaders.

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};
use std::time::Duration;

use keygroup::KeyGroup;
use sfcs_format::MemoryContainer;
use state_api::{
    CanonicalTable, I64Codec, KeyedStateStore, ManualClock, MapHydration, MapStateStore, MapTable,
    ScanDirection, TtlConfig, TtlVisibility, UserKeyRange, restore_canonical_snapshot,
    write_canonical_snapshot,
};
use typed_store::{RocksMapTable, RocksSlot, RocksStore};

use crate::util::{full_config, mp128, raw_entries, table_cf};

fn kg(v: i32) -> KeyGroup {
    KeyGroup::new(v).expect("kg")
}

/// Every visible entry of `prefix` in `range`, in `direction` order.
fn scan_all(
    t: &mut RocksMapTable<I64Codec>,
    key_group: KeyGroup,
    prefix: &[u8],
    range: UserKeyRange<'_>,
    direction: ScanDirection,
) -> Vec<(Vec<u8>, i64)> {
    let mut out = Vec::new();
    t.scan(key_group, prefix, range, direction, &mut |k, v| {
        out.push((k.to_vec(), *v));
        ControlFlow::Continue(())
    })
    .expect("scan");
    out
}

fn user_key(i: usize) -> Vec<u8> {
    format!("u{i:05}").into_bytes()
}

#[test]
fn map_entries_are_flink_map_state_keys_with_keyed_table_values() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1_000);
    let db_dir = {
        let mut store =
            RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("open");
        let mut m = store.open_map_table("m", I64Codec, None).expect("map");
        m.begin_bundle(MapHydration::none()).expect("begin");
        m.put(kg(5), b"k\0", b"u", 7).expect("put");
        m.commit_bundle().expect("commit");
        // Another kind of table cannot open the map's family under the same name.
        drop(m);
        store.db_dir()
    };
    let entries = raw_entries(&db_dir);
    let cf = table_cf(&entries, "m");
    let stored: Vec<_> = entries.iter().filter(|(c, _, _)| *c == cf).collect();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].1, [5, b'k', 0, b'u']);
    assert_eq!(
        stored[0].2,
        [0, 0, 0, 0, 0, 0, 0, 0, 1, 0x80, 0, 0, 0, 0, 0, 0, 7]
    );
    let mut store =
        RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("reopen");
    let err = store
        .open_table("m", I64Codec, None)
        .expect_err("a map table");
    assert!(
        matches!(
            crate::util::backend_error(&err),
            Some(typed_store::Error::TableSchemaMismatch { .. })
        ),
        "{err}"
    );
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one scenario: hydrate, merge, bounds, commit"
)]
fn hydrated_prefixes_need_no_reads_and_other_scans_merge_the_bundle() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mut store =
        RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("open");
    let mut m = store.open_map_table("m", I64Codec, None).expect("map");
    let prefixes: [&[u8]; 3] = [b"a\0", b"b\0", b"c\0"];
    let mut model: BTreeMap<(Vec<u8>, Vec<u8>), i64> = BTreeMap::new();
    m.begin_bundle(MapHydration::none()).expect("begin");
    for (p, prefix) in prefixes.iter().enumerate() {
        for i in 0..100 {
            let v = i64::try_from(p * 1000 + i).expect("small");
            m.put(kg(3), prefix, &user_key(i), v).expect("put");
            model.insert((prefix.to_vec(), user_key(i)), v);
        }
    }
    m.commit_bundle().expect("commit");
    store.flush_table("m").expect("flush");
    // Reopened with state, the table is not complete (a table opened empty keeps every
    // entry and reads nothing: `map_complete.rs`): its bundles hydrate.
    drop((m, store));
    let mut store =
        RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("reopen");
    let mut m = store.open_map_table("m", I64Codec, None).expect("map");

    // Prefix a hydrated: one batched read; its scans and misses read nothing.
    let before = m.stats();
    m.begin_bundle(MapHydration::prefixes(&[(kg(3), b"a\0")]))
        .expect("begin");
    assert_eq!(m.stats().hydration_batches, before.hydration_batches + 1);
    assert_eq!(m.stats().hydrated_keys, before.hydrated_keys + 100);
    let all_a = scan_all(
        &mut m,
        kg(3),
        b"a\0",
        UserKeyRange::all(),
        ScanDirection::Forward,
    );
    assert_eq!(all_a.len(), 100);
    assert_eq!(m.get(kg(3), b"a\0", b"missing").expect("get"), None);
    assert_eq!(m.stats().point_hydrations, before.point_hydrations);

    // Prefix b is not hydrated: writes, removes and a range remove of the bundle are merged
    // into scans of committed state, forward and reverse, with bounds.
    m.put(kg(3), b"b\0", b"u00010x", -1).expect("put between");
    m.put(kg(3), b"b\0", &user_key(20), -2).expect("overwrite");
    m.remove(kg(3), b"b\0", &user_key(30)).expect("remove");
    let removed = m
        .remove_range(
            kg(3),
            b"b\0",
            UserKeyRange::new(
                Bound::Included(&user_key(40)),
                Bound::Excluded(&user_key(50)),
            ),
        )
        .expect("remove range");
    assert_eq!(removed, 10);
    m.put(kg(3), b"b\0", &user_key(45), -3)
        .expect("put into removed range");
    model.insert((b"b\0".to_vec(), b"u00010x".to_vec()), -1);
    model.insert((b"b\0".to_vec(), user_key(20)), -2);
    model.remove(&(b"b\0".to_vec(), user_key(30)));
    for i in 40..50 {
        model.remove(&(b"b\0".to_vec(), user_key(i)));
    }
    model.insert((b"b\0".to_vec(), user_key(45)), -3);
    let expected = |lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>| -> Vec<(Vec<u8>, i64)> {
        model
            .iter()
            .filter(|((p, k), _)| {
                p == b"b\0"
                    && UserKeyRange::new(
                        lo.as_ref().map(Vec::as_slice),
                        hi.as_ref().map(Vec::as_slice),
                    )
                    .contains(k)
            })
            .map(|((_, k), v)| (k.clone(), *v))
            .collect()
    };
    let ranges = [
        (Bound::Unbounded, Bound::Unbounded),
        (Bound::Included(user_key(5)), Bound::Excluded(user_key(60))),
        (Bound::Excluded(user_key(10)), Bound::Included(user_key(45))),
        (Bound::Included(user_key(99)), Bound::Unbounded),
        (Bound::Excluded(user_key(60)), Bound::Excluded(user_key(50))),
    ];
    for (lo, hi) in ranges {
        let range = UserKeyRange::new(
            lo.as_ref().map(Vec::as_slice),
            hi.as_ref().map(Vec::as_slice),
        );
        let want = expected(lo.clone(), hi.clone());
        assert_eq!(
            scan_all(&mut m, kg(3), b"b\0", range, ScanDirection::Forward),
            want,
            "forward {lo:?}..{hi:?}"
        );
        let mut reversed = want.clone();
        reversed.reverse();
        assert_eq!(
            scan_all(&mut m, kg(3), b"b\0", range, ScanDirection::Reverse),
            reversed,
            "reverse {lo:?}..{hi:?}"
        );
    }
    // Early exit, `first` after a removal, `last`.
    let mut visited = 0;
    m.scan(
        kg(3),
        b"b\0",
        UserKeyRange::all(),
        ScanDirection::Forward,
        &mut |_, _| {
            visited += 1;
            if visited == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        },
    )
    .expect("scan");
    assert_eq!(visited, 3);
    m.remove(kg(3), b"b\0", &user_key(0)).expect("remove first");
    assert_eq!(
        m.first(kg(3), b"b\0", UserKeyRange::all()).expect("first"),
        Some((user_key(1), 1001))
    );
    assert_eq!(
        m.last(kg(3), b"b\0", UserKeyRange::all()).expect("last"),
        Some((user_key(99), 1099))
    );
    model.remove(&(b"b\0".to_vec(), user_key(0)));

    // A clear of 100 committed entries (one `delete_range_cf`) and a put inside it.
    let cleared = m
        .remove_range(kg(3), b"c\0", UserKeyRange::all())
        .expect("clear");
    assert_eq!(cleared, 100);
    m.put(kg(3), b"c\0", &user_key(50), 7)
        .expect("put after clear");
    model.retain(|(p, _), _| p != b"c\0");
    model.insert((b"c\0".to_vec(), user_key(50)), 7);
    m.commit_bundle().expect("commit");

    // Committed: a fresh bundle sees exactly the model in every prefix.
    m.begin_bundle(MapHydration::none()).expect("begin");
    for prefix in prefixes {
        let want: Vec<_> = model
            .iter()
            .filter(|((p, _), _)| p == prefix)
            .map(|((_, k), v)| (k.clone(), *v))
            .collect();
        assert_eq!(
            scan_all(
                &mut m,
                kg(3),
                prefix,
                UserKeyRange::all(),
                ScanDirection::Forward
            ),
            want
        );
    }
    m.commit_bundle().expect("commit");
}

#[test]
fn ttl_compaction_filter_applies_to_map_tables() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1_000);
    let mut store =
        RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("open");
    // Expired entries stay visible to scans until something removes them, so a scan shows
    // whether they are still stored.
    let ttl = TtlConfig::new(Duration::from_secs(10))
        .with_visibility(TtlVisibility::ReturnExpiredIfNotCleanedUp);
    let mut m = store.open_map_table("m", I64Codec, Some(ttl)).expect("map");
    m.begin_bundle(MapHydration::none()).expect("begin");
    for i in 0..100 {
        m.put(kg(1), b"p", &user_key(i), 1).expect("put");
    }
    m.commit_bundle().expect("commit");
    store.flush_table("m").expect("flush");
    clock.advance(10_000);
    let stored = |m: &mut RocksMapTable<I64Codec>| {
        m.begin_bundle(MapHydration::none()).expect("begin");
        let n = scan_all(m, kg(1), b"p", UserKeyRange::all(), ScanDirection::Forward).len();
        m.commit_bundle().expect("commit");
        n
    };
    assert_eq!(stored(&mut m), 100, "expired, still stored");
    store.compact_table("m").expect("compact");
    assert_eq!(
        stored(&mut m),
        0,
        "the compaction filter dropped every expired entry"
    );
}

/// Canonical snapshot and restore of a map table: 20 000 entries (the SST loader) and 50
/// (write batches), restored into a fresh store, equal entry for entry.
#[test]
fn canonical_restore_of_map_tables_round_trips_through_both_loaders() {
    for entries in [50_usize, 20_000] {
        let dir = tempfile::tempdir().expect("tmp");
        let slot = RocksSlot::try_new(32 << 20).expect("slot");
        let clock = ManualClock::new(1);
        let mp = mp128();
        let mut source =
            RocksStore::open(dir.path().join("a"), full_config(mp, &clock), &slot).expect("open");
        let mut m = source.open_map_table("m", I64Codec, None).expect("map");
        m.begin_bundle(MapHydration::none()).expect("begin");
        for i in 0..entries {
            let group = kg(i32::try_from(i % 128).expect("small"));
            m.put(
                group,
                format!("p{}", i % 7).as_bytes(),
                &user_key(i),
                i64::try_from(i).expect("small"),
            )
            .expect("put");
        }
        m.commit_bundle().expect("commit");
        let mut container = MemoryContainer::new();
        let tables: [&dyn CanonicalTable; 1] = [&m];
        write_canonical_snapshot(
            "op",
            None,
            &tables,
            &mut container,
            source.config().memory_pool(),
        )
        .expect("snapshot");

        let mut target =
            RocksStore::open(dir.path().join("b"), full_config(mp, &clock), &slot).expect("open");
        let mut r = target.open_map_table("m", I64Codec, None).expect("map");
        let summary = {
            let mut tables: [&mut dyn CanonicalTable; 1] = [&mut r];
            restore_canonical_snapshot(
                "op",
                &[&container],
                &mut tables,
                target.config().memory_pool(),
            )
            .expect("restore")
        };
        assert_eq!(summary.rows, entries);
        for group in mp.key_groups() {
            assert_eq!(
                r.export_key_group(group).expect("export"),
                m.export_key_group(group).expect("export"),
                "{entries} entries, key group {}",
                group.get()
            );
        }
        r.begin_bundle(MapHydration::none()).expect("begin");
        assert_eq!(
            r.get(kg(3), b"p3", &user_key(3)).expect("get").copied(),
            Some(3)
        );
        r.commit_bundle().expect("commit");
    }
}
