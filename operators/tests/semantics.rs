//! Flink rules the fixture cases do not all pin, each on a hand-made changelog (expected
//! rows derived from the Flink 2.3.0 rules in `testdata/flink-operator-cases/README.md`
//! and the functions named in each test).

use std::sync::Arc;
use std::time::Duration;

use arrow_schema::{DataType, Field, Fields};
use keygroup::{MaxParallelism, Parallelism};
use memory_store::MemoryStore;
use operators::{
    AggCall, AggFunction, ChangelogBatch, ChangelogMode, GroupAggSpec, GroupAggregate, InnerJoin,
    JoinSide, JoinSpec, MiniBatch, RowKind, SortColumn, Top1, Top1Spec, schema_of,
};
use state_api::{BoundedMemoryPool, Scalar, StoreConfig};

use RowKind::{Delete as D, Insert as I, UpdateAfter as UA, UpdateBefore as UB};

fn store() -> MemoryStore {
    let mp = MaxParallelism::new(128).unwrap();
    MemoryStore::new(StoreConfig::for_subtask(mp, Parallelism::new(1).unwrap(), 0).unwrap())
}

fn fields(types: &[DataType]) -> Fields {
    Fields::from(
        types
            .iter()
            .enumerate()
            .map(|(i, t)| Field::new(format!("c{i}"), t.clone(), true))
            .collect::<Vec<_>>(),
    )
}

fn batch(f: &Fields, rows: &[(RowKind, Vec<Scalar>)]) -> ChangelogBatch {
    ChangelogBatch::from_rows(&schema_of(f), rows).unwrap()
}

fn run_agg(
    spec: GroupAggSpec,
    bundles: &[Vec<(RowKind, Vec<Scalar>)>],
) -> Vec<(RowKind, Vec<Scalar>)> {
    let mut st = store();
    let f = spec.input.clone();
    let mut op = GroupAggregate::try_new("g", spec, &mut st).unwrap();
    let mut out = Vec::new();
    for b in bundles {
        out.extend(op.process_bundle(&batch(&f, b)).unwrap().to_rows().unwrap());
    }
    out
}

fn k(v: i32) -> Scalar {
    Scalar::Int32(v)
}
fn d(v: f64) -> Scalar {
    Scalar::Float64(v)
}
fn l(v: i64) -> Scalar {
    Scalar::Int64(v)
}

fn assert_rows(actual: &[(RowKind, Vec<Scalar>)], expected: &[(RowKind, Vec<Scalar>)]) {
    assert_eq!(actual.len(), expected.len(), "{actual:?}\nvs\n{expected:?}");
    for (a, e) in actual.iter().zip(expected) {
        let same = a.0 == e.0
            && a.1.len() == e.1.len()
            && a.1.iter().zip(&e.1).all(|(x, y)| match (x, y) {
                (Scalar::Float64(p), Scalar::Float64(q)) => {
                    (p.is_nan() && q.is_nan()) || p.to_bits() == q.to_bits()
                }
                _ => x == y,
            });
        assert!(same, "{a:?} != {e:?}\nall: {actual:?}");
    }
}

/// `GroupAggFunction` compares the node's rows with Java `==`: a NaN sum never equals the
/// previous NaN (always emitted), `-0.0 == 0.0` (suppressed).
#[test]
fn nan_always_emits_negative_zero_is_suppressed() {
    let f = fields(&[DataType::Int32, DataType::Float64]);
    let spec = GroupAggSpec::new(
        f,
        vec![0],
        vec![AggCall::new(AggFunction::Sum, vec![1])],
        true,
    );
    let out = run_agg(
        spec,
        &[vec![
            (I, vec![k(1), d(-0.0)]),
            (I, vec![k(1), d(0.0)]),
            (I, vec![k(2), d(1.0)]),
            (I, vec![k(2), d(f64::NAN)]),
            (I, vec![k(2), d(5.0)]),
        ]],
    );
    assert_rows(
        &out,
        &[
            (I, vec![k(1), d(-0.0)]),
            (I, vec![k(2), d(1.0)]),
            (UB, vec![k(2), d(1.0)]),
            (UA, vec![k(2), d(f64::NAN)]),
            (UB, vec![k(2), d(f64::NAN)]),
            (UA, vec![k(2), d(f64::NAN)]),
        ],
    );
}

