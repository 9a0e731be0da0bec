//! Map-table cases: point access, ordered scans merged with uncommitted writes, range
//! removes, TTL, memory, misuse, canonical snapshot and rescale.

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;
use std::time::Duration;

use keygroup::{KeyGroup, MaxParallelism, Parallelism};
use sfcs_format::Container;

use super::{StoreFactory, full_config, key_group_of, max_parallelism, snapshot_of};
use crate::codec::I64Codec;
use crate::error::Error;
use crate::map::{MapHydration, MapStateStore, MapTable, ScanDirection, UserKeyRange};
use crate::memory::{BoundedMemoryPool, MemoryPool};
use crate::snapshot::restore_canonical_snapshot;
use crate::table::{KeyedStateStore, StoreConfig};
use crate::ttl::{ManualClock, TtlConfig, TtlVisibility};

type Entries = Vec<(Vec<u8>, i64)>;

/// Every visible entry of `prefix` in `range`, in `direction` order.
pub(crate) fn scan_all<T: MapTable<Codec = I64Codec>>(
    t: &mut T,
    kg: KeyGroup,
    prefix: &[u8],
    range: UserKeyRange<'_>,
    direction: ScanDirection,
) -> Entries {
    let mut out = Vec::new();
    t.scan(kg, prefix, range, direction, &mut |k, v| {
        out.push((k.to_vec(), *v));
        ControlFlow::Continue(())
    })
    .expect("scan");
    out
}

fn open_map<S: MapStateStore>(store: &mut S, name: &str) -> S::MapTable<I64Codec> {
    store
        .open_map_table(name, I64Codec, None)
        .expect("open_map_table")
}

fn kg_of(prefix: &[u8], mp: MaxParallelism) -> KeyGroup {
    key_group_of(prefix, mp)
}

/// `upsert` inserts where there is no visible value (absent, removed in the bundle, removed
/// in an earlier one) and updates in place where there is, within and across bundles, like
/// `update` then `put`; each dirty entry is written once per bundle.
pub fn map_upsert_inserts_or_updates<F>(f: &F)
where
    F: StoreFactory,
    F::Store: MapStateStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let mut store = f.create(full_config(mp, &clock));
    let mut t = open_map(&mut store, "m");
    let kg = kg_of(b"p1", mp);
    let bump = |v: &mut i64| *v += 10;
    t.begin_bundle(MapHydration::prefixes(&[(kg, b"p1")]))
        .expect("begin");
    assert!(
        !t.upsert(kg, b"p1", b"a", || 1, bump).expect("upsert"),
        "absent: inserted"
    );
    assert!(
        t.upsert(kg, b"p1", b"a", || 1, bump).expect("upsert"),
        "present: updated"
    );
    assert_eq!(t.get(kg, b"p1", b"a").expect("get"), Some(&11));
    t.put(kg, b"p1", b"b", 2).expect("put");
    t.remove(kg, b"p1", b"b").expect("remove");
    assert!(
        !t.upsert(kg, b"p1", b"b", || 7, bump).expect("upsert"),
        "removed: inserted"
    );
    assert_eq!(t.get(kg, b"p1", b"b").expect("get"), Some(&7));
    t.commit_bundle().expect("commit");
    assert_eq!(t.stats().written_keys, 2, "a and b once each");

    t.begin_bundle(MapHydration::none()).expect("begin");
    assert!(
        t.upsert(kg, b"p1", b"a", || 1, bump).expect("upsert"),
        "committed: updated"
    );
    t.remove(kg, b"p1", b"b").expect("remove");
    t.commit_bundle().expect("commit");
    t.begin_bundle(MapHydration::entries(&[(kg, b"p1", b"b")]))
        .expect("begin");
    assert!(
        !t.upsert(kg, b"p1", b"b", || 3, bump).expect("upsert"),
        "removed before: inserted"
    );
    let all = scan_all(
        &mut t,
        kg,
        b"p1",
        UserKeyRange::all(),
        ScanDirection::Forward,
    );
    assert_eq!(all, vec![(b"a".to_vec(), 21), (b"b".to_vec(), 3)]);
    t.commit_bundle().expect("commit");
    t.begin_bundle(MapHydration::none()).expect("begin");
    let all = scan_all(
        &mut t,
        kg,
        b"p1",
        UserKeyRange::all(),
        ScanDirection::Reverse,
    );
    assert_eq!(all, vec![(b"b".to_vec(), 3), (b"a".to_vec(), 21)]);
    t.commit_bundle().expect("commit");
}

