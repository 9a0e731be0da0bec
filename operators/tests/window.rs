//! Window aggregate behaviour beyond the Flink fixtures: late rows, watermarks at window
//! ends, HOP/CUMULATE late-for-the-first-window rows, Flink 2.3.0's `TIMESTAMP_LTZ` data loss
//! (fixed here), daylight-saving transitions, one phase vs two phases, and an interrupted run
//! restored at another parallelism.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};
use keygroup::{KeyGroup, MaxParallelism, Parallelism, RowKind};
use memory_store::MemoryStore;
use operators::{
    AggCall, AggFunction, AggPhases, ChangelogBatch, Error, KeyEncoder, WindowAggSpec,
    WindowAggregate, WindowKind,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sfcs_format::{Container, MemoryContainer};
use state_api::{Row, Scalar, StoreConfig};

const SEC: i64 = 1000;
const HOUR: i64 = 3_600_000;
const DAY: i64 = 86_400_000;

fn store(parallelism: i32, index: i32) -> MemoryStore {
    let mp = MaxParallelism::new(128).unwrap();
    MemoryStore::new(
        StoreConfig::for_subtask(mp, Parallelism::new(parallelism).unwrap(), index).unwrap(),
    )
}

/// `k INT, v BIGINT, ts TIMESTAMP(3)` (or `TIMESTAMP_LTZ(3)`).
fn input(ltz: bool) -> Fields {
    let tz = ltz.then(|| "UTC".into());
    Fields::from(vec![
        Field::new("k", DataType::Int32, true),
        Field::new("v", DataType::Int64, true),
        Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, tz), false),
    ])
}

fn aggs() -> Vec<AggCall> {
    vec![
        AggCall::new(AggFunction::CountStar, vec![]),
        AggCall::new(AggFunction::Sum, vec![1]),
        AggCall::new(AggFunction::Max, vec![1]),
        AggCall::new(AggFunction::Count, vec![1]).distinct(),
    ]
}

fn spec(kind: WindowKind, ltz: bool) -> WindowAggSpec {
    WindowAggSpec::new(input(ltz), kind, 2, vec![0], aggs())
}

fn row(k: i32, v: i64, ts: i64) -> Row {
    vec![Scalar::Int32(k), Scalar::Int64(v), Scalar::Timestamp(ts)]
}

#[derive(Debug, Clone)]
enum Ev {
    Rows(Vec<Row>),
    Watermark(i64),
}

fn feed(op: &mut WindowAggregate<MemoryStore>, events: &[Ev]) -> Vec<Row> {
    let schema = Arc::new(Schema::new(op.input_fields().clone()));
    let mut out = Vec::new();
    for e in events {
        match e {
            Ev::Rows(rows) => {
                let rows: Vec<(RowKind, Row)> =
                    rows.iter().map(|r| (RowKind::Insert, r.clone())).collect();
                op.process_bundle(&ChangelogBatch::from_rows(&schema, &rows).unwrap())
                    .unwrap();
            }
            Ev::Watermark(w) => {
                for (kind, r) in op.process_watermark(*w).unwrap().to_rows().unwrap() {
                    assert_eq!(kind, RowKind::Insert);
                    out.push(r);
                }
            }
        }
    }
    out
}

fn run(spec: WindowAggSpec, events: &[Ev]) -> (Vec<Row>, WindowAggregate<MemoryStore>) {
    let mut st = store(1, 0);
    let mut op = WindowAggregate::try_new("w", spec, &mut st).unwrap();
    let out = feed(&mut op, events);
    (out, op)
}

/// `(k, count, window_start, window_end)` of output rows.
fn summary(rows: &[Row]) -> Vec<(i32, i64, i64, i64)> {
    let mut s: Vec<_> = rows
        .iter()
        .map(|r| {
            let (Scalar::Int32(k), Scalar::Int64(c)) = (&r[0], &r[1]) else {
                panic!("{r:?}")
            };
            let (Scalar::Timestamp(ws), Scalar::Timestamp(we)) = (&r[5], &r[6]) else {
                panic!("{r:?}")
            };
            (*k, *c, *ws, *we)
        })
        .collect();
    s.sort_unstable();
    s
}

