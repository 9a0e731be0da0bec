//! What both bench binaries share: the two backends and their state-size measures.

use std::sync::{Arc, OnceLock};

use keygroup::{MaxParallelism, Parallelism};
use memory_store::MemoryStore;
use state_api::conformance::StoreFactory as _;
use state_api::{BoundedMemoryPool, KeyedStateStore, MapStateStore, StoreConfig, TimerStateStore};
use typed_store::RocksStore;
use typed_store::test_util::RocksFactory;

/// The store configuration of every bench: one subtask of max parallelism 128.
pub(crate) fn config() -> StoreConfig {
    let mp = MaxParallelism::new(128).expect("max parallelism");
    StoreConfig::for_subtask(mp, Parallelism::new(1).expect("p"), 0).expect("cfg")
}

/// A store of one backend with its state-size measure.
pub(crate) trait BenchStore: MapStateStore + TimerStateStore + Sized {
    /// The backend's name in bench ids.
    const NAME: &'static str;
    /// A fresh, empty store.
    fn fresh() -> Self;
    /// Bytes the backend holds for `tables`: memory-store, the bytes it charges to its (bounded)
    /// memory pool for its entries; typed-store, the SST bytes of the tables' column families
    /// after a flush and a full compaction (RocksDB's on-disk size, compressed as the store
    /// configures it).
    fn state_bytes(&self, tables: &[&str]) -> u64;
    /// Drops the store and whatever it keeps on disk.
    fn discard(self) {}
}

/// A store that is discarded when dropped: bench routines return it, so criterion drops it
/// outside the timed part.
pub(crate) struct Done<S: BenchStore>(pub(crate) Option<S>);

impl<S: BenchStore> Drop for Done<S> {
    fn drop(&mut self) {
        if let Some(s) = self.0.take() {
            s.discard();
        }
    }
}

impl BenchStore for MemoryStore {
    const NAME: &'static str = "memory-store";
    fn fresh() -> Self {
        // memory-store charges its entries only to a bounded pool (an unbounded pool gets no
        // atomic traffic), so the state-size measure needs one; 64 GiB never refuses here.
        MemoryStore::new(config().with_memory_pool(Arc::new(BoundedMemoryPool::new(64 << 30))))
    }
    fn state_bytes(&self, _tables: &[&str]) -> u64 {
        u64::try_from(self.config().memory_pool().used()).unwrap_or(u64::MAX)
    }
}

fn factory() -> &'static RocksFactory {
    static FACTORY: OnceLock<RocksFactory> = OnceLock::new();
    FACTORY.get_or_init(RocksFactory::new)
}

impl BenchStore for RocksStore {
    const NAME: &'static str = "typed-store";
    fn fresh() -> Self {
        factory().create(config())
    }
    fn state_bytes(&self, tables: &[&str]) -> u64 {
        // A bench store holds only the measured operator's tables.
        for t in tables {
            self.flush_table(t).expect("flush");
            self.compact_table(t).expect("compact");
        }
        self.property_sum("rocksdb.total-sst-files-size", true)
            .expect("property")
    }
    fn discard(self) {
        let root = self.root().to_path_buf();
        drop(self);
        let _ = std::fs::remove_dir_all(root);
    }
}