/// Point get/put/update/remove within and across bundles; each dirty entry is written once.
pub fn map_get_put_update_remove<F>(f: &F)
where
    F: StoreFactory,
    F::Store: MapStateStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let mut store = f.create(full_config(mp, &clock));
    let mut t = open_map(&mut store, "m");
    let kg = kg_of(b"p1", mp);
    t.begin_bundle(MapHydration::prefixes(&[(kg, b"p1")]))
        .expect("begin");
    assert_eq!(t.get(kg, b"p1", b"a").expect("get"), None);
    t.put(kg, b"p1", b"a", 1).expect("put");
    t.put(kg, b"p1", b"b", 2).expect("put");
    t.put(kg, b"p1", b"a", 3).expect("put");
    assert_eq!(t.get(kg, b"p1", b"a").expect("get"), Some(&3));
    assert_eq!(
        t.update(kg, b"p1", b"b", |v| {
            *v += 10;
            *v
        })
        .expect("update"),
        Some(12)
    );
    assert_eq!(
        t.update(kg, b"p1", b"zz", |v| *v).expect("update"),
        None,
        "absent"
    );
    t.commit_bundle().expect("commit");
    let written = t.stats().written_keys;
    assert_eq!(written, 2, "a and b written once each");

    t.begin_bundle(MapHydration::entries(&[(kg, b"p1", b"a")]))
        .expect("begin");
    assert_eq!(t.get(kg, b"p1", b"a").expect("get"), Some(&3));
    assert_eq!(
        t.get(kg, b"p1", b"b").expect("get"),
        Some(&12),
        "not named: still served"
    );
    t.remove(kg, b"p1", b"a").expect("remove");
    t.remove(kg, b"p1", b"never")
        .expect("remove of absent entry");
    assert_eq!(t.get(kg, b"p1", b"a").expect("get"), None);
    assert_eq!(
        t.update(kg, b"p1", b"a", |v| *v).expect("update"),
        None,
        "removed"
    );
    t.commit_bundle().expect("commit");

    t.begin_bundle(MapHydration::none()).expect("begin");
    assert_eq!(t.get(kg, b"p1", b"a").expect("get"), None);
    assert_eq!(t.get(kg, b"p1", b"b").expect("get"), Some(&12));
    t.put(kg, b"p1", b"a", 5).expect("re-put");
    t.commit_bundle().expect("commit");
    t.begin_bundle(MapHydration::none()).expect("begin");
    assert_eq!(t.get(kg, b"p1", b"a").expect("get"), Some(&5));
    t.commit_bundle().expect("commit");
}

fn fill_prefixes<T: MapTable<Codec = I64Codec>>(
    t: &mut T,
    mp: MaxParallelism,
) -> BTreeMap<(Vec<u8>, Vec<u8>), i64> {
    // Prefixes that end in 0xff and user keys at the byte edges test the bound arithmetic.
    let prefixes: [&[u8]; 3] = [b"a\x01", b"a\xff", b"b\x00"];
    let user_keys: [&[u8]; 6] = [b"", b"\x00", b"\x00\x00", b"m", b"\xff", b"\xff\xff"];
    let mut model = BTreeMap::new();
    let hydrate: Vec<(KeyGroup, &[u8])> = prefixes.iter().map(|p| (kg_of(p, mp), *p)).collect();
    t.begin_bundle(MapHydration::prefixes(&hydrate))
        .expect("begin");
    for (i, p) in prefixes.iter().enumerate() {
        for (j, u) in user_keys.iter().enumerate() {
            let v = (i * 10 + j) as i64;
            t.put(kg_of(p, mp), p, u, v).expect("put");
            model.insert((p.to_vec(), u.to_vec()), v);
        }
    }
    t.commit_bundle().expect("commit");
    model
}

