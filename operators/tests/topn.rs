//! Top-N (`ROW_NUMBER() <= N`) against a straightforward reference model: after every input
//! row, the table materialised from the operator's changelog equals the model's top N of
//! every partition. N = 3 and N = 100, insert-only and retracting input, rank number on and
//! off, changelog modes all and upsert; state bounded to N rows per partition on
//! insert-only input; snapshot / restore at another parallelism.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema};
use keygroup::{MaxParallelism, Parallelism, RowKind};
use memory_store::MemoryStore;
use operators::{ChangelogBatch, ChangelogMode, Error, RankFunction, SortColumn, TopN, TopNSpec};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sfcs_format::{Container, MemoryContainer};
use state_api::{Row, Scalar, StoreConfig};

fn store(parallelism: i32, index: i32) -> MemoryStore {
    let mp = MaxParallelism::new(128).unwrap();
    MemoryStore::new(
        StoreConfig::for_subtask(mp, Parallelism::new(parallelism).unwrap(), index).unwrap(),
    )
}

/// `p INT, v INT (nullable), id BIGINT`.
fn input() -> Fields {
    Fields::from(vec![
        Field::new("p", DataType::Int32, false),
        Field::new("v", DataType::Int32, true),
        Field::new("id", DataType::Int64, false),
    ])
}

/// ORDER BY v DESC NULLS LAST.
fn order() -> Vec<SortColumn> {
    vec![SortColumn {
        column: 1,
        descending: true,
        nulls_last: true,
    }]
}

fn spec(n: u64, rank_number: bool, insert_only: bool) -> TopNSpec {
    let s = TopNSpec::new(input(), vec![0], order(), n, rank_number);
    if insert_only {
        s
    } else {
        s.with_retracting_input()
    }
}

/// The model: every live row per partition in arrival order.
#[derive(Default)]
struct Model {
    parts: BTreeMap<i32, Vec<Row>>,
}

fn cmp_v(a: &Scalar, b: &Scalar) -> Ordering {
    // DESC NULLS LAST
    match (a, b) {
        (Scalar::Null, Scalar::Null) => Ordering::Equal,
        (Scalar::Null, _) => Ordering::Greater,
        (_, Scalar::Null) => Ordering::Less,
        (Scalar::Int32(x), Scalar::Int32(y)) => y.cmp(x),
        _ => unreachable!(),
    }
}

impl Model {
    fn apply(&mut self, kind: RowKind, row: &Row) {
        let Scalar::Int32(p) = row[0] else {
            unreachable!()
        };
        let rows = self.parts.entry(p).or_default();
        if matches!(kind, RowKind::Insert | RowKind::UpdateAfter) {
            rows.push(row.clone());
        } else if let Some(i) = rows.iter().position(|r| r == row) {
            rows.remove(i);
        }
    }

    /// `(partition, rank) -> row` of the top n.
    fn top(&self, n: usize) -> BTreeMap<(i32, usize), Row> {
        let mut out = BTreeMap::new();
        for (p, rows) in &self.parts {
            let mut sorted = rows.clone();
            sorted.sort_by(|a, b| cmp_v(&a[1], &b[1])); // stable: arrival order on ties
            for (i, r) in sorted.into_iter().take(n).enumerate() {
                out.insert((*p, i + 1), r);
            }
        }
        out
    }
}

/// Input: `+I` rows over `partitions` partitions with values in a small range (many ties,
/// some nulls); with `retract`, also `-D` / `-U`+`+U` of live rows and a few retractions of
/// rows never inserted.
fn workload(seed: u64, rows: usize, partitions: i32, retract: bool) -> Vec<(RowKind, Row)> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut live: Vec<Row> = Vec::new();
    let mut out = Vec::new();
    let mut id = 0_i64;
    let mut fresh = |rng: &mut StdRng| {
        id += 1;
        let v = if rng.random_bool(0.05) {
            Scalar::Null
        } else {
            Scalar::Int32(rng.random_range(0..40))
        };
        vec![
            Scalar::Int32(rng.random_range(0..partitions)),
            v,
            Scalar::Int64(id % 50),
        ]
    };
    while out.len() < rows {
        let roll = rng.random_range(0..10);
        if retract && roll < 3 && !live.is_empty() {
            let i = rng.random_range(0..live.len());
            let r = live.swap_remove(i);
            if roll == 0 {
                out.push((RowKind::UpdateBefore, r.clone()));
                let mut n = r.clone();
                n[1] = Scalar::Int32(rng.random_range(0..40));
                out.push((RowKind::UpdateAfter, n.clone()));
                live.push(n);
            } else {
                out.push((RowKind::Delete, r));
            }
        } else if retract && roll == 3 && rng.random_bool(0.2) {
            out.push((RowKind::Delete, fresh(&mut rng))); // never inserted
        } else {
            let r = fresh(&mut rng);
            live.push(r.clone());
            out.push((RowKind::Insert, r));
        }
    }
    out
}

