//! Write and read throughput of a large canonical snapshot as a Flink savepoint, side by
//! side with a plain file copy / file read of the same number of bytes.
//!
//! `SFSP_BENCH_MIB` sets the snapshot size (default 256 MiB: 64 key groups of 4 MiB - 1 KiB
//! payloads plus smaller ones, every chunk boundary exercised).
//!
//! `SFSP_BENCH_SOURCE=dir` makes the snapshot an on-disk `sfcs_format::DirContainer` (in
//! `SFSP_BENCH_DIR`, default the temp dir) instead of a `MemoryContainer`, so the process
//! holds no copy of the snapshot and its peak RSS is the writer's and reader's own memory
//! (plus one key group's payload while the snapshot is generated).
//!
//! ```sh
//! cargo bench -p flink-savepoint --bench savepoint
//! SFSP_BENCH_MIB=1024 SFSP_BENCH_SOURCE=dir cargo bench -p flink-savepoint --bench savepoint
//! ```

use std::fs::File;
use std::hint::black_box;
use std::io::{Read, Write};
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use flink_savepoint::{OperatorSelector, SavepointReader, WriteOptions, write_savepoint};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sfcs_format::{CHUNK_SIZE, Container, DirContainer, Manifest, ManifestEntry, MemoryContainer};

const KEY_GROUPS: u32 = 128;

/// A seeded snapshot of about `mib` MiB over `KEY_GROUPS` key groups, in memory or (with
/// `dir`) committed to a directory container there.
fn snapshot(mib: usize, dir: Option<&Path>) -> (Box<dyn Container>, u64) {
    let mut rng = StdRng::seed_from_u64(42);
    let per_kg = mib * 1024 * 1024 / KEY_GROUPS as usize;
    let mut block = vec![0_u8; CHUNK_SIZE];
    rng.fill(&mut block[..]);
    let mut container: Box<dyn Container> = match dir {
        Some(dir) => Box::new(DirContainer::open(dir).unwrap()),
        None => Box::new(MemoryContainer::new()),
    };
    container.begin_generation().unwrap();
    let mut entries = Vec::new();
    let mut total = 0;
    for kg in 0..KEY_GROUPS {
        let len = per_kg - usize::try_from(kg).unwrap() * 7;
        let payload: Vec<u8> = block
            .iter()
            .copied()
            .cycle()
            .skip(usize::try_from(kg).unwrap())
            .take(len)
            .collect();
        let header =
            sfcs_format::write_envelope(&mut *container, kg, "group aggregate", None, &payload)
                .unwrap();
        entries.push(ManifestEntry::for_header(kg, &header));
        total += len as u64;
    }
    let manifest = Manifest::try_new("group aggregate", 256, 0, 256, 1, entries).unwrap();
    container.commit_generation(&manifest.encode()).unwrap();
    (container, total)
}

fn copy_synced(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap();
    File::open(to).unwrap().sync_all().unwrap();
}

fn bench(c: &mut Criterion) {
    let mib: usize = std::env::var("SFSP_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let tmp = tempfile::tempdir_in(
        std::env::var_os("SFSP_BENCH_DIR").unwrap_or_else(|| std::env::temp_dir().into()),
    )
    .unwrap();
    let on_disk = std::env::var("SFSP_BENCH_SOURCE").is_ok_and(|s| s == "dir");
    let source_dir = tmp.path().join("source");
    let (container, bytes) = snapshot(mib, on_disk.then_some(source_dir.as_path()));
    // The plain file of the same bytes, for the copy baseline.
    let plain = tmp.path().join("plain");
    {
        let mut f = File::create(&plain).unwrap();
        let chunk = vec![7_u8; 1 << 20];
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk.len() as u64);
            f.write_all(&chunk[..usize::try_from(n).unwrap()]).unwrap();
            left -= n;
        }
        f.sync_all().unwrap();
    }
    let options = WriteOptions::new("native-op", 256, 4).unwrap();
    let mut group = c.benchmark_group("savepoint");
    group.sample_size(10).throughput(Throughput::Bytes(bytes));
    let mut n = 0_u64;
    group.bench_function("write/savepoint", |b| {
        b.iter(|| {
            n += 1;
            let out = tmp.path().join(format!("sp-{n}"));
            write_savepoint(&*container, &out, &options).unwrap();
            std::fs::remove_dir_all(&out).unwrap();
        });
    });
    group.bench_function("write/file_copy", |b| {
        b.iter(|| {
            let out = tmp.path().join("copy");
            copy_synced(&plain, &out);
            std::fs::remove_file(&out).unwrap();
        });
    });
    let sp = tmp.path().join("sp-read");
    write_savepoint(&*container, &sp, &options).unwrap();
    let selector = OperatorSelector::Uid("native-op".into());
    group.bench_function("read/savepoint_verify", |b| {
        b.iter(|| {
            let reader = SavepointReader::open(&sp, &selector).unwrap();
            black_box(reader.verify(Some("group aggregate")).unwrap());
        });
    });
    group.bench_function("read/file_read", |b| {
        let mut buf = vec![0_u8; CHUNK_SIZE];
        b.iter(|| {
            let mut f = File::open(&plain).unwrap();
            let mut total = 0;
            loop {
                let k = f.read(&mut buf).unwrap();
                if k == 0 {
                    break;
                }
                total += k;
            }
            black_box(total);
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
