//! state-api v2 benchmarks on memory-store, each next to the bare structure it wraps:
//!
//! - `map_scan/<impl>/<n>`: visiting every entry of one prefix holding `n` (1, 100, 10,000)
//!   entries, among 16 prefixes of that size: `MemoryMapTable::scan` (inside a bundle) vs a
//!   bare `BTreeMap::range` over the same full keys.
//! - `map_first_after_retraction/<impl>`: a MIN companion of 100,000 elements; each
//!   iteration retracts the current minimum and asks for the new one (`remove` + `first`) vs
//!   `first_key_value` + `BTreeMap::remove` + `first_key_value`; both sides then put the
//!   retracted element back (the map table inside its bundle, then commits).
//! - `timers/<impl>/register_pop_1m`: registering 1,000,000 timers over 100,000 keys with
//!   seeded random timestamps, then popping all up to `i64::MAX`: `MemoryTimerTable` vs a
//!   bare `BTreeSet<(i64, Vec<u8>)>`.
//! - `point/<table>/100k`: one bundle of get + put for each of 100,000 keys on a
//!   `KeyedTable` vs a `MapTable` (prefix = key, empty user key).
//!
//! `cargo bench -p memory-store --bench map_state`

use std::collections::{BTreeMap, BTreeSet};
use std::hint::black_box;
use std::ops::ControlFlow;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use keygroup::{KeyGroup, MaxParallelism, compute_key_group_for_key_hash, murmur_hash_bytes};
use memory_store::MemoryStore;
use rand::{Rng, SeedableRng, rngs::StdRng};
use state_api::{
    I64Codec, KeyedStateStore, KeyedTable, MapHydration, MapStateStore, MapTable, ScanDirection,
    StoreConfig, TimeDomain, TimerStateStore, TimerTable, UserKeyRange,
};

fn mp() -> MaxParallelism {
    MaxParallelism::new(128).expect("valid")
}

fn kg_of(key: &[u8]) -> KeyGroup {
    compute_key_group_for_key_hash(murmur_hash_bytes(key), mp())
}

fn store() -> MemoryStore {
    MemoryStore::new(StoreConfig::try_new(mp(), mp().key_groups()).expect("config"))
}

fn prefix(i: usize) -> Vec<u8> {
    format!("prefix-{i:04}|").into_bytes()
}

fn map_scan(c: &mut Criterion) {
    let mut group = c.benchmark_group("map_scan");
    group.measurement_time(Duration::from_secs(3));
    for n in [1_usize, 100, 10_000] {
        let mut s = store();
        let mut table = s.open_map_table("m", I64Codec, None).expect("open");
        let mut bare: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
        table.begin_bundle(MapHydration::none()).expect("begin");
        for p in 0..16 {
            let pre = prefix(p);
            for u in 0..n {
                let user_key = u64::try_from(u).expect("small").to_be_bytes();
                let v = i64::try_from(u).expect("small");
                table.put(kg_of(&pre), &pre, &user_key, v).expect("put");
                let mut full = pre.clone();
                full.extend_from_slice(&user_key);
                bare.insert(full, v);
            }
        }
        table.commit_bundle().expect("commit");
        let target = prefix(7);
        let kg = kg_of(&target);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("memory_map_table", n), &n, |b, _| {
            b.iter(|| {
                table.begin_bundle(MapHydration::none()).expect("begin");
                let mut sum = 0_i64;
                table
                    .scan(
                        kg,
                        &target,
                        UserKeyRange::all(),
                        ScanDirection::Forward,
                        &mut |_, v| {
                            sum += v;
                            ControlFlow::Continue(())
                        },
                    )
                    .expect("scan");
                table.commit_bundle().expect("commit");
                black_box(sum)
            });
        });
        let upper = state_api::prefix_successor(&target).expect("successor");
        group.bench_with_input(BenchmarkId::new("bare_btreemap_range", n), &n, |b, _| {
            b.iter(|| {
                let sum: i64 = bare
                    .range(target.clone()..upper.clone())
                    .map(|(_, v)| *v)
                    .sum();
                black_box(sum)
            });
        });
    }
    group.finish();
}

