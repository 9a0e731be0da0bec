//! Map and timer tables on RocksDB, side by side with bare RocksDB on the same data:
//!
//! - `remove_range/<strategy>/<n>`: clearing a prefix of `n` committed entries with per-key
//!   deletes or one `delete_range_cf` (both after the scan that counts the removed entries,
//!   which `MapTable::remove_range` must return), then 100 `first` seeks into the cleared
//!   prefix (what the next bundles of an operator do);
//! - `prefix_scan/<variant>/<n>`: a forward scan of a prefix of `n` entries through
//!   `RocksMapTable::scan` (not hydrated: RocksDB iterator + decoding) vs a bare RocksDB
//!   iterator over the same column family decoding nothing;
//! - `first_after_retraction/<variant>`: `first` of a 1000-entry prefix after its smallest
//!   entry was removed in the open bundle vs a bare seek;
//! - `timers/register_pop_1m`: register 1M timers over 100k keys, commit, pop all, commit;
//! - `point/<table>/100k`: one bundle over 100k committed keys that reads each key's value and
//!   writes it back incremented, on a `KeyedTable` (the bundle names the keys: one batched
//!   read) vs a map table holding the same values under (prefix = key, user key = empty)
//!   (the bundle names the entries: one batched read), as memory-store's `point` bench does.

use std::hint::black_box;
use std::ops::ControlFlow;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use keygroup::{KeyGroup, MaxParallelism};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rocksdb::{DB, Options, ReadOptions, WriteBatch, WriteOptions};
use state_api::{
    I64Codec, KeyedStateStore, KeyedTable, ManualClock, MapHydration, MapStateStore, MapTable,
    ScanDirection, StoreConfig, TimeDomain, TimerStateStore, TimerTable, UserKeyRange,
};
use typed_store::{RocksSlot, RocksStore};

fn kg(v: i32) -> KeyGroup {
    KeyGroup::new(v).expect("kg")
}

fn config() -> StoreConfig {
    let mp = MaxParallelism::new(128).expect("mp");
    StoreConfig::try_new(mp, mp.key_groups())
        .expect("config")
        .with_clock(Arc::new(ManualClock::new(1)))
}

fn user_key(i: usize) -> [u8; 8] {
    (i as u64).to_be_bytes()
}

/// A raw key: key-group prefix 3, `prefix`, user key `i`.
fn raw_key(prefix: &[u8], i: usize) -> Vec<u8> {
    let mut k = vec![3];
    k.extend_from_slice(prefix);
    k.extend_from_slice(&user_key(i));
    k
}

fn remove_range(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tmp");
    let mut options = Options::default();
    options.create_if_missing(true);
    let db = DB::open(&options, dir.path()).expect("open");
    let mut write = WriteOptions::default();
    write.disable_wal(true);
    let value = [0_u8; 17];
    let mut group = c.benchmark_group("remove_range");
    group.sample_size(10);
    for n in [10_usize, 100, 1_000, 10_000] {
        for strategy in ["per_key", "delete_range"] {
            let mut round = 0_u32;
            group.bench_function(format!("{strategy}/{n}"), |b| {
                b.iter_batched(
                    || {
                        // A fresh prefix per iteration, its entries flushed to an SST file.
                        round += 1;
                        let prefix = format!("p{round:08}|{strategy}").into_bytes();
                        let mut batch = WriteBatch::default();
                        for i in 0..n {
                            batch.put(raw_key(&prefix, i), value);
                        }
                        db.write_opt(batch, &write).expect("write");
                        db.flush().expect("flush");
                        prefix
                    },
                    |prefix| {
                        let lo = raw_key(&prefix, 0);
                        let mut hi = vec![3];
                        hi.extend_from_slice(&prefix);
                        hi.push(0xff);
                        let mut read = ReadOptions::default();
                        read.set_iterate_upper_bound(hi.clone());
                        let mut iter = db.raw_iterator_opt(read);
                        iter.seek(&lo);
                        let mut batch = WriteBatch::default();
                        let mut count = 0;
                        while let Some(key) = iter.key() {
                            if strategy == "per_key" {
                                batch.delete(key);
                            }
                            count += 1;
                            iter.next();
                        }
                        iter.status().expect("status");
                        drop(iter);
                        if strategy == "delete_range" {
                            batch.delete_range(&lo, &hi);
                        }
                        db.write_opt(batch, &write).expect("delete");
                        // The next bundles look into the cleared prefix again.
                        for _ in 0..100 {
                            let mut read = ReadOptions::default();
                            read.set_iterate_upper_bound(hi.clone());
                            let mut iter = db.raw_iterator_opt(read);
                            iter.seek(&lo);
                            black_box(iter.valid());
                        }
                        black_box(count)
                    },
                    BatchSize::PerIteration,
                );
            });
        }
    }
    group.finish();
}