fn model_scan(
    model: &BTreeMap<(Vec<u8>, Vec<u8>), i64>,
    prefix: &[u8],
    range: UserKeyRange<'_>,
    direction: ScanDirection,
) -> Entries {
    let mut out: Entries = model
        .iter()
        .filter(|((p, u), _)| p == prefix && range.contains(u))
        .map(|((_, u), v)| (u.clone(), *v))
        .collect();
    if direction == ScanDirection::Reverse {
        out.reverse();
    }
    out
}

/// Scans visit exactly one prefix's entries in user-key order, forward and reverse, inside
/// inclusive, exclusive and unbounded ranges; `first`/`last`; early exit.
pub fn map_scan_order_bounds_and_reverse<F>(f: &F)
where
    F: StoreFactory,
    F::Store: MapStateStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let mut store = f.create(full_config(mp, &clock));
    let mut t = open_map(&mut store, "m");
    let model = fill_prefixes(&mut t, mp);
    let keys: [&[u8]; 5] = [b"", b"\x00", b"\x00\x01", b"m", b"\xff"];
    let mut ranges = vec![UserKeyRange::all()];
    for s in keys {
        ranges.push(UserKeyRange::from(s));
        ranges.push(UserKeyRange::before(s));
        for e in keys {
            ranges.push(UserKeyRange::new(Bound::Included(s), Bound::Included(e)));
            ranges.push(UserKeyRange::new(Bound::Excluded(s), Bound::Excluded(e)));
            ranges.push(UserKeyRange::new(Bound::Included(s), Bound::Excluded(e)));
        }
    }
    for prefix in [&b"a\x01"[..], b"a\xff", b"b\x00", b"a", b"zz"] {
        let kg = kg_of(prefix, mp);
        t.begin_bundle(MapHydration::none()).expect("begin");
        for range in &ranges {
            for dir in [ScanDirection::Forward, ScanDirection::Reverse] {
                assert_eq!(
                    scan_all(&mut t, kg, prefix, *range, dir),
                    model_scan(&model, prefix, *range, dir),
                    "prefix {prefix:?} {range:?} {dir:?}"
                );
            }
            let expect = model_scan(&model, prefix, *range, ScanDirection::Forward);
            assert_eq!(
                t.first(kg, prefix, *range).expect("first"),
                expect.first().cloned()
            );
            assert_eq!(
                t.last(kg, prefix, *range).expect("last"),
                expect.last().cloned()
            );
        }
        // Early exit after two entries.
        let mut seen = 0;
        t.scan(
            kg,
            prefix,
            UserKeyRange::all(),
            ScanDirection::Forward,
            &mut |_, _| {
                seen += 1;
                if seen == 2 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        )
        .expect("scan");
        assert_eq!(
            seen,
            model_scan(&model, prefix, UserKeyRange::all(), ScanDirection::Forward)
                .len()
                .min(2)
        );
        t.commit_bundle().expect("commit");
    }
}

