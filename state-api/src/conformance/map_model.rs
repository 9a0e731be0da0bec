//! The model-based test of map tables: random bundles against a `BTreeMap` model.

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;

use keygroup::KeyGroup;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestError, TestRunner};

use super::{StoreFactory, full_config, key_group_of, max_parallelism, snapshot_of};
use crate::codec::I64Codec;
use crate::map::{MapHydration, MapStateStore, MapTable, ScanDirection, UserKeyRange};
use crate::snapshot::restore_canonical_snapshot;
use crate::table::KeyedStateStore;
use crate::ttl::ManualClock;

const PREFIXES: [&[u8]; 3] = [b"a|", b"b\xff", b"c\x00"];

#[derive(Debug, Clone)]
enum Op {
    Get(usize, Vec<u8>),
    Put(usize, Vec<u8>, i64),
    Update(usize, Vec<u8>, i64),
    Upsert(usize, Vec<u8>, i64),
    Remove(usize, Vec<u8>),
    RemoveRange(usize, Bound<Vec<u8>>, Bound<Vec<u8>>),
    Scan(usize, Bound<Vec<u8>>, Bound<Vec<u8>>, bool, usize),
    /// A prefetch hint, which must change nothing.
    Prefetch(usize),
}

#[derive(Debug, Clone)]
enum Step {
    Bundle { hydrate: Vec<usize>, ops: Vec<Op> },
    Restore,
}

fn user_key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![Just(0x00_u8), Just(0x01), Just(0x7f), Just(0xff)],
        0..3,
    )
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        Just(Bound::Unbounded),
        user_key().prop_map(Bound::Included),
        user_key().prop_map(Bound::Excluded),
    ]
}

fn strategy() -> impl Strategy<Value = Vec<Step>> {
    let p = 0..PREFIXES.len();
    let op = prop_oneof![
        3 => (p.clone(), user_key()).prop_map(|(p, u)| Op::Get(p, u)),
        5 => (p.clone(), user_key(), -5_i64..5).prop_map(|(p, u, v)| Op::Put(p, u, v)),
        2 => (p.clone(), user_key(), -5_i64..5).prop_map(|(p, u, v)| Op::Update(p, u, v)),
        2 => (p.clone(), user_key(), -5_i64..5).prop_map(|(p, u, v)| Op::Upsert(p, u, v)),
        2 => (p.clone(), user_key()).prop_map(|(p, u)| Op::Remove(p, u)),
        1 => (p.clone(), bound(), bound()).prop_map(|(p, lo, hi)| Op::RemoveRange(p, lo, hi)),
        3 => (p, bound(), bound(), any::<bool>(), 1_usize..6)
            .prop_map(|(p, lo, hi, rev, limit)| Op::Scan(p, lo, hi, rev, limit)),
        2 => (0..PREFIXES.len()).prop_map(Op::Prefetch),
    ];
    let step = prop_oneof![
        6 => (prop::collection::vec(0..PREFIXES.len(), 0..3), prop::collection::vec(op, 0..14))
            .prop_map(|(hydrate, ops)| Step::Bundle { hydrate, ops }),
        1 => Just(Step::Restore),
    ];
    prop::collection::vec(step, 1..10)
}

