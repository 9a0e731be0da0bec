//! `FIRST_VALUE` / `LAST_VALUE` on retracting input against a literal model of Flink's
//! `FirstValueWithRetractAggFunction` / `LastValueWithRetractAggFunction` (value -> orders
//! list, order -> values list, orders from a millisecond clock so that several rows share an
//! order, the linear search over every order key on retraction) inside `GroupAggFunction`'s
//! changelog rules. The operator orders by arrival sequence instead of the clock; the model
//! shows that this gives Flink's results for any monotonic clock, ties included.

use std::collections::HashMap;

use arrow_schema::{DataType, Field, Fields};
use keygroup::{MaxParallelism, Parallelism};
use memory_store::MemoryStore;
use operators::{
    AggCall, AggFunction, ChangelogBatch, GroupAggSpec, GroupAggregate, MiniBatch, RowKind,
    schema_of,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use state_api::{Scalar, StoreConfig};

/// One function's accumulator as Flink keeps it.
#[derive(Default, Clone)]
struct FlinkAcc {
    value: Option<i32>,
    order: Option<i64>,
    value_to_orders: HashMap<i32, Vec<i64>>,
    order_to_values: HashMap<i64, Vec<i32>>,
}

impl FlinkAcc {
    fn accumulate(&mut self, v: i32, order: i64, last: bool) {
        self.value_to_orders.entry(v).or_default().push(order);
        let replace = match self.order {
            None => true,
            Some(prev) if last => prev <= order,
            Some(prev) => prev > order,
        };
        if replace {
            self.value = Some(v);
            self.order = Some(order);
        }
        self.order_to_values.entry(order).or_default().push(v);
    }

    fn retract(&mut self, v: i32, last: bool) {
        let Some(orders) = self.value_to_orders.get_mut(&v) else {
            return;
        };
        if orders.is_empty() {
            return;
        }
        let order = orders.remove(0);
        if orders.is_empty() {
            self.value_to_orders.remove(&v);
        }
        let Some(values) = self.order_to_values.get_mut(&order) else {
            return;
        };
        if let Some(i) = values.iter().position(|x| *x == v) {
            values.remove(i);
        }
        if values.is_empty() {
            self.order_to_values.remove(&order);
        }
        if self.value == Some(v) {
            let start = self.order.unwrap();
            let next = if last {
                self.order_to_values.keys().filter(|k| **k <= start).max()
            } else {
                self.order_to_values.keys().filter(|k| **k >= start).min()
            };
            if let Some(k) = next.copied() {
                let values = &self.order_to_values[&k];
                self.value = Some(if last {
                    values[values.len() - 1]
                } else {
                    values[0]
                });
                self.order = Some(k);
            } else {
                self.value = None;
                self.order = None;
            }
        }
    }
}

#[derive(Default, Clone)]
struct Group {
    count: i64,
    first: FlinkAcc,
    last: FlinkAcc,
}

fn values(g: &Group) -> Vec<Scalar> {
    let s = |v: Option<i32>| v.map_or(Scalar::Null, Scalar::Int32);
    vec![Scalar::Int64(g.count), s(g.first.value), s(g.last.value)]
}

/// `GroupAggFunction` (mini-batch off) over the model accumulators.
fn model(rows: &[(RowKind, i32, Option<i32>)], clock: &[i64]) -> Vec<(RowKind, Vec<Scalar>)> {
    let mut groups: HashMap<i32, Group> = HashMap::new();
    let mut out = Vec::new();
    for ((kind, key, v), now) in rows.iter().zip(clock) {
        let accumulate = matches!(kind, RowKind::Insert | RowKind::UpdateAfter);
        let existing = groups.get(key).cloned();
        let first_row = existing.is_none();
        if first_row && !accumulate {
            continue;
        }
        let mut g = existing.unwrap_or_default();
        let prev = values(&g);
        if accumulate {
            g.count += 1;
            if let Some(v) = v {
                g.first.accumulate(*v, *now, false);
                g.last.accumulate(*v, *now, true);
            }
        } else {
            g.count -= 1;
            if let Some(v) = v {
                g.first.retract(*v, false);
                g.last.retract(*v, true);
            }
        }
        let new = values(&g);
        let with_key = |vals: Vec<Scalar>| {
            let mut r = vec![Scalar::Int32(*key)];
            r.extend(vals);
            r
        };
        if g.count == 0 {
            if !first_row {
                out.push((RowKind::Delete, with_key(prev)));
            }
            groups.remove(key);
        } else {
            groups.insert(*key, g);
            if first_row {
                out.push((RowKind::Insert, with_key(new)));
            } else if prev != new {
                out.push((RowKind::UpdateBefore, with_key(prev)));
                out.push((RowKind::UpdateAfter, with_key(new)));
            }
        }
    }
    out
}

fn input() -> Fields {
    Fields::from(vec![
        Field::new("k", DataType::Int32, false),
        Field::new("v", DataType::Int32, true),
    ])
}

fn spec() -> GroupAggSpec {
    GroupAggSpec::new(
        input(),
        vec![0],
        vec![
            AggCall::new(AggFunction::CountStar, vec![]),
            AggCall::new(AggFunction::FirstValue, vec![1]),
            AggCall::new(AggFunction::LastValue, vec![1]),
        ],
        false,
    )
}

fn store() -> MemoryStore {
    let mp = MaxParallelism::new(128).unwrap();
    MemoryStore::new(StoreConfig::for_subtask(mp, Parallelism::new(1).unwrap(), 0).unwrap())
}

fn changelog(seed: u64, n: usize, unknown: bool) -> Vec<(RowKind, i32, Option<i32>)> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut live: Vec<(i32, Option<i32>)> = Vec::new();
    let mut rows = Vec::new();
    for _ in 0..n {
        let p = rng.random_range(0..100);
        if p < 35 && !live.is_empty() {
            let (k, v) = live.swap_remove(rng.random_range(0..live.len()));
            let kind = if rng.random_bool(0.5) {
                RowKind::Delete
            } else {
                RowKind::UpdateBefore
            };
            rows.push((kind, k, v));
        } else if unknown && p < 42 {
            // a retraction of a row never inserted (value 9 is never inserted)
            rows.push((RowKind::Delete, rng.random_range(0..3), Some(9)));
        } else {
            let k = rng.random_range(0..3);
            let v = (!rng.random_bool(0.15)).then(|| rng.random_range(0..5));
            live.push((k, v));
            rows.push((RowKind::Insert, k, v));
        }
    }
    rows
}