fn multiset(rows: &[Row]) -> Vec<String> {
    let mut v: Vec<String> = rows.iter().map(|r| format!("{r:?}")).collect();
    v.sort();
    v
}

#[test]
fn late_rows_are_dropped_and_counted_and_a_watermark_at_end_minus_one_fires() {
    let tumble = WindowKind::Tumble { size_ms: 10 * SEC };
    let (out, op) = run(
        spec(tumble, false),
        &[
            Ev::Rows(vec![row(1, 1, SEC), row(1, 2, 9 * SEC)]),
            // end - 2: nothing fires
            Ev::Watermark(10 * SEC - 2),
            // behind the watermark but its window has not fired: counted
            Ev::Rows(vec![row(1, 3, 2 * SEC)]),
            // exactly end - 1: fires [0, 10 s)
            Ev::Watermark(10 * SEC - 1),
            // its only window fired: dropped
            Ev::Rows(vec![row(1, 4, 5 * SEC), row(2, 5, 10 * SEC)]),
            Ev::Watermark(i64::MAX),
        ],
    );
    assert_eq!(
        summary(&out),
        [(1, 3, 0, 10 * SEC), (2, 1, 10 * SEC, 20 * SEC)]
    );
    assert_eq!(op.late_rows(), 1);
    assert_eq!(op.pending_timers(), 0);
    assert_eq!(op.current_watermark(), i64::MAX);
}

#[test]
fn several_windows_fire_on_one_watermark() {
    let tumble = WindowKind::Tumble { size_ms: 10 * SEC };
    let rows: Vec<Row> = (0..6)
        .map(|i| row(i % 2, i64::from(i), i64::from(i) * 10 * SEC))
        .collect();
    let (out, _) = run(
        spec(tumble, false),
        &[Ev::Rows(rows), Ev::Watermark(60 * SEC)],
    );
    assert_eq!(out.len(), 6);
}

#[test]
fn hop_row_late_for_its_first_window_counts_in_the_later_ones() {
    // size = 4 x slide
    let hop = WindowKind::Hop {
        size_ms: 40 * SEC,
        slide_ms: 10 * SEC,
    };
    let (out, op) = run(
        spec(hop, false),
        &[
            Ev::Rows(vec![row(1, 1, 5 * SEC)]),
            Ev::Watermark(10 * SEC - 1),        // fires [-30, 10)
            Ev::Rows(vec![row(1, 2, 6 * SEC)]), // late for [-30, 10) only
            Ev::Watermark(i64::MAX),
        ],
    );
    assert_eq!(
        summary(&out),
        [
            (1, 1, -30 * SEC, 10 * SEC),
            (1, 2, -20 * SEC, 20 * SEC),
            (1, 2, -10 * SEC, 30 * SEC),
            (1, 2, 0, 40 * SEC)
        ]
    );
    assert_eq!(op.late_rows(), 0);
}

#[test]
fn cumulate_row_late_for_its_first_step_counts_in_the_later_steps() {
    let cumulate = WindowKind::Cumulate {
        size_ms: 30 * SEC,
        step_ms: 10 * SEC,
    };
    let (out, op) = run(
        spec(cumulate, false),
        &[
            Ev::Rows(vec![row(1, 1, 5 * SEC), row(1, 1, 15 * SEC)]),
            Ev::Watermark(20 * SEC - 1), // fires [0, 10) and [0, 20)
            Ev::Rows(vec![row(1, 7, 6 * SEC), row(1, 8, 12 * SEC)]),
            Ev::Watermark(i64::MAX),
        ],
    );
    assert_eq!(
        summary(&out),
        [
            (1, 1, 0, 10 * SEC),
            (1, 2, 0, 20 * SEC),
            (1, 4, 0, 30 * SEC)
        ]
    );
    // DISTINCT over the merged slices: values 1, 7, 8
    let last = out
        .iter()
        .find(|r| r[6] == Scalar::Timestamp(30 * SEC))
        .unwrap();
    assert_eq!(last[4], Scalar::Int64(3));
    assert_eq!(last[2], Scalar::Int64(17));
    assert_eq!(op.late_rows(), 0);
}

