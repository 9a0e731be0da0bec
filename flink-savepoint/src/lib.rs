//! Write and read real Apache Flink 2.3.0 **canonical savepoints** whose keyed operator holds
//! sfstate canonical native state — no JVM needed.
//!
//! sfstate's canonical snapshot of an operator is, per key group, an SFCS header plus 4 MiB
//! chunks ([`sfcs_format`]). `StreamFusion`'s Java operator stores exactly those as reserved
//! keyed `ValueState<byte[]>`s of a Flink job: the header under
//! [`sfcs_format::HEADER_STATE_NAME`], chunk `n` under [`sfcs_format::chunk_state_name`],
//! with the key group itself as the `Integer` key. This crate reads and writes the savepoint
//! directory Flink makes of that state (`_metadata` plus state files), so a native engine
//! can hand its state to a Flink job, or take it over from one, through the format Flink
//! owns: its key-group index, redistribution at any parallelism and its integrity checks.
//!
//! - [`SavepointReader`] opens any such savepoint (both backends' layouts, inline and file
//!   handles, Snappy-compressed key groups, timer states and other operators skipped),
//!   finds the operator by uid or id and serves its key groups through the read-only
//!   [`sfcs_format::Container`] trait, so `state_api::restore_canonical_snapshot` restores a
//!   store straight from a Flink savepoint at any target key-group range.
//! - [`write_savepoint`] writes a savepoint from any [`Container`](sfcs_format::Container),
//!   streaming with bounded memory, every file written atomically and `_metadata` last.
//!
//! ```
//! use flink_savepoint::{OperatorSelector, SavepointReader, WriteOptions, write_savepoint};
//! use sfcs_format::{Container, MemoryContainer};
//!
//! let mut snapshot = MemoryContainer::new();
//! sfcs_format::write_envelope(&mut snapshot, 5, "group aggregate", None, b"state of kg 5")?;
//! sfcs_format::write_envelope(&mut snapshot, 100, "group aggregate", Some(7), &[1; 3000])?;
//!
//! let dir = tempfile::tempdir()?;
//! let out = dir.path().join("savepoint");
//! write_savepoint(&snapshot, &out, &WriteOptions::new("native-op", 128, 2)?)?;
//!
//! let savepoint = SavepointReader::open(&out, &OperatorSelector::Uid("native-op".into()))?;
//! assert_eq!(savepoint.key_groups()?, vec![5, 100]);
//! let (_header, payload) = sfcs_format::read_envelope(&savepoint, 5, "group aggregate")?;
//! assert_eq!(payload, b"state of kg 5");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Format
//!
//! The byte format is specified in the project's `FORMAT.md` (copied from
//! `shared/flink-savepoint`) and documented next to the code that reads or writes each
//! part: `_metadata` in [`SavepointMetadata`], the keyed stream's proxy and state list,
//! key-group blocks, Snappy framing, serializer snapshots and modified UTF-8 in the private
//! modules (`proxy`, `block`, `snappy`, `serializer`, `mutf8`), and the layout this crate
//! writes in [`write_savepoint`].
//!
//! # Errors
//!
//! Every malformed input is a typed [`Error`]; the reader never panics and never allocates
//! by a length it has not checked against the bytes present (a fuzz-style test mutates the
//! samples to hold it to that).

#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]
#![warn(clippy::expect_used)]

mod block;
mod error;
mod input;
mod manifest;
mod metadata;
mod mutf8;
mod operator_id;
mod proxy;
mod reader;
mod serializer;
mod snappy;
mod snappy_write;
mod stream_sink;
mod writer;

pub use error::{Error, Result, SnappyError};
pub use manifest::manifest_json;
pub use metadata::{
    KeyedHandle, METADATA_MAGIC, OperatorRecord, SavepointMetadata, StreamHandle, SubtaskRecord,
};
pub use operator_id::OperatorId;
pub use reader::{
    METADATA_FILE, OperatorInfo, OperatorSelector, ReadOptions, SFSTATE_PAYLOAD_VERSION,
    SavepointReader,
};
pub use writer::{
    Compression, DEFAULT_INLINE_THRESHOLD, MetadataVersion, WriteOptions, WriteSummary,
    key_group_range, write_savepoint,
};
