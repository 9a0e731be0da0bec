//! typed-store (RocksDB) benchmarks, side by side in one run:
//!
//! - `hydrate_{warm,cold}/<api>/<n>`: fetching `n` (1k, 10k) random, unsorted keys of a
//!   1M-key column family per bundle with `batched_multi_get_cf` vs a loop of
//!   `get_pinned_cf` vs the legacy `multi_get_cf` (and `batched_multi_get_cf` after sorting
//!   the keys, as typed-store's `begin_bundle` does), with a block cache larger than the data
//!   (warm, pre-read) and much smaller than it (cold: 2 MiB of data blocks for ~30 MB of raw
//!   key-value bytes; index and filter blocks stay resident in the table readers).
//! - `commit/<variant>`: one 1000-record bundle of a Zipf(1.0) stream of 1M updates over 100k
//!   keys (each record: read the key's count, add one, write it): typed-store write-through
//!   (`with_write_behind(0)`: one `begin_bundle`, one `WriteBatch` per bundle) and with its
//!   default write-behind buffer vs per-record `get_pinned_cf` + `put` with the same value
//!   bytes (Flink's RocksDB access pattern) vs memory-store.
//! - `restore_load/<variant>`: bulk-loading 200k sorted entries into a fresh column family
//!   with 8 MiB write batches (WAL off) vs an SST file + `ingest_external_file_cf`.
//! - `map_inserts/hint_{on,off}`: W3's write pattern, 100,000 new map entries (10,000
//!   prefixes, 46-byte RocksDB keys) committed by a map table in 25 bundles of 4,000 into a fresh
//!   store, with the memtable's sequential insert hint (`MemtableOptions`) on and off; the
//!   store is opened outside the timed part.
//!
//! `cargo bench -p sfstate-bench --bench typed_store`
//!
//! Inputs are seeded (`StdRng::seed_from_u64`) and built outside `b.iter`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use keygroup::{KeyGroup, MaxParallelism, compute_key_group_for_key_hash, murmur_hash_bytes};
use memory_store::MemoryStore;
use rand::{Rng, SeedableRng, rngs::StdRng};
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, DB, DBCompressionType,
    IngestExternalFileOptions, Options, SstFileWriter, WriteBatch, WriteOptions,
};
use sfstate_bench::workload::splitmix64;
use state_api::{I64Codec, KeyedStateStore, KeyedTable, StoreConfig};
use state_api::{MapHydration, MapStateStore, MapTable};
use tempfile::TempDir;
use typed_store::{MemtableOptions, RocksSlot, RocksStore};

/// Keys in the hydration column family.
const HYDRATE_KEYS: usize = 1_000_000;
/// Distinct keys of the commit stream.
const STREAM_KEYS: usize = 100_000;
/// Updates in the commit stream.
const STREAM_UPDATES: usize = 1_000_000;
/// Records per bundle.
const BUNDLE: usize = 1_000;

fn mp() -> MaxParallelism {
    MaxParallelism::new(128).expect("valid")
}

/// Key `i` and its Flink key group.
fn key(i: usize) -> (KeyGroup, Vec<u8>) {
    let bytes = format!("user-{i:08}").into_bytes();
    (
        compute_key_group_for_key_hash(murmur_hash_bytes(&bytes), mp()),
        bytes,
    )
}

/// The RocksDB key: 1-byte key-group prefix + key bytes.
fn rocks_key(kg: KeyGroup, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + key.len());
    out.push(u8::try_from(kg.get()).expect("mp 128"));
    out.extend_from_slice(key);
    out
}

/// typed-store's value bytes of an `I64Codec` value without TTL: 8-byte timestamp 0, then
/// arrow-row's valid byte and the big-endian value with the sign bit flipped.
fn stored_i64(value: i64) -> [u8; 17] {
    let mut out = [0_u8; 17];
    out[8] = 1;
    out[9..].copy_from_slice(&(value ^ i64::MIN).to_be_bytes());
    out
}

fn parse_i64(stored: &[u8]) -> i64 {
    let bytes: [u8; 8] = stored[9..17].try_into().expect("17-byte value");
    i64::from_be_bytes(bytes) ^ i64::MIN
}

fn wal_off() -> WriteOptions {
    let mut w = WriteOptions::default();
    w.disable_wal(true);
    w
}

