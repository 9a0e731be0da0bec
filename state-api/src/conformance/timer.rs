//! Timer-table cases: order and ties, deduplication and delete, popping up to a watermark,
//! registration while firing, snapshot/restore/rescale, misuse.

use std::sync::Arc;

use keygroup::{KeyGroup, MaxParallelism, Parallelism};
use sfcs_format::Container;

use super::{StoreFactory, full_config, key_group_of, max_parallelism, snapshot_of};
use crate::error::Error;
use crate::snapshot::restore_canonical_snapshot;
use crate::table::{KeyedStateStore, StoreConfig};
use crate::timer::{TimeDomain, Timer, TimerStateStore, TimerTable};
use crate::ttl::ManualClock;

fn timer(mp: MaxParallelism, ts: i64, key: &[u8], ns: &[u8]) -> Timer {
    Timer {
        timestamp: ts,
        key_group: key_group_of(key, mp),
        key: key.to_vec(),
        namespace: ns.to_vec(),
    }
}

/// A deterministic spread of timers over keys, namespaces and (tied) timestamps.
fn timers(mp: MaxParallelism, n: usize) -> Vec<Timer> {
    (0..n)
        .map(|i| {
            let key = format!("key-{:03}", (i * 7) % 41).into_bytes();
            let ns = if i % 3 == 0 {
                Vec::new()
            } else {
                vec![(i % 5) as u8]
            };
            let ts = ((i * 37) % 23) as i64 - 5; // ties and negative timestamps
            timer(mp, ts, &key, &ns)
        })
        .collect()
}

fn register_all<T: TimerTable>(t: &mut T, timers: &[Timer]) -> usize {
    timers
        .iter()
        .filter(|x| {
            t.register(x.key_group, x.timestamp, &x.key, &x.namespace)
                .expect("register")
        })
        .count()
}

fn pop_all<T: TimerTable>(t: &mut T, up_to: i64) -> Vec<Timer> {
    let mut out = Vec::new();
    while let Some(x) = t.pop_due(up_to).expect("pop_due") {
        out.push(x);
    }
    out
}

/// Timers fire in (timestamp, key group, key, namespace) order, only up to the watermark;
/// duplicates are registered once; `next_timestamp` is the earliest over all key groups.
pub fn timers_fire_in_order_up_to_watermark<F>(f: &F)
where
    F: StoreFactory,
    F::Store: TimerStateStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let mut store = f.create(full_config(mp, &clock));
    let mut t = store
        .open_timer_table("timers", TimeDomain::EventTime)
        .expect("open");
    assert_eq!(t.domain(), TimeDomain::EventTime);
    let all = timers(mp, 300);
    let mut expected = all.clone();
    expected.sort();
    expected.dedup();
    assert_eq!(
        register_all(&mut t, &all),
        expected.len(),
        "duplicates are no-ops"
    );
    assert_eq!(register_all(&mut t, &all), 0);
    assert_eq!(t.len(), expected.len());
    t.commit().expect("commit");
    assert_eq!(t.next_timestamp(), expected.first().map(|x| x.timestamp));
    let first = pop_all(&mut t, 3);
    let split = expected
        .iter()
        .position(|x| x.timestamp > 3)
        .unwrap_or(expected.len());
    assert_eq!(first, expected[..split], "fired up to 3, in order");
    assert_eq!(t.next_timestamp(), expected.get(split).map(|x| x.timestamp));
    assert_eq!(t.pop_due(3).expect("pop"), None);
    let rest = pop_all(&mut t, i64::MAX);
    assert_eq!(rest, expected[split..]);
    assert!(t.is_empty());
    assert_eq!(t.next_timestamp(), None);
    t.commit().expect("commit");
}

/// `delete` removes exactly one timer (false when absent); a deleted timer never fires.
pub fn timers_delete<F>(f: &F)
where
    F: StoreFactory,
    F::Store: TimerStateStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let mut store = f.create(full_config(mp, &clock));
    let mut t = store
        .open_timer_table("timers", TimeDomain::ProcessingTime)
        .expect("open");
    let a = timer(mp, 10, b"k1", b"w1");
    let b = timer(mp, 10, b"k1", b"w2");
    let c = timer(mp, 5, b"k2", b"");
    register_all(&mut t, &[a.clone(), b.clone(), c.clone()]);
    assert!(t.delete(c.key_group, 5, b"k2", b"").expect("delete"));
    assert!(!t.delete(c.key_group, 5, b"k2", b"").expect("delete again"));
    assert!(
        !t.delete(a.key_group, 11, b"k1", b"w1")
            .expect("other timestamp")
    );
    assert_eq!(t.next_timestamp(), Some(10));
    assert!(t.delete(a.key_group, 10, b"k1", b"w1").expect("delete"));
    t.commit().expect("commit");
    assert_eq!(pop_all(&mut t, 100), [b]);
}