fn run(
    spec: GroupAggSpec,
    rows: &[(RowKind, i32, Option<i32>)],
    bundle: usize,
) -> Vec<(RowKind, Vec<Scalar>)> {
    let mut st = store();
    let mut op = GroupAggregate::try_new("g", spec, &mut st).unwrap();
    let schema = schema_of(&input());
    let mut out = Vec::new();
    for chunk in rows.chunks(bundle) {
        let batch: Vec<(RowKind, Vec<Scalar>)> = chunk
            .iter()
            .map(|(kind, k, v)| {
                (
                    *kind,
                    vec![Scalar::Int32(*k), v.map_or(Scalar::Null, Scalar::Int32)],
                )
            })
            .collect();
        let b = ChangelogBatch::from_rows(&schema, &batch).unwrap();
        out.extend(op.process_bundle(&b).unwrap().to_rows().unwrap());
    }
    out
}

#[test]
fn first_last_with_retraction_equal_flinks_functions_on_a_tying_clock() {
    for seed in 0..20 {
        let rows = changelog(seed, 400, true);
        // A millisecond clock that ticks on about every third row: many rows share an order.
        let mut rng = StdRng::seed_from_u64(seed + 1000);
        let mut now = 1_700_000_000_000_i64;
        let clock: Vec<i64> = rows
            .iter()
            .map(|_| {
                if rng.random_bool(0.3) {
                    now += 1;
                }
                now
            })
            .collect();
        let expected = model(&rows, &clock);
        let strict: Vec<i64> = (0..).take(rows.len()).collect();
        assert_eq!(
            model(&rows, &strict),
            expected,
            "seed {seed}: the clock's ties matter"
        );
        let actual = run(spec(), &rows, 37);
        assert_eq!(actual, expected, "seed {seed}");
    }
}

/// Mini-batch: FIRST/LAST are not mergeable, so Flink plans one phase
/// (`MiniBatchGroupAggFunction`): on a changelog that retracts only live rows the final
/// table equals the per-row run's. (Retractions of unknown rows may legitimately differ:
/// per row they are ignored once a group is gone, inside a bundle they are applied.)
#[test]
fn first_last_with_retraction_under_mini_batch_end_in_the_same_table() {
    let final_table = |out: &[(RowKind, Vec<Scalar>)]| {
        let mut t: HashMap<Scalar, Vec<Scalar>> = HashMap::new();
        for (kind, row) in out {
            match kind {
                RowKind::Insert | RowKind::UpdateAfter => {
                    t.insert(row[0].clone(), row.clone());
                }
                RowKind::Delete => {
                    t.remove(&row[0]);
                }
                RowKind::UpdateBefore => {}
            }
        }
        let mut v: Vec<Vec<Scalar>> = t.into_values().collect();
        v.sort_by_key(|r| format!("{r:?}"));
        v
    };
    for seed in 0..10 {
        let rows = changelog(seed, 300, false);
        let per_row = run(spec(), &rows, 1000);
        let mini = run(spec().with_mini_batch(MiniBatch { size: 50 }), &rows, 50);
        assert_eq!(final_table(&mini), final_table(&per_row), "seed {seed}");
    }
}
