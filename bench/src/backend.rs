//! The two backends as the benchmark opens them: typed-store (RocksDB, one slot per subtask)
//! and memory-store.

use std::path::Path;
#[cfg(feature = "typed")]
use std::sync::Arc;

use memory_store::MemoryStore;
#[cfg(feature = "typed")]
use state_api::{BoundedMemoryPool, MemoryPool};
use state_api::{KeyedStateStore, StoreConfig};
#[cfg(feature = "typed")]
use typed_store::{DEFAULT_WRITE_BUFFER_RATIO, MemtableOptions, RocksSlot, RocksStore, SlotMemory};

use crate::error::BenchResult;

/// Opens the stores of one backend and measures what they hold.
pub trait Backend: Sync {
    /// The backend's store.
    type Store: KeyedStateStore + Send;

    /// The backend's name in reports (`typed`, `memory`).
    fn name(&self) -> &'static str;

    /// Opens a store of `config` whose files (if any) go under `dir`.
    ///
    /// # Errors
    /// A backend failure.
    fn open(&self, config: StoreConfig, dir: &Path) -> BenchResult<Self::Store>;

    /// Bytes the store's state takes on disk after the memtables of `tables` are flushed (0 for an
    /// in-memory store).
    ///
    /// # Errors
    /// A backend or I/O failure.
    fn disk_bytes(&self, store: &Self::Store, tables: &[&str]) -> BenchResult<u64>;

    /// Writes what the store still holds back (typed-store's write-behind buffers) into its
    /// state: the last step of a run's timed part, so that a run's events per second include
    /// every write. Default: nothing to write.
    ///
    /// # Errors
    /// A backend failure.
    fn finish(&self, _store: &Self::Store) -> BenchResult<()> {
        Ok(())
    }
}

/// [`Backend::finish`] of every store, each on its own thread; returns the CPU time of
/// those threads in milliseconds (part of a run's CPU time: the last flush is the run's work).
///
/// # Errors
/// The first store's failure.
pub fn finish_all<B: Backend>(backend: &B, stores: &mut [B::Store]) -> BenchResult<f64> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = stores
            .iter_mut()
            .map(|store| {
                scope.spawn(move || {
                    let started = crate::e2e::thread_cpu_ms();
                    backend
                        .finish(store)
                        .map(|()| crate::e2e::thread_cpu_ms() - started)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(crate::error::BenchError::Thread)))
            .sum::<BenchResult<f64>>()
    })
}

#[cfg(feature = "typed")]
/// typed-store: every store in its own slot of `slot_bytes` (block cache + write-buffer
/// manager by Flink's formulas) and its own bounded host pool of `pool_bytes` (the table's
/// working map and clean cache are charged to it).
#[derive(Debug, Clone, Copy)]
pub struct Typed {
    /// The RocksDB slot budget per store.
    pub slot_bytes: u64,
    /// The host memory pool per store.
    pub pool_bytes: usize,
    /// The write-buffer size, or `None` for the slot's default.
    pub write_buffer_bytes: Option<u64>,
    /// Memtable options, or `None` for the slot's defaults.
    pub memtable: Option<MemtableOptions>,
    /// The keyed tables' write-behind limit in bytes (`0`: write-through per bundle), or
    /// `None` for the slot's default.
    pub write_behind_bytes: Option<usize>,
}

#[cfg(feature = "typed")]
impl Backend for Typed {
    type Store = RocksStore;

    fn name(&self) -> &'static str {
        "typed"
    }

    fn open(&self, config: StoreConfig, dir: &Path) -> BenchResult<RocksStore> {
        let mut slot = match self.write_buffer_bytes {
            None => RocksSlot::try_new(self.slot_bytes)?,
            Some(size) => RocksSlot::with_memory(SlotMemory::try_new(
                i64::try_from(self.slot_bytes).unwrap_or(i64::MAX),
                DEFAULT_WRITE_BUFFER_RATIO,
                i64::try_from(size).unwrap_or(i64::MAX),
            )?)?,
        };
        if let Some(memtable) = self.memtable {
            slot = slot.with_memtable(memtable);
        }
        if let Some(bytes) = self.write_behind_bytes {
            slot = slot.with_write_behind(bytes);
        }
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(self.pool_bytes));
        Ok(RocksStore::open(dir, config.with_memory_pool(pool), &slot)?)
    }

    fn finish(&self, store: &RocksStore) -> BenchResult<()> {
        Ok(store.write_pending()?)
    }

    fn disk_bytes(&self, store: &RocksStore, tables: &[&str]) -> BenchResult<u64> {
        for table in tables {
            store.flush_table(table)?;
        }
        dir_bytes(&store.db_dir())
    }
}

/// memory-store with the store configuration's default (unbounded) pool.
#[derive(Debug, Clone, Copy)]
pub struct Memory;

impl Backend for Memory {
    type Store = MemoryStore;

    fn name(&self) -> &'static str {
        "memory"
    }

    fn open(&self, config: StoreConfig, _dir: &Path) -> BenchResult<MemoryStore> {
        Ok(MemoryStore::new(config))
    }

    fn disk_bytes(&self, _store: &MemoryStore, _tables: &[&str]) -> BenchResult<u64> {
        Ok(0)
    }
}

/// Bytes of all files under `dir`.
///
/// # Errors
/// I/O failures.
pub fn dir_bytes(dir: &Path) -> BenchResult<u64> {
    let mut total = 0;
    if !dir.exists() {
        return Ok(0);
    }
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_dir() {
            total += dir_bytes(&entry.path())?;
        } else {
            total += meta.len();
        }
    }
    Ok(total)
}