/// A raw database with one column family `t` of `HYDRATE_KEYS` keys, flushed and compacted,
/// with an LRU block cache of `cache_bytes`.
fn hydrate_db(dir: &TempDir, cache_bytes: usize) -> DB {
    let cache = Cache::new_lru_cache(cache_bytes);
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(&cache);
    table.set_bloom_filter(10.0, false);
    // Index and filter blocks stay in the table readers, so the block cache holds data blocks
    // only: "cold" means data-block misses, not a thrashing 1M-key filter block.
    table.set_cache_index_and_filter_blocks(false);
    let mut cf = Options::default();
    cf.set_block_based_table_factory(&table);
    cf.set_compression_type(DBCompressionType::Lz4);
    let mut db_options = Options::default();
    db_options.create_if_missing(true);
    db_options.create_missing_column_families(true);
    let db = DB::open_cf_descriptors(
        &db_options,
        dir.path(),
        [ColumnFamilyDescriptor::new("t", cf)],
    )
    .expect("open");
    let handle = db.cf_handle("t").expect("cf");
    for chunk in (0..HYDRATE_KEYS).collect::<Vec<_>>().chunks(100_000) {
        let mut batch = WriteBatch::default();
        for &i in chunk {
            let (kg, k) = key(i);
            batch.put_cf(
                handle,
                rocks_key(kg, &k),
                stored_i64(i64::try_from(i).expect("small")),
            );
        }
        db.write_opt(batch, &wal_off()).expect("write");
    }
    db.flush_cf(handle).expect("flush");
    db.compact_range_cf(handle, None::<&[u8]>, None::<&[u8]>);
    db
}

/// `sets` random key sets of `n` keys each (unsorted, as a bundle names them).
fn key_sets(n: usize, sets: usize, seed: u64) -> Vec<Vec<Vec<u8>>> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..sets)
        .map(|_| {
            (0..n)
                .map(|_| {
                    let (kg, k) = key(rng.random_range(0..HYDRATE_KEYS));
                    rocks_key(kg, &k)
                })
                .collect()
        })
        .collect()
}

fn hydrate(c: &mut Criterion) {
    for (label, cache_bytes) in [("hydrate_warm", 256 << 20), ("hydrate_cold", 2 << 20)] {
        let dir = tempfile::tempdir().expect("tmp");
        let db = hydrate_db(&dir, cache_bytes);
        let cf = db.cf_handle("t").expect("cf");
        if label == "hydrate_warm" {
            for item in db.iterator_cf(cf, rocksdb::IteratorMode::Start) {
                black_box(item.expect("item"));
            }
        }
        let mut g = c.benchmark_group(label);
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        for n in [1_000, 10_000] {
            let sets = key_sets(n, 16, 42 + n as u64);
            g.throughput(Throughput::Elements(n as u64));
            let mut next = 0;
            g.bench_function(BenchmarkId::new("batched_multi_get_cf", n), |b| {
                b.iter(|| {
                    let keys = &sets[next % sets.len()];
                    next += 1;
                    let mut sum = 0_i64;
                    for v in db.batched_multi_get_cf(cf, keys, false) {
                        sum += parse_i64(&v.expect("read").expect("present"));
                    }
                    sum
                });
            });
            // What typed-store's begin_bundle does: sort the misses, then one batched read.
            g.bench_function(BenchmarkId::new("sorted_batched_multi_get_cf", n), |b| {
                b.iter(|| {
                    let mut keys: Vec<&[u8]> =
                        sets[next % sets.len()].iter().map(Vec::as_slice).collect();
                    next += 1;
                    keys.sort_unstable();
                    let mut sum = 0_i64;
                    for v in db.batched_multi_get_cf(cf, &keys, true) {
                        sum += parse_i64(&v.expect("read").expect("present"));
                    }
                    sum
                });
            });
            g.bench_function(BenchmarkId::new("get_pinned_cf_loop", n), |b| {
                b.iter(|| {
                    let keys = &sets[next % sets.len()];
                    next += 1;
                    let mut sum = 0_i64;
                    for k in keys {
                        let v = db.get_pinned_cf(cf, k).expect("read").expect("present");
                        sum += parse_i64(&v);
                    }
                    sum
                });
            });
            g.bench_function(BenchmarkId::new("multi_get_cf", n), |b| {
                b.iter(|| {
                    let keys = &sets[next % sets.len()];
                    next += 1;
                    let mut sum = 0_i64;
                    for v in db.multi_get_cf(keys.iter().map(|k| (cf, k))) {
                        sum += parse_i64(&v.expect("read").expect("present"));
                    }
                    sum
                });
            });
        }
        g.finish();
    }
}

/// A Zipf(1.0) sampler over `0..n` (inverse CDF by binary search).
struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    #[expect(
        clippy::cast_precision_loss,
        reason = "ranks up to 100k are exact in f64"
    )]
    fn new(n: usize) -> Self {
        let mut acc = 0.0;
        let mut cdf = Vec::with_capacity(n);
        for rank in 1..=n {
            acc += 1.0 / rank as f64;
            cdf.push(acc);
        }
        for p in &mut cdf {
            *p /= acc;
        }
        Self { cdf }
    }

    fn sample(&self, rng: &mut StdRng) -> usize {
        let u: f64 = rng.random();
        self.cdf.partition_point(|&p| p < u).min(self.cdf.len() - 1)
    }
}

