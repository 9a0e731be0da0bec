//! The `state-api` conformance suite against the RocksDB backend: one `#[test]` per case.

use typed_store::test_util::RocksFactory;

// Map and timer tables on RocksDB are being added; until then the keyed-table cases.
state_api::keyed_conformance_tests!(RocksFactory::new());
