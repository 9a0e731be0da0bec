//! Memory under load: 64 typed-store stores in one `RocksSlot`, each running the crash
//! campaign's workload (a retracting group aggregate: bundles, native checkpoints, canonical
//! snapshots, restores from both), with one bounded host pool shared by all of them. After
//! every event it measures RocksDB's block cache (`Cache::GetUsage`, which includes the
//! write-buffer manager's memtable charge), the memtables of every store
//! (`rocksdb.size-all-mem-tables`: active, immutable and pinned) and the host pool's
//! high-water mark, and prints the peaks for two splits of the same budget side by side:
//! - Flink's split (`SlotMemory::try_new`, 1 MiB write buffers, 128 KiB arena blocks): the
//!   memtables outgrow the write-buffer manager's capacity, because RocksDB flushes only in the
//!   store that is writing and every column family's memtable holds whole arena blocks;
//! - the split for the slot's column-family count (`SlotMemory::for_column_families`): the
//!   memtables stay within the manager's capacity, and cache + memtables beyond the charge +
//!   pool stay within the budget + 10 % (asserted).

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::cast_precision_loss,
    reason = "test code"
)]

mod crash_workload;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use sfcs_format::MemoryContainer;
use state_api::{BoundedMemoryPool, MemoryPool, Result as StateResult};
use typed_store::{RocksCheckpoint, RocksSlot, RocksStore, SlotMemory};

use crash_workload::{Event, Input, config, operator, schedule};

const STORES: usize = 64;
/// Events of each store's schedule run (two blocks: four bundles, two other events).
const EVENTS_PER_STORE: usize = 6;
/// The slot's RocksDB budget; the host pool's share comes on top, inside [`BUDGET`].
const SLOT_BYTES: i64 = 40 << 20;
const POOL_BYTES: usize = 4 << 20;
const BUDGET: usize = (40 << 20) + (4 << 20);
/// Column families with memtables: per store the default (metadata) family and the
/// aggregate's two tables, plus the two staging families of the one restore at a time.
const COLUMN_FAMILIES: u32 = 64 * 3 + 2;

/// A bounded pool that remembers its high-water mark.
#[derive(Debug)]
struct PeakPool {
    inner: BoundedMemoryPool,
    peak: AtomicUsize,
}