/// The stream as bundles of key indices (a hot key may appear several times in a bundle).
fn zipf_bundles() -> Vec<Vec<usize>> {
    let zipf = Zipf::new(STREAM_KEYS);
    let mut rng = StdRng::seed_from_u64(2024);
    // Scatter ranks over the key space so hot keys land in different key groups.
    let mut order: Vec<usize> = (0..STREAM_KEYS).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    let updates: Vec<usize> = (0..STREAM_UPDATES)
        .map(|_| order[zipf.sample(&mut rng)])
        .collect();
    updates.chunks(BUNDLE).map(<[usize]>::to_vec).collect()
}

/// Runs one bundle through a `KeyedTable`: hydrate the distinct keys, count each record.
fn table_bundle<T: KeyedTable<Codec = I64Codec>>(
    t: &mut T,
    keys: &[(KeyGroup, Vec<u8>)],
    bundle: &[usize],
) {
    let mut named: Vec<(KeyGroup, &[u8])> = bundle
        .iter()
        .map(|&i| (keys[i].0, keys[i].1.as_slice()))
        .collect();
    named.sort_unstable();
    named.dedup();
    t.begin_bundle(&named).expect("begin");
    for &i in bundle {
        let (kg, k) = &keys[i];
        let n = t.get(*kg, k).expect("get").copied().unwrap_or(0);
        t.put(*kg, k, n + 1).expect("put");
    }
    t.commit_bundle().expect("commit");
}

fn commit(c: &mut Criterion) {
    let bundles = zipf_bundles();
    let keys: Vec<(KeyGroup, Vec<u8>)> = (0..STREAM_KEYS).map(key).collect();
    let rocks_keys: Vec<Vec<u8>> = keys.iter().map(|(kg, k)| rocks_key(*kg, k)).collect();
    let config = StoreConfig::try_new(mp(), mp().key_groups()).expect("config");

    // typed-store: write-through per bundle, and the default write-behind buffer.
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(256 << 20)
        .expect("slot")
        .with_write_behind(0);
    let mut store =
        RocksStore::open(dir.path().join("typed"), config.clone(), &slot).expect("open");
    let mut typed = store.open_table("counts", I64Codec, None).expect("table");
    let behind_slot = RocksSlot::try_new(256 << 20).expect("slot");
    let mut behind_store =
        RocksStore::open(dir.path().join("behind"), config.clone(), &behind_slot).expect("open");
    let mut behind = behind_store
        .open_table("counts", I64Codec, None)
        .expect("table");
    // Per record: raw RocksDB with the same value bytes, same slot-sized cache.
    let raw_dir = tempfile::tempdir().expect("tmp");
    let cache = Cache::new_lru_cache(256 << 20);
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(&cache);
    table.set_bloom_filter(10.0, false);
    let mut raw_options = Options::default();
    raw_options.create_if_missing(true);
    raw_options.set_block_based_table_factory(&table);
    raw_options.set_compression_type(DBCompressionType::Lz4);
    let raw = DB::open(&raw_options, raw_dir.path()).expect("open raw");
    let write = wal_off();
    // memory-store.
    let mut memory = MemoryStore::new(config);
    let mut mem_table = memory.open_table("counts", I64Codec, None).expect("table");

    // Run the whole stream once on each so the measured bundles see a populated state.
    for bundle in &bundles {
        table_bundle(&mut typed, &keys, bundle);
        table_bundle(&mut behind, &keys, bundle);
        table_bundle(&mut mem_table, &keys, bundle);
        per_record(&raw, &write, &rocks_keys, bundle);
    }

    let mut g = c.benchmark_group("commit");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(BUNDLE as u64));
    let mut next = 0;
    g.bench_function("typed_store_write_through", |b| {
        b.iter(|| {
            table_bundle(&mut typed, &keys, &bundles[next % bundles.len()]);
            next += 1;
        });
    });
    g.bench_function("typed_store_write_behind", |b| {
        b.iter(|| {
            table_bundle(&mut behind, &keys, &bundles[next % bundles.len()]);
            next += 1;
        });
    });
    g.bench_function("rocksdb_per_record_get_put", |b| {
        b.iter(|| {
            per_record(&raw, &write, &rocks_keys, &bundles[next % bundles.len()]);
            next += 1;
        });
    });
    g.bench_function("memory_store", |b| {
        b.iter(|| {
            table_bundle(&mut mem_table, &keys, &bundles[next % bundles.len()]);
            next += 1;
        });
    });
    g.finish();
    drop(typed);
    drop(store);
    drop(behind);
    drop(behind_store);
}

