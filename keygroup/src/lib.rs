//! Apache Flink's key-group math and BinaryRow key serialization, byte-for-byte and
//! hash-for-hash equal to Flink 2.3.0.
//!
//! A native operator that shares keyed state with Flink (or restores Flink-shaped snapshots at
//! another parallelism) must put every key in the key group Flink would, and must produce the
//! exact bytes Flink uses as state keys. This crate reproduces:
//!
//! * **Key groups** — `KeyGroupRangeAssignment` and `MathUtils.murmurHash`:
//!   [`murmur_hash`], [`assign_to_key_group`], [`compute_key_group_for_key_hash`],
//!   [`compute_key_group_range_for_operator_index`], [`compute_operator_index_for_key_group`],
//!   [`compute_default_max_parallelism`], [`assign_key_to_parallel_operator`], with Flink's
//!   preconditions as typed errors ([`MaxParallelism`], [`Parallelism`], [`KeyGroup`]);
//!   [`KeyGroupRange`]; and for rescaling, [`rescale_sources`] / [`rescale_plan`].
//! * **Java hash codes** of DataStream keys (`Integer`, `Long`, `String`): [`JavaHashCode`].
//! * **`BinaryRowData`**, the key format of Flink SQL: [`BinaryRowWriter`] (reusable, no
//!   per-row allocation), [`BinaryRowReader`] / [`decode_row`] (checked, for untrusted bytes),
//!   [`BinaryRow`], typed [`Value`]s of [`LogicalType`]s parsed from Flink type strings, and
//!   `hashCode()` ([`murmur_hash_bytes`]).
//! * **Serialized state keys**: Flink's serializers ([`StateSerializer`]: `IntSerializer`,
//!   `LongSerializer`, `StringSerializer`, `RowDataSerializer`, `BinaryRowDataSerializer`,
//!   `VoidNamespaceSerializer`, both `TimeWindow` serializers) and RocksDB composite keys
//!   ([`CompositeKeyBuilder`], as `SerializedCompositeKeyBuilder`).
//!
//! No I/O, no unsafe code, no dependency beyond `thiserror`. Compatibility is proven by the
//! `flink_vectors` integration test, which recomputes every field of golden vectors made by
//! Flink 2.3.0's own classes (see the crate README).
//!
//! # Example
//!
//! ```
//! use keygroup::{
//!     BinaryRow, BinaryRowWriter, CompositeKeyBuilder, LogicalType, MaxParallelism,
//!     Parallelism, RowDataSerializer, Value, VoidNamespace, VoidNamespaceSerializer,
//!     compute_key_group_range_for_operator_index,
//! };
//!
//! // A Flink SQL key (BIGINT, STRING), as the key selector builds it.
//! let types: Vec<LogicalType> =
//!     ["BIGINT", "STRING"].iter().map(|t| t.parse()).collect::<Result<_, _>>()?;
//! let key = BinaryRow::from_values(&types, &[Value::BigInt(42), Value::String("user-0042".into())])?;
//!
//! // Its key group and the subtask that owns it.
//! let mp = MaxParallelism::new(128)?;
//! let key_group = key.key_group(mp);
//! let range = compute_key_group_range_for_operator_index(mp, Parallelism::new(4)?, 1)?;
//! println!("key group {key_group}, subtask 1 owns {range}");
//!
//! // The hot path: one reusable writer, no allocation per row.
//! let mut writer = BinaryRowWriter::new(2);
//! writer.reset();
//! writer.write_long(0, 42);
//! writer.write_string(1, "user-0042")?;
//! assert_eq!(writer.row(), key.as_bytes());
//! assert_eq!(writer.key_group(mp), key_group);
//!
//! // The RocksDB key of its value state.
//! let mut builder = CompositeKeyBuilder::new(RowDataSerializer, mp);
//! builder.set_key_and_key_group(key.as_bytes(), key_group)?;
//! let rocks_key = builder.build_composite_key_namespace(&VoidNamespace, &VoidNamespaceSerializer)?;
//! assert_eq!(rocks_key.len(), 1 + 4 + key.size_in_bytes() + 1);
//! # Ok::<(), keygroup::Error>(())
//! ```
//!
//! # Features
//!
//! None: the crate has no optional parts.
//!
//! # Byte formats
//!
//! * `BinaryRowData` (header, null bits, slots, variable part, the two null encodings,
//!   `hashCode`), with a worked example: [`BinaryRow`#byte-format](BinaryRow#byte-format).
//! * RocksDB composite keys: [`CompositeKeyBuilder`].
//! * Serializer forms: each [`StateSerializer`] implementation.
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]
#![warn(clippy::expect_used)]

mod assignment;
mod composite;
mod error;
mod hash;
mod range;
mod reader;
mod rescale;
mod row;
mod serializer;
mod types;
mod value;
mod writer;

pub use assignment::{
    DEFAULT_LOWER_BOUND_MAX_PARALLELISM, KeyGroup, MaxParallelism, Parallelism,
    UPPER_BOUND_MAX_PARALLELISM, assign_key_to_parallel_operator, assign_to_key_group,
    compute_default_max_parallelism, compute_key_group_for_key_hash,
    compute_key_group_range_for_operator_index, compute_operator_index_for_key_group,
};
pub use composite::CompositeKeyBuilder;
pub use error::{Error, Result};
pub use hash::{JavaHashCode, murmur_hash, murmur_hash_bytes};
pub use range::{KeyGroupRange, KeyGroupRangeIter};
pub use reader::{BinaryRowReader, decode_row};
pub use rescale::{RescaleSource, RescaleTarget, rescale_plan, rescale_sources};
pub use row::{BinaryRow, bit_set_width_in_bytes, fixed_part_size};
pub use serializer::{
    BinaryRowDataSerializer, IntSerializer, LongSerializer, RowDataSerializer, StateSerializer,
    StringSerializer, TableTimeWindowSerializer, TimeWindow, TimeWindowSerializer, VoidNamespace,
    VoidNamespaceSerializer, is_ambiguous_key_possible,
};
pub use types::{LogicalType, MAX_LENGTH};
pub use value::{RowKind, Timestamp, Value};
pub use writer::{BinaryRowWriter, NullEncoding};
