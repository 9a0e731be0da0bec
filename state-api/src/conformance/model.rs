//! The model-based test: random operation sequences against a store and a `BTreeMap` model.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use keygroup::{KeyGroupRange, Parallelism};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestError, TestRunner};
use sfcs_format::Container;

use super::{Key, StoreFactory, bundle_keys, key, max_parallelism, snapshot_of};
use crate::codec::I64Codec;
use crate::snapshot::restore_canonical_snapshot;
use crate::table::{KeyedStateStore, KeyedTable, StoreConfig};
use crate::ttl::{Clock, ManualClock, TtlConfig, TtlUpdateType, TtlVisibility, is_expired};

const KEYS: usize = 24;
const TTL_MILLIS: i64 = 100;

#[derive(Debug, Clone)]
enum PointOp {
    Get(usize),
    Put(usize, i64),
    Remove(usize),
    /// `update` adding the delta.
    Update(usize, i64),
    /// `upsert` inserting the value or adding the delta.
    Upsert(usize, i64, i64),
}

#[derive(Debug, Clone)]
enum Op {
    /// A bundle naming `named` (other keys touched are hydrated alone).
    Bundle {
        named: Vec<usize>,
        ops: Vec<PointOp>,
    },
    /// Moves the clock forward.
    Advance(i64),
    /// `sweep_expired(n)` on every subtask.
    Sweep(usize),
    /// Canonical snapshot of every subtask, restored onto this many new subtasks.
    Rescale(i32),
}

#[derive(Debug, Clone)]
struct Case {
    ttl: Option<(TtlUpdateType, TtlVisibility)>,
    ops: Vec<Op>,
}

fn strategy() -> impl Strategy<Value = Case> {
    let point = prop_oneof![
        (0..KEYS).prop_map(PointOp::Get),
        (0..KEYS, -3_i64..3).prop_map(|(k, v)| PointOp::Put(k, v)),
        (0..KEYS).prop_map(PointOp::Remove),
        (0..KEYS, -3_i64..3).prop_map(|(k, d)| PointOp::Update(k, d)),
        (0..KEYS, -3_i64..3, -3_i64..3).prop_map(|(k, v, d)| PointOp::Upsert(k, v, d)),
    ];
    let op = prop_oneof![
        5 => (prop::collection::vec(0..KEYS, 0..8), prop::collection::vec(point, 0..12))
            .prop_map(|(named, ops)| Op::Bundle { named, ops }),
        2 => (0_i64..80).prop_map(Op::Advance),
        1 => (1_usize..10).prop_map(Op::Sweep),
        1 => (1_i32..=4).prop_map(Op::Rescale),
    ];
    let ttl = prop_oneof![
        Just(None),
        (
            prop_oneof![
                Just(TtlUpdateType::OnCreateAndWrite),
                Just(TtlUpdateType::OnReadAndWrite)
            ],
            prop_oneof![
                Just(TtlVisibility::NeverReturnExpired),
                Just(TtlVisibility::ReturnExpiredIfNotCleanedUp)
            ],
        )
            .prop_map(Some),
    ];
    (ttl, prop::collection::vec(op, 1..40)).prop_map(|(ttl, ops)| Case { ttl, ops })
}

struct Subtask<S: KeyedStateStore> {
    store: S,
    table: S::Table<I64Codec>,
    range: KeyGroupRange,
}

struct System<'f, F: StoreFactory> {
    factory: &'f F,
    clock: ManualClock,
    ttl: Option<TtlConfig>,
    subtasks: Vec<Subtask<F::Store>>,
    keys: Vec<Key>,
    model: BTreeMap<usize, (i64, i64)>,
}

impl<'f, F: StoreFactory> System<'f, F> {
    fn new(factory: &'f F, case: &Case) -> Self {
        let mp = max_parallelism(128);
        let ttl = case.ttl.map(|(update, visibility)| {
            TtlConfig::new(Duration::from_millis(TTL_MILLIS.cast_unsigned()))
                .with_update_type(update)
                .with_visibility(visibility)
        });
        let mut system = Self {
            factory,
            clock: ManualClock::new(10_000),
            ttl,
            subtasks: Vec::new(),
            keys: (0..KEYS).map(|i| key(i, mp)).collect(),
            model: BTreeMap::new(),
        };
        system.subtasks = system.fresh_subtasks(2);
        system
    }

