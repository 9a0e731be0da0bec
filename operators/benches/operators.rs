//! Criterion benches of the operators on both backends (memory-store, typed-store): rows/s
//! per operator, state bytes per key (printed), MIN with retraction on a 100k-element group
//! (one ordered seek vs the full scan Flink's `updateMin` does), and the join probe with 1,
//! 100 and 10k records per key.

mod common;

use std::hint::black_box;
use std::ops::ControlFlow;

use arrow_schema::{DataType, Field, Fields};
use common::{BenchStore, Done};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use keygroup::MaxParallelism;
use memory_store::MemoryStore;
use operators::{
    AggCall, AggFunction, ChangelogBatch, ChangelogMode, GroupAggSpec, GroupAggregate, InnerJoin,
    JoinSide, JoinSpec, MiniBatch, RowKind, SortColumn, Top1, Top1Spec, schema_of,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use state_api::{I64Codec, MapHydration, MapTable, Scalar, ScanDirection, UserKeyRange};
use typed_store::RocksStore;

fn kv_fields() -> Fields {
    Fields::from(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
    ])
}

/// Seeded bundles of `(k, v)` rows over `keys` keys.
fn bundles(rows: usize, keys: i64, bundle: usize, seed: u64) -> Vec<ChangelogBatch> {
    let mut rng = StdRng::seed_from_u64(seed);
    let schema = schema_of(&kv_fields());
    let all: Vec<(RowKind, Vec<Scalar>)> = (0..rows)
        .map(|_| {
            (
                RowKind::Insert,
                vec![
                    Scalar::Int64(rng.random_range(0..keys)),
                    Scalar::Int64(rng.random_range(-1_000_000..1_000_000)),
                ],
            )
        })
        .collect();
    all.chunks(bundle)
        .map(|c| ChangelogBatch::from_rows(&schema, c).expect("batch"))
        .collect()
}

const ROWS: usize = 100_000;
const KEYS: i64 = 1_000;
/// Rows per bundle of the group aggregate's input.
const BUNDLE: usize = 1_000;

fn agg_spec(insert_only: bool) -> GroupAggSpec {
    GroupAggSpec::new(
        kv_fields(),
        vec![0],
        vec![
            AggCall::new(AggFunction::CountStar, vec![]),
            AggCall::new(AggFunction::Sum, vec![1]),
            AggCall::new(AggFunction::Min, vec![1]),
            AggCall::new(AggFunction::Max, vec![1]),
        ],
        insert_only,
    )
}

/// `COUNT(*), FIRST_VALUE(v), LAST_VALUE(v)`: not every call mergeable, so with mini-batch
/// on Flink plans one phase (`MiniBatchGroupAggFunction`) instead of local-global.
fn first_last_spec() -> GroupAggSpec {
    GroupAggSpec::new(
        kv_fields(),
        vec![0],
        vec![
            AggCall::new(AggFunction::CountStar, vec![]),
            AggCall::new(AggFunction::FirstValue, vec![1]),
            AggCall::new(AggFunction::LastValue, vec![1]),
        ],
        true,
    )
}

#[expect(clippy::cast_precision_loss, reason = "a printed ratio")]
fn per(bytes: u64, n: usize) -> f64 {
    bytes as f64 / n as f64
}

