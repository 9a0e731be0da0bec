//! Integration tests of the public API: one test binary (every binary linking RocksDB is
//! large), one module per theme.

mod cache;
mod checkpoint;
mod complete;
mod crash;
mod flink_keys;
mod flink_vectors;
mod format;
mod map;
mod map_complete;
mod map_write_behind;
mod memtable_options;
mod restore;
mod savepoint;
mod slot_sharing;
mod store_files;
mod timer;
mod ttl_compaction;
mod util;
mod write_behind;