/// A scan sees the committed state merged with the bundle's own puts, updates, removes and
/// range removes, in order, before and after the commit.
pub fn map_scan_merges_uncommitted_writes<F>(f: &F)
where
    F: StoreFactory,
    F::Store: MapStateStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let mut store = f.create(full_config(mp, &clock));
    let mut t = open_map(&mut store, "m");
    let mut model = fill_prefixes(&mut t, mp);
    let p: &[u8] = b"a\xff";
    let kg = kg_of(p, mp);
    // Not hydrated: the committed entries come from the backend.
    t.begin_bundle(MapHydration::none()).expect("begin");
    t.put(kg, p, b"\x00\x00\x00", 100).expect("put");
    t.put(kg, p, b"m", 101).expect("overwrite");
    t.remove(kg, p, b"\x00").expect("remove");
    t.update(kg, p, b"\xff", |v| *v = -1).expect("update");
    assert_eq!(
        t.remove_range(
            kg,
            p,
            UserKeyRange::new(Bound::Excluded(b"m"), Bound::Included(b"\xff\xff"))
        )
        .expect("remove_range"),
        2
    );
    t.put(kg, p, b"\xff\xff", 102)
        .expect("put inside the removed range");
    for (u, v) in [
        (&b"\x00\x00\x00"[..], Some(100)),
        (b"m", Some(101)),
        (b"\x00", None),
        (b"\xff", None),
        (b"\xff\xff", Some(102)),
    ] {
        match v {
            Some(v) => model.insert((p.to_vec(), u.to_vec()), v),
            None => model.remove(&(p.to_vec(), u.to_vec())),
        };
    }
    for dir in [ScanDirection::Forward, ScanDirection::Reverse] {
        assert_eq!(
            scan_all(&mut t, kg, p, UserKeyRange::all(), dir),
            model_scan(&model, p, UserKeyRange::all(), dir),
            "uncommitted, {dir:?}"
        );
    }
    assert_eq!(
        t.first(kg, p, UserKeyRange::from(b"\x01")).expect("first"),
        Some((b"m".to_vec(), 101))
    );
    t.commit_bundle().expect("commit");
    t.begin_bundle(MapHydration::prefixes(&[(kg, p)]))
        .expect("begin");
    for dir in [ScanDirection::Forward, ScanDirection::Reverse] {
        assert_eq!(
            scan_all(&mut t, kg, p, UserKeyRange::all(), dir),
            model_scan(&model, p, UserKeyRange::all(), dir),
            "committed, {dir:?}"
        );
    }
    // Other prefixes are untouched.
    for other in [&b"a\x01"[..], b"b\x00"] {
        let okg = kg_of(other, mp);
        assert_eq!(
            scan_all(
                &mut t,
                okg,
                other,
                UserKeyRange::all(),
                ScanDirection::Forward
            ),
            model_scan(&model, other, UserKeyRange::all(), ScanDirection::Forward)
        );
    }
    t.commit_bundle().expect("commit");
}

/// `remove_range` of a whole prefix (Flink's `MapState.clear()`) and of a sub-range, inside
/// one bundle and across bundles; re-inserts after a clear.
pub fn map_remove_range_inside_and_across_bundles<F>(f: &F)
where
    F: StoreFactory,
    F::Store: MapStateStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let mut store = f.create(full_config(mp, &clock));
    let mut t = open_map(&mut store, "m");
    let model = fill_prefixes(&mut t, mp);
    let p: &[u8] = b"a\x01";
    let kg = kg_of(p, mp);
    t.begin_bundle(MapHydration::none()).expect("begin");
    assert_eq!(
        t.remove_range(kg, p, UserKeyRange::all()).expect("clear"),
        6
    );
    assert_eq!(
        scan_all(&mut t, kg, p, UserKeyRange::all(), ScanDirection::Forward),
        []
    );
    assert_eq!(t.get(kg, p, b"m").expect("get"), None);
    assert_eq!(
        t.remove_range(kg, p, UserKeyRange::all())
            .expect("clear again"),
        0
    );
    t.put(kg, p, b"new", 1).expect("put after clear");
    t.commit_bundle().expect("commit");
    t.begin_bundle(MapHydration::none()).expect("begin");
    assert_eq!(
        scan_all(&mut t, kg, p, UserKeyRange::all(), ScanDirection::Reverse),
        [(b"new".to_vec(), 1)]
    );
    // A committed sub-range.
    let q: &[u8] = b"b\x00";
    let qkg = kg_of(q, mp);
    let range = UserKeyRange::new(Bound::Included(b"\x00"), Bound::Excluded(b"m"));
    assert_eq!(t.remove_range(qkg, q, range).expect("range"), 2);
    t.commit_bundle().expect("commit");
    t.begin_bundle(MapHydration::prefixes(&[(qkg, q)]))
        .expect("begin");
    let expected: Entries = model_scan(&model, q, UserKeyRange::all(), ScanDirection::Forward)
        .into_iter()
        .filter(|(u, _)| !range.contains(u))
        .collect();
    assert_eq!(
        scan_all(&mut t, qkg, q, UserKeyRange::all(), ScanDirection::Forward),
        expected
    );
    // The neighbouring prefix that ends in 0xff is untouched by the clear of a\x01.
    let r: &[u8] = b"a\xff";
    assert_eq!(
        scan_all(
            &mut t,
            kg_of(r, mp),
            r,
            UserKeyRange::all(),
            ScanDirection::Forward
        ),
        model_scan(&model, r, UserKeyRange::all(), ScanDirection::Forward)
    );
    t.commit_bundle().expect("commit");
}