fn first_after_retraction(c: &mut Criterion) {
    let mut group = c.benchmark_group("map_first_after_retraction");
    group.measurement_time(Duration::from_secs(3));
    let n = 100_000_u64;
    let pre = prefix(1);
    let kg = kg_of(&pre);
    let mut s = store();
    let mut table = s.open_map_table("min", I64Codec, None).expect("open");
    let mut bare: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
    table.begin_bundle(MapHydration::none()).expect("begin");
    for u in 0..n {
        table.put(kg, &pre, &u.to_be_bytes(), 1).expect("put");
        let mut full = pre.clone();
        full.extend_from_slice(&u.to_be_bytes());
        bare.insert(full, 1);
    }
    table.commit_bundle().expect("commit");
    group.bench_function("memory_map_table", |b| {
        b.iter(|| {
            table.begin_bundle(MapHydration::none()).expect("begin");
            let (min, _) = table
                .first(kg, &pre, UserKeyRange::all())
                .expect("first")
                .expect("non-empty");
            table.remove(kg, &pre, &min).expect("retract");
            let next = table.first(kg, &pre, UserKeyRange::all()).expect("first");
            table.put(kg, &pre, &min, 1).expect("re-insert");
            table.commit_bundle().expect("commit");
            black_box(next)
        });
    });
    group.bench_function("bare_btreemap", |b| {
        b.iter(|| {
            let min = bare
                .first_key_value()
                .map(|(k, _)| k.clone())
                .expect("non-empty");
            bare.remove(&min);
            let next = bare.first_key_value().map(|(k, v)| (k.clone(), *v));
            bare.insert(min, 1);
            black_box(next)
        });
    });
    group.finish();
}

fn timers(c: &mut Criterion) {
    let mut group = c.benchmark_group("timers");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    let mut rng = StdRng::seed_from_u64(42);
    let keys: Vec<Vec<u8>> = (0..100_000)
        .map(|i| format!("key-{i:06}").into_bytes())
        .collect();
    let timers: Vec<(usize, i64)> = (0..1_000_000)
        .map(|_| {
            (
                rng.random_range(0..keys.len()),
                rng.random_range(0..1_000_000),
            )
        })
        .collect();
    let kgs: Vec<KeyGroup> = keys.iter().map(|k| kg_of(k)).collect();
    group.throughput(Throughput::Elements(timers.len() as u64));
    group.bench_function("memory_timer_table/register_pop_1m", |b| {
        b.iter(|| {
            let mut s = store();
            let mut t = s
                .open_timer_table("t", TimeDomain::EventTime)
                .expect("open");
            for &(k, ts) in &timers {
                t.register(kgs[k], ts, &keys[k], b"").expect("register");
            }
            let mut n = 0_u64;
            while let Some(timer) = t.pop_due(i64::MAX).expect("pop") {
                n += 1;
                black_box(timer);
            }
            n
        });
    });
    group.bench_function("bare_btreeset/register_pop_1m", |b| {
        b.iter(|| {
            let mut set: BTreeSet<(i64, Vec<u8>)> = BTreeSet::new();
            for &(k, ts) in &timers {
                set.insert((ts, keys[k].clone()));
            }
            let mut n = 0_u64;
            while let Some(timer) = set.pop_first() {
                n += 1;
                black_box(timer);
            }
            n
        });
    });
    group.finish();
}

fn point(c: &mut Criterion) {
    let mut group = c.benchmark_group("point");
    group.measurement_time(Duration::from_secs(3));
    let keys: Vec<(KeyGroup, Vec<u8>)> = (0..100_000)
        .map(|i| {
            let k = format!("user-{i:08}").into_bytes();
            (kg_of(&k), k)
        })
        .collect();
    group.throughput(Throughput::Elements(keys.len() as u64));
    let mut s = store();
    let mut keyed = s.open_table("k", I64Codec, None).expect("open");
    let mut map = s.open_map_table("m", I64Codec, None).expect("open");
    group.bench_function("keyed_table/100k", |b| {
        b.iter(|| {
            keyed.begin_bundle(&[]).expect("begin");
            for (kg, k) in &keys {
                let v = keyed.get(*kg, k).expect("get").copied().unwrap_or(0);
                keyed.put(*kg, k, v + 1).expect("put");
            }
            keyed.commit_bundle().expect("commit");
        });
    });
    group.bench_function("map_table/100k", |b| {
        b.iter(|| {
            map.begin_bundle(MapHydration::none()).expect("begin");
            for (kg, k) in &keys {
                let v = map.get(*kg, k, b"").expect("get").copied().unwrap_or(0);
                map.put(*kg, k, b"", v + 1).expect("put");
            }
            map.commit_bundle().expect("commit");
        });
    });
    group.finish();
}

criterion_group!(benches, map_scan, first_after_retraction, timers, point);
criterion_main!(benches);
