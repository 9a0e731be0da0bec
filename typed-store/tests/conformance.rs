//! The `state-api` conformance suite against the RocksDB backend: one `#[test]` per case.

use typed_store::test_util::RocksFactory;

state_api::conformance_tests!(RocksFactory::new());