/// Operations outside a bundle, a second `begin_bundle`, and key groups out of range are
/// rejected and change nothing; a name is opened once across table kinds.
pub fn map_misuse_is_rejected<F>(f: &F)
where
    F: StoreFactory,
    F::Store: MapStateStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let config = StoreConfig::for_subtask(mp, Parallelism::new(2).expect("p"), 0)
        .expect("config")
        .with_clock(Arc::new(clock.clone()));
    let outside = KeyGroup::new(127).expect("kg");
    let inside = KeyGroup::new(3).expect("kg");
    let mut store = f.create(config);
    let _keyed = store
        .open_table("shared-name", I64Codec, None)
        .expect("open");
    let err = store
        .open_map_table("shared-name", I64Codec, None)
        .map(|_| ())
        .expect_err("must be refused");
    assert!(matches!(err, Error::TableExists { .. }), "{err}");
    let mut t = open_map(&mut store, "m");
    let bundle = |e: &Error| matches!(e, Error::BundleState { .. });
    assert!(bundle(
        &t.get(inside, b"p", b"u")
            .map(|_| ())
            .expect_err("must be refused")
    ));
    assert!(bundle(
        &t.put(inside, b"p", b"u", 1).expect_err("must be refused")
    ));
    assert!(bundle(
        &t.remove(inside, b"p", b"u").expect_err("must be refused")
    ));
    assert!(bundle(
        &t.remove_range(inside, b"p", UserKeyRange::all())
            .expect_err("must be refused")
    ));
    assert!(bundle(
        &t.update(inside, b"p", b"u", |_| ())
            .expect_err("must be refused")
    ));
    assert!(bundle(
        &t.scan(
            inside,
            b"p",
            UserKeyRange::all(),
            ScanDirection::Forward,
            &mut |_, _| { ControlFlow::Continue(()) }
        )
        .expect_err("must be refused")
    ));
    assert!(bundle(&t.commit_bundle().expect_err("must be refused")));
    let err = t
        .begin_bundle(MapHydration::prefixes(&[(outside, b"p")]))
        .expect_err("must be refused");
    assert!(
        matches!(err, Error::KeyGroupOutOfRange { key_group: 127, .. }),
        "{err}"
    );
    t.begin_bundle(MapHydration::none())
        .expect("begin after a failed begin");
    assert!(bundle(
        &t.begin_bundle(MapHydration::none())
            .expect_err("must be refused")
    ));
    let oor = |e: &Error| matches!(e, Error::KeyGroupOutOfRange { .. });
    assert!(oor(&t
        .put(outside, b"p", b"u", 1)
        .expect_err("must be refused")));
    assert!(oor(&t
        .get(outside, b"p", b"u")
        .map(|_| ())
        .expect_err("must be refused")));
    assert!(oor(&t
        .remove_range(outside, b"p", UserKeyRange::all())
        .expect_err("must be refused")));
    t.put(inside, b"p", b"u", 1).expect("put");
    t.commit_bundle().expect("commit");
    assert_eq!(t.sweep_expired(10).expect("sweep").removed, 0);
}