/// SUM of TINYINT / SMALLINT is TINYINT / SMALLINT and wraps (Java arithmetic).
#[test]
fn small_integer_sums_wrap_in_their_type() {
    let f = fields(&[DataType::Int32, DataType::Int8, DataType::Int16]);
    let spec = GroupAggSpec::new(
        f,
        vec![0],
        vec![
            AggCall::new(AggFunction::Sum, vec![1]),
            AggCall::new(AggFunction::Sum, vec![2]),
        ],
        true,
    )
    .with_changelog_mode(ChangelogMode::Upsert);
    let out = run_agg(
        spec,
        &[vec![
            (I, vec![k(1), Scalar::Int8(127), Scalar::Int16(32_767)]),
            (I, vec![k(1), Scalar::Int8(1), Scalar::Int16(2)]),
        ]],
    );
    assert_rows(
        &out,
        &[
            (I, vec![k(1), Scalar::Int8(127), Scalar::Int16(32_767)]),
            (UA, vec![k(1), Scalar::Int8(-128), Scalar::Int16(-32_767)]),
        ],
    );
}

/// `MinWithRetractAggFunction`: retracting a value never inserted leaves a -1 entry that
/// becomes the MIN once the real minimum is retracted (recomputed over all entries).
#[test]
fn min_retract_negative_count_surfaces_after_the_real_min_leaves() {
    let f = fields(&[DataType::Int32, DataType::Int64]);
    let spec = GroupAggSpec::new(
        f,
        vec![0],
        vec![AggCall::new(AggFunction::Min, vec![1])],
        false,
    );
    let out = run_agg(
        spec,
        &[
            vec![
                (I, vec![k(1), l(5)]),
                (I, vec![k(1), l(7)]),
                (I, vec![k(1), l(9)]),
            ],
            vec![(D, vec![k(1), l(1)]), (D, vec![k(1), l(5)])],
        ],
    );
    assert_rows(
        &out,
        &[
            (I, vec![k(1), l(5)]),
            // -D 1: the hidden count1 drops to 2, MIN unchanged: nothing.
            (UB, vec![k(1), l(5)]),
            (UA, vec![k(1), l(1)]),
        ],
    );
}

/// With state TTL on, `GroupAggFunction` emits even an unchanged row
/// (`stateRetentionTime > 0`).
#[test]
fn state_ttl_emits_unchanged_rows() {
    let f = fields(&[DataType::Int32, DataType::Int64]);
    let spec = GroupAggSpec::new(
        f,
        vec![0],
        vec![AggCall::new(AggFunction::Max, vec![1])],
        true,
    )
    .with_state_ttl(Duration::from_secs(3600));
    let out = run_agg(spec, &[vec![(I, vec![k(1), l(5)]), (I, vec![k(1), l(3)])]]);
    assert_rows(
        &out,
        &[
            (I, vec![k(1), l(5)]),
            (UB, vec![k(1), l(5)]),
            (UA, vec![k(1), l(5)]),
        ],
    );
}

