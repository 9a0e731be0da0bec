//! Test support (feature `test-util`, not API-stable): the store factory of this backend
//! (`state_api::conformance::StoreFactory`) for the `state-api` conformance suite and for tests
//! that see several backends.

use state_api::StoreConfig;
use state_api::conformance::StoreFactory;

use crate::MemoryStore;

/// Creates a fresh [`MemoryStore`] per call; nothing to clean up.
#[derive(Debug, Default, Clone, Copy)]
pub struct MemoryFactory;

impl StoreFactory for MemoryFactory {
    type Store = MemoryStore;

    fn create(&self, config: StoreConfig) -> MemoryStore {
        MemoryStore::new(config)
    }
}