/// Map entries snapshot canonically (key column = prefix ‖ user key) and restore across a
/// rescale 3 -> 2 and 2 -> 5, every entry in the subtask owning its key group; a restore
/// replaces what the target held.
pub fn map_snapshot_restore_and_rescale<F>(f: &F)
where
    F: StoreFactory,
    F::Store: MapStateStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let prefixes: Vec<Vec<u8>> = (0..150)
        .map(|i| format!("key-{i:04}|").into_bytes())
        .collect();
    // 1 to 4 entries per prefix, by the prefix's last digit.
    let entries = |p: &[u8]| {
        let n = usize::from(p[p.len() - 2] % 4);
        (0..=n).map(move |j| (vec![j as u8; j + 1], j as i64))
    };
    let mut containers = Vec::new();
    let old_p = Parallelism::new(3).expect("p");
    for index in 0..3 {
        let config = StoreConfig::for_subtask(mp, old_p, index)
            .expect("config")
            .with_clock(Arc::new(clock.clone()));
        let range = config.key_groups();
        let mut store = f.create(config);
        let mut t = open_map(&mut store, "m");
        t.begin_bundle(MapHydration::none()).expect("begin");
        for p in prefixes.iter().filter(|p| range.contains(kg_of(p, mp))) {
            for (u, v) in entries(p) {
                t.put(kg_of(p, mp), p, &u, v + p.len() as i64).expect("put");
            }
        }
        t.commit_bundle().expect("commit");
        containers.push(snapshot_of(&store, "op", &[&t]));
    }
    let sources: Vec<&dyn Container> = containers.iter().map(|c| c as &dyn Container).collect();
    for new_p in [2, 5] {
        let new_p = Parallelism::new(new_p).expect("p");
        for index in 0..new_p.get() {
            let config = StoreConfig::for_subtask(mp, new_p, index)
                .expect("config")
                .with_clock(Arc::new(clock.clone()));
            let range = config.key_groups();
            let mut store = f.create(config);
            let mut t = open_map(&mut store, "m");
            // State the restore must replace.
            let stale_kg = KeyGroup::new(range.start()).expect("kg");
            t.begin_bundle(MapHydration::none()).expect("begin");
            t.put(stale_kg, b"stale|", b"x", 9).expect("put");
            t.commit_bundle().expect("commit");
            let pool = Arc::clone(store.config().memory_pool());
            restore_canonical_snapshot("op", &sources, &mut [&mut t], &pool).expect("restore");
            t.begin_bundle(MapHydration::none()).expect("begin");
            assert_eq!(
                t.get(stale_kg, b"stale|", b"x").expect("get"),
                None,
                "replaced"
            );
            for p in &prefixes {
                let kg = kg_of(p, mp);
                if !range.contains(kg) {
                    continue;
                }
                let expected: Entries = entries(p).map(|(u, v)| (u, v + p.len() as i64)).collect();
                assert_eq!(
                    scan_all(&mut t, kg, p, UserKeyRange::all(), ScanDirection::Forward),
                    expected,
                    "prefix {p:?} at {new_p:?}/{index}"
                );
            }
            t.commit_bundle().expect("commit");
        }
    }
}

