//! Backend-independent keyed-state traits for native stream operators that stay
//! state-compatible with Apache Flink.
//!
//! This crate is the one place the store traits live; the backends (`memory-store`,
//! `typed-store`) implement them and run the same [conformance suite](#conformance-suite).
//! It **must not depend (even transitively) on RocksDB or any backend**: its dependencies
//! are `keygroup`, `sfcs-format`, `thiserror` and four small arrow-rs crates.
//!
//! - [`KeyedTable`]: values of one [`ValueCodec`] addressed by (key group, key bytes), used
//!   in bundles (`begin_bundle` hydrates with one batched read, `commit_bundle` writes each
//!   dirty key once). Its rustdoc is the contract.
//! - [`MapTable`] (v2): entries addressed by (key group, prefix, user key), ordered by user
//!   key within a prefix: point access, in-place [`update`](MapTable::update), forward and
//!   reverse bounded [`scan`](MapTable::scan)s over committed state merged with the open
//!   bundle's writes, [`remove_range`](MapTable::remove_range). Opened through
//!   [`MapStateStore`].
//! - [`TimerTable`] (v2): timers per key group ordered by (timestamp, key, namespace),
//!   [`pop_due`](TimerTable::pop_due) up to a watermark; opened through [`TimerStateStore`].
//! - [`KeyedStateStore`]: opens named tables sharing a [`StoreConfig`] (key-group range,
//!   [`Clock`], [`MemoryPool`]).
//! - [`ValueCodec`]: values to Arrow columns and back; ready codecs [`I64Codec`],
//!   [`F64Codec`], [`I64F64StrCodec`].
//! - TTL with Flink's `StateTtlConfig` semantics: [`TtlConfig`], [`is_expired`].
//! - Canonical snapshots: [`write_canonical_snapshot`] / [`restore_canonical_snapshot`] over
//!   [`CanonicalTable`]s (shared by every backend), and [`NativeSnapshot`] for
//!   backend-defined snapshots of a whole store (every table at one point, all or nothing).
//! - [`KeyGroupScope`]: selects a key group on the host for reserved-state I/O and restores
//!   the host's previous key context on success, error and panic.
//! - [`MemoryPool`] / [`MemoryReservation`]: host memory with RAII reservations.
//!
//! # Example
//!
//! The shared canonical encoding of a table's rows, as every backend produces it:
//!
//! ```
//! use state_api::{
//!     canonical_schema, decode_canonical_batch, encode_canonical_batch, I64F64StrCodec,
//!     TtlConfig, ValueCodec,
//! };
//! use std::time::Duration;
//!
//! let codec = I64F64StrCodec;
//! let schema = canonical_schema(&codec.fields());
//! let v1 = (3_i64, 1.5_f64, Some("eu".to_owned()));
//! let v2 = (1_i64, 0.0_f64, None);
//! // (key bytes, last-access timestamp, value), sorted by key bytes
//! let rows: Vec<(&[u8], i64, &_)> = vec![(b"k1", 1_000, &v1), (b"k2", 2_000, &v2)];
//! let batch = encode_canonical_batch(&schema, &codec, &rows)?;
//! assert_eq!(batch.num_columns(), 5); // key, last_access, i64, f64, str
//!
//! let decoded = decode_canonical_batch(&codec, &batch)?;
//! assert_eq!(decoded.values, [v1, v2]);
//!
//! // Flink's TTL rule: expired when last_access + ttl <= now.
//! let ttl = TtlConfig::new(Duration::from_millis(500));
//! assert!(!ttl.is_expired(decoded.last_access[0], 1_499));
//! assert!(ttl.is_expired(decoded.last_access[0], 1_500));
//! # Ok::<(), state_api::Error>(())
//! ```
//!
//! # Canonical snapshot format
//!
//! Per key group, one SFCS envelope (see `sfcs-format`) for the operator id, whose payload
//! holds one section per table with rows in that key group, in ascending name order. A
//! section is an Arrow IPC stream with one record batch of [`canonical_schema`]:
//!
//! ```text
//! column       type     null  meaning
//! key          Binary   no    the key bytes (e.g. Flink BinaryRow), strictly ascending
//! last_access  Int64    no    TTL last-access timestamp, epoch ms (0 without TTL)
//! <codec>      ...      ...   the codec's value columns (ValueCodec::fields)
//! schema metadata: {"sfstate.canonical.version": "1"}
//! ```
//!
//! Rows expired at snapshot time are left out; key groups without rows get no envelope.
//! The bytes depend only on the logical state, so every backend writes the same bytes.
//! A manifest ([`sfcs_format::Manifest`]: operator id, max parallelism, versions, covered
//! key groups, every envelope's lengths and CRCs) is committed last, atomically with the
//! container generation.
//!
//! A restore is complete or refused: a source without a committed manifest, a missing,
//! extra, swapped or copied key group, a key group of the target no source covers (or two
//! do), another max parallelism — each is its own [`Error`] variant naming the key group or
//! source, and nothing is applied. Sections are validated before Arrow reads them and
//! decoded behind a panic barrier; rows follow [`validate_canonical_rows`] (one rule set for
//! every backend). See [`restore_canonical_snapshot`].
//!
//! # Conformance suite
//!
//! With the `conformance` feature, `conformance` holds one generic test per behaviour and
//! `conformance_tests!` instantiates them for a backend's
//! `conformance::StoreFactory`:
//!
//! ```text
//! // memory-store/tests/conformance.rs
//! state_api::conformance_tests!(MemoryFactory);
//! ```
//!
//! # Features
//!
//! | feature       | default | enables                                                   |
//! |---------------|---------|-----------------------------------------------------------|
//! | `conformance` | no      | the `conformance` module and macro (needs `proptest`); not API-stable |

