//! Criterion benches of the operators on memory-store: rows/s per operator, MIN with
//! retraction on a 100k-element group (ordered seek vs the full scan Flink's
//! `updateMin` does), and the join probe with 1, 100 and 10k records per key.

use std::hint::black_box;
use std::ops::ControlFlow;
use std::time::Duration;

use arrow_schema::{DataType, Field, Fields};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use keygroup::{MaxParallelism, Parallelism};
use memory_store::MemoryStore;
use operators::{
    AggCall, AggFunction, ChangelogBatch, GroupAggSpec, GroupAggregate, InnerJoin, JoinSide,
    JoinSpec, RowKind, SortColumn, Top1, Top1Spec, schema_of,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use state_api::{
    I64Codec, MapHydration, MapStateStore, MapTable, Scalar, ScanDirection, StoreConfig,
    UserKeyRange,
};

fn store() -> MemoryStore {
    let mp = MaxParallelism::new(128).expect("max parallelism");
    let config = StoreConfig::for_subtask(mp, Parallelism::new(1).expect("p"), 0).expect("cfg");
    MemoryStore::new(config)
}

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

fn group_aggregate(c: &mut Criterion) {
    let input = bundles(ROWS, 1_000, 1_000, 42);
    let mut g = c.benchmark_group("group_agg");
    g.throughput(Throughput::Elements(ROWS as u64));
    g.sample_size(10);
    for (name, insert_only) in [("insert_only", true), ("retract_plan", false)] {
        g.bench_function(name, |b| {
            b.iter_batched(
                store,
                |mut st| {
                    let spec = GroupAggSpec::new(
                        kv_fields(),
                        vec![0],
                        vec![
                            AggCall::new(AggFunction::CountStar, vec![]),
                            AggCall::new(AggFunction::Sum, vec![1]),
                            AggCall::new(AggFunction::Min, vec![1]),
                            AggCall::new(AggFunction::Max, vec![1]),
                        ],
                        insert_only,
                    );
                    let mut op = GroupAggregate::try_new("g", spec, &mut st).expect("open");
                    for bundle in &input {
                        black_box(op.process_bundle(bundle).expect("bundle"));
                    }
                },
                BatchSize::PerIteration,
            );
        });
    }
    g.finish();
}

fn top1(c: &mut Criterion) {
    let input = bundles(ROWS, 1_000, 1_000, 43);
    let mut g = c.benchmark_group("top1");
    g.throughput(Throughput::Elements(ROWS as u64));
    g.sample_size(10);
    g.bench_function("desc", |b| {
        b.iter_batched(
            store,
            |mut st| {
                let spec = Top1Spec::new(
                    kv_fields(),
                    vec![0],
                    vec![SortColumn {
                        column: 1,
                        descending: true,
                        nulls_last: true,
                    }],
                    false,
                );
                let mut op = Top1::try_new("t", spec, &mut st).expect("open");
                for bundle in &input {
                    black_box(op.process_bundle(bundle).expect("bundle"));
                }
            },
            BatchSize::PerIteration,
        );
    });
    g.finish();
}

/// MIN with retraction on one group of 100k distinct values: each iteration retracts the
/// current minimum and inserts it back (the new MIN is found by one ordered seek), next to
/// a full scan of the same companion (what Flink's `updateMin` iterates).
fn min_retract(c: &mut Criterion) {
    const N: i64 = 100_000;
    let schema = schema_of(&kv_fields());
    let mut st = store();
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
    let mut g = c.benchmark_group("min_retract_100k");
    g.bench_function("retract_min_seek", |b| {
        b.iter(|| black_box(op.process_bundle(&cycle).expect("cycle")));
    });
    // The scan Flink's updateMin does, over an equal map table of 100k entries.
    let mut st2 = store();
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
}

/// The join probe: one left `+I` then its `-D` against `n` right records of its key.
fn join_probe(c: &mut Criterion) {
    let mut g = c.benchmark_group("join_probe");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(3));
    for n in [1_i64, 100, 10_000] {
        let mut st = store();
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
    }
    g.finish();
}

criterion_group!(benches, group_aggregate, top1, min_retract, join_probe);
criterion_main!(benches);