/// TTL per entry: an expired entry is invisible to point reads and scans (or visible under
/// `ReturnExpiredIfNotCleanedUp` to scans until cleaned), is not exported, and a sweep
/// removes it.
pub fn map_ttl_expiry<F>(f: &F)
where
    F: StoreFactory,
    F::Store: MapStateStore,
{
    let mp = max_parallelism(128);
    for visibility in [
        TtlVisibility::NeverReturnExpired,
        TtlVisibility::ReturnExpiredIfNotCleanedUp,
    ] {
        let clock = ManualClock::new(1_000);
        let mut store = f.create(full_config(mp, &clock));
        let ttl = TtlConfig::new(Duration::from_millis(100)).with_visibility(visibility);
        let mut t = store
            .open_map_table("m", I64Codec, Some(ttl))
            .expect("open");
        let p: &[u8] = b"prefix|";
        let kg = kg_of(p, mp);
        t.begin_bundle(MapHydration::none()).expect("begin");
        t.put(kg, p, b"old", 1).expect("put");
        t.commit_bundle().expect("commit");
        clock.advance(60);
        t.begin_bundle(MapHydration::none()).expect("begin");
        t.put(kg, p, b"young", 2).expect("put");
        t.commit_bundle().expect("commit");
        clock.advance(60); // old: 120 ms, expired; young: 60 ms.
        t.begin_bundle(MapHydration::none()).expect("begin");
        let seen = scan_all(&mut t, kg, p, UserKeyRange::all(), ScanDirection::Forward);
        match visibility {
            TtlVisibility::NeverReturnExpired => assert_eq!(seen, [(b"young".to_vec(), 2)]),
            TtlVisibility::ReturnExpiredIfNotCleanedUp => {
                assert_eq!(seen, [(b"old".to_vec(), 1), (b"young".to_vec(), 2)]);
            }
        }
        t.commit_bundle().expect("commit");
        let snap = snapshot_of(&store, "op", &[&t]);
        let mut fresh_store = f.create(full_config(mp, &clock));
        let mut fresh = store_map(&mut fresh_store, ttl);
        let pool = Arc::clone(fresh_store.config().memory_pool());
        let summary =
            restore_canonical_snapshot("op", &[&snap], &mut [&mut fresh], &pool).expect("restore");
        assert_eq!(summary.rows, 1, "the expired entry is not exported");
        t.begin_bundle(MapHydration::none()).expect("begin");
        let got = t.get(kg, p, b"old").expect("get").copied();
        match visibility {
            TtlVisibility::NeverReturnExpired => assert_eq!(got, None),
            TtlVisibility::ReturnExpiredIfNotCleanedUp => assert_eq!(got, Some(1)),
        }
        t.commit_bundle().expect("commit");
        t.begin_bundle(MapHydration::none()).expect("begin");
        assert_eq!(
            t.get(kg, p, b"old").expect("get"),
            None,
            "cleared by the read"
        );
        assert_eq!(t.get(kg, p, b"young").expect("get"), Some(&2));
        t.commit_bundle().expect("commit");
    }
}

fn store_map<S: MapStateStore>(store: &mut S, ttl: TtlConfig) -> S::MapTable<I64Codec> {
    store
        .open_map_table("m", I64Codec, Some(ttl))
        .expect("open")
}

/// A put the memory pool refuses fails with `MemoryExhausted` and leaves the entry as it
/// was; everything accepted before is committed and readable.
pub fn map_memory_exhausted_put_leaves_state_unchanged<F>(f: &F)
where
    F: StoreFactory,
    F::Store: MapStateStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(16 << 10));
    let mut store = f.create(full_config(mp, &clock).with_memory_pool(Arc::clone(&pool)));
    let mut t = open_map(&mut store, "m");
    let p: &[u8] = b"p|";
    let kg = kg_of(p, mp);
    t.begin_bundle(MapHydration::none()).expect("begin");
    let mut accepted = Vec::new();
    let mut refused = None;
    for i in 0..100_000_u32 {
        let user_key = i.to_be_bytes();
        match t.put(kg, p, &user_key, i64::from(i)) {
            Ok(()) => accepted.push(i),
            Err(err) => {
                assert!(matches!(err, Error::MemoryExhausted { .. }), "{err}");
                refused = Some(i);
                break;
            }
        }
    }
    let refused = refused.expect("a 16 KiB pool refuses 100,000 entries");
    assert_eq!(
        t.get(kg, p, &refused.to_be_bytes()).expect("get"),
        None,
        "refused entry absent"
    );
    t.commit_bundle().expect("commit");
    t.begin_bundle(MapHydration::none()).expect("begin");
    let seen = scan_all(&mut t, kg, p, UserKeyRange::all(), ScanDirection::Forward);
    assert_eq!(seen.len(), accepted.len());
    assert!(
        seen.iter()
            .zip(&accepted)
            .all(|((u, v), i)| u == &i.to_be_bytes() && *v == i64::from(*i))
    );
    t.commit_bundle().expect("commit");
    assert!(pool.used() <= 16 << 10);
}

/// The model-based case for map tables: random bundles of puts, updates, removes, range
/// removes, gets and scans (both directions, random bounds) against a `BTreeMap`, with
/// canonical snapshot + restore in between.
pub fn map_model_based_operations_match_btreemap<F>(f: &F)
where
    F: StoreFactory,
    F::Store: MapStateStore,
{
    super::map_model::run(f);
}

