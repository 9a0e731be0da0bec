//! SFCS envelope throughput against a bare CRC32C pass over the same bytes.
//!
//! `cargo bench -p sfstate-bench --bench sfcs`

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::{RngCore, SeedableRng, rngs::StdRng};
use sfcs_format::{Envelope, decode, decode_to_vec};

const PAYLOAD_LEN: usize = 64 * 1024 * 1024;
const OP: &str = "bench-operator";

fn payload() -> Vec<u8> {
    let mut bytes = vec![0_u8; PAYLOAD_LEN];
    StdRng::seed_from_u64(42).fill_bytes(&mut bytes);
    bytes
}

fn sfcs(c: &mut Criterion) {
    let payload = payload();
    let env = Envelope::encode(OP, None, &payload).expect("encodes");
    let chunks: Vec<&[u8]> = env.chunks().collect();

    let mut g = c.benchmark_group("sfcs_64mib");
    g.throughput(Throughput::Bytes(PAYLOAD_LEN as u64));
    g.sample_size(20);
    g.bench_function("crc32c_bare", |b| {
        b.iter(|| crc32c::crc32c(black_box(&payload)));
    });
    g.bench_function("encode", |b| {
        b.iter(|| Envelope::encode(OP, None, black_box(&payload)).expect("encodes"));
    });
    g.bench_function("decode_validate", |b| {
        b.iter(|| {
            decode(env.header_bytes(), OP, chunks.iter().copied().map(Some)).expect("decodes")
        });
    });
    g.bench_function("decode_to_vec", |b| {
        b.iter(|| {
            decode_to_vec(env.header_bytes(), OP, chunks.iter().copied().map(Some))
                .expect("decodes")
        });
    });
    let header = env.header().clone();
    let mut reused = Vec::with_capacity(PAYLOAD_LEN);
    g.bench_function("decode_into_reused_buffer", |b| {
        b.iter(|| {
            sfcs_format::assemble_payload_into(
                &header,
                chunks.iter().copied().map(Some),
                &mut reused,
            )
            .expect("decodes");
        });
    });
    g.bench_function("memcpy_bare", |b| {
        b.iter(|| {
            reused.clear();
            reused.extend_from_slice(black_box(&payload));
        });
    });
    g.bench_function("encode_then_decode_validate", |b| {
        b.iter(|| {
            let env = Envelope::encode(OP, None, black_box(&payload)).expect("encodes");
            let decoded = decode(env.header_bytes(), OP, env.chunks().map(Some)).expect("decodes");
            black_box(decoded.header().payload_len())
        });
    });
    g.finish();
}

criterion_group!(benches, sfcs);
criterion_main!(benches);
