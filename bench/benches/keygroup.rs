//! Key-group assignment and BinaryRow key building: the per-record cost of routing a key to
//! its key group, for DataStream `int` keys and for Flink SQL `BinaryRowData` keys.
//!
//! `cargo bench -p sfstate-bench --bench keygroup`
//!
//! Every iteration handles a batch of [`BATCH`] seeded keys built outside `b.iter`, so the
//! reported throughput is keys (rows) per second.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use keygroup::{BinaryRowWriter, MaxParallelism, assign_to_key_group};
use rand::{Rng, SeedableRng, rngs::StdRng};

/// Keys per iteration.
const BATCH: usize = 1024;

fn max_parallelism() -> MaxParallelism {
    MaxParallelism::new(4096).expect("4096 is a valid max parallelism")
}

/// `murmur_keygroup/int`: `KeyGroupRangeAssignment.assignToKeyGroup` of `Integer` keys
/// (`hashCode`, `MathUtils.murmurHash`, `% maxParallelism`).
fn murmur_keygroup(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(42);
    let keys: Vec<i32> = (0..BATCH).map(|_| rng.random()).collect();
    let mp = max_parallelism();

    let mut g = c.benchmark_group("murmur_keygroup");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("int", |b| {
        b.iter(|| {
            let mut sum = 0_i64;
            for key in black_box(&keys) {
                sum += i64::from(assign_to_key_group(key, mp).get());
            }
            sum
        });
    });
    g.finish();
}

/// A 12-byte ASCII string: too long for the inline slot, so it lands in the variable part.
fn string12(rng: &mut StdRng) -> String {
    (0..12)
        .map(|_| char::from(rng.random_range(b'a'..=b'z')))
        .collect()
}

/// `binary_row/*`: write the key row with a reused writer, then `hashCode()` and the key
/// group, per row, as a Flink SQL key selector plus partitioner would.
fn binary_row(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(7);
    let ids: Vec<i64> = (0..BATCH).map(|_| rng.random()).collect();
    let names: Vec<String> = (0..BATCH).map(|_| string12(&mut rng)).collect();
    let mp = max_parallelism();

    let mut g = c.benchmark_group("binary_row");
    g.throughput(Throughput::Elements(BATCH as u64));

    let mut writer = BinaryRowWriter::new(1);
    g.bench_function("bigint", |b| {
        b.iter(|| {
            let mut sum = 0_i64;
            for id in black_box(&ids) {
                writer.reset();
                writer.write_long(0, *id);
                sum += i64::from(writer.key_group(mp).get());
            }
            sum
        });
    });

    let mut writer = BinaryRowWriter::new(2);
    g.bench_function("bigint_string12", |b| {
        b.iter(|| {
            let mut sum = 0_i64;
            for (id, name) in black_box(&ids).iter().zip(black_box(&names)) {
                writer.reset();
                writer.write_long(0, *id);
                writer.write_string(1, name).expect("a 40-byte row fits");
                sum += i64::from(writer.key_group(mp).get());
            }
            sum
        });
    });
    g.finish();
}

criterion_group!(benches, murmur_keygroup, binary_row);
criterion_main!(benches);
