//! Native-snapshot cases: one snapshot per store covering every table kind (keyed, map and
//! timer tables) at one point, restored all or nothing; refused while a bundle is open or
//! timer changes are uncommitted; a snapshot of another store configuration or with a table
//! of another schema is [`Error::InvalidNativeSnapshot`] and changes nothing.

use std::ops::ControlFlow;

use keygroup::{KeyGroup, KeyGroupRange, MaxParallelism};

use super::{
    Key, StoreFactory, full_config, key, key_group_of, max_parallelism, read_all, write_all,
};
use crate::codec::{F64Codec, I64Codec};
use crate::error::Error;
use crate::map::{MapHydration, MapStateStore, MapTable, ScanDirection, UserKeyRange};
use crate::table::{KeyedStateStore, KeyedTable, NativeSnapshot, StoreConfig};
use crate::timer::{TimeDomain, Timer, TimerStateStore, TimerTable};
use crate::ttl::ManualClock;

/// What a store needs for these cases.
pub trait NativeStore: MapStateStore + TimerStateStore + NativeSnapshot {}
impl<S: MapStateStore + TimerStateStore + NativeSnapshot> NativeStore for S {}

const PREFIX: &[u8] = b"prefix-1";

/// The three tables of an operator.
struct Tables<S: NativeStore> {
    keyed: S::Table<I64Codec>,
    map: S::MapTable<I64Codec>,
    timers: S::TimerTable,
}

fn open_tables<S: NativeStore>(store: &mut S) -> Tables<S> {
    Tables {
        keyed: store.open_table("k", I64Codec, None).expect("open keyed"),
        map: store.open_map_table("m", I64Codec, None).expect("open map"),
        timers: store
            .open_timer_table("t", TimeDomain::EventTime)
            .expect("open timers"),
    }
}

fn keys(mp: MaxParallelism) -> Vec<Key> {
    (0..6).map(|i| key(i, mp)).collect()
}

/// The state of the three tables, read without changing it (timers: count and next time).
#[derive(Debug, PartialEq)]
struct Seen {
    keyed: Vec<Option<i64>>,
    map: Vec<(Vec<u8>, i64)>,
    timers: (usize, Option<i64>),
}

fn see<S: NativeStore>(t: &mut Tables<S>, mp: MaxParallelism) -> Seen {
    let keyed = read_all(&mut t.keyed, &keys(mp));
    let kg = key_group_of(PREFIX, mp);
    t.map
        .begin_bundle(MapHydration::prefixes(&[(kg, PREFIX)]))
        .expect("begin map");
    let mut map = Vec::new();
    t.map
        .scan(
            kg,
            PREFIX,
            UserKeyRange::all(),
            ScanDirection::Forward,
            &mut |k, v| {
                map.push((k.to_vec(), *v));
                ControlFlow::Continue(())
            },
        )
        .expect("scan");
    t.map.commit_bundle().expect("commit map");
    Seen {
        keyed,
        map,
        timers: (t.timers.len(), t.timers.next_timestamp()),
    }
}

/// Writes state `version` into all three tables and commits.
fn write_version<S: NativeStore>(t: &mut Tables<S>, mp: MaxParallelism, version: usize) {
    let v = version as i64;
    let rows: Vec<(Key, Option<i64>)> = keys(mp)
        .into_iter()
        .enumerate()
        .map(|(i, k)| {
            let value = !(i + version).is_multiple_of(3);
            (k, value.then_some(i as i64 * 10 + v))
        })
        .collect();
    write_all(&mut t.keyed, &rows);
    let kg = key_group_of(PREFIX, mp);
    t.map
        .begin_bundle(MapHydration::prefixes(&[(kg, PREFIX)]))
        .expect("begin map");
    t.map
        .remove_range(kg, PREFIX, UserKeyRange::all())
        .expect("remove_range");
    for i in 0..(3 + v) {
        t.map
            .put(kg, PREFIX, format!("u{i:02}").as_bytes(), i * v)
            .expect("put map");
    }
    t.map.commit_bundle().expect("commit map");
    drain(&mut t.timers);
    for i in 0..(2 + version) {
        let k = key(i, mp);
        t.timers
            .register(k.0, 100 * v + i as i64, &k.1, b"")
            .expect("register");
    }
    t.timers.commit().expect("commit timers");
}