fn group_aggregate_on<S: BenchStore>(c: &mut Criterion, input: &[ChangelogBatch]) {
    let mut g = c.benchmark_group(format!("group_agg/{}", S::NAME));
    g.throughput(Throughput::Elements(ROWS as u64));
    g.sample_size(10);
    // insert-only: COUNT(*), SUM, MIN, MAX; retract plan: the same calls as Flink plans them
    // for a retracting input (MIN/MAX with value -> count companions), fed the same +I rows;
    // mini-batch: insert-only with each bundle one mini-batch (local-global, upsert output:
    // the bench binary's W2); one-phase mini-batch: COUNT(*), FIRST_VALUE, LAST_VALUE, the
    // same mini-batches through `MiniBatchGroupAggFunction`'s plan.
    for (name, insert_only, mini_batch, first_last) in [
        ("insert_only", true, false, false),
        ("retract_plan", false, false, false),
        ("insert_only_mini_batch", true, true, false),
        ("one_phase_mini_batch", true, true, true),
    ] {
        let spec = || {
            let spec = if first_last {
                first_last_spec()
            } else {
                agg_spec(insert_only)
            };
            if mini_batch {
                spec.with_mini_batch(MiniBatch { size: BUNDLE })
                    .with_changelog_mode(ChangelogMode::Upsert)
            } else {
                spec
            }
        };
        g.bench_function(name, |b| {
            b.iter_batched(
                S::fresh,
                |mut st| {
                    let mut op = GroupAggregate::try_new("g", spec(), &mut st).expect("open");
                    for bundle in input {
                        black_box(op.process_bundle(bundle).expect("bundle"));
                    }
                    drop(op);
                    Done(Some(st))
                },
                BatchSize::PerIteration,
            );
        });
    }
    g.finish();
    for (name, insert_only, tables) in [
        ("insert_only", true, &["g.acc"][..]),
        ("retract_plan", false, &["g.acc", "g.companions"][..]),
    ] {
        let mut st = S::fresh();
        let base = st.state_bytes(&[]);
        let mut op = GroupAggregate::try_new("g", agg_spec(insert_only), &mut st).expect("open");
        for bundle in input {
            op.process_bundle(bundle).expect("bundle");
        }
        // Measured while the operator's tables are open: memory-store releases a
        // table's reservation when the table is dropped.
        let bytes = st.state_bytes(tables).saturating_sub(base);
        drop(op);
        println!(
            "state group_agg/{}/{name}: {bytes} bytes for {KEYS} keys ({ROWS} rows), {:.0} bytes \
             per key",
            S::NAME,
            per(bytes, usize::try_from(KEYS).unwrap_or(1)),
        );
        st.discard();
    }
}

fn group_aggregate(c: &mut Criterion) {
    let input = bundles(ROWS, KEYS, BUNDLE, 42);
    group_aggregate_on::<MemoryStore>(c, &input);
    group_aggregate_on::<RocksStore>(c, &input);
}

fn top1_spec() -> Top1Spec {
    Top1Spec::new(
        kv_fields(),
        vec![0],
        vec![SortColumn {
            column: 1,
            descending: true,
            nulls_last: true,
        }],
        false,
    )
}

fn top1_on<S: BenchStore>(c: &mut Criterion, input: &[ChangelogBatch]) {
    let mut g = c.benchmark_group(format!("top1/{}", S::NAME));
    g.throughput(Throughput::Elements(ROWS as u64));
    g.sample_size(10);
    g.bench_function("desc", |b| {
        b.iter_batched(
            S::fresh,
            |mut st| {
                let mut op = Top1::try_new("t", top1_spec(), &mut st).expect("open");
                for bundle in input {
                    black_box(op.process_bundle(bundle).expect("bundle"));
                }
                drop(op);
                Done(Some(st))
            },
            BatchSize::PerIteration,
        );
    });
    g.finish();
    let mut st = S::fresh();
    let base = st.state_bytes(&[]);
    let mut op = Top1::try_new("t", top1_spec(), &mut st).expect("open");
    for bundle in input {
        op.process_bundle(bundle).expect("bundle");
    }
    // Measured while the operator's tables are open: memory-store releases a
    // table's reservation when the table is dropped.
    let bytes = st.state_bytes(&["t.winners"]).saturating_sub(base);
    drop(op);
    println!(
        "state top1/{}: {bytes} bytes for {KEYS} partitions, {:.0} bytes per partition \
         (memory-store: includes the winner cache's reservation)",
        S::NAME,
        per(bytes, usize::try_from(KEYS).unwrap_or(1)),
    );
    st.discard();
}

fn top1(c: &mut Criterion) {
    let input = bundles(ROWS, KEYS, 1_000, 43);
    top1_on::<MemoryStore>(c, &input);
    top1_on::<RocksStore>(c, &input);
}

