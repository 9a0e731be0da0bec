//! The SFCS canonical state envelope.
//!
//! A native operator's state for one key group is a byte payload (the framing of its
//! [sections](Sections) is defined here; what a section holds is up to the operator). To
//! store it through a host that keeps small keyed values, the payload is split into
//! [`CHUNK_SIZE`] (4 MiB) chunks and described by a small big-endian header that names the
//! operator, carries a processing-time deadline, and checksums the payload with CRC32C.
//! Decoding validates everything before a single payload byte is handed on.
//!
//! ```
//! use sfcs_format::{Container, MemoryContainer, SectionWriter, Sections};
//!
//! let mut sections = SectionWriter::new();
//! sections.push("rows", b"arrow ipc bytes")?;
//! let payload = sections.finish();
//!
//! let mut container = MemoryContainer::new();
//! sfcs_format::write_envelope(&mut container, 42, "agg-1", None, &payload)?;
//!
//! let (header, restored) = sfcs_format::read_envelope(&container, 42, "agg-1")?;
//! assert_eq!(header.chunk_count(), 1);
//! assert_eq!(Sections::decode(&restored)?.get("rows"), Some(&b"arrow ipc bytes"[..]));
//!
//! // The wrong operator is refused before any payload byte is looked at.
//! let err = sfcs_format::read_envelope(&container, 42, "join-7").unwrap_err();
//! assert!(matches!(
//!     err.decode_error(),
//!     Some(sfcs_format::DecodeError::OperatorMismatch { .. })
//! ));
//! # Ok::<(), sfcs_format::Error>(())
//! ```
//!
//! # Header
//!
//! All integers are big-endian; the header is [`FIXED_HEADER_LEN`] + n bytes.
//!
//! ```text
//! offset  width  field
//! 0       4      magic                       "SFCS" (53 46 43 53)
//! 4       4      format version              i32, 1 (see SUPPORTED_VERSIONS)
//! 8       4      operator-id length n        i32, 0..=1024
//! 12      n      operator id                 UTF-8
//! 12+n    8      processing-time deadline    i64, i64::MIN (80 00 .. 00) = none
//! 20+n    4      chunk count                 i32, = ceil(payload length / 4 MiB)
//! 24+n    4      payload length              i32, >= 0
//! 28+n    4      CRC32C of the payload       u32, CRC-32C (Castagnoli)
//! ```
//!
//! - **magic** identifies the envelope.
//! - **format version** selects the layout; a reader refuses versions it does not know and
//!   says which it accepts.
//! - **operator id** is the stable id of the operator that wrote the state; a restore names
//!   the operator it expects, so state never lands in the wrong operator.
//! - **processing-time deadline** is the earliest pending processing-time timer (or none), so
//!   a restored operator can re-register it.
//! - **chunk count** is derived from the length and checked against it: an empty payload has
//!   zero chunks, every chunk but the last is exactly 4 MiB.
//! - **payload length** is the reassembled payload's size.
//! - **CRC32C** covers the reassembled payload (Java's `java.util.zip.CRC32C` gives the same
//!   value; the crate's tests check it against Flink-side vectors).
//!
//! Worked example: operator `"op-1"`, deadline 1 700 000 000 000, a 5-byte payload with
//! CRC32C `0xdeadbeef` gives the 36 bytes
//!
//! ```text
//! 53 46 43 53  00 00 00 01  00 00 00 04  6f 70 2d 31
//! 00 00 01 8b cf e5 68 00   00 00 00 01  00 00 00 05  de ad be ef
//! ```
//!
//! # Decode validation order
//!
//! [`Header::decode`], [`decode`], [`decode_to_vec`] and [`read_envelope`] check, in this
//! order, and return the [`DecodeError`] of the first failure:
//!
//! 1. each field is present before it is read — [`DecodeError::TruncatedHeader`];
//! 2. magic — [`DecodeError::BadMagic`];
//! 3. version — [`DecodeError::UnsupportedVersion`];
//! 4. operator-id length within 0..=[`MAX_OPERATOR_ID_LEN`] and the bytes present —
//!    [`DecodeError::OperatorIdLength`];
//! 5. operator id is UTF-8 — [`DecodeError::OperatorIdNotUtf8`];
//! 6. operator id is the expected one — [`DecodeError::OperatorMismatch`];
//! 7. no bytes after the checksum — [`DecodeError::TrailingHeaderBytes`];
//! 8. payload length >= 0 — [`DecodeError::NegativePayloadLength`];
//! 9. chunk count >= 0 — [`DecodeError::NegativeChunkCount`];
//! 10. chunk count = ceil(length / 4 MiB) — [`DecodeError::ChunkCountMismatch`];
//! 11. per chunk, in order: present — [`DecodeError::MissingChunk`]; of the implied length —
//!     [`DecodeError::ChunkLength`];
//! 12. no chunk beyond the count — [`DecodeError::UnexpectedChunk`];
//! 13. the chunk lengths add up to the payload length — [`DecodeError::PayloadLength`];
//! 14. CRC32C of the payload — [`DecodeError::ChecksumMismatch`].
//!
//! Nothing is allocated from a length field before it has been checked against the bytes
//! actually present; decoding never panics.
//!
//! # Containers
//!
//! [`Container`] stores a key group's header and chunks under the reserved state names
//! [`HEADER_STATE_NAME`] and [`chunk_state_name`]; [`MemoryContainer`] and [`DirContainer`]
//! (atomic per key group) implement it.
//!
//! This crate does no I/O besides [`DirContainer`], and knows nothing of RocksDB or Arrow.

#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]
#![warn(clippy::expect_used)]

mod container;
mod cursor;
mod envelope;
mod error;
mod header;
mod manifest;
mod section;

pub use container::{
    CURRENT_FILE, Container, DirContainer, HEADER_STATE_NAME, MANIFEST_FILE, MemoryContainer,
    chunk_state_name, read_envelope, write_envelope,
};
pub use envelope::{
    Decoded, Envelope, assemble_payload, assemble_payload_into, decode, decode_to_vec,
};
pub use error::{DecodeError, EncodeError, Error, ManifestError, Result, SectionError};
pub use header::{
    CHUNK_SIZE, FIXED_HEADER_LEN, FORMAT_VERSION, Header, MAGIC, MAX_OPERATOR_ID_LEN,
    MAX_PAYLOAD_LEN, SUPPORTED_VERSIONS, chunk_count_for,
};
pub use manifest::{
    MANIFEST_ENTRY_LEN, MANIFEST_MAGIC, MANIFEST_VERSION, MAX_MANIFEST_PARALLELISM, Manifest,
    ManifestEntry, SUPPORTED_MANIFEST_VERSIONS, read_vouched_envelope,
};
pub use section::{
    MAX_SECTION_NAME_LEN, SECTION_FORMAT_VERSION, SUPPORTED_SECTION_VERSIONS, Section,
    SectionWriter, Sections,
};
