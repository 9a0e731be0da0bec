//! The `state-api` conformance suite against the RocksDB backend: one `#[test]` per case.

use std::sync::Mutex;

use state_api::StoreConfig;
use state_api::conformance::StoreFactory;
use tempfile::TempDir;
use typed_store::{RocksSlot, RocksStore};

/// Creates every store in its own directory under one temporary directory that the factory
/// owns (removed when the factory drops, after the stores), all sharing one slot.
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

// Map and timer tables on RocksDB are being added; until then the keyed-table cases.
state_api::keyed_conformance_tests!(RocksFactory::new());