    fn fresh_subtasks(&self, parallelism: i32) -> Vec<Subtask<F::Store>> {
        let mp = max_parallelism(128);
        let p = Parallelism::new(parallelism).expect("parallelism");
        (0..parallelism)
            .map(|index| {
                let config = StoreConfig::for_subtask(mp, p, index)
                    .expect("config")
                    .with_clock(Arc::new(self.clock.clone()));
                let range = config.key_groups();
                let mut store = self.factory.create(config);
                let table = store.open_table("model", I64Codec, self.ttl).expect("open");
                Subtask {
                    store,
                    table,
                    range,
                }
            })
            .collect()
    }

    fn owner(&self, k: usize) -> usize {
        let kg = self.keys[k].0;
        self.subtasks
            .iter()
            .position(|s| s.range.contains(kg))
            .expect("some subtask owns every key group")
    }

    /// The model's answer to a get, applying Flink's TTL rules; `None` in the outer option
    /// means "either absent or the expired value" (`ReturnExpiredIfNotCleanedUp`, where a
    /// backend may have cleaned up already).
    fn model_get(&mut self, k: usize) -> Option<Option<i64>> {
        let now = self.clock.now_millis();
        let Some(&(value, ts)) = self.model.get(&k) else {
            return Some(None);
        };
        if let Some(ttl) = self.ttl {
            if is_expired(ts, ttl.ttl_millis(), now) {
                self.model.remove(&k);
                return match ttl.visibility {
                    TtlVisibility::NeverReturnExpired => Some(None),
                    TtlVisibility::ReturnExpiredIfNotCleanedUp => None,
                };
            }
            if ttl.update_type == TtlUpdateType::OnReadAndWrite {
                self.model.insert(k, (value, now));
            }
        }
        Some(Some(value))
    }

    fn check_get(&mut self, k: usize, context: &str) {
        let owner = self.owner(k);
        let (kg, bytes) = self.keys[k].clone();
        let got = self.subtasks[owner]
            .table
            .get(kg, &bytes)
            .expect("get")
            .copied();
        let expected_value = self.model.get(&k).map(|e| e.0);
        match self.model_get(k) {
            Some(expected) => assert_eq!(got, expected, "{context}: get key {k}"),
            None => assert!(
                got.is_none() || got == expected_value,
                "{context}: get expired key {k} returned {got:?}"
            ),
        }
    }

    /// `update` (`insert: None`) or `upsert` of key `k` adding `delta`, checked against the
    /// model: a visible value is updated, an absent one left alone (`update`) or set to
    /// `insert` (`upsert`); an expired value the backend may not have cleaned up yet
    /// (`ReturnExpiredIfNotCleanedUp`) either way, the backend's answer telling which.
    fn check_update(&mut self, k: usize, insert: Option<i64>, delta: i64, context: &str) {
        let owner = self.owner(k);
        let (kg, bytes) = self.keys[k].clone();
        let before = self.model.get(&k).map(|e| e.0);
        let expected = self.model_get(k);
        let table = &mut self.subtasks[owner].table;
        let add = |v: &mut i64| {
            *v += delta;
            *v
        };
        // `Some(new value)` when it updated, `None` when it found nothing to update.
        let updated = match insert {
            None => table.update(kg, &bytes, add).expect("update"),
            Some(v) => {
                let mut new = None;
                let hit = table
                    .upsert(kg, &bytes, || v, |x| new = Some(add(x)))
                    .expect("upsert");
                assert_eq!(hit, new.is_some(), "{context}: upsert's answer, key {k}");
                new
            }
        };
        match (expected, updated) {
            (Some(Some(value)), got) => {
                assert_eq!(got, Some(value + delta), "{context}: update of key {k}");
            }
            (Some(None), got) => assert_eq!(got, None, "{context}: update of absent key {k}"),
            (None, Some(got)) => assert_eq!(
                Some(got),
                before.map(|b| b + delta),
                "{context}: update of expired key {k}"
            ),
            (None, None) => {}
        }
        let now = if self.ttl.is_some() {
            self.clock.now_millis()
        } else {
            0
        };
        match (updated, insert) {
            (Some(value), _) => {
                self.model.insert(k, (value, now));
            }
            (None, Some(v)) => {
                self.model.insert(k, (v, now));
            }
            (None, None) => {
                self.model.remove(&k);
            }
        }
    }