fn drain<T: TimerTable>(t: &mut T) -> Vec<Timer> {
    let mut out = Vec::new();
    while let Some(x) = t.pop_due(i64::MAX).expect("pop_due") {
        out.push(x);
    }
    out
}

/// One snapshot holds every table of the store at one point; later snapshots do not change
/// it; restoring puts keyed, map and timer tables back together, and a table opened after
/// the snapshot (so not in it) comes back empty.
pub fn native_snapshot_covers_every_table_kind<F>(f: &F)
where
    F: StoreFactory,
    F::Store: NativeStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let mut store = f.create(full_config(mp, &clock));
    let mut t = open_tables(&mut store);
    write_version(&mut t, mp, 1);
    let seen1 = see(&mut t, mp);
    let first = store.native_snapshot().expect("snapshot 1");
    write_version(&mut t, mp, 2);
    let mut late = store.open_table("late", I64Codec, None).expect("open late");
    let late_key = key(0, mp);
    write_all(&mut late, &[(late_key.clone(), Some(7))]);
    let seen2 = see(&mut t, mp);
    assert_ne!(seen1, seen2, "the two versions differ");
    let second = store.native_snapshot().expect("snapshot 2");
    write_version(&mut t, mp, 3);

    store.restore_native(&first).expect("restore 1");
    assert_eq!(
        see(&mut t, mp),
        seen1,
        "first snapshot restored in every table"
    );
    assert_eq!(
        read_all(&mut late, std::slice::from_ref(&late_key)),
        [None],
        "a table opened after the snapshot comes back empty"
    );
    store.restore_native(&second).expect("restore 2");
    assert_eq!(see(&mut t, mp), seen2, "second snapshot restored");
    assert_eq!(read_all(&mut late, &[late_key]), [Some(7)]);
    let fired = drain(&mut t.timers);
    assert_eq!(fired.len(), 4, "version 2 registered 4 timers: {fired:?}");
    assert!(
        fired.windows(2).all(|w| w[0] <= w[1]),
        "in order: {fired:?}"
    );
    t.timers.commit().expect("commit");
}

/// A bundle open on a keyed or map table, or uncommitted timer changes, refuse both native
/// snapshot and restore ([`Error::BundleState`]); the refused restore changes nothing.
pub fn native_snapshot_refused_while_a_bundle_is_open<F>(f: &F)
where
    F: StoreFactory,
    F::Store: NativeStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let mut store = f.create(full_config(mp, &clock));
    let mut t = open_tables(&mut store);
    write_version(&mut t, mp, 1);
    let snapshot = store.native_snapshot().expect("snapshot");
    write_version(&mut t, mp, 2);
    let seen2 = see(&mut t, mp);
    let refused = |store: &mut F::Store, what: &str| {
        let Err(err) = store.native_snapshot() else {
            panic!("{what}: native_snapshot accepted");
        };
        assert!(matches!(err, Error::BundleState { .. }), "{what}: {err}");
        let err = store.restore_native(&snapshot).expect_err(what);
        assert!(matches!(err, Error::BundleState { .. }), "{what}: {err}");
    };

    t.keyed.begin_bundle(&[]).expect("begin keyed");
    refused(&mut store, "keyed bundle open");
    t.keyed.commit_bundle().expect("commit keyed");

    t.map.begin_bundle(MapHydration::none()).expect("begin map");
    refused(&mut store, "map bundle open");
    t.map.commit_bundle().expect("commit map");

    let k = key(5, mp);
    assert!(t.timers.register(k.0, 5, &k.1, b"ns").expect("register"));
    refused(&mut store, "uncommitted timer change");
    assert!(t.timers.delete(k.0, 5, &k.1, b"ns").expect("delete"));
    t.timers.commit().expect("commit timers");

    assert_eq!(see(&mut t, mp), seen2, "refused restores changed nothing");
    store.native_snapshot().expect("all closed: snapshot");
}