/// Mini-batch: one change per touched key per bundle; a key inserted and fully retracted
/// inside one bundle emits nothing (local-global, `MiniBatchGlobalGroupAggFunction`).
#[test]
fn mini_batch_emits_one_change_per_key_per_bundle() {
    let f = fields(&[DataType::Int32, DataType::Int64]);
    let spec = GroupAggSpec::new(
        f,
        vec![0],
        vec![
            AggCall::new(AggFunction::CountStar, vec![]),
            AggCall::new(AggFunction::Max, vec![1]),
        ],
        false,
    )
    .with_mini_batch(MiniBatch { size: 5000 });
    let out = run_agg(
        spec,
        &[
            vec![
                (I, vec![k(1), l(5)]),
                (I, vec![k(1), l(8)]),
                (I, vec![k(2), l(1)]),
                (D, vec![k(2), l(1)]),
            ],
            vec![(D, vec![k(1), l(8)]), (I, vec![k(1), l(2)])],
            vec![(D, vec![k(1), l(5)]), (D, vec![k(1), l(2)])],
        ],
    );
    assert_rows(
        &out,
        &[
            (I, vec![k(1), l(2), l(8)]),
            (UB, vec![k(1), l(2), l(8)]),
            (UA, vec![k(1), l(2), l(5)]),
            (D, vec![k(1), l(2), l(5)]),
        ],
    );
}

/// Mini-batch with `FIRST_VALUE` (not mergeable): Flink's one-phase
/// `MiniBatchGroupAggFunction`, still one change per key per bundle.
#[test]
fn mini_batch_one_phase_with_first_and_last_value() {
    let f = fields(&[DataType::Int32, DataType::Int64]);
    let spec = GroupAggSpec::new(
        f,
        vec![0],
        vec![
            AggCall::new(AggFunction::FirstValue, vec![1]),
            AggCall::new(AggFunction::LastValue, vec![1]),
        ],
        true,
    )
    .with_mini_batch(MiniBatch { size: 5000 });
    let null = Scalar::Null;
    let out = run_agg(
        spec,
        &[
            vec![
                (I, vec![k(1), null.clone()]),
                (I, vec![k(1), l(4)]),
                (I, vec![k(1), l(6)]),
            ],
            vec![(I, vec![k(1), l(7)]), (I, vec![k(1), null])],
        ],
    );
    assert_rows(
        &out,
        &[
            (I, vec![k(1), l(4), l(6)]),
            (UB, vec![k(1), l(4), l(6)]),
            (UA, vec![k(1), l(4), l(7)]),
        ],
    );
}

/// COUNT(DISTINCT) on retracting input: a value leaves only with its last copy; an unseen
/// retraction leaves -1 (no effect) and the next insert brings it to 0 (no effect).
#[test]
fn count_distinct_counts_copies() {
    let f = fields(&[DataType::Int32, DataType::Int64]);
    let spec = GroupAggSpec::new(
        f,
        vec![0],
        vec![
            AggCall::new(AggFunction::CountStar, vec![]),
            AggCall::new(AggFunction::Count, vec![1]).distinct(),
        ],
        false,
    )
    .with_changelog_mode(ChangelogMode::Upsert);
    let out = run_agg(
        spec,
        &[vec![
            (I, vec![k(1), l(3)]),
            (I, vec![k(1), l(3)]),
            (I, vec![k(1), l(4)]),
            (D, vec![k(1), l(3)]),
            (D, vec![k(1), l(9)]),
            (I, vec![k(1), l(9)]),
            (D, vec![k(1), l(3)]),
        ]],
    );
    assert_rows(
        &out,
        &[
            (I, vec![k(1), l(1), l(1)]),
            (UA, vec![k(1), l(2), l(1)]),
            (UA, vec![k(1), l(3), l(2)]),
            (UA, vec![k(1), l(2), l(2)]),
            (UA, vec![k(1), l(1), l(2)]),
            (UA, vec![k(1), l(2), l(2)]),
            (UA, vec![k(1), l(1), l(1)]),
        ],
    );
}

