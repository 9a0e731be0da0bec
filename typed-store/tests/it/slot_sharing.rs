//! 64 stores in one slot share one block cache and one write-buffer manager: RocksDB's own
//! counters show total state memory bounded by the slot budget, not growing with the store
//! count.

use state_api::{I64F64StrCodec, KeyedStateStore, ManualClock};
use typed_store::{RocksSlot, RocksStore, SlotMemory};

use crate::util::{full_config, key, mp128, read_all, write_all};

const STORES: usize = 64;
const KEYS_PER_STORE: usize = 5_000;

#[test]
#[expect(clippy::too_many_lines, reason = "one scenario with its measurements")]
fn sixty_four_stores_stay_within_one_slot_budget() {
    let dir = tempfile::tempdir().expect("tmp");
    // 48 MiB budget, Flink's default ratio 0.5, 1 MiB write buffers: cache 40 MiB, write-buffer
    // manager 16 MiB (charged to the cache), arena blocks 128 KiB.
    let budget: i64 = 48 << 20;
    let memory = SlotMemory::try_new(budget, 0.5, 1 << 20).expect("memory");
    let slot = RocksSlot::with_memory(memory).expect("slot");
    assert_eq!(memory.cache_capacity, 40 << 20);
    assert_eq!(memory.write_buffer_manager_capacity, 16 << 20);
    assert_eq!(memory.arena_block_size, 128 << 10);
    assert_eq!(slot.write_buffer_manager_capacity(), 16 << 20);

    let clock = ManualClock::new(1);
    let mp = mp128();
    let keys: Vec<_> = (0..KEYS_PER_STORE).map(|i| key(i, mp)).collect();
    let value = |s: usize, i: usize| {
        (
            i64::try_from(s * i).expect("small"),
            0.5,
            Some("v".repeat(120)),
        )
    };
    let mut stores = Vec::new();
    let mut peak_cache = 0;
    let mut peak_memtables = 0;
    let mut cache_by_stores = Vec::new();
    for s in 0..STORES {
        let mut store = RocksStore::open(
            dir.path().join(format!("s{s}")),
            full_config(mp, &clock),
            &slot,
        )
        .expect("open");
        let mut t = store
            .open_table("rows", I64F64StrCodec, None)
            .expect("table");
        for chunk in keys.chunks(500).enumerate() {
            let (c, chunk) = chunk;
            write_all(
                &mut t,
                &chunk
                    .iter()
                    .enumerate()
                    .map(|(j, k)| (k.clone(), Some(value(s, c * 500 + j))))
                    .collect::<Vec<_>>(),
            );
        }
        stores.push((store, t));
        peak_cache = peak_cache.max(slot.cache_usage());
        if stores.len() % 16 == 0 {
            cache_by_stores.push(slot.cache_usage());
        }
        let memtables: u64 = stores
            .iter()
            .map(|(st, _)| {
                st.property_sum("rocksdb.cur-size-all-mem-tables", true)
                    .expect("prop")
            })
            .sum();
        peak_memtables = peak_memtables.max(memtables);
    }
    // Read everything back through the shared cache.
    for (s, (_, t)) in stores.iter_mut().enumerate() {
        let got = read_all(t, &keys[..200]);
        for (i, v) in got.into_iter().enumerate() {
            assert_eq!(v, Some(value(s, i)));
        }
        peak_cache = peak_cache.max(slot.cache_usage());
    }
    let memtables: u64 = stores
        .iter()
        .map(|(st, _)| {
            st.property_sum("rocksdb.cur-size-all-mem-tables", true)
                .expect("prop")
        })
        .sum();
    let block_cache_property = stores[0]
        .0
        .property_sum("rocksdb.block-cache-usage", false)
        .expect("prop");
    let raw_bytes = STORES * KEYS_PER_STORE * (10 + 8 + 9 + 9 + 1 + 8 * 20);
    println!(
        "{STORES} stores, ~{} MiB of raw state, budget {} MiB: cache usage now {} KiB (peak {} KiB, \
         capacity {} KiB), write-buffer manager usage {} KiB (capacity {} KiB), memtables over all \
         stores now {} KiB (peak {} KiB); rocksdb.block-cache-usage of store 0 = {} KiB (the shared cache); \
         without sharing: {STORES} x (64 MiB write buffer + own cache)",
        raw_bytes >> 20,
        budget >> 20,
        slot.cache_usage() >> 10,
        peak_cache >> 10,
        memory.cache_capacity >> 10,
        slot.write_buffer_manager_usage() >> 10,
        memory.write_buffer_manager_capacity >> 10,
        memtables >> 10,
        peak_memtables >> 10,
        block_cache_property >> 10,
    );
    let budget = usize::try_from(budget).expect("fits");
    assert!(raw_bytes > budget, "the state is larger than the budget");
    // Every store reports the one shared cache.
    for (st, _) in &stores {
        let usage = st
            .property_sum("rocksdb.block-cache-usage", false)
            .expect("prop");
        assert!(usage.abs_diff(block_cache_property) <= block_cache_property / 10 + (1 << 20));
    }
    // The write-buffer manager charges memtable memory to the cache, so the cache usage is
    // the total state memory (blocks + memtables). It stays at the cache capacity (LRU, not
    // strict: a little slack) and below the budget, although the data written is larger.
    let cache_capacity = usize::try_from(memory.cache_capacity).expect("fits");
    assert!(
        peak_cache <= budget,
        "peak cache {peak_cache} > budget {budget}"
    );
    assert!(
        peak_cache <= cache_capacity + cache_capacity / 10,
        "peak cache {peak_cache}"
    );
    // Memtables are inside that charge. The manager's flush trigger acts on the store that is
    // writing, so idle stores keep memtables of up to one write buffer each: the bound is the
    // cache capacity, with write_buffer_size chosen so STORES x write buffer fits in it.
    let peak_memtables = usize::try_from(peak_memtables).expect("fits");
    assert!(
        peak_memtables <= cache_capacity,
        "memtables {peak_memtables}"
    );
    let write_buffer = usize::try_from(memory.write_buffer_size).expect("fits");
    assert!(peak_memtables <= STORES * write_buffer);
    for (i, usage) in cache_by_stores.iter().enumerate() {
        println!(
            "cache usage after {} stores: {} KiB",
            (i + 1) * 16,
            usage >> 10
        );
    }
    assert!(
        cache_by_stores
            .iter()
            .all(|&u| u <= cache_capacity + cache_capacity / 10),
        "{cache_by_stores:?}"
    );
}