fn prefix_scan(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(256 << 20).expect("slot");
    let mut store = RocksStore::open(dir.path(), config(), &slot).expect("open");
    let mut t = store.open_map_table("m", I64Codec, None).expect("map");
    let sizes = [1_usize, 100, 10_000];
    t.begin_bundle(MapHydration::none()).expect("begin");
    for n in sizes {
        let prefix = format!("prefix-{n}|").into_bytes();
        for i in 0..n {
            t.put(
                kg(3),
                &prefix,
                &user_key(i),
                i64::try_from(i).expect("small"),
            )
            .expect("put");
        }
    }
    t.commit_bundle().expect("commit");
    store.flush_table("m").expect("flush");
    // The same column family read bare: the store's database, opened read-only.
    let cfs = DB::list_cf(&Options::default(), store.db_dir()).expect("list");
    let bare = DB::open_cf_for_read_only(&Options::default(), store.db_dir(), &cfs, false)
        .expect("read-only");
    let cf_name = cfs
        .iter()
        .find(|n| n.starts_with("tbl."))
        .expect("table family")
        .clone();
    let mut group = c.benchmark_group("prefix_scan");
    for n in sizes {
        let prefix = format!("prefix-{n}|").into_bytes();
        group.bench_function(format!("map_table/{n}"), |b| {
            b.iter(|| {
                t.begin_bundle(MapHydration::none()).expect("begin");
                let mut sum = 0_i64;
                t.scan(
                    kg(3),
                    &prefix,
                    UserKeyRange::all(),
                    ScanDirection::Forward,
                    &mut |_, v| {
                        sum += *v;
                        ControlFlow::Continue(())
                    },
                )
                .expect("scan");
                t.commit_bundle().expect("commit");
                black_box(sum)
            });
        });
        let cf = bare.cf_handle(&cf_name).expect("cf");
        group.bench_function(format!("bare_iterator/{n}"), |b| {
            b.iter(|| {
                let mut lo = vec![3];
                lo.extend_from_slice(&prefix);
                let mut hi = lo.clone();
                if let Some(last) = hi.last_mut() {
                    *last += 1;
                }
                let mut read = ReadOptions::default();
                read.set_iterate_upper_bound(hi);
                let mut iter = bare.raw_iterator_cf_opt(cf, read);
                iter.seek(&lo);
                let mut bytes = 0_usize;
                while let Some((k, v)) = iter.item() {
                    bytes += k.len() + v.len();
                    iter.next();
                }
                iter.status().expect("status");
                black_box(bytes)
            });
        });
    }
    group.finish();

    let mut group = c.benchmark_group("first_after_retraction");
    let prefix = b"prefix-10000|";
    // One bundle in which the smallest entry was retracted (not committed): `first` merges
    // the bundle's delete with the committed entries.
    t.begin_bundle(MapHydration::none()).expect("begin");
    t.remove(kg(3), prefix, &user_key(0)).expect("retract");
    group.bench_function("map_table", |b| {
        b.iter(|| black_box(t.first(kg(3), prefix, UserKeyRange::all()).expect("first")));
    });
    t.commit_bundle().expect("commit");
    let cf = bare.cf_handle(&cf_name).expect("cf");
    group.bench_function("bare_seek", |b| {
        b.iter(|| {
            // Seek to the prefix and step over the retracted (first) entry.
            let mut lo = vec![3];
            lo.extend_from_slice(prefix);
            let mut iter = bare.raw_iterator_cf(cf);
            iter.seek(&lo);
            iter.next();
            black_box(iter.item().map(|(k, v)| k.len() + v.len()))
        });
    });
    group.finish();
}