#[test]
fn hop_size_must_be_a_multiple_of_the_slide() {
    let hop = WindowKind::Hop {
        size_ms: 25 * SEC,
        slide_ms: 10 * SEC,
    };
    let mut st = store(1, 0);
    let Err(err) = WindowAggregate::try_new("w", spec(hop, false), &mut st) else {
        panic!("accepted")
    };
    assert!(matches!(err, Error::InvalidSpec { .. }));
    assert!(
        err.to_string().contains(
            "HOP table function based aggregate requires size must be an integral multiple of slide"
        ),
        "{err}"
    );
}

/// 2024-01-01T00:00Z.
const JAN_1: i64 = 1_704_067_200_000;

/// The repro of Flink 2.3.0's `TIMESTAMP_LTZ` window data loss (README of the Flink operator
/// cases): Asia/Shanghai, TUMBLE(1 DAY), rows at 02:00, 04:00, 15:30 UTC, watermarks 03:00,
/// 15:00, 16:30, end of input. Flink 2.3.0 emits **nothing**; the correct result, emitted
/// here at the 16:30 watermark, is one window [2024-01-01 00:00, 2024-01-02 00:00) local
/// with count 3.
#[test]
fn ltz_shanghai_window_is_not_lost_as_in_flink_2_3_0() {
    let s = spec(WindowKind::Tumble { size_ms: DAY }, true).with_local_time_zone("Asia/Shanghai");
    for phases in [AggPhases::TwoPhase, AggPhases::OnePhase] {
        let mut st = store(1, 0);
        let mut op = WindowAggregate::try_new("w", s.clone().with_phases(phases), &mut st).unwrap();
        let mut fired_at_1630 = Vec::new();
        let mut all = Vec::new();
        for (rows, wm) in [
            (vec![row(1, 10, JAN_1 + 2 * HOUR)], JAN_1 + 3 * HOUR),
            (vec![row(1, 20, JAN_1 + 4 * HOUR)], JAN_1 + 15 * HOUR),
            (
                vec![row(1, 30, JAN_1 + 15 * HOUR + 30 * 60 * SEC)],
                JAN_1 + 16 * HOUR + 30 * 60 * SEC,
            ),
            (vec![], i64::MAX),
        ] {
            let out = feed(&mut op, &[Ev::Rows(rows), Ev::Watermark(wm)]);
            if wm == JAN_1 + 16 * HOUR + 30 * 60 * SEC {
                fired_at_1630.clone_from(&out);
            }
            all.extend(out);
        }
        // window_start / window_end are local date-times (read as UTC).
        assert_eq!(summary(&all), [(1, 3, JAN_1, JAN_1 + DAY)], "{phases:?}");
        assert_eq!(
            fired_at_1630.len(),
            1,
            "fires when the watermark passes 16:00 UTC - 1 ms"
        );
        assert_eq!(all[0][2], Scalar::Int64(60));
        assert_eq!(op.late_rows(), 0);
    }
}

#[test]
fn ltz_kolkata_cumulate_uses_half_hour_boundaries() {
    // +05:30: local hours start at :30 UTC.
    let cumulate = WindowKind::Cumulate {
        size_ms: 2 * HOUR,
        step_ms: HOUR,
    };
    for zone in ["Asia/Kolkata", "+05:30"] {
        let s = spec(cumulate, true).with_local_time_zone(zone);
        let t = JAN_1 + 30 * 60 * SEC; // 06:00 local
        let (out, _) = run(
            s,
            &[
                Ev::Rows(vec![row(1, 1, t), row(1, 2, t + HOUR + 1)]),
                // 07:00 local - 1 ms = 01:29:59.999 UTC fires [06:00, 07:00)
                Ev::Watermark(t + HOUR - 1),
                Ev::Watermark(i64::MAX),
            ],
        );
        let local = JAN_1 + 6 * HOUR;
        assert_eq!(
            summary(&out),
            [(1, 1, local, local + HOUR), (1, 2, local, local + 2 * HOUR)],
            "{zone}"
        );
    }
}