/// Applies a changelog to the materialised table: with rank numbers keyed by
/// (partition, rank) (a `-U` / `-D` must retract exactly the stored row), else a multiset.
#[derive(Default)]
struct Sink {
    ranked: BTreeMap<(i32, usize), Row>,
    rows: BTreeMap<String, i64>,
}

impl Sink {
    fn apply(&mut self, kind: RowKind, row: &Row, ranked: bool, upsert: bool) {
        if ranked {
            let Scalar::Int32(p) = row[0] else {
                unreachable!()
            };
            let Scalar::Int64(rank) = row[3] else {
                unreachable!()
            };
            let key = (p, usize::try_from(rank).unwrap());
            let value = row[..3].to_vec();
            match kind {
                RowKind::Insert => {
                    assert!(
                        self.ranked.insert(key, value).is_none(),
                        "+I over a live rank"
                    );
                }
                RowKind::UpdateAfter => {
                    let prev = self.ranked.insert(key, value);
                    assert!(upsert || prev.is_none(), "+U without -U in mode all");
                    assert!(prev.is_some() || !upsert, "+U of an empty rank");
                }
                RowKind::UpdateBefore | RowKind::Delete => {
                    assert!(!upsert || kind == RowKind::Delete, "-U in upsert mode");
                    assert_eq!(
                        self.ranked.remove(&key),
                        Some(value),
                        "{kind:?} of another row"
                    );
                }
            }
        } else {
            let k = format!("{row:?}");
            let d = if kind == RowKind::Insert {
                1
            } else {
                assert_eq!(kind, RowKind::Delete);
                -1
            };
            let c = self.rows.entry(k.clone()).or_default();
            *c += d;
            assert!(*c >= 0, "-D of a row not in the table: {k}");
            if *c == 0 {
                self.rows.remove(&k);
            }
        }
    }

    fn multiset_of(top: &BTreeMap<(i32, usize), Row>) -> BTreeMap<String, i64> {
        let mut m = BTreeMap::new();
        for r in top.values() {
            *m.entry(format!("{r:?}")).or_default() += 1;
        }
        m
    }
}

fn check(n: u64, rank_number: bool, insert_only: bool, mode: ChangelogMode, seed: u64) {
    let input = workload(seed, 1500, 6, !insert_only);
    let schema = Arc::new(Schema::new(self::input()));
    let mut st = store(1, 0);
    let mut op = TopN::try_new(
        "t",
        spec(n, rank_number, insert_only).with_changelog_mode(mode),
        &mut st,
    )
    .unwrap();
    let mut model = Model::default();
    let mut sink = Sink::default();
    let n_usize = usize::try_from(n).unwrap();
    let mut changes = 0;
    // bundles of 1 to 9 rows; the table is compared after every bundle
    let mut rng = StdRng::seed_from_u64(seed ^ 0xabc);
    let mut i = 0;
    while i < input.len() {
        let len = rng.random_range(1..10).min(input.len() - i);
        let chunk = &input[i..i + len];
        i += len;
        let out = op
            .process_bundle(&ChangelogBatch::from_rows(&schema, chunk).unwrap())
            .unwrap();
        for (k, r) in chunk {
            model.apply(*k, r);
        }
        for (k, r) in out.to_rows().unwrap() {
            changes += 1;
            sink.apply(k, &r, rank_number, mode == ChangelogMode::Upsert);
        }
        let top = model.top(n_usize);
        if rank_number {
            assert_eq!(sink.ranked, top, "N = {n}, after input row {i}");
        } else {
            assert_eq!(
                sink.rows,
                Sink::multiset_of(&top),
                "N = {n}, after input row {i}"
            );
        }
    }
    assert!(changes > 0);
    // state bound: insert-only keeps at most N rows per partition (+ one sequence entry)
    let mut c = MemoryContainer::new();
    let summary = op.snapshot(&mut c).unwrap();
    if insert_only {
        assert!(
            summary.rows <= 6 * (n_usize + 1),
            "{} rows kept",
            summary.rows
        );
    }
}

#[test]
fn top3_insert_only() {
    for rn in [true, false] {
        check(3, rn, true, ChangelogMode::All, 1);
    }
}

#[test]
fn top3_retracting() {
    for rn in [true, false] {
        for seed in [2, 3] {
            check(3, rn, false, ChangelogMode::All, seed);
        }
    }
}

#[test]
fn top100_insert_only_and_retracting() {
    for rn in [true, false] {
        check(100, rn, true, ChangelogMode::All, 4);
        check(100, rn, false, ChangelogMode::All, 5);
    }
}

