//! State moves between the two backends: the cross-backend cases of the `state-api`
//! conformance suite, run here because this is the one crate that depends on both backends
//! (backends never depend on each other).

use std::sync::Mutex;

use memory_store::MemoryStore;
use state_api::StoreConfig;
use state_api::conformance::{StoreFactory, cross_backend_exchange, cross_backend_rescale};
use tempfile::TempDir;
use typed_store::{RocksSlot, RocksStore};

struct MemoryFactory;

impl StoreFactory for MemoryFactory {
    type Store = MemoryStore;

    fn create(&self, config: StoreConfig) -> MemoryStore {
        MemoryStore::new(config)
    }
}

/// Every store in its own directory under one temporary directory, all in one slot.
struct RocksFactory {
    dir: TempDir,
    slot: RocksSlot,
    next: Mutex<u32>,
}

impl RocksFactory {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
            slot: RocksSlot::try_new(64 << 20).expect("slot"),
            next: Mutex::new(0),
        }
    }
}

impl StoreFactory for RocksFactory {
    type Store = RocksStore;

    fn create(&self, config: StoreConfig) -> RocksStore {
        let mut next = self.next.lock().expect("counter");
        let path = self.dir.path().join(format!("store-{next}"));
        *next += 1;
        RocksStore::open(path, config, &self.slot).expect("open store")
    }
}

#[test]
fn memory_to_rocks_to_memory_is_exact() {
    cross_backend_exchange(&MemoryFactory, &RocksFactory::new());
}

#[test]
fn rocks_to_memory_to_rocks_is_exact() {
    cross_backend_exchange(&RocksFactory::new(), &MemoryFactory);
}

#[test]
fn rescale_memory_subtasks_onto_rocks_subtasks() {
    cross_backend_rescale(&MemoryFactory, &RocksFactory::new());
}

#[test]
fn rescale_rocks_subtasks_onto_memory_subtasks() {
    cross_backend_rescale(&RocksFactory::new(), &MemoryFactory);
}