/// Flink's per-record pattern: get, decode, add one, encode, put (WAL off), per record.
fn per_record(db: &DB, write: &WriteOptions, keys: &[Vec<u8>], bundle: &[usize]) {
    for &i in bundle {
        let k = &keys[i];
        let n = db.get_pinned(k).expect("get").map_or(0, |v| parse_i64(&v));
        db.put_opt(k, stored_i64(n + 1), write).expect("put");
    }
}

fn restore_load(c: &mut Criterion) {
    const ROWS: usize = 200_000;
    let mut rows: Vec<(Vec<u8>, [u8; 17])> = (0..ROWS)
        .map(|i| {
            let (kg, k) = key(i);
            (
                rocks_key(kg, &k),
                stored_i64(i64::try_from(i).expect("small")),
            )
        })
        .collect();
    rows.sort_unstable();
    let dir = tempfile::tempdir().expect("tmp");
    let mut options = Options::default();
    options.create_if_missing(true);
    options.set_compression_type(DBCompressionType::Lz4);
    let mut db = DB::open(&options, dir.path().join("db")).expect("open");
    let write = wal_off();
    let mut g = c.benchmark_group("restore_load");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(ROWS as u64));
    let mut n = 0;
    g.bench_function("write_batches_8mib", |b| {
        b.iter(|| {
            let name = format!("wb{n}");
            n += 1;
            db.create_cf(&name, &options).expect("cf");
            let cf = db.cf_handle(&name).expect("cf");
            let mut batch = WriteBatch::default();
            for (k, v) in &rows {
                batch.put_cf(cf, k, v);
                if batch.size_in_bytes() >= 8 << 20 {
                    db.write_opt(std::mem::take(&mut batch), &write)
                        .expect("write");
                }
            }
            db.write_opt(batch, &write).expect("write");
            db.drop_cf(&name).expect("drop");
        });
    });
    g.bench_function("sst_ingest", |b| {
        b.iter(|| {
            let name = format!("sst{n}");
            let path = dir.path().join(format!("{name}.sst"));
            n += 1;
            let mut writer = SstFileWriter::create(&options);
            writer.open(&path).expect("sst open");
            for (k, v) in &rows {
                writer.put(k, v).expect("sst put");
            }
            writer.finish().expect("sst finish");
            db.create_cf(&name, &options).expect("cf");
            let cf = db.cf_handle(&name).expect("cf");
            let mut ingest = IngestExternalFileOptions::default();
            ingest.set_move_files(true);
            db.ingest_external_file_cf_opts(cf, &ingest, vec![&path])
                .expect("ingest");
            db.drop_cf(&name).expect("drop");
        });
    });
    g.finish();
}

/// Entries of the `map_inserts` benchmark, and how many a bundle commits.
const MAP_ENTRIES: u64 = 100_000;
const MAP_BUNDLE: u64 = 4_000;

/// Commits `MAP_ENTRIES` new entries in bundles of `MAP_BUNDLE` into a fresh map table of a
/// store opened with `slot`: the time of the bundles only.
fn map_inserts_once(slot: &RocksSlot) -> Duration {
    let dir = tempfile::tempdir().expect("tmp");
    let config = StoreConfig::try_new(mp(), mp().key_groups()).expect("config");
    let mut store = RocksStore::open(dir.path(), config, slot).expect("open");
    let mut table = store
        .open_map_table("records", I64Codec, None)
        .expect("map table");
    let started = std::time::Instant::now();
    for bundle in 0..MAP_ENTRIES / MAP_BUNDLE {
        table.begin_bundle(MapHydration::none()).expect("begin");
        for i in bundle * MAP_BUNDLE..(bundle + 1) * MAP_BUNDLE {
            // W3's shape: the join key's row as the prefix, the record's row as the user key.
            let join_key = splitmix64(i) % 10_000;
            let (kg, prefix) = key(usize::try_from(join_key).expect("key"));
            let mut record = [0_u8; 32];
            record[8..16].copy_from_slice(&i.to_le_bytes());
            record[16..24].copy_from_slice(&join_key.to_le_bytes());
            record[24..].copy_from_slice(&(splitmix64(i ^ 7) % 1000).to_le_bytes());
            table.put(kg, &prefix, &record, 1).expect("put");
        }
        table.commit_bundle().expect("commit");
    }
    let elapsed = started.elapsed();
    drop(table);
    elapsed
}

fn map_inserts(c: &mut Criterion) {
    let mut g = c.benchmark_group("map_inserts");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(MAP_ENTRIES));
    for hint in [true, false] {
        let mut memtable = MemtableOptions::default();
        memtable.sequential_insert_hint = hint;
        let slot = RocksSlot::try_new(128 << 20)
            .expect("slot")
            .with_memtable(memtable);
        let name = if hint { "hint_on" } else { "hint_off" };
        g.bench_function(name, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| map_inserts_once(&slot)).sum());
        });
    }
    g.finish();
}

criterion_group!(benches, hydrate, commit, restore_load, map_inserts);
criterion_main!(benches);
