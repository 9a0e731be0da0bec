//! Test support (feature `test-util`, not API-stable): the store factory of this backend
//! (`state_api::conformance::StoreFactory`) for the `state-api` conformance suite and for tests
//! that see several backends.

use std::sync::Mutex;

use state_api::StoreConfig;
use state_api::conformance::StoreFactory;
use tempfile::TempDir;

use crate::{RocksSlot, RocksStore};

/// Creates every store in its own directory under one temporary directory that the factory
/// owns (removed when the factory drops, after the stores), all sharing one 64 MiB slot.
#[derive(Debug)]
pub struct RocksFactory {
    dir: TempDir,
    slot: RocksSlot,
    next: Mutex<u32>,
}

impl RocksFactory {
    /// A factory with a fresh temporary directory and slot.
    ///
    /// # Panics
    /// When the temporary directory or the slot cannot be created (test support only).
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
            slot: RocksSlot::try_new(64 << 20).expect("slot"),
            next: Mutex::new(0),
        }
    }
}

impl Default for RocksFactory {
    fn default() -> Self {
        Self::new()
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