/// The join emits with the input row's kind; a retraction of a record never stored still
/// retracts its matches and changes nothing; null keys never match; `-0.0` and `0.0` are
/// different records.
#[test]
fn join_rules() {
    let f = fields(&[DataType::Int32, DataType::Float64]);
    let spec = JoinSpec::new(f.clone(), f.clone(), vec![0], vec![0]);
    let mut st = store();
    let mut op = InnerJoin::try_new("j", &spec, &mut st).unwrap();
    let right = batch(
        &f,
        &[(I, vec![k(1), d(0.0)]), (I, vec![Scalar::Null, d(1.0)])],
    );
    assert_eq!(
        op.process_bundle(&[(JoinSide::Right, &right)])
            .unwrap()
            .num_rows(),
        0
    );
    let left = batch(
        &f,
        &[
            (D, vec![k(1), d(5.0)]),
            (I, vec![Scalar::Null, d(1.0)]),
            (UA, vec![k(1), d(2.0)]),
        ],
    );
    let out = op
        .process_bundle(&[(JoinSide::Left, &left)])
        .unwrap()
        .to_rows()
        .unwrap();
    assert_rows(
        &out,
        &[
            (D, vec![k(1), d(5.0), k(1), d(0.0)]),
            (UA, vec![k(1), d(2.0), k(1), d(0.0)]),
        ],
    );
    // -0.0 is another record than 0.0: its retraction removes nothing on the right.
    let right = batch(&f, &[(D, vec![k(1), d(-0.0)])]);
    let out = op
        .process_bundle(&[(JoinSide::Right, &right)])
        .unwrap()
        .to_rows()
        .unwrap();
    assert_rows(&out, &[(D, vec![k(1), d(2.0), k(1), d(-0.0)])]);
    let probe = batch(&f, &[(I, vec![k(1), d(9.0)])]);
    let out = op
        .process_bundle(&[(JoinSide::Left, &probe)])
        .unwrap()
        .to_rows()
        .unwrap();
    assert_rows(&out, &[(I, vec![k(1), d(9.0), k(1), d(0.0)])]);
}

/// Top-1 outputs are the same with and without the winner cache, and the cache stays within
/// its pool: a pool too small for any winner admits none.
#[test]
fn top1_winner_cache_is_transparent_and_bounded() {
    let f = fields(&[DataType::Int32, DataType::Int64]);
    let spec = Top1Spec::new(
        f.clone(),
        vec![0],
        vec![SortColumn {
            column: 1,
            descending: true,
            nulls_last: true,
        }],
        true,
    );
    let bundles: Vec<Vec<(RowKind, Vec<Scalar>)>> = (0..5)
        .map(|b| {
            (0..20)
                .map(|i| (I, vec![k(i % 4), l(i64::from(i * b % 7))]))
                .collect()
        })
        .collect();
    let run = |cache: usize, pool: Option<usize>| {
        let mp = MaxParallelism::new(128).unwrap();
        let mut config = StoreConfig::for_subtask(mp, Parallelism::new(1).unwrap(), 0).unwrap();
        if let Some(p) = pool {
            config = config.with_memory_pool(Arc::new(BoundedMemoryPool::new(p)));
        }
        let mut st = MemoryStore::new(config);
        let mut op = Top1::try_new("t", spec.clone(), &mut st)
            .unwrap()
            .with_winner_cache_bytes(cache);
        let mut out = Vec::new();
        for b in &bundles {
            out.extend(op.process_bundle(&batch(&f, b)).unwrap().to_rows().unwrap());
        }
        (out, op.cached_winners())
    };
    let (plain, none) = run(0, None);
    let (cached, some) = run(1 << 20, None);
    assert_eq!(none, 0);
    assert_eq!(some, 4);
    assert_rows(&cached, &plain);
    assert!(plain.iter().any(|(kind, _)| *kind == UB));
    // A 1 MiB pool shared with the store: the cache admits what the pool allows.
    let (bounded, _) = run(1 << 20, Some(1 << 20));
    assert_rows(&bounded, &plain);
}