/// `America/Los_Angeles` leaves daylight saving on 2021-11-07: local 01:00-02:00 happens
/// twice. Both occurrences fall into one local window [01:00, 02:00), whose timer Flink puts
/// one hour after the first occurrence's end (`toEpochMillsForTimer`): 09:59:59.999 UTC.
#[test]
fn dst_fold_keeps_both_repeated_hours_in_one_window() {
    let s = spec(WindowKind::Tumble { size_ms: HOUR }, true)
        .with_local_time_zone("America/Los_Angeles");
    let first_0130 = 1_636_273_800_000; // 2021-11-07T08:30Z = 01:30 PDT
    let second_0130 = first_0130 + HOUR; // 09:30Z = 01:30 PST
    let (out, op) = run(
        s,
        &[
            Ev::Rows(vec![row(1, 1, first_0130)]),
            Ev::Watermark(first_0130 + 30 * 60 * SEC), // 09:00Z: the window stays open
            Ev::Rows(vec![row(1, 2, second_0130)]),
            Ev::Watermark(second_0130 + 30 * 60 * SEC - 1), // 09:59:59.999Z fires
        ],
    );
    let local_0100 = 1_636_246_800_000; // 2021-11-07T01:00 read as UTC
    assert_eq!(summary(&out), [(1, 2, local_0100, local_0100 + HOUR)]);
    assert_eq!(op.pending_timers(), 0);
}

/// A seeded workload: keys 0..20, event times drifting forward with disorder, a watermark
/// (max time - 3 s) every 7 to 20 rows, late rows included.
fn workload(seed: u64) -> Vec<Ev> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut events = Vec::new();
    let mut t = 0_i64;
    let mut max = i64::MIN;
    for _ in 0..60 {
        let n = rng.random_range(7..20);
        let mut rows = Vec::new();
        for _ in 0..n {
            t += rng.random_range(0..600);
            let ts = t - rng.random_range(0..12_000);
            max = max.max(ts);
            let v = if rng.random_bool(0.1) {
                Scalar::Null
            } else {
                Scalar::Int64(rng.random_range(-5..20))
            };
            rows.push(vec![
                Scalar::Int32(rng.random_range(0..20)),
                v,
                Scalar::Timestamp(ts),
            ]);
        }
        events.push(Ev::Rows(rows));
        events.push(Ev::Watermark(max - 3 * SEC));
    }
    events.push(Ev::Watermark(i64::MAX));
    events
}

fn kinds() -> [WindowKind; 3] {
    [
        WindowKind::Tumble { size_ms: 5 * SEC },
        WindowKind::Hop {
            size_ms: 8 * SEC,
            slide_ms: 2 * SEC,
        },
        WindowKind::Cumulate {
            size_ms: 9 * SEC,
            step_ms: 3 * SEC,
        },
    ]
}

#[test]
fn one_phase_and_two_phase_give_the_same_table() {
    for (i, kind) in kinds().into_iter().enumerate() {
        let events = workload(40 + i as u64);
        let (two, op2) = run(spec(kind, false).with_phases(AggPhases::TwoPhase), &events);
        let (one, op1) = run(spec(kind, false).with_phases(AggPhases::OnePhase), &events);
        assert!(!two.is_empty());
        assert_eq!(multiset(&two), multiset(&one), "{kind:?}");
        assert_eq!(op1.late_rows(), op2.late_rows());
        assert!(op1.late_rows() > 0, "the workload has late rows");
    }
}

fn subtask_of(input: &Fields, r: &Row, parallelism: i32) -> usize {
    let mp = MaxParallelism::new(128).unwrap();
    let mut enc = KeyEncoder::try_new(input, &[0], mp).unwrap();
    let mut buf = Vec::new();
    let kg: KeyGroup = enc.encode(r, &mut buf).unwrap();
    let idx = keygroup::compute_operator_index_for_key_group(
        mp,
        Parallelism::new(parallelism).unwrap(),
        kg,
    );
    usize::try_from(idx).unwrap()
}