impl MemoryPool for PeakPool {
    fn try_acquire(&self, bytes: usize) -> StateResult<()> {
        self.inner.try_acquire(bytes)?;
        self.peak.fetch_max(self.inner.used(), Ordering::SeqCst);
        Ok(())
    }
    fn release(&self, bytes: usize) {
        self.inner.release(bytes);
    }
    fn used(&self) -> usize {
        self.inner.used()
    }
    fn capacity(&self) -> Option<usize> {
        self.inner.capacity()
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Peaks {
    cache: usize,
    write_buffer_manager: usize,
    memtables: usize,
    pool: usize,
    /// Cache usage + memtable bytes the manager does not charge + pool, at one moment.
    total: usize,
    /// SST files of all stores at the end (levels 0 to 6): smaller write buffers flush more,
    /// smaller files.
    sst_files: u64,
    /// Bytes of those files (`rocksdb.live-sst-files-size`).
    sst_bytes: u64,
}

fn run(memory: SlotMemory) -> Peaks {
    let dir = tempfile::tempdir().unwrap();
    let slot = RocksSlot::with_memory(memory).unwrap();
    let pool = Arc::new(PeakPool {
        inner: BoundedMemoryPool::new(POOL_BYTES),
        peak: AtomicUsize::new(0),
    });
    let store_config = || config().with_memory_pool(Arc::clone(&pool) as Arc<dyn MemoryPool>);
    let mut stores: Vec<_> = (0..STORES)
        .map(|s| {
            let mut store = RocksStore::open(
                dir.path().join(format!("s{s}/store")),
                store_config(),
                &slot,
            )
            .unwrap();
            let op = operator(&mut store);
            (store, op, Input::new(s as u64), None, None)
        })
        .collect();
    let mut peaks = Peaks::default();
    for e in 0..EVENTS_PER_STORE {
        for s in 0..STORES {
            let (store, op, input, last_checkpoint, last_snapshot) = &mut stores[s];
            match schedule(s as u64)[e] {
                Event::Bundle => {
                    op.process_bundle(&input.next_bundle()).unwrap();
                }
                Event::Checkpoint => {
                    let path = dir.path().join(format!("s{s}/ckpt-{e}"));
                    store.checkpoint_to(&path).unwrap();
                    *last_checkpoint = Some(path);
                }
                Event::Snapshot => {
                    let mut c = MemoryContainer::new();
                    op.snapshot(&mut c).unwrap();
                    *last_snapshot = Some(c);
                }
                Event::RestoreSnapshot => {
                    op.restore(&[last_snapshot.as_ref().unwrap()]).unwrap();
                }
                Event::RestoreCheckpoint => {
                    let checkpoint = RocksCheckpoint::new(last_checkpoint.clone().unwrap());
                    *store = RocksStore::open_checkpoint(
                        &checkpoint,
                        dir.path().join(format!("s{s}/store-{e}")),
                        store_config(),
                        &slot,
                    )
                    .unwrap();
                    *op = operator(store);
                }
            }
            // After every event: all stores' memtables, the cache, the manager, the pool.
            let memtables: usize = stores
                .iter()
                .map(|(st, ..)| {
                    usize::try_from(
                        st.property_sum("rocksdb.size-all-mem-tables", true)
                            .unwrap(),
                    )
                    .unwrap()
                })
                .sum();
            let cache = slot.cache_usage();
            let charged = slot.write_buffer_manager_usage();
            // The pool's high-water mark since the last event (it is taken and released
            // inside an operation).
            let pool_peak = pool.peak.swap(pool.used(), Ordering::SeqCst);
            peaks.cache = peaks.cache.max(cache);
            peaks.write_buffer_manager = peaks.write_buffer_manager.max(charged);
            peaks.memtables = peaks.memtables.max(memtables);
            peaks.pool = peaks.pool.max(pool_peak);
            peaks.total = peaks
                .total
                .max(cache + memtables.saturating_sub(charged) + pool_peak);
        }
    }
    for (store, ..) in &stores {
        for level in 0..=6 {
            peaks.sst_files += store
                .property_sum(&format!("rocksdb.num-files-at-level{level}"), true)
                .unwrap();
        }
        peaks.sst_bytes += store
            .property_sum("rocksdb.live-sst-files-size", true)
            .unwrap();
    }
    peaks
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

#[test]
fn sixty_four_stores_under_the_crash_workload_stay_within_the_slot_budget() {
    let flink = SlotMemory::try_new(SLOT_BYTES, 0.5, 1 << 20).unwrap();
    let shared =
        SlotMemory::for_column_families(SLOT_BYTES, 0.5, 1 << 20, COLUMN_FAMILIES).unwrap();
    let mut results = Vec::new();
    for (name, memory) in [("flink split", flink), ("per-column-family split", shared)] {
        let p = run(memory);
        println!(
            "{name}: write buffer {} KiB, arena {} KiB; peaks: cache {:.1} MiB (capacity {:.1}), \
             write-buffer manager {:.1} MiB (capacity {:.1}), memtables {:.1} MiB, host pool \
             {:.1} MiB (capacity {:.1}); total {:.1} MiB of a {:.1} MiB budget; at the end \
             {} SST files, {:.1} MiB",
            memory.write_buffer_size >> 10,
            memory.arena_block_size >> 10,
            mib(p.cache),
            mib(usize::try_from(memory.cache_capacity).unwrap()),
            mib(p.write_buffer_manager),
            mib(usize::try_from(memory.write_buffer_manager_capacity).unwrap()),
            mib(p.memtables),
            mib(p.pool),
            mib(POOL_BYTES),
            mib(p.total),
            mib(BUDGET),
            p.sst_files,
            mib(usize::try_from(p.sst_bytes).unwrap()),
        );
        results.push((memory, p));
    }
    let (memory, p) = results[1];
    let capacity = usize::try_from(memory.write_buffer_manager_capacity).unwrap();
    assert!(
        p.write_buffer_manager <= capacity + capacity / 10,
        "manager {} > capacity {capacity}",
        p.write_buffer_manager
    );
    assert!(
        p.memtables <= capacity + capacity / 10,
        "memtables {}",
        p.memtables
    );
    assert!(
        p.total <= BUDGET + BUDGET / 10,
        "total {} > budget {BUDGET}",
        p.total
    );
    assert!(p.pool > 0, "the workload reserves host memory");
}