fn timers(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(42);
    let timers: Vec<(KeyGroup, i64, Vec<u8>)> = (0..1_000_000)
        .map(|_| {
            let key = rng.random_range(0..100_000_u32);
            let group = kg(i32::try_from(key % 128).expect("small"));
            (
                group,
                rng.random_range(0..1_000_000_i64),
                key.to_be_bytes().to_vec(),
            )
        })
        .collect();
    let mut group = c.benchmark_group("timers");
    group.sample_size(10);
    group.bench_function("register_pop_1m", |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().expect("tmp");
                let slot = RocksSlot::try_new(256 << 20).expect("slot");
                let store = RocksStore::open(dir.path(), config(), &slot).expect("open");
                (dir, store)
            },
            |(dir, mut store)| {
                let mut t = store
                    .open_timer_table("t", TimeDomain::EventTime)
                    .expect("timers");
                for (group, ts, key) in &timers {
                    t.register(*group, *ts, key, b"").expect("register");
                }
                t.commit().expect("commit");
                let mut fired = 0;
                while t.pop_due(i64::MAX).expect("pop").is_some() {
                    fired += 1;
                }
                t.commit().expect("commit");
                drop(t);
                drop(store);
                drop(dir);
                black_box(fired)
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn point(c: &mut Criterion) {
    let mp = MaxParallelism::new(128).expect("mp");
    let keys: Vec<(KeyGroup, Vec<u8>)> = (0..100_000)
        .map(|i| {
            let k = format!("user-{i:08}").into_bytes();
            let group =
                keygroup::compute_key_group_for_key_hash(keygroup::murmur_hash_bytes(&k), mp);
            (group, k)
        })
        .collect();
    let named: Vec<(KeyGroup, &[u8])> = keys.iter().map(|(g, k)| (*g, k.as_slice())).collect();
    let entries: Vec<(KeyGroup, &[u8], &[u8])> = keys
        .iter()
        .map(|(g, k)| (*g, k.as_slice(), &b""[..]))
        .collect();
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(256 << 20).expect("slot");
    let mut store = RocksStore::open(dir.path(), config(), &slot).expect("open");
    let mut keyed = store.open_table("k", I64Codec, None).expect("keyed");
    let mut map = store.open_map_table("m", I64Codec, None).expect("map");
    keyed.begin_bundle(&[]).expect("begin");
    map.begin_bundle(MapHydration::none()).expect("begin");
    for (i, (group, k)) in keys.iter().enumerate() {
        let v = i64::try_from(i).expect("small");
        keyed.put(*group, k, v).expect("put");
        map.put(*group, k, b"", v).expect("put");
    }
    keyed.commit_bundle().expect("commit");
    map.commit_bundle().expect("commit");
    store.flush_table("k").expect("flush");
    store.flush_table("m").expect("flush");

    let mut group = c.benchmark_group("point");
    group.sample_size(10);
    group.throughput(criterion::Throughput::Elements(keys.len() as u64));
    group.bench_function("keyed_table/100k", |b| {
        b.iter(|| {
            keyed.begin_bundle(&named).expect("begin");
            for (kg, k) in &keys {
                let v = keyed.get(*kg, k).expect("get").copied().unwrap_or(0);
                keyed.put(*kg, k, v + 1).expect("put");
            }
            keyed.commit_bundle().expect("commit");
        });
    });
    group.bench_function("map_table/100k", |b| {
        b.iter(|| {
            map.begin_bundle(MapHydration::entries(&entries))
                .expect("begin");
            for (kg, k) in &keys {
                let v = map.get(*kg, k, b"").expect("get").copied().unwrap_or(0);
                map.put(*kg, k, b"", v + 1).expect("put");
            }
            map.commit_bundle().expect("commit");
        });
    });
    group.finish();
}

criterion_group!(benches, remove_range, prefix_scan, timers, point);
criterion_main!(benches);