/// Snapshot canonically after watermark `k` (open windows, pending timers), restore onto
/// fresh stores at parallelism 2 (each takes its key-group range from the one snapshot),
/// continue: the output equals the uninterrupted run's.
#[test]
fn interrupted_run_restored_at_parallelism_2_equals_the_uninterrupted_run() {
    for (i, kind) in kinds().into_iter().enumerate() {
        let events = workload(7 + i as u64);
        let s = spec(kind, false);
        let (expected, _) = run(s.clone(), &events);
        for k in [3_usize, 25] {
            let cut = 2 * k;
            let mut st = store(1, 0);
            let mut op = WindowAggregate::try_new("w", s.clone(), &mut st).unwrap();
            let mut out = feed(&mut op, &events[..cut]);
            assert!(op.pending_timers() > 0, "open windows at the snapshot");
            let wm = op.current_watermark();
            let mut c = MemoryContainer::new();
            op.snapshot(&mut c).unwrap();
            drop(op);
            let sources: Vec<&dyn Container> = vec![&c];
            let mut stores: Vec<MemoryStore> = (0..2).map(|i| store(2, i)).collect();
            let mut ops: Vec<WindowAggregate<MemoryStore>> = stores
                .iter_mut()
                .map(|st| {
                    let mut o = WindowAggregate::try_new("w", s.clone(), st).unwrap();
                    o.restore(&sources).unwrap();
                    o
                })
                .collect();
            assert!(ops.iter().all(|o| o.current_watermark() == wm));
            assert_eq!(
                ops.iter()
                    .map(WindowAggregate::pending_timers)
                    .sum::<usize>(),
                {
                    let mut st = store(1, 0);
                    let mut o = WindowAggregate::try_new("w", s.clone(), &mut st).unwrap();
                    o.restore(&sources).unwrap();
                    o.pending_timers()
                }
            );
            for e in &events[cut..] {
                match e {
                    Ev::Rows(rows) => {
                        let mut per: BTreeMap<usize, Vec<Row>> = BTreeMap::new();
                        for r in rows {
                            per.entry(subtask_of(&s.input, r, 2))
                                .or_default()
                                .push(r.clone());
                        }
                        for (idx, rows) in per {
                            out.extend(feed(&mut ops[idx], &[Ev::Rows(rows)]));
                        }
                    }
                    Ev::Watermark(_) => {
                        for o in &mut ops {
                            out.extend(feed(o, std::slice::from_ref(e)));
                        }
                    }
                }
            }
            assert_eq!(
                multiset(&out),
                multiset(&expected),
                "{kind:?} cut after watermark {k}"
            );
        }
    }
}

/// Flink 2.3.0's planner refuses `FIRST_VALUE` / `LAST_VALUE` in HOP and CUMULATE windows, on
/// insert-only and on retracting input (its `ValidationException`: the functions have no
/// `merge`, which shared slices need; found with `compat/flink-operators`); TUMBLE takes them.
#[test]
fn first_last_in_hop_or_cumulate_is_refused_as_flink_refuses_it() {
    let hop = WindowKind::Hop {
        size_ms: 20 * SEC,
        slide_ms: 5 * SEC,
    };
    let cumulate = WindowKind::Cumulate {
        size_ms: 40 * SEC,
        step_ms: 10 * SEC,
    };
    for (function, class) in [
        (AggFunction::FirstValue, "FirstValue"),
        (AggFunction::LastValue, "LastValue"),
    ] {
        let calls = vec![
            AggCall::new(AggFunction::CountStar, vec![]),
            AggCall::new(function, vec![1]),
        ];
        for kind in [hop, cumulate] {
            for retract in [false, true] {
                let mut s = WindowAggSpec::new(input(false), kind, 2, vec![0], calls.clone());
                if retract {
                    s = s.with_retracting_input();
                }
                let err = WindowAggregate::try_new("w", s, &mut store(1, 0))
                    .err()
                    .unwrap();
                let want = format!(
                    "{class}{}AggFunction",
                    if retract { "WithRetract" } else { "" }
                );
                assert!(
                    matches!(&err, Error::RefusedByFlink { message } if message.contains(&want)),
                    "{err}"
                );
            }
        }
        let tumble = WindowKind::Tumble { size_ms: 10 * SEC };
        let s = WindowAggSpec::new(input(false), tumble, 2, vec![0], calls).with_retracting_input();
        assert!(WindowAggregate::try_new("w", s, &mut store(1, 0)).is_ok());
    }
}
