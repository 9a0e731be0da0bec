//! Criterion benches of the window aggregate and Top-N on both backends (memory-store,
//! typed-store): window aggregate rows/s (TUMBLE, HOP with size = 4 x slide, CUMULATE; two
//! phases, Flink's default plan), state bytes per open window (printed once: the backend's
//! bytes over open (key, window) timers), and Top-N with N = 10 over 100k partitions.

mod common;

use std::hint::black_box;

use arrow_schema::{DataType, Field, Fields, TimeUnit};
use common::{BenchStore, Done};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use memory_store::MemoryStore;
use operators::{
    AggCall, AggFunction, ChangelogBatch, RowKind, SortColumn, TopN, TopNSpec, WindowAggSpec,
    WindowAggregate, WindowKind, schema_of,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use state_api::Scalar;
use typed_store::RocksStore;

/// `k BIGINT, v BIGINT, ts TIMESTAMP(3)`.
fn fields() -> Fields {
    Fields::from(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        ),
    ])
}

const ROWS: usize = 100_000;
const KEYS: i64 = 1_000;
const BUNDLE: usize = 1_000;

/// Seeded bundles: times advance 1 ms per row with up to 2 s of disorder; each bundle is
/// followed by a watermark of (max time - 2 s).
fn workload(seed: u64) -> Vec<(ChangelogBatch, i64)> {
    let mut rng = StdRng::seed_from_u64(seed);
    let schema = schema_of(&fields());
    let mut out = Vec::new();
    let mut max = i64::MIN;
    for b in 0..ROWS / BUNDLE {
        let rows: Vec<(RowKind, Vec<Scalar>)> = (0..BUNDLE)
            .map(|i| {
                let t = i64::try_from(b * BUNDLE + i).expect("t") - rng.random_range(0..2_000);
                max = max.max(t);
                (
                    RowKind::Insert,
                    vec![
                        Scalar::Int64(rng.random_range(0..KEYS)),
                        Scalar::Int64(rng.random_range(-1_000..1_000)),
                        Scalar::Timestamp(t),
                    ],
                )
            })
            .collect();
        out.push((
            ChangelogBatch::from_rows(&schema, &rows).expect("batch"),
            max - 2_000,
        ));
    }
    out
}

fn aggs() -> Vec<AggCall> {
    vec![
        AggCall::new(AggFunction::CountStar, vec![]),
        AggCall::new(AggFunction::Sum, vec![1]),
        AggCall::new(AggFunction::Max, vec![1]),
    ]
}

fn kinds() -> [(&'static str, WindowKind); 3] {
    [
        ("tumble_10s", WindowKind::Tumble { size_ms: 10_000 }),
        (
            "hop_40s_slide_10s",
            WindowKind::Hop {
                size_ms: 40_000,
                slide_ms: 10_000,
            },
        ),
        (
            "cumulate_60s_step_10s",
            WindowKind::Cumulate {
                size_ms: 60_000,
                step_ms: 10_000,
            },
        ),
    ]
}

fn window_aggregate_on<S: BenchStore>(c: &mut Criterion, input: &[(ChangelogBatch, i64)]) {
    let mut g = c.benchmark_group(format!("window_aggregate/{}", S::NAME));
    g.sample_size(10);
    g.throughput(Throughput::Elements(ROWS as u64));
    for (name, kind) in kinds() {
        g.bench_function(format!("{name}/100k_rows_1k_keys"), |b| {
            b.iter_batched(
                S::fresh,
                |mut st| {
                    let spec = WindowAggSpec::new(fields(), kind, 2, vec![0], aggs());
                    let mut op = WindowAggregate::try_new("w", spec, &mut st).expect("op");
                    let mut rows = 0;
                    for (batch, wm) in input {
                        op.process_bundle(batch).expect("bundle");
                        rows += op.process_watermark(*wm).expect("wm").num_rows();
                    }
                    rows += op.process_watermark(i64::MAX).expect("end").num_rows();
                    black_box(rows);
                    drop(op);
                    Done(Some(st))
                },
                BatchSize::PerIteration,
            );
        });
    }
    g.finish();
    // State bytes per open window: load every row without any watermark, so every
    // (key, window) stays open, then divide the backend's bytes by the open timers.
    for (name, kind) in kinds() {
        let mut st = S::fresh();
        let spec = WindowAggSpec::new(fields(), kind, 2, vec![0], aggs());
        let base = st.state_bytes(&[]);
        let mut op = WindowAggregate::try_new("w", spec, &mut st).expect("op");
        for (batch, _) in input {
            op.process_bundle(batch).expect("bundle");
        }
        let windows = op.pending_timers();
        // Measured while the operator's tables are open: memory-store releases a table's
        // reservation when the table is dropped.
        let bytes = st
            .state_bytes(&["w.acc", "w.timers", "w.watermark"])
            .saturating_sub(base);
        drop(op);
        #[expect(clippy::cast_precision_loss, reason = "a printed ratio")]
        let per = bytes as f64 / windows as f64;
        println!(
            "state window_aggregate/{}/{name}: {windows} open (key, window) pairs, {bytes} state \
             bytes, {per:.0} bytes per open window",
            S::NAME
        );
        st.discard();
    }
}

fn window_aggregate(c: &mut Criterion) {
    let input = workload(42);
    window_aggregate_on::<MemoryStore>(c, &input);
    window_aggregate_on::<RocksStore>(c, &input);
}

fn top_n_on<S: BenchStore>(c: &mut Criterion) {
    const PARTITIONS: i64 = 100_000;
    const TOPN_ROWS: usize = 300_000;
    let mut rng = StdRng::seed_from_u64(7);
    let input_fields = Fields::from(vec![
        Field::new("p", DataType::Int64, false),
        Field::new("v", DataType::Int64, false),
        Field::new("id", DataType::Int64, false),
    ]);
    let schema = schema_of(&input_fields);
    let rows: Vec<(RowKind, Vec<Scalar>)> = (0..TOPN_ROWS)
        .map(|i| {
            (
                RowKind::Insert,
                vec![
                    Scalar::Int64(rng.random_range(0..PARTITIONS)),
                    Scalar::Int64(rng.random_range(0..1_000_000)),
                    Scalar::Int64(i64::try_from(i).expect("id")),
                ],
            )
        })
        .collect();
    let batches: Vec<ChangelogBatch> = rows
        .chunks(BUNDLE)
        .map(|c| ChangelogBatch::from_rows(&schema, c).expect("batch"))
        .collect();
    let spec = TopNSpec::new(
        input_fields,
        vec![0],
        vec![SortColumn {
            column: 1,
            descending: true,
            nulls_last: true,
        }],
        10,
        true,
    );
    let mut g = c.benchmark_group(format!("top_n/{}", S::NAME));
    g.sample_size(10);
    g.throughput(Throughput::Elements(TOPN_ROWS as u64));
    g.bench_function("n10_100k_partitions/append_300k_rows", |b| {
        b.iter_batched(
            S::fresh,
            |mut st| {
                let mut op = TopN::try_new("t", spec.clone(), &mut st).expect("op");
                let mut n = 0;
                for batch in &batches {
                    n += op.process_bundle(batch).expect("bundle").num_rows();
                }
                black_box(n);
                drop(op);
                Done(Some(st))
            },
            BatchSize::PerIteration,
        );
    });
    g.finish();
}

fn top_n(c: &mut Criterion) {
    top_n_on::<MemoryStore>(c);
    top_n_on::<RocksStore>(c);
}

criterion_group!(benches, window_aggregate, top_n);
criterion_main!(benches);
