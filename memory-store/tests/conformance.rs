//! The `state-api` conformance suite against the in-memory backend: one `#[test]` per case.

use memory_store::MemoryStore;
use state_api::StoreConfig;
use state_api::conformance::StoreFactory;

/// Creates a fresh [`MemoryStore`] per call; nothing to clean up.
#[derive(Debug, Default)]
struct MemoryFactory;

impl StoreFactory for MemoryFactory {
    type Store = MemoryStore;

    fn create(&self, config: StoreConfig) -> MemoryStore {
        MemoryStore::new(config)
    }
}

state_api::conformance_tests!(MemoryFactory);
