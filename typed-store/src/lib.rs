//! The RocksDB keyed-state backend of sfstate.
//!
//! Implements the `state-api` traits on embedded RocksDB (the rust-rocksdb crate, no server):
//! [`RocksStore`] (one database per operator subtask) opens [`RocksKeyedTable`]s,
//! [`RocksMapTable`]s and [`RocksTimerTable`]s, every store
//! of a slot shares one [`RocksSlot`] (block cache + write-buffer manager sized with Flink's
//! formulas), and native snapshots are RocksDB checkpoints ([`RocksCheckpoint`]). The whole
//! `state-api` conformance suite runs against it (`tests/conformance.rs`).
//!
//! # Example
//!
//! ```
//! use keygroup::{MaxParallelism, Parallelism};
//! use state_api::{I64Codec, KeyedStateStore, KeyedTable, StoreConfig};
//! use typed_store::{RocksSlot, RocksStore};
//!
//! let dir = tempfile::tempdir()?;
//! let slot = RocksSlot::try_new(64 << 20)?; // the slot's state-memory budget
//! let mp = MaxParallelism::new(128)?;
//! let config = StoreConfig::for_subtask(mp, Parallelism::new(2)?, 0)?;
//! let mut store = RocksStore::open(dir.path(), config, &slot)?;
//! let mut counts = store.open_table("counts", I64Codec, None)?;
//!
//! let kg = mp.key_group(5)?;
//! counts.begin_bundle(&[(kg, b"user-1")])?; // one batched_multi_get_cf
//! let n = counts.get(kg, b"user-1")?.copied().unwrap_or(0);
//! counts.put(kg, b"user-1", n + 1)?;
//! counts.commit_bundle()?; // one WriteBatch, WAL off
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # On-disk format
//!
//! One RocksDB database per store. **Each table is one column family** (`tbl.<n>`), keyed,
//! map ([`RocksMapTable`]) and timer ([`RocksTimerTable`]) tables alike, like Flink's one
//! column family per state: a table's keys are Flink's RocksDB key layout (key-group prefix
//! ‖ the caller's key bytes; the crate README says which Flink keys are proven equal) and a
//! canonical restore can fill a fresh column family and swap it in (all or nothing). The
//! default column family holds only the metadata below.
//!
//! Key (bytewise order = key-group order, then key order):
//!
//! ```text
//! +----------------------+-------------------------------+
//! | key-group prefix     | key bytes (e.g. Flink         |
//! | 1 byte if max par.   | BinaryRow serializer bytes)   |
//! | <= 128, else 2; BE   |                               |
//! +----------------------+-------------------------------+
//! ```
//!
//! Value:
//!
//! ```text
//! +-------------------------------+---------------------------------------------+
//! | last-access timestamp         | arrow-row bytes of the codec's columns      |
//! | i64, big-endian, 8 bytes      | (RowConverter over ValueCodec::fields,      |
//! | epoch ms; 0 without TTL       |  ascending, nulls first; arrow-row =60.1.0) |
//! +-------------------------------+---------------------------------------------+
//! ```
//!
//! The timestamp comes first, as Flink's TTL serializer writes it before the value, so the
//! TTL compaction filter reads one integer per entry.
//!
//! Worked example: max parallelism 128, key group 5, key `b"k"`, TTL timestamp 1000, an
//! `I64Codec` value 7: key `05 6b`; value `00 00 00 00 00 00 03 e8` then arrow-row's `01`
//! (valid) and `80 00 00 00 00 00 00 07` (7 with the sign bit flipped, big-endian).
//!
//! Metadata (default column family):
//!
//! | key | value |
//! |---|---|
//! | `sfstate.typed-store.format` | [`FORMAT_VERSION`] (`typed-store-format=1;arrow-row=60.1.0`); another value is refused at open ([`Error::FormatVersionMismatch`]) |
//! | `sfstate.typed-store.max-parallelism` | i32 big-endian; another max parallelism is refused ([`Error::MaxParallelismMismatch`]) |
//! | `table.cf/<name>` | the column family holding table `<name>` |
//! | `table.columns/<name>` | [`describe_fields`] of the codec's columns; other columns are refused ([`Error::TableSchemaMismatch`]) |
//!
//! Why stored bytes are trusted by arrow-row's decoder (which may panic on malformed input):
//! RocksDB verifies block checksums on every read; the format check above refuses data of
//! another arrow-row version; the column check refuses another codec. On top of that every
//! value passes a cheap structural guard before decoding — at least 8 bytes, and the
//! arrow-row part exactly as long as its columns' encodings say (fixed widths, and the block
//! structure of strings and binaries, string bytes UTF-8) — and a value failing it is
//! [`Error::CorruptValue`], not a panic. The value format and the guard are the
//! `typed-store-value` crate's (no RocksDB there, so the fuzz workspace reaches them).
//!
//! # Behaviour
//!
//! - Write-behind of committed values: a committed value stays in the table's working map,
//!   marked pending (one entry per key, never evicted), and is written to RocksDB in one
//!   sorted `WriteBatch` with the WAL off when the pending keys exceed the limit
//!   ([`RocksSlot::with_write_behind`], default 32 MiB; `0` writes every commit through), when
//!   the pool refuses memory that eviction cannot free, before checkpoints, exports, sweeps,
//!   and when the table is dropped. No forced flushes (RocksDB's threads flush and compact).
//!   The working map is a pool-reserved, bounded cache of committed state; a table opened
//!   empty holds every key it has there and reads nothing until it evicts. A complete map
//!   table (see [`RocksMapTable`]) buffers its commits' encoded writes the same way and
//!   writes them in one sorted batch; [`RocksStore::write_pending`] writes every table's
//!   pending writes now.
//! - Hydration with `batched_multi_get_cf` on the table's column family (the issue's
//!   "default column family" is, with one family per table, the table's family): the
//!   caller's keys may be unsorted, the misses are sorted for RocksDB and the results mapped
//!   back; pinned values are decoded straight into values (one arrow-row conversion, one
//!   `ValueCodec::decode`).
//! - Canonical restore decodes each section once and bulk-loads a staging column family (an
//!   ingested SST file from 10 000 rows on, 8 MiB write batches below), swapped in on commit.
//! - TTL: Flink's rules on read, a compaction filter from a factory (one filter per
//!   compaction run, now cached per run) reading the 8-byte prefix, and a bounded sweep.
//! - Crash semantics: with the WAL off, a crashed store is discarded; state comes back from
//!   the last completed checkpoint ([`RocksStore::open_checkpoint`]).
//!
//! # Features
//!
//! | feature     | default | enables                                                         |
//! |-------------|---------|-----------------------------------------------------------------|
//! | `test-util` | no      | `test_util::RocksFactory` for the `state-api` conformance suite (not API-stable) |
//!
//! The rocksdb dependency compiles only LZ4.

