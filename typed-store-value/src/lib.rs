//! typed-store's stored-value format and the guard that checks stored bytes before arrow-row
//! decodes them.
//!
//! Every value typed-store writes to RocksDB (keyed and map tables alike) is:
//!
//! ```text
//! +-------------------------------+---------------------------------------------+
//! | last-access timestamp         | arrow-row bytes of the codec's columns      |
//! | i64, big-endian, 8 bytes      | (RowConverter over ValueCodec::fields,      |
//! | epoch ms; 0 without TTL       |  ascending, nulls first; arrow-row =60.1.0) |
//! +-------------------------------+---------------------------------------------+
//! ```
//!
//! Worked example: TTL timestamp 1000 and an `I64Codec` value 7 are
//! `00 00 00 00 00 00 03 e8` then arrow-row's `01` (valid) and `80 00 00 00 00 00 00 07`
//! (7 with the sign bit flipped, big-endian).
//!
//! arrow-row's decoder trusts its input (it may panic or misread on bytes it did not write),
//! so [`decode_stored_values`] first splits off the timestamp ([`split_value`]) and runs the
//! [`RowGuard`] on the rest: the arrow-row part must be exactly as long as its columns'
//! encodings say (fixed widths, the block structure of strings and binaries). A value failing
//! either check is [`Error::CorruptValue`] and never reaches arrow-row.
//!
//! # Why a crate of its own
//!
//! The format and its guard need no RocksDB, but typed-store links it (a C++ build of
//! 15+ minutes cold, an hour under the fuzzer's instrumentation). Living here, the very
//! functions typed-store calls are reachable from the `fuzz` workspace (target
//! `stored_value`) without compiling RocksDB; typed-store re-exports nothing new and wraps
//! these functions only to attach the table's name to the error (`typed-store/src/format.rs`).
//!
//! # Example
//!
//! ```
//! use state_api::{I64Codec, ValueCodec};
//! use typed_store_value::{RowCodec, decode_stored_values, encode_stored_values};
//!
//! let rows = RowCodec::try_new(&I64Codec.fields())?;
//! let mut stored = Vec::new();
//! encode_stored_values(&rows, &I64Codec, &[(1000, &7)], |_, bytes| stored.push(bytes.to_vec()))?;
//! assert_eq!(stored[0], [0, 0, 0, 0, 0, 0, 3, 0xe8, 1, 0x80, 0, 0, 0, 0, 0, 0, 7]);
//! let (timestamps, values) = decode_stored_values(&rows, &I64Codec, stored.iter().map(Vec::as_slice))?;
//! assert_eq!((timestamps, values), (vec![1000], vec![7]));
//!
//! // A truncated value is refused before arrow-row sees it.
//! let cut = &stored[0][..12];
//! assert!(decode_stored_values(&rows, &I64Codec, [cut].into_iter()).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Features
//!
//! None.

#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::indexing_slicing))]

mod codec;
mod error;
mod guard;

pub use codec::{
    RowCodec, TIMESTAMP_BYTES, decode_stored_values, encode_stored_values, split_value,
};
pub use error::{Error, Result};
pub use guard::RowGuard;