/// MIN with retraction on one group of 100k distinct values: each iteration retracts the
/// current minimum and inserts it back (the new MIN is found by one ordered seek), next to
/// a full scan of a map table of the same 100k entries (what Flink's `updateMin` iterates).
fn min_retract_on<S: BenchStore>(c: &mut Criterion) {
    const N: i64 = 100_000;
    let schema = schema_of(&kv_fields());
    let mut st = S::fresh();
    let spec = GroupAggSpec::new(
        kv_fields(),
        vec![0],
        vec![AggCall::new(AggFunction::Min, vec![1])],
        false,
    );
    let mut op = GroupAggregate::try_new("m", spec, &mut st).expect("open");
    let fill: Vec<(RowKind, Vec<Scalar>)> = (0..N)
        .map(|v| (RowKind::Insert, vec![Scalar::Int64(0), Scalar::Int64(v)]))
        .collect();
    for chunk in fill.chunks(10_000) {
        op.process_bundle(&ChangelogBatch::from_rows(&schema, chunk).expect("batch"))
            .expect("fill");
    }
    let cycle = ChangelogBatch::from_rows(
        &schema,
        &[
            (RowKind::Delete, vec![Scalar::Int64(0), Scalar::Int64(0)]),
            (RowKind::Insert, vec![Scalar::Int64(0), Scalar::Int64(0)]),
        ],
    )
    .expect("batch");
    let mut g = c.benchmark_group(format!("min_retract_100k/{}", S::NAME));
    g.bench_function("retract_min_seek", |b| {
        b.iter(|| black_box(op.process_bundle(&cycle).expect("cycle")));
    });
    let mut st2 = S::fresh();
    let mut table = st2.open_map_table("scan", I64Codec, None).expect("table");
    let kg = MaxParallelism::new(128)
        .expect("mp")
        .key_group(0)
        .expect("kg");
    table.begin_bundle(MapHydration::none()).expect("begin");
    for v in 0..N {
        table.put(kg, b"group", &v.to_be_bytes(), 1).expect("put");
    }
    table.commit_bundle().expect("commit");
    g.bench_function("full_scan_for_min", |b| {
        b.iter(|| {
            table.begin_bundle(MapHydration::none()).expect("begin");
            let mut min: Option<Vec<u8>> = None;
            table
                .scan(
                    kg,
                    b"group",
                    UserKeyRange::all(),
                    ScanDirection::Forward,
                    &mut |k, _| {
                        if min.as_deref().is_none_or(|m| k < m) {
                            min = Some(k.to_vec());
                        }
                        ControlFlow::Continue(())
                    },
                )
                .expect("scan");
            table.commit_bundle().expect("commit");
            black_box(min)
        });
    });
    g.finish();
    drop((op, table));
    st.discard();
    st2.discard();
}

fn min_retract(c: &mut Criterion) {
    min_retract_on::<MemoryStore>(c);
    min_retract_on::<RocksStore>(c);
}

/// The join probe: one left `+I` then its `-D` against `n` right records of its key.
fn join_probe_on<S: BenchStore>(c: &mut Criterion) {
    let mut g = c.benchmark_group(format!("join_probe/{}", S::NAME));
    g.sample_size(10);
    for n in [1_i64, 100, 10_000] {
        let mut st = S::fresh();
        let spec = JoinSpec::new(kv_fields(), kv_fields(), vec![0], vec![0]);
        let mut op = InnerJoin::try_new("j", &spec, &mut st).expect("open");
        let schema = schema_of(&kv_fields());
        let right: Vec<(RowKind, Vec<Scalar>)> = (0..n)
            .map(|v| (RowKind::Insert, vec![Scalar::Int64(7), Scalar::Int64(v)]))
            .collect();
        let right = ChangelogBatch::from_rows(&schema, &right).expect("batch");
        op.process_bundle(&[(JoinSide::Right, &right)])
            .expect("fill");
        let left = ChangelogBatch::from_rows(
            &schema,
            &[
                (RowKind::Insert, vec![Scalar::Int64(7), Scalar::Int64(1)]),
                (RowKind::Delete, vec![Scalar::Int64(7), Scalar::Int64(1)]),
            ],
        )
        .expect("batch");
        g.throughput(Throughput::Elements(u64::try_from(2 * n).unwrap_or(0)));
        g.bench_function(format!("records_per_key/{n}"), |b| {
            b.iter(|| {
                black_box(
                    op.process_bundle(&[(JoinSide::Left, &left)])
                        .expect("probe"),
                )
            });
        });
        if n == 10_000 {
            // Measured while the join's tables are open (memory-store releases a table's
            // reservation when the table is dropped).
            let bytes = st.state_bytes(&["j.left", "j.right"]);
            println!(
                "state join/{}: {bytes} bytes for {n} records of one key, {:.0} bytes per \
                 record",
                S::NAME,
                per(bytes, usize::try_from(n).unwrap_or(1)),
            );
        }
        drop(op);
        st.discard();
    }
    g.finish();
}

fn join_probe(c: &mut Criterion) {
    join_probe_on::<MemoryStore>(c);
    join_probe_on::<RocksStore>(c);
}

criterion_group!(benches, group_aggregate, top1, min_retract, join_probe);
criterion_main!(benches);
