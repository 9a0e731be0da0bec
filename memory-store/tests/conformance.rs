//! The `state-api` conformance suite against the in-memory backend: one `#[test]` per case.

use memory_store::test_util::MemoryFactory;

state_api::conformance_tests!(MemoryFactory);