/// A snapshot restored into a new store of the same configuration, before any table is
/// open there: the tables opened afterwards hold the snapshot's state.
pub fn native_restore_then_open<F>(f: &F)
where
    F: StoreFactory,
    F::Store: NativeStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let mut store = f.create(full_config(mp, &clock));
    let mut t = open_tables(&mut store);
    write_version(&mut t, mp, 2);
    let seen = see(&mut t, mp);
    let snapshot = store.native_snapshot().expect("snapshot");

    let mut other = f.create(full_config(mp, &clock));
    other
        .restore_native(&snapshot)
        .expect("restore into new store");
    let mut restored = open_tables(&mut other);
    assert_eq!(see(&mut restored, mp), seen, "opened after the restore");
    // And the restored store's own snapshot holds them again.
    let again = other.native_snapshot().expect("snapshot of restored");
    write_version(&mut restored, mp, 3);
    other.restore_native(&again).expect("restore again");
    assert_eq!(see(&mut restored, mp), seen);
}

/// A snapshot of a store of another max parallelism or key-group range is
/// [`Error::InvalidNativeSnapshot`], and the store is unchanged.
pub fn native_restore_refuses_another_config<F>(f: &F)
where
    F: StoreFactory,
    F::Store: NativeStore,
{
    let clock = ManualClock::new(1);
    let mp = max_parallelism(128);
    let mut source = f.create(full_config(mp, &clock));
    let mut t = open_tables(&mut source);
    write_version(&mut t, mp, 1);
    let snapshot = source.native_snapshot().expect("snapshot");

    let configs = [
        (
            "other max parallelism",
            full_config(max_parallelism(256), &clock),
        ),
        (
            "other key groups",
            StoreConfig::try_new(mp, KeyGroupRange::new(0, 63).expect("range"))
                .expect("config")
                .with_clock(std::sync::Arc::new(clock.clone())),
        ),
    ];
    for (what, config) in configs {
        let range = config.key_groups();
        let mut store = f.create(config);
        let mut table = store.open_table("k", I64Codec, None).expect("open");
        let k: Key = (KeyGroup::new(range.start()).expect("kg"), b"kept".to_vec());
        write_all(&mut table, &[(k.clone(), Some(42))]);
        let err = store.restore_native(&snapshot).expect_err(what);
        assert!(
            matches!(err, Error::InvalidNativeSnapshot { .. }),
            "{what}: {err}"
        );
        assert_eq!(read_all(&mut table, &[k]), [Some(42)], "{what}: unchanged");
    }
}

/// A snapshot whose table of an open name has another schema is
/// [`Error::InvalidNativeSnapshot`]: all or nothing, no table of the store changes.
pub fn native_restore_refuses_another_schema<F>(f: &F)
where
    F: StoreFactory,
    F::Store: NativeStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let mut source = f.create(full_config(mp, &clock));
    let mut t = open_tables(&mut source);
    write_version(&mut t, mp, 1);
    let snapshot = source.native_snapshot().expect("snapshot");

    let mut store = f.create(full_config(mp, &clock));
    // "a" sorts before "k": a table restored before the refusal would show it.
    let mut a = store.open_table("a", I64Codec, None).expect("open a");
    let mut k = store.open_table("k", F64Codec, None).expect("open k");
    let key_a = key(1, mp);
    write_all(&mut a, &[(key_a.clone(), Some(1))]);
    write_all(&mut k, &[(key_a.clone(), Some(2.5))]);
    let err = store.restore_native(&snapshot).expect_err("schema differs");
    assert!(matches!(err, Error::InvalidNativeSnapshot { .. }), "{err}");
    assert_eq!(read_all(&mut a, std::slice::from_ref(&key_a)), [Some(1)]);
    assert_eq!(read_all(&mut k, &[key_a]), [Some(2.5)]);
}