fn borrow(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

type Model = BTreeMap<(usize, Vec<u8>), i64>;

fn check<F>(f: &F, steps: &[Step]) -> Result<(), TestCaseError>
where
    F: StoreFactory,
    F::Store: MapStateStore,
{
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let kgs: Vec<KeyGroup> = PREFIXES.iter().map(|p| key_group_of(p, mp)).collect();
    let mut store = f.create(full_config(mp, &clock));
    let mut t = store.open_map_table("m", I64Codec, None).expect("open");
    let mut model: Model = BTreeMap::new();
    let mut generation = 0;
    for step in steps {
        match step {
            Step::Restore => {
                let snap = snapshot_of(&store, "op", &[&t]);
                generation += 1;
                store = f.create(full_config(mp, &clock));
                t = store.open_map_table("m", I64Codec, None).expect("open");
                let pool = Arc::clone(store.config().memory_pool());
                restore_canonical_snapshot("op", &[&snap], &mut [&mut t], &pool).expect("restore");
            }
            Step::Bundle { hydrate, ops } => {
                let named: Vec<(KeyGroup, &[u8])> =
                    hydrate.iter().map(|&p| (kgs[p], PREFIXES[p])).collect();
                t.begin_bundle(MapHydration::prefixes(&named))
                    .expect("begin");
                for op in ops {
                    apply(&mut t, &mut model, &kgs, op, generation)?;
                }
                t.commit_bundle().expect("commit");
            }
        }
    }
    t.begin_bundle(MapHydration::none()).expect("begin");
    for (p, prefix) in PREFIXES.iter().enumerate() {
        let mut seen = Vec::new();
        t.scan(
            kgs[p],
            prefix,
            UserKeyRange::all(),
            ScanDirection::Forward,
            &mut |k, v| {
                seen.push((k.to_vec(), *v));
                ControlFlow::Continue(())
            },
        )
        .expect("scan");
        let expected: Vec<(Vec<u8>, i64)> = model
            .iter()
            .filter(|((mp_, _), _)| *mp_ == p)
            .map(|((_, u), v)| (u.clone(), *v))
            .collect();
        prop_assert_eq!(seen, expected, "final content of prefix {}", p);
    }
    t.commit_bundle().expect("commit");
    Ok(())
}

fn apply<T: MapTable<Codec = I64Codec>>(
    t: &mut T,
    model: &mut Model,
    kgs: &[KeyGroup],
    op: &Op,
    generation: usize,
) -> Result<(), TestCaseError> {
    let prefix = |p: usize| PREFIXES[p];
    match op {
        Op::Prefetch(p) => t.prefetch(kgs[*p], prefix(*p)),
        Op::Get(p, u) => {
            let got = t.get(kgs[*p], prefix(*p), u).expect("get").copied();
            prop_assert_eq!(
                got,
                model.get(&(*p, u.clone())).copied(),
                "get gen {}",
                generation
            );
        }
        Op::Put(p, u, v) => {
            t.put(kgs[*p], prefix(*p), u, *v).expect("put");
            model.insert((*p, u.clone()), *v);
        }
        Op::Update(p, u, d) => {
            let got = t
                .update(kgs[*p], prefix(*p), u, |v| {
                    *v += d;
                    *v
                })
                .expect("update");
            let expected = model.get_mut(&(*p, u.clone())).map(|v| {
                *v += d;
                *v
            });
            prop_assert_eq!(got, expected, "update");
        }
        Op::Upsert(p, u, d) => {
            // Inserts `d`, or adds `d` to the value there.
            let updated = t
                .upsert(kgs[*p], prefix(*p), u, || *d, |v| *v += d)
                .expect("upsert");
            let entry = model.entry((*p, u.clone()));
            let expected = matches!(entry, std::collections::btree_map::Entry::Occupied(_));
            *entry.or_insert(0) += d;
            prop_assert_eq!(updated, expected, "upsert");
        }
        Op::Remove(p, u) => {
            t.remove(kgs[*p], prefix(*p), u).expect("remove");
            model.remove(&(*p, u.clone()));
        }
        Op::RemoveRange(p, lo, hi) => {
            let range = UserKeyRange::new(borrow(lo), borrow(hi));
            let n = t
                .remove_range(kgs[*p], prefix(*p), range)
                .expect("remove_range");
            let doomed: Vec<(usize, Vec<u8>)> = model
                .keys()
                .filter(|(mp_, u)| mp_ == p && range.contains(u))
                .cloned()
                .collect();
            prop_assert_eq!(n, doomed.len() as u64, "remove_range count");
            for k in doomed {
                model.remove(&k);
            }
        }
        Op::Scan(p, lo, hi, rev, limit) => {
            let range = UserKeyRange::new(borrow(lo), borrow(hi));
            let dir = if *rev {
                ScanDirection::Reverse
            } else {
                ScanDirection::Forward
            };
            let mut seen = Vec::new();
            t.scan(kgs[*p], prefix(*p), range, dir, &mut |k, v| {
                seen.push((k.to_vec(), *v));
                if seen.len() == *limit {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .expect("scan");
            let mut expected: Vec<(Vec<u8>, i64)> = model
                .iter()
                .filter(|((mp_, u), _)| mp_ == p && range.contains(u))
                .map(|((_, u), v)| (u.clone(), *v))
                .collect();
            if *rev {
                expected.reverse();
            }
            expected.truncate(*limit);
            prop_assert_eq!(seen, expected, "scan {:?}", op);
        }
    }
    Ok(())
}

pub(super) fn run<F>(f: &F)
where
    F: StoreFactory,
    F::Store: MapStateStore,
{
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&strategy(), |steps| check(f, &steps));
    if let Err(err) = result {
        match err {
            TestError::Fail(reason, steps) => panic!("{reason}\nminimal failing steps: {steps:#?}"),
            TestError::Abort(reason) => panic!("aborted: {reason}"),
        }
    }
}
