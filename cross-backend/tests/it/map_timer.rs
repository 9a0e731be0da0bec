//! Map and timer tables: byte-identical canonical snapshots on both backends, and exact
//! exchange through a rescale onto 3 subtasks and back.

use memory_store::test_util::MemoryFactory;
use state_api::conformance::cross_backend_map_and_timer_exchange;
use typed_store::test_util::RocksFactory;

#[test]
fn map_and_timers_memory_to_rocks_to_memory() {
    cross_backend_map_and_timer_exchange(&MemoryFactory, &RocksFactory::new());
}

#[test]
fn map_and_timers_rocks_to_memory_to_rocks() {
    cross_backend_map_and_timer_exchange(&RocksFactory::new(), &MemoryFactory);
}
