//! The generic row codec against the hand-written one, and sort-key encode/decode.
//!
//! `cargo bench -p state-api --bench codecs`
//!
//! Every iteration handles [`BATCH`] seeded values built outside `b.iter`; throughput is
//! values (rows or keys) per second. `row_codec/*/generic` and `row_codec/*/handwritten`
//! encode or decode the same `(i64, f64, Option<String>)` rows, so their ratio is the cost
//! of `RowCodec`'s genericity.

use std::hint::black_box;

use arrow_schema::DataType;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng, rngs::StdRng};
use state_api::{
    I64F64StrCodec, Row, RowCodec, Scalar, SortField, ValueCodec, decode_sort_key, encode_sort_key,
};

/// Values per iteration.
const BATCH: usize = 4096;

type Tuple = (i64, f64, Option<String>);

fn label(rng: &mut StdRng) -> Option<String> {
    rng.random_bool(0.8).then(|| {
        let len = rng.random_range(0..16);
        (0..len)
            .map(|_| char::from(rng.random_range(b'a'..=b'z')))
            .collect()
    })
}

fn tuples() -> Vec<Tuple> {
    let mut rng = StdRng::seed_from_u64(42);
    (0..BATCH)
        .map(|_| (rng.random(), rng.random(), label(&mut rng)))
        .collect()
}

fn as_row(t: &Tuple) -> Row {
    vec![
        Scalar::Int64(t.0),
        Scalar::Float64(t.1),
        t.2.clone().map_or(Scalar::Null, Scalar::Utf8),
    ]
}

/// `row_codec/{encode,decode}/{generic,handwritten}`.
fn row_codec(c: &mut Criterion) {
    let tuples = tuples();
    let rows: Vec<Row> = tuples.iter().map(as_row).collect();
    let generic = RowCodec::try_new(I64F64StrCodec.fields()).expect("supported fields");
    let generic_columns = generic.encode(rows.iter()).expect("encodes");
    let handwritten_columns = I64F64StrCodec.encode(tuples.iter()).expect("encodes");

    let mut g = c.benchmark_group("row_codec");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("encode/generic", |b| {
        b.iter(|| generic.encode(black_box(&rows).iter()).expect("encodes"));
    });
    g.bench_function("encode/handwritten", |b| {
        b.iter(|| {
            I64F64StrCodec
                .encode(black_box(&tuples).iter())
                .expect("encodes")
        });
    });
    g.bench_function("decode/generic", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(BATCH);
            generic
                .decode(black_box(&generic_columns), &mut out)
                .expect("decodes");
            out
        });
    });
    g.bench_function("decode/handwritten", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(BATCH);
            I64F64StrCodec
                .decode(black_box(&handwritten_columns), &mut out)
                .expect("decodes");
            out
        });
    });
    g.finish();
}

/// `sort_key/{encode,decode}/i64_utf8_desc`: `(BIGINT ASC, STRING DESC NULLS LAST)` keys.
fn sort_key(c: &mut Criterion) {
    let fields = [
        SortField::new(DataType::Int64),
        SortField::new(DataType::Utf8)
            .with_descending(true)
            .with_nulls_last(true),
    ];
    let mut rng = StdRng::seed_from_u64(7);
    let rows: Vec<Row> = (0..BATCH)
        .map(|_| {
            vec![
                Scalar::Int64(rng.random()),
                label(&mut rng).map_or(Scalar::Null, Scalar::Utf8),
            ]
        })
        .collect();
    let keys: Vec<Vec<u8>> = rows
        .iter()
        .map(|r| {
            let mut k = Vec::new();
            encode_sort_key(r, &fields, &mut k).expect("encodes");
            k
        })
        .collect();

    let mut g = c.benchmark_group("sort_key");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("encode/i64_utf8_desc", |b| {
        let mut out = Vec::with_capacity(64);
        b.iter(|| {
            let mut total = 0;
            for row in black_box(&rows) {
                out.clear();
                encode_sort_key(row, &fields, &mut out).expect("encodes");
                total += out.len();
            }
            total
        });
    });
    g.bench_function("decode/i64_utf8_desc", |b| {
        b.iter(|| {
            let mut total = 0;
            for key in black_box(&keys) {
                total += decode_sort_key(key, &fields).expect("decodes").len();
            }
            total
        });
    });
    g.finish();
}

criterion_group!(benches, row_codec, sort_key);
criterion_main!(benches);