#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::indexing_slicing))]

mod cache;
mod checkpoint;
mod error;
mod format;
mod live;
mod manifest;
mod map;
mod metadata;
mod restore;
mod slot;
mod store;
mod sweep;
mod table;
mod timer;
mod ttl_filter;

/// Test support: this backend's conformance-suite factory. **Not API-stable.**
#[cfg(feature = "test-util")]
pub mod test_util;

pub use checkpoint::RocksCheckpoint;
pub use error::{Error, Result, RocksErrorKind};
pub use format::{
    FORMAT_VERSION, META_FORMAT_KEY, META_MAX_PARALLELISM_KEY, META_TABLE_CF_PREFIX,
    META_TABLE_COLUMNS_PREFIX, TABLE_CF_PREFIX, TIMESTAMP_BYTES, describe_fields,
};
pub use live::LIVE_POINTER_FILE;
pub use manifest::CHECKPOINT_MANIFEST_FILE;
pub use map::RocksMapTable;
pub use slot::{
    DEFAULT_WRITE_BEHIND_BYTES, DEFAULT_WRITE_BUFFER_RATIO, DEFAULT_WRITE_BUFFER_SIZE,
    MIN_WRITE_BUFFER_SIZE, MemtableOptions, RocksSlot, SlotMemory, calculate_actual_cache_capacity,
    calculate_default_arena_block_size, calculate_mutable_limit,
    calculate_write_buffer_manager_capacity, validate_arena_block_size,
};
pub use store::RocksStore;
pub use table::RocksKeyedTable;
pub use timer::RocksTimerTable;