/// Timers registered while firing that are already due fire in the same advance (Flink's
/// `advanceWatermark` loop); later ones wait.
pub fn timers_registered_while_firing<F>(f: &F)
where
    F: StoreFactory,
    F::Store: TimerStateStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let mut store = f.create(full_config(mp, &clock));
    let mut t = store
        .open_timer_table("timers", TimeDomain::EventTime)
        .expect("open");
    let start = timer(mp, 1, b"chain", b"");
    register_all(&mut t, std::slice::from_ref(&start));
    let mut fired = Vec::new();
    while let Some(x) = t.pop_due(10).expect("pop") {
        fired.push(x.timestamp);
        // Each firing registers the next timer 3 ms later, past the watermark at the end.
        t.register(x.key_group, x.timestamp + 3, &x.key, &x.namespace)
            .expect("register while firing");
    }
    assert_eq!(fired, [1, 4, 7, 10]);
    assert_eq!(t.next_timestamp(), Some(13));
    assert_eq!(t.len(), 1);
    t.commit().expect("commit");
}

/// Timers are part of canonical snapshots and restore across a rescale 2 -> 3, each timer in
/// the subtask owning its key group; restore replaces the target's timers.
pub fn timers_snapshot_restore_and_rescale<F>(f: &F)
where
    F: StoreFactory,
    F::Store: TimerStateStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let all = timers(mp, 400);
    let mut expected = all.clone();
    expected.sort();
    expected.dedup();
    let old_p = Parallelism::new(2).expect("p");
    let mut containers = Vec::new();
    for index in 0..2 {
        let config = StoreConfig::for_subtask(mp, old_p, index)
            .expect("config")
            .with_clock(Arc::new(clock.clone()));
        let range = config.key_groups();
        let mut store = f.create(config);
        let mut t = store
            .open_timer_table("timers", TimeDomain::EventTime)
            .expect("open");
        let mine: Vec<Timer> = all
            .iter()
            .filter(|x| range.contains(x.key_group))
            .cloned()
            .collect();
        register_all(&mut t, &mine);
        let err = state_api_snapshot_err(&store, &t);
        assert!(
            matches!(err, Error::BundleState { .. }),
            "uncommitted timers: {err}"
        );
        t.commit().expect("commit");
        containers.push(snapshot_of(&store, "op", &[&t]));
    }
    let sources: Vec<&dyn Container> = containers.iter().map(|c| c as &dyn Container).collect();
    let new_p = Parallelism::new(3).expect("p");
    let mut restored = Vec::new();
    for index in 0..3 {
        let config = StoreConfig::for_subtask(mp, new_p, index)
            .expect("config")
            .with_clock(Arc::new(clock.clone()));
        let range = config.key_groups();
        let mut store = f.create(config);
        let mut t = store
            .open_timer_table("timers", TimeDomain::EventTime)
            .expect("open");
        let stale = KeyGroup::new(range.start()).expect("kg");
        t.register(stale, -100, b"stale", b"").expect("register");
        t.commit().expect("commit");
        let pool = Arc::clone(store.config().memory_pool());
        restore_canonical_snapshot("op", &sources, &mut [&mut t], &pool).expect("restore");
        let mine: Vec<Timer> = expected
            .iter()
            .filter(|x| range.contains(x.key_group))
            .cloned()
            .collect();
        assert_eq!(t.len(), mine.len());
        assert_eq!(t.next_timestamp(), mine.iter().map(|x| x.timestamp).min());
        let popped = pop_all(&mut t, i64::MAX);
        assert_eq!(popped, mine, "subtask {index}");
        t.commit().expect("commit");
        restored.extend(popped);
    }
    restored.sort();
    assert_eq!(restored, expected, "every timer restored exactly once");
}

fn state_api_snapshot_err<S: KeyedStateStore, T: crate::snapshot::CanonicalTable>(
    store: &S,
    t: &T,
) -> Error {
    let mut container = sfcs_format::MemoryContainer::new();
    crate::snapshot::write_canonical_snapshot(
        "op",
        None,
        &[t],
        &mut container,
        store.config().memory_pool(),
    )
    .expect_err("snapshot with uncommitted timers")
}

/// Key groups outside the table's range are rejected and change nothing; a timer table name
/// is taken in the store's registry.
pub fn timers_misuse_is_rejected<F>(f: &F)
where
    F: StoreFactory,
    F::Store: TimerStateStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let config = StoreConfig::for_subtask(mp, Parallelism::new(2).expect("p"), 1)
        .expect("config")
        .with_clock(Arc::new(clock.clone()));
    let mut store = f.create(config);
    let mut t = store
        .open_timer_table("timers", TimeDomain::EventTime)
        .expect("open");
    let err = store
        .open_timer_table("timers", TimeDomain::ProcessingTime)
        .map(|_| ())
        .expect_err("must be refused");
    assert!(matches!(err, Error::TableExists { .. }), "{err}");
    let outside = KeyGroup::new(0).expect("kg");
    let err = t
        .register(outside, 1, b"k", b"")
        .expect_err("must be refused");
    assert!(
        matches!(err, Error::KeyGroupOutOfRange { key_group: 0, .. }),
        "{err}"
    );
    let err = t
        .delete(outside, 1, b"k", b"")
        .expect_err("must be refused");
    assert!(matches!(err, Error::KeyGroupOutOfRange { .. }), "{err}");
    assert!(t.is_empty());
    assert_eq!(t.pop_due(i64::MAX).expect("pop"), None);
}