/// The probe cache changes nothing in the output: a cache of 0 bytes (lazy iteration from
/// the first record), one too small for the key's records (lazy after a few), and the
/// default give the same rows.
#[test]
fn join_probe_cache_is_transparent() {
    let f = fields(&[DataType::Int32, DataType::Int64]);
    let spec = JoinSpec::new(f.clone(), f.clone(), vec![0], vec![0]);
    let right: Vec<(RowKind, Vec<Scalar>)> = (0..50).map(|v| (I, vec![k(1), l(v)])).collect();
    let left = vec![
        (I, vec![k(1), l(100)]),
        (I, vec![k(1), l(101)]),
        (D, vec![k(1), l(100)]),
    ];
    let run = |bytes: usize| {
        let mut st = store();
        let mut op = InnerJoin::try_new("j", &spec, &mut st)
            .unwrap()
            .with_probe_cache_bytes(bytes);
        op.process_bundle(&[(JoinSide::Right, &batch(&f, &right))])
            .unwrap();
        let mixed = batch(&f, &[(I, vec![k(1), l(7)])]);
        op.process_bundle(&[
            (JoinSide::Left, &batch(&f, &left)),
            (JoinSide::Right, &mixed),
        ])
        .unwrap()
        .to_rows()
        .unwrap()
    };
    let reference = run(operators::DEFAULT_PROBE_CACHE_BYTES);
    assert_eq!(reference.len(), 150 + 1);
    assert_rows(&run(0), &reference);
    assert_rows(&run(500), &reference);
}

/// A pool that records the peak of its usage. It reports a capacity (one it never reaches),
/// so reservations charge it exactly: against an unbounded pool they charge whole 64 KiB
/// steps, and peaks would differ by a step wherever a reservation crossed one.
#[derive(Debug, Default)]
struct PeakPool {
    inner: state_api::UnboundedMemoryPool,
    peak: std::sync::atomic::AtomicUsize,
}