#[test]
fn upsert_mode_has_no_update_before() {
    check(3, true, false, ChangelogMode::Upsert, 6);
    check(100, true, true, ChangelogMode::Upsert, 7);
}

#[test]
fn changelog_of_a_small_example() {
    let schema = Arc::new(Schema::new(input()));
    let mut st = store(1, 0);
    let mut op = TopN::try_new("t", spec(2, true, true), &mut st).unwrap();
    let r = |v: i32, id: i64| vec![Scalar::Int32(0), Scalar::Int32(v), Scalar::Int64(id)];
    let rows = vec![
        (RowKind::Insert, r(5, 1)),
        (RowKind::Insert, r(7, 2)), // new rank 1: shifts 5 to rank 2
        (RowKind::Insert, r(5, 3)), // tie with rank 2: not better, rejected
        (RowKind::Insert, r(6, 4)), // rank 2, evicts 5
    ];
    let out = op
        .process_bundle(&ChangelogBatch::from_rows(&schema, &rows).unwrap())
        .unwrap()
        .to_rows()
        .unwrap();
    let with_rank = |v: i32, id: i64, rank: i64| {
        let mut x = r(v, id);
        x.push(Scalar::Int64(rank));
        x
    };
    assert_eq!(
        out,
        vec![
            (RowKind::Insert, with_rank(5, 1, 1)),
            (RowKind::UpdateBefore, with_rank(5, 1, 1)),
            (RowKind::UpdateAfter, with_rank(7, 2, 1)),
            (RowKind::Insert, with_rank(5, 1, 2)),
            (RowKind::UpdateBefore, with_rank(5, 1, 2)),
            (RowKind::UpdateAfter, with_rank(6, 4, 2)),
        ]
    );
}

#[test]
fn rank_and_dense_rank_are_refused_as_by_flink() {
    let mut st = store(1, 0);
    for (f, msg) in [
        (
            RankFunction::Rank,
            "RANK() on streaming table is not supported currently",
        ),
        (
            RankFunction::DenseRank,
            "DENSE_RANK() on streaming table is not supported currently",
        ),
    ] {
        let Err(e) = TopN::try_new("t", spec(3, true, true).with_function(f), &mut st) else {
            panic!("accepted")
        };
        assert!(
            matches!(e, Error::RefusedByFlink { .. }) && e.to_string().contains(msg),
            "{e}"
        );
    }
}

#[test]
fn snapshot_restore_at_parallelism_2_continues_identically() {
    let input = workload(9, 800, 6, true);
    let schema = Arc::new(Schema::new(self::input()));
    let (first, rest) = input.split_at(400);
    let run_all = |rows: &[(RowKind, Row)], op: &mut TopN<MemoryStore>| {
        op.process_bundle(&ChangelogBatch::from_rows(&schema, rows).unwrap())
            .unwrap()
            .to_rows()
            .unwrap()
    };
    let mut st = store(1, 0);
    let mut whole = TopN::try_new("t", spec(3, true, false), &mut st).unwrap();
    let mut expected = run_all(first, &mut whole);
    expected.extend(run_all(rest, &mut whole));

    let mut st = store(1, 0);
    let mut op = TopN::try_new("t", spec(3, true, false), &mut st).unwrap();
    let mut got = run_all(first, &mut op);
    let mut c = MemoryContainer::new();
    op.snapshot(&mut c).unwrap();
    let sources: Vec<&dyn Container> = vec![&c];
    let mut stores: Vec<MemoryStore> = (0..2).map(|i| store(2, i)).collect();
    let mut ops: Vec<TopN<MemoryStore>> = stores
        .iter_mut()
        .map(|s| {
            let mut o = TopN::try_new("t", spec(3, true, false), s).unwrap();
            o.restore(&sources).unwrap();
            o
        })
        .collect();
    let mp = MaxParallelism::new(128).unwrap();
    let mut enc = operators::KeyEncoder::try_new(&self::input(), &[0], mp).unwrap();
    for (k, r) in rest {
        let mut buf = Vec::new();
        let kg = enc.encode(r, &mut buf).unwrap();
        let idx =
            keygroup::compute_operator_index_for_key_group(mp, Parallelism::new(2).unwrap(), kg);
        got.extend(run_all(
            &[(*k, r.clone())],
            &mut ops[usize::try_from(idx).unwrap()],
        ));
    }
    // per partition the changelog is identical; across partitions only the order differs
    let by_partition = |rows: &[(RowKind, Row)]| {
        let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (k, r) in rows {
            m.entry(format!("{:?}", r[0]))
                .or_default()
                .push(format!("{k:?} {r:?}"));
        }
        m
    };
    assert_eq!(by_partition(&got), by_partition(&expected));
}
