//! Keyed tables: byte-identical canonical snapshots and exact exchange, across rescales.

use memory_store::test_util::MemoryFactory;
use state_api::conformance::{cross_backend_exchange, cross_backend_rescale};
use typed_store::test_util::RocksFactory;

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