impl state_api::MemoryPool for PeakPool {
    fn try_acquire(&self, bytes: usize) -> Result<(), state_api::Error> {
        self.inner.try_acquire(bytes)?;
        self.peak
            .fetch_max(self.inner.used(), std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
    fn release(&self, bytes: usize) {
        self.inner.release(bytes);
    }
    fn used(&self) -> usize {
        self.inner.used()
    }
    fn capacity(&self) -> Option<usize> {
        Some(usize::MAX)
    }
}

/// Bounded output chunks: two probes of a key with 10k records (one of them three times) that
/// cannot cache them (budget 4 KiB) iterate lazily and hands the output over in chunks of
/// at most 100 rows while it runs; the pool's peak is at most the budget above the peak of
/// the same bundle with no cache at all (the store's own bytes); the chunks concatenate to
/// exactly the unchunked, cached output.
#[test]
fn join_lazy_probe_emits_bounded_chunks() {
    let f = fields(&[DataType::Int32, DataType::Int64]);
    let spec = JoinSpec::new(f.clone(), f.clone(), vec![0], vec![0]);
    let mut right: Vec<(RowKind, Vec<Scalar>)> =
        (0..10_000).map(|v| (I, vec![k(1), l(v)])).collect();
    right.extend((0..2).map(|_| (I, vec![k(1), l(5)])));
    // Two probes of the key: the first tries to cache its records (a later probe would read
    // them) and is refused past the budget.
    let probe = batch(&f, &[(I, vec![k(1), l(-1)]), (I, vec![k(1), l(-2)])]);
    let run = |budget: usize| {
        let pool = Arc::new(PeakPool::default());
        let mp = MaxParallelism::new(128).unwrap();
        let config = StoreConfig::for_subtask(mp, Parallelism::new(1).unwrap(), 0)
            .unwrap()
            .with_memory_pool(Arc::clone(&pool) as Arc<dyn state_api::MemoryPool>);
        let mut st = MemoryStore::new(config);
        let mut op = InnerJoin::try_new("j", &spec, &mut st)
            .unwrap()
            .with_probe_cache_bytes(budget);
        op.process_bundle(&[(JoinSide::Right, &batch(&f, &right))])
            .unwrap();
        pool.peak.store(
            state_api::MemoryPool::used(pool.as_ref()),
            std::sync::atomic::Ordering::Relaxed,
        );
        let mut chunks = Vec::new();
        op.process_bundle_chunked(&[(JoinSide::Left, &probe)], 100, &mut |b| {
            chunks.push(b.to_rows().unwrap());
            Ok(())
        })
        .unwrap();
        let peak = pool.peak.load(std::sync::atomic::Ordering::Relaxed);
        (chunks, peak, op)
    };
    let (no_cache, store_peak, _) = run(0);
    let (chunks, peak, mut op) = run(4096);
    assert!(
        peak <= store_peak + 4096,
        "peak {peak}, store alone {store_peak}"
    );
    assert!(chunks.iter().all(|c| !c.is_empty() && c.len() <= 100));
    assert_eq!(chunks.len(), 201, "20 004 rows in chunks of 100");
    assert_eq!(chunks, no_cache);
    let chunked: Vec<(RowKind, Vec<Scalar>)> = chunks.into_iter().flatten().collect();

    let mut st = store();
    let mut reference = InnerJoin::try_new("j", &spec, &mut st).unwrap();
    reference
        .process_bundle(&[(JoinSide::Right, &batch(&f, &right))])
        .unwrap();
    let whole = reference
        .process_bundle(&[(JoinSide::Left, &probe)])
        .unwrap()
        .to_rows()
        .unwrap();
    assert_eq!(whole.len(), 20_004);
    assert_rows(&chunked, &whole);
    // A sink error stops the bundle and is returned.
    let err = op
        .process_bundle_chunked(&[(JoinSide::Left, &probe)], 10, &mut |_| {
            Err(operators::Error::Unsupported {
                what: "sink full".into(),
            })
        })
        .unwrap_err();
    assert!(err.to_string().contains("sink full"));
}

/// Hosts drive any one-input operator through the trait, bundle by bundle, and move its
/// state through canonical snapshots under its operator id and version.
#[test]
fn driver_runs_operators_behind_the_trait() {
    use operators::{OneInputOperator, run_bundles};
    let f = fields(&[DataType::Int32, DataType::Int64]);
    let bundles = vec![
        batch(&f, &[(I, vec![k(1), l(3)]), (I, vec![k(2), l(4)])]),
        batch(&f, &[(I, vec![k(1), l(9)])]),
    ];
    let mut st = store();
    let agg = GroupAggSpec::new(
        f.clone(),
        vec![0],
        vec![AggCall::new(AggFunction::Max, vec![1])],
        true,
    );
    let top = Top1Spec::new(
        f.clone(),
        vec![0],
        vec![SortColumn {
            column: 1,
            descending: true,
            nulls_last: true,
        }],
        false,
    );
    let mut ops: Vec<Box<dyn OneInputOperator>> = vec![
        Box::new(GroupAggregate::try_new("g", agg, &mut st).unwrap()),
        Box::new(Top1::try_new("t", top, &mut st).unwrap()),
    ];
    for op in &mut ops {
        let out = run_bundles(op.as_mut(), &bundles).unwrap();
        let kinds: Vec<RowKind> = out.iter().flat_map(|b| b.kinds().to_vec()).collect();
        assert_eq!(kinds, [I, I, UB, UA], "{}", op.operator_id());
        let version = if op.operator_id() == "g" {
            operators::GROUP_AGG_STATE_VERSION
        } else {
            operators::TOP1_STATE_VERSION
        };
        assert_eq!(op.state_version(), version);
        let mut c = sfcs_format::MemoryContainer::new();
        let summary = op.snapshot(&mut c).unwrap();
        assert_eq!(summary.rows, 2, "{}", op.operator_id());
        assert_eq!(op.restore(&[&c]).unwrap().rows, 2);
    }
}