// Denied, not forbidden: `flat_map::prefetch_line` allows it for one prefetch hint.
#![deny(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::indexing_slicing))]

mod bundle;
mod byte_keyed;
mod codec;
mod context;
mod error;
mod flat_map;
mod in_place;
mod inline_key;
mod key_groups;
mod map;
mod memory;
mod prefetch;
mod prefix_map;
mod registry;
mod row;
mod scalar_ref;
mod snapshot;
mod sortkey;
mod sweep;
mod table;
mod timer;
mod timer_queue;
mod ttl;
mod validate;

/// The shared conformance suite every backend runs. **Not API-stable**: cases are added and
/// changed freely.
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;

pub use bundle::BundlePhase;
pub use byte_keyed::ByteKeyedMap;
pub use codec::{F64Codec, I64Codec, I64F64StrCodec, ValueCodec};
pub use context::{HostKeyContext, KeyGroupScope, with_key_group};
pub use error::{CorruptionKind, Error, Result};
pub use flat_map::{
    CacheLineAligned, Entry as FlatEntry, FlatMap, MaxLoad, OccupiedEntry as FlatOccupiedEntry,
    SlotAlignment, Unaligned, VacantEntry as FlatVacantEntry,
};
pub use in_place::{InPlaceChange, change_in_place};
pub use inline_key::{INLINE_KEY_LEN, INLINE_MAP_KEY_LEN, InlineBytes, InlineKey, InlineMapKey};
pub use key_groups::{key_group_at, key_group_offset};
pub use map::{
    MapHydration, MapStateStore, MapTable, MapValueOf, ScanDirection, ScanVisitor, UserKeyRange,
    full_key_bounds, full_key_bounds_in, map_entry_key, prefix_successor,
};
pub use memory::{BoundedMemoryPool, MemoryPool, MemoryReservation, UnboundedMemoryPool};
pub use prefetch::{BundlePrefetch, PREFETCH_AHEAD, PREFETCH_STAGE, PrefetchStages};
pub use prefix_map::{
    PREFETCH_ENTRY_LINES, PrefixEntry, PrefixMap, PrefixRange, PrefixRangeMut, SMALL_BUCKET_MAX,
    VacantPrefixEntry,
};
pub use registry::TableRegistry;
pub use row::{
    Row, RowCodec, RowReader, Scalar, arrays_from_flat_rows, arrays_from_rows, rows_from_arrays,
    scalar_from_array,
};
pub use scalar_ref::ScalarRef;
pub use snapshot::{
    CANONICAL_VERSION, CANONICAL_VERSION_KEY, CanonicalTable, DecodedRows, KEY_COLUMN,
    LAST_ACCESS_COLUMN, RestoreSummary, SnapshotSummary, canonical_schema, decode_canonical_batch,
    encode_canonical_batch, plan_restore, restore_canonical_snapshot,
    restore_canonical_snapshot_at, write_canonical_snapshot, write_canonical_snapshot_at,
};
pub use sortkey::{SORT_KEY_VERSION, SortField, decode_sort_key, encode_sort_key};
pub use sweep::SweepProgress;
pub use table::{KeyedStateStore, KeyedTable, NativeSnapshot, StoreConfig, TableStats, ValueOf};
pub use timer::{
    TimeDomain, Timer, TimerStateStore, TimerTable, decode_timer_batch, encode_timer_batch,
    flip_timestamp, timer_canonical_schema, timer_fields, timer_sort_key, unflip_timestamp,
};
pub use timer_queue::TimerQueue;
pub use ttl::{
    Clock, ManualClock, SystemClock, TtlConfig, TtlRead, TtlUpdateType, TtlVisibility,
    expiration_timestamp, is_expired, ttl_exported, ttl_now, ttl_read, ttl_scan_visible,
};
pub use validate::{decode_canonical_section, validate_canonical_rows};

// Re-exported so backends and tests name the same versions.
pub use arrow_array;
pub use arrow_schema;
pub use keygroup;
pub use sfcs_format;
