//! W1's state access alone, without the end-to-end harness (no generator, no threads, no
//! snapshot): the table work a subtask does per bundle.
//!
//! - `w1_table/<backend>/200k/<access>`: 200,000 events of the generator (100,000
//!   keys, the first 200,000 of the stream) as bundles of 8,192, each bundle `begin_bundle`
//!   naming its keys, W1's state transition of a `[count, sum, max]` value per event
//!   (without its sink), `commit_bundle`. `<access>` is `get-put` (a get and a put per
//!   event, Flink's `ValueState` pattern) or `upsert` (one `KeyedTable::upsert`, what the
//!   end-to-end W1 does). Key rows, key groups and bundles are built outside `b.iter`; one
//!   store per backend, warmed by one pass (every key present).
//!
//! `cargo bench -p sfstate-bench --bench w1_table`

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use keygroup::{BinaryRowWriter, KeyGroup, MaxParallelism};
use sfstate_bench::backend::{Backend, Memory, Typed};
use sfstate_bench::e2e::key_row;
use sfstate_bench::workload::{key, value};
use sfstate_bench::workloads::{GroupAggregate, Operator};
use state_api::{KeyedStateStore, KeyedTable, StoreConfig};

/// Events per iteration.
const EVENTS: u64 = 200_000;
/// Distinct keys.
const KEYS: u64 = 100_000;
/// Events per bundle (the end-to-end benchmark's).
const BUNDLE: usize = 8_192;

/// One bundle: key groups, key rows back to back, values.
struct Bundle {
    key_groups: Vec<KeyGroup>,
    rows: Vec<u8>,
    values: Vec<i64>,
}

/// Every key row of the BIGINT keys is 16 bytes.
const ROW: usize = 16;

fn bundles() -> Vec<Bundle> {
    let mp = MaxParallelism::new(128).expect("valid");
    let mut writer = BinaryRowWriter::new(1);
    let mut out = Vec::new();
    let mut i = 0;
    while i < EVENTS {
        let end = (i + BUNDLE as u64).min(EVENTS);
        let mut b = Bundle {
            key_groups: Vec::new(),
            rows: Vec::new(),
            values: Vec::new(),
        };
        for e in i..end {
            b.key_groups.push(key_row(&mut writer, key(e, KEYS), mp));
            assert_eq!(writer.row().len(), ROW);
            b.rows.extend_from_slice(writer.row());
            b.values.push(value(e).cast_signed());
        }
        out.push(b);
        i = end;
    }
    out
}

/// How a pass reaches a key's state.
#[derive(Debug, Clone, Copy)]
enum Access {
    GetPut,
    Upsert,
}

impl Access {
    fn name(self) -> &'static str {
        match self {
            Access::GetPut => "get-put",
            Access::Upsert => "upsert",
        }
    }
}

/// One pass of every bundle through `table`: W1's state transition per event.
fn pass<T: KeyedTable<Codec = <GroupAggregate as Operator>::Codec>>(
    table: &mut T,
    bundles: &[Bundle],
    access: Access,
) {
    for b in bundles {
        let named: Vec<(KeyGroup, &[u8])> = b
            .key_groups
            .iter()
            .copied()
            .zip(b.rows.chunks_exact(ROW))
            .collect();
        table.begin_bundle(&named).expect("begin");
        for (&(kg, row), &v) in named.iter().zip(&b.values) {
            match access {
                Access::GetPut => {
                    let next = match table.get(kg, row).expect("get") {
                        None => [1, v, v],
                        Some(&[count, sum, max]) => [count + 1, sum + v, max.max(v)],
                    };
                    table.put(kg, row, black_box(next)).expect("put");
                }
                Access::Upsert => {
                    table
                        .upsert(
                            kg,
                            row,
                            || [1, v, v],
                            |s| {
                                *s = [s[0] + 1, s[1] + v, s[2].max(v)];
                                black_box(&*s);
                            },
                        )
                        .expect("upsert");
                }
            }
        }
        table.commit_bundle().expect("commit");
    }
}

fn bench_backend<B: Backend>(c: &mut Criterion, backend: &B, dir: &Path, bundles: &[Bundle]) {
    let mp = MaxParallelism::new(128).expect("valid");
    let config = StoreConfig::try_new(mp, mp.key_groups()).expect("config");
    let mut store = backend.open(config, dir).expect("open");
    let mut table = store
        .open_table("w1", GroupAggregate::codec(), None)
        .expect("table");
    pass(&mut table, bundles, Access::GetPut);
    let mut group = c.benchmark_group("w1_table");
    group.throughput(Throughput::Elements(EVENTS));
    group.measurement_time(Duration::from_secs(5));
    for access in [Access::GetPut, Access::Upsert] {
        group.bench_function(format!("{}/200k/{}", backend.name(), access.name()), |b| {
            b.iter(|| pass(&mut table, bundles, access));
        });
    }
    group.finish();
}

fn w1_table(c: &mut Criterion) {
    let bundles = bundles();
    let dir = tempfile::tempdir().expect("tempdir");
    bench_backend(c, &Memory, dir.path(), &bundles);
    let typed = Typed {
        slot_bytes: 128 << 20,
        pool_bytes: 128 << 20,
        write_buffer_bytes: None,
        memtable: None,
        write_behind_bytes: None,
    };
    bench_backend(c, &typed, &dir.path().join("typed"), &bundles);
}

criterion_group!(benches, w1_table);
criterion_main!(benches);