/// Fills a map table and a timer table of a full-range store of `f` with the same logical
/// state every time: 120 prefixes of 1 to 4 entries and 300 timers.
type Filled<S> = (
    S,
    <S as MapStateStore>::MapTable<I64Codec>,
    <S as crate::timer::TimerStateStore>::TimerTable,
);

fn fill_map_and_timers<F>(f: &F, clock: &ManualClock) -> Filled<F::Store>
where
    F: StoreFactory,
    F::Store: MapStateStore + crate::timer::TimerStateStore,
{
    use crate::timer::{TimeDomain, TimerStateStore, TimerTable};
    let mp = max_parallelism(128);
    let mut store = f.create(full_config(mp, clock));
    let mut m = open_map(&mut store, "m");
    let mut t = store
        .open_timer_table("t", TimeDomain::EventTime)
        .expect("open timers");
    m.begin_bundle(MapHydration::none()).expect("begin");
    for i in 0..120_u32 {
        let p = format!("k{i:03}|").into_bytes();
        for j in 0..=(i % 4) {
            m.put(kg_of(&p, mp), &p, &j.to_be_bytes(), i64::from(i * 10 + j))
                .expect("put");
        }
        let ns = (i % 3).to_be_bytes();
        t.register(kg_of(&p, mp), i64::from(i % 17) - 3, &p, &ns)
            .expect("register");
    }
    m.commit_bundle().expect("commit");
    t.commit().expect("commit timers");
    (store, m, t)
}

/// Two backends: the same map entries and timers give byte-identical canonical snapshots,
/// and move `f` -> `g` (onto 3 subtasks) -> `f` exactly. Not part of
/// [`conformance_tests!`](crate::conformance_tests), which sees one backend; run it from a
/// crate that depends on both.
pub fn cross_backend_map_and_timer_exchange<F, G>(f: &F, g: &G)
where
    F: StoreFactory,
    F::Store: MapStateStore + crate::timer::TimerStateStore,
    G: StoreFactory,
    G::Store: MapStateStore + crate::timer::TimerStateStore,
{
    use crate::timer::{TimeDomain, TimerStateStore, TimerTable};
    let mp = max_parallelism(128);
    let clock = ManualClock::new(5);
    let (store_f, m_f, t_f) = fill_map_and_timers(f, &clock);
    let (store_g, m_g, t_g) = fill_map_and_timers(g, &clock);
    let snap_f = snapshot_of(&store_f, "op", &[&m_f, &t_f]);
    assert_eq!(
        snapshot_of(&store_g, "op", &[&m_g, &t_g]),
        snap_f,
        "the same map entries and timers give byte-identical snapshots on both backends"
    );
    // f -> g on 3 subtasks -> f (full range).
    let p3 = Parallelism::new(3).expect("p");
    let mut on_g = Vec::new();
    for index in 0..3 {
        let config = StoreConfig::for_subtask(mp, p3, index)
            .expect("config")
            .with_clock(Arc::new(clock.clone()));
        let mut store = g.create(config);
        let mut m = open_map(&mut store, "m");
        let mut t = store
            .open_timer_table("t", TimeDomain::EventTime)
            .expect("open timers");
        let pool = Arc::clone(store.config().memory_pool());
        restore_canonical_snapshot("op", &[&snap_f], &mut [&mut m, &mut t], &pool)
            .expect("restore f -> g");
        on_g.push(snapshot_of(&store, "op", &[&m, &t]));
        assert!(t.len() <= 120);
    }
    let sources: Vec<&dyn Container> = on_g.iter().map(|c| c as &dyn Container).collect();
    let mut store = f.create(full_config(mp, &clock));
    let mut m = open_map(&mut store, "m");
    let mut t = store
        .open_timer_table("t", TimeDomain::EventTime)
        .expect("open timers");
    let pool = Arc::clone(store.config().memory_pool());
    restore_canonical_snapshot("op", &sources, &mut [&mut m, &mut t], &pool)
        .expect("restore g -> f");
    assert_eq!(
        snapshot_of(&store, "op", &[&m, &t]),
        snap_f,
        "f -> g (3 subtasks) -> f keeps the canonical bytes"
    );
    assert_eq!(t.len(), 120);
}