    fn apply(&mut self, op: &Op, step: usize) {
        let context = format!("step {step} ({op:?})");
        match op {
            Op::Bundle { named, ops } => {
                for (index, sub) in self.subtasks.iter_mut().enumerate() {
                    let keys: Vec<Key> = named
                        .iter()
                        .map(|&k| self.keys[k].clone())
                        .filter(|k| sub.range.contains(k.0))
                        .collect();
                    sub.table
                        .begin_bundle(&bundle_keys(&keys))
                        .unwrap_or_else(|e| panic!("{context}: begin on {index}: {e}"));
                }
                let now = self.clock.now_millis();
                for point in ops {
                    match *point {
                        PointOp::Get(k) => self.check_get(k, &context),
                        PointOp::Put(k, v) => {
                            let owner = self.owner(k);
                            let (kg, bytes) = &self.keys[k];
                            self.subtasks[owner].table.put(*kg, bytes, v).expect("put");
                            let ts = if self.ttl.is_some() { now } else { 0 };
                            self.model.insert(k, (v, ts));
                        }
                        PointOp::Remove(k) => {
                            let owner = self.owner(k);
                            let (kg, bytes) = &self.keys[k];
                            self.subtasks[owner]
                                .table
                                .remove(*kg, bytes)
                                .expect("remove");
                            self.model.remove(&k);
                        }
                        PointOp::Update(k, d) => self.check_update(k, None, d, &context),
                        PointOp::Upsert(k, v, d) => self.check_update(k, Some(v), d, &context),
                    }
                }
                for sub in &mut self.subtasks {
                    sub.table.commit_bundle().expect("commit");
                }
            }
            Op::Advance(ms) => self.clock.advance(*ms),
            Op::Sweep(n) => {
                for sub in &mut self.subtasks {
                    let step = sub.table.sweep_expired(*n).expect("sweep");
                    assert!(
                        step.removed <= *n as u64,
                        "{context}: swept {} > {n}",
                        step.removed
                    );
                }
            }
            Op::Rescale(p) => {
                let containers: Vec<_> = self
                    .subtasks
                    .iter()
                    .map(|s| snapshot_of(&s.store, "model-op", &[&s.table]))
                    .collect();
                let sources: Vec<&dyn Container> =
                    containers.iter().map(|c| c as &dyn Container).collect();
                let mut fresh = self.fresh_subtasks(*p);
                for sub in &mut fresh {
                    let pool = Arc::clone(sub.store.config().memory_pool());
                    restore_canonical_snapshot("model-op", &sources, &mut [&mut sub.table], &pool)
                        .unwrap_or_else(|e| panic!("{context}: restore: {e}"));
                }
                self.subtasks = fresh;
                // Canonical snapshots leave expired rows out.
                if let Some(ttl) = self.ttl {
                    let now = self.clock.now_millis();
                    self.model
                        .retain(|_, (_, ts)| !is_expired(*ts, ttl.ttl_millis(), now));
                }
            }
        }
    }

    fn check_all(&mut self) {
        for sub in &mut self.subtasks {
            sub.table.begin_bundle(&[]).expect("begin");
        }
        for k in 0..KEYS {
            self.check_get(k, "final read");
        }
        for sub in &mut self.subtasks {
            sub.table.commit_bundle().expect("commit");
        }
    }
}

/// Random sequences of bundles (named and unnamed keys, gets, puts, removes, updates and
/// upserts), clock moves,
/// sweeps and canonical snapshot + restore at other parallelisms (max parallelism 128),
/// under every TTL setting, compared read by read against a `BTreeMap` model.
///
/// # Panics
/// On the first divergence, with the shrunk operation sequence.
pub fn model_based_operations_match_btreemap<F: StoreFactory>(f: &F) {
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&strategy(), |case| {
        let mut system = System::new(f, &case);
        for (step, op) in case.ops.iter().enumerate() {
            system.apply(op, step);
        }
        system.check_all();
        Ok(())
    });
    match result {
        Ok(()) => {}
        Err(TestError::Fail(reason, case)) => {
            panic!("store diverged from the model: {reason}\nminimal case: {case:#?}")
        }
        Err(e) => panic!("model-based test aborted: {e}"),
    }
}
