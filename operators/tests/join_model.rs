//! The inner join against a plain reference model on seeded random changelogs, on both
//! backends: every column type the join takes (compact and wide DECIMAL and TIMESTAMP,
//! inline and long strings, binary, NaN and `-0.0`), nulls in keys and values, all four row
//! kinds (retractions of records held and never held), duplicate records (counts), a
//! non-equi condition, probe-cache budgets from none to the default (lazy scans from the
//! first record, after a few, never), and chunked output. The operator's output must be the
//! model's, row for row and bit for bit.
//!
//! The model keeps per side a map join key → record identity → (count, values) in record
//! byte order (Flink's `RowDataSerializer` bytes of the record, made with the crate's
//! [`RecordEncoder`]; join keys with [`KeyEncoder`]); per input row it emits, unless a key
//! column is null, one row per matching record of the other side (times its count, with the
//! input row's kind, where the condition holds), then adds or removes one copy of its own
//! record.

mod util;

use std::collections::BTreeMap;

use arrow_schema::{DataType, Field, Fields, TimeUnit};
use keygroup::MaxParallelism;
use operators::{
    ChangelogBatch, InnerJoin, JoinSide, JoinSpec, KeyEncoder, RecordEncoder, RowKind, schema_of,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use state_api::Scalar;
use util::{Backend, Memory, Rocks};

type Rows = Vec<(RowKind, Vec<Scalar>)>;

/// One side's columns: the join key (INT, nullable), then one column of every type.
fn side_fields(tag: &str) -> Fields {
    let types = [
        DataType::Int32,
        DataType::Boolean,
        DataType::Int8,
        DataType::Int16,
        DataType::Int64,
        DataType::Float32,
        DataType::Float64,
        DataType::Decimal128(10, 2),
        DataType::Decimal128(30, 3),
        DataType::Utf8,
        DataType::Binary,
        DataType::Date32,
        DataType::Timestamp(TimeUnit::Millisecond, None),
        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        DataType::Timestamp(TimeUnit::Second, None),
    ];
    Fields::from(
        types
            .iter()
            .enumerate()
            .map(|(i, t)| Field::new(format!("{tag}{i}"), t.clone(), true))
            .collect::<Vec<_>>(),
    )
}

fn random_value(rng: &mut StdRng, column: usize, keys: i32) -> Scalar {
    if column > 0 && rng.random_bool(0.1) || column == 0 && rng.random_bool(0.03) {
        return Scalar::Null;
    }
    // Few distinct values, so records repeat (counts above 1, retractions that hit).
    let pick = rng.random_range(0..3_i64);
    match column {
        0 => Scalar::Int32(rng.random_range(0..keys)),
        1 => Scalar::Boolean(pick == 1),
        2 => Scalar::Int8(i8::try_from(pick).unwrap() - 1),
        3 => Scalar::Int16(i16::try_from(pick).unwrap() * 300),
        4 => Scalar::Int64(rng.random_range(-5..5)),
        5 => Scalar::Float32([f32::INFINITY, -0.0, f32::NAN][usize::try_from(pick).unwrap()]),
        6 => Scalar::Float64([0.0, -0.0, 1.0][usize::try_from(pick).unwrap()]),
        7 => Scalar::Decimal128(i128::from(pick) * 12_345 - 9_999),
        8 => Scalar::Decimal128((i128::from(pick) - 1) * 10_i128.pow(28)),
        9 => Scalar::Utf8(
            ["", "short", "a string longer than seven bytes ü"][usize::try_from(pick).unwrap()]
                .into(),
        ),
        10 => Scalar::Binary(vec![0xff; usize::try_from(pick).unwrap() * 5]),
        11 => Scalar::Date32(i32::try_from(pick).unwrap() * 1000 - 700),
        12 => Scalar::Timestamp(pick * 1_234_567 - 1),
        13 => Scalar::Timestamp(pick * 1_000_001 - 3),
        _ => Scalar::Timestamp(pick * 86_400 - 5),
    }
}

fn random_rows(
    rng: &mut StdRng,
    n: usize,
    keys: i32,
    width: usize,
    live: &mut Vec<Vec<Scalar>>,
) -> Rows {
    (0..n)
        .map(|_| {
            let roll = rng.random_range(0..10);
            if roll < 3 && !live.is_empty() {
                // Retract a record held (or, after earlier retractions, maybe not any more).
                let i = rng.random_range(0..live.len());
                let kind = if roll == 0 {
                    RowKind::UpdateBefore
                } else {
                    RowKind::Delete
                };
                (kind, live.swap_remove(i))
            } else if roll == 3 {
                // A retraction of a record that was (most likely) never inserted.
                let row = (0..width).map(|c| random_value(rng, c, keys)).collect();
                (RowKind::Delete, row)
            } else {
                let row: Vec<Scalar> = (0..width).map(|c| random_value(rng, c, keys)).collect();
                live.push(row.clone());
                let kind = if roll == 4 {
                    RowKind::UpdateAfter
                } else {
                    RowKind::Insert
                };
                (kind, row)
            }
        })
        .collect()
}

/// The condition the conditioned runs use, and the model's evaluation of it.
const CONDITION: &str = "`left`.l4 <= `right`.r4 AND `left`.l6 <> 1";

#[expect(clippy::float_cmp, reason = "SQL `<>`: exact, true for NaN")]
fn condition_holds(left: &[Scalar], right: &[Scalar]) -> bool {
    match (&left[4], &right[4], &left[6]) {
        (Scalar::Int64(a), Scalar::Int64(b), Scalar::Float64(x)) => a <= b && *x != 1.0,
        _ => false,
    }
}

/// One side of the model: join key bytes → record bytes → (count, values).
type SideState = BTreeMap<Vec<u8>, BTreeMap<Vec<u8>, (i64, Vec<Scalar>)>>;

/// The reference model (see the module docs).
struct Model {
    keys: [KeyEncoder; 2],
    records: [RecordEncoder; 2],
    state: [SideState; 2],
    condition: bool,
}

impl Model {
    fn new(fields: &Fields, condition: bool) -> Self {
        let mp = MaxParallelism::new(128).unwrap();
        Self {
            keys: [
                KeyEncoder::try_new(fields, &[0], mp).unwrap(),
                KeyEncoder::try_new(fields, &[0], mp).unwrap(),
            ],
            records: [
                RecordEncoder::try_new(fields).unwrap(),
                RecordEncoder::try_new(fields).unwrap(),
            ],
            state: [BTreeMap::new(), BTreeMap::new()],
            condition,
        }
    }

    fn process(&mut self, side: usize, rows: &Rows, out: &mut Rows) {
        for (kind, row) in rows {
            let mut key = Vec::new();
            self.keys[side].encode(row, &mut key).unwrap();
            if !self.keys[side].has_null(row)
                && let Some(records) = self.state[1 - side].get(&key)
            {
                for (count, other) in records.values() {
                    let (l, r) = if side == 0 {
                        (row, other)
                    } else {
                        (other, row)
                    };
                    if self.condition && !condition_holds(l, r) {
                        continue;
                    }
                    for _ in 0..*count {
                        out.push((*kind, l.iter().chain(r).cloned().collect()));
                    }
                }
            }
            let record = self.records[side].encode(row).unwrap();
            let records = self.state[side].entry(key).or_default();
            if matches!(kind, RowKind::Insert | RowKind::UpdateAfter) {
                records.entry(record).or_insert((0, row.clone())).0 += 1;
            } else if let Some(entry) = records.get_mut(&record) {
                entry.0 -= 1;
                if entry.0 == 0 {
                    records.remove(&record);
                }
            }
        }
    }
}

fn same(a: &Scalar, b: &Scalar) -> bool {
    match (a, b) {
        (Scalar::Float64(x), Scalar::Float64(y)) => x.to_bits() == y.to_bits(),
        (Scalar::Float32(x), Scalar::Float32(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

fn assert_same(actual: &Rows, expected: &Rows, what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: row count");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert!(
            a.0 == e.0 && a.1.len() == e.1.len() && a.1.iter().zip(&e.1).all(|(x, y)| same(x, y)),
            "{what}: row {i}: {a:?} != {e:?}"
        );
    }
}

/// Runs seeded bundles through an `InnerJoin` on `backend` and through the model; compares.
/// Returns the output rows by kind (`+I`, `-U`, `+U`, `-D`).
fn check<B: Backend>(
    backend: &B,
    seed: u64,
    cache: usize,
    chunk: usize,
    condition: bool,
) -> [usize; 4] {
    let mut kinds = [0; 4];
    let fields = side_fields("l");
    let right_fields = side_fields("r");
    let width = fields.len();
    let mut spec = JoinSpec::new(fields.clone(), right_fields.clone(), vec![0], vec![0]);
    if condition {
        spec = spec.with_non_equi_condition(CONDITION);
    }
    let mut store = backend.store(1, 0);
    let mut op = InnerJoin::try_new("j", &spec, &mut store)
        .unwrap()
        .with_probe_cache_bytes(cache);
    let mut model = Model::new(&fields, condition);
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut live_l, mut live_r) = (Vec::new(), Vec::new());
    let what = format!(
        "{} seed {seed} cache {cache} chunk {chunk} condition {condition}",
        B::NAME
    );
    for bundle in 0..6 {
        // Segments of either side in a random order, several per bundle.
        let mut segments: Vec<(usize, Rows)> = Vec::new();
        for _ in 0..rng.random_range(1..4) {
            let side = rng.random_range(0..2_usize);
            let n = rng.random_range(0..60);
            let live = if side == 0 { &mut live_l } else { &mut live_r };
            segments.push((side, random_rows(&mut rng, n, 6, width, live)));
        }
        let mut expected = Vec::new();
        for (side, rows) in &segments {
            model.process(*side, rows, &mut expected);
        }
        let batches: Vec<(JoinSide, ChangelogBatch)> = segments
            .iter()
            .map(|(side, rows)| {
                let f = if *side == 0 { &fields } else { &right_fields };
                let s = if *side == 0 {
                    JoinSide::Left
                } else {
                    JoinSide::Right
                };
                (s, ChangelogBatch::from_rows(&schema_of(f), rows).unwrap())
            })
            .collect();
        let refs: Vec<(JoinSide, &ChangelogBatch)> = batches.iter().map(|(s, b)| (*s, b)).collect();
        let mut actual = Vec::new();
        op.process_bundle_chunked(&refs, chunk, &mut |b| {
            assert!(
                b.num_rows() <= chunk && b.num_rows() > 0,
                "{what}: chunk of {}",
                b.num_rows()
            );
            actual.extend(b.to_rows().unwrap());
            Ok(())
        })
        .unwrap();
        assert_same(&actual, &expected, &format!("{what} bundle {bundle}"));
        for (kind, _) in &actual {
            kinds[usize::from(kind.to_byte())] += 1;
        }
    }
    kinds
}

fn run_all<B: Backend>(backend: &B) {
    let mut total = [0; 4];
    for seed in 0..12 {
        let cache =
            [0, 300, operators::DEFAULT_PROBE_CACHE_BYTES][usize::try_from(seed % 3).unwrap()];
        let chunk = [usize::MAX, 7][usize::try_from(seed / 3 % 2).unwrap()];
        let kinds = check(backend, seed, cache, chunk, seed % 4 >= 2);
        println!("{} seed {seed}: rows by kind {kinds:?}", B::NAME);
        for (t, k) in total.iter_mut().zip(kinds) {
            *t += k;
        }
    }
    // Every kind came out, in quantity: the runs exercise matches, not empty probes.
    assert!(total.iter().all(|n| *n > 100), "{total:?}");
}

#[test]
fn join_equals_the_model_on_memory_store() {
    run_all(&Memory);
}

#[test]
fn join_equals_the_model_on_typed_store() {
    run_all(&Rocks::new());
}
