//! The SFCS header: its fields, its encoder and its validating decoder.
//!
//! ```text
//! offset      width   field                         encoding
//! 0           4       magic                         b"SFCS"
//! 4           4       format version                i32 BE (1)
//! 8           4       operator-id length n          i32 BE, 0..=MAX_OPERATOR_ID_LEN
//! 12          n       operator id                   UTF-8
//! 12+n        8       processing-time deadline      i64 BE, i64::MIN = none
//! 20+n        4       chunk count                   i32 BE, = ceil(payload length / CHUNK_SIZE)
//! 24+n        4       payload length                i32 BE, >= 0
//! 28+n        4       CRC32C of the payload         u32 BE (Castagnoli)
//! 32+n                end (no trailing bytes)
//! ```

use crate::cursor::{Cursor, Short};
use crate::error::{DecodeError, EncodeError};

/// The four magic bytes every header starts with.
pub const MAGIC: [u8; 4] = *b"SFCS";
/// The format version this crate writes.
pub const FORMAT_VERSION: i32 = 1;
/// Every format version this crate reads.
pub const SUPPORTED_VERSIONS: &[i32] = &[FORMAT_VERSION];
/// The payload is split into chunks of this many bytes (4 MiB); the last may be shorter.
pub const CHUNK_SIZE: usize = 4 * 1024 * 1024;
/// Longest operator id, in UTF-8 bytes, that the format accepts.
pub const MAX_OPERATOR_ID_LEN: usize = 1024;
/// Longest payload the format can describe: the payload-length field is an `i32`.
// Lossless: i32::MAX is positive and fits every usize of 32 bits or more.
pub const MAX_PAYLOAD_LEN: usize = i32::MAX as usize;
/// Header bytes besides the operator id.
pub const FIXED_HEADER_LEN: usize = 32;

/// A decoded, validated SFCS header.
///
/// Invariants (checked by [`Header::decode`] and by construction in
/// [`Envelope::encode`](crate::Envelope::encode)): `chunk_count` equals
/// `payload_len.div_ceil(CHUNK_SIZE)`, `payload_len <= MAX_PAYLOAD_LEN`, the operator id is at
/// most [`MAX_OPERATOR_ID_LEN`] bytes, and the deadline is never `Some(i64::MIN)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    version: i32,
    operator_id: String,
    deadline: Option<i64>,
    chunk_count: u32,
    payload_len: usize,
    crc32c: u32,
}

/// Number of chunks a payload of `len` bytes is split into.
pub fn chunk_count_for(len: usize) -> usize {
    len.div_ceil(CHUNK_SIZE)
}

/// Expected length of chunk `index` of a payload of `payload_len` bytes.
pub(crate) fn chunk_len(payload_len: usize, index: usize) -> usize {
    payload_len
        .saturating_sub(index.saturating_mul(CHUNK_SIZE))
        .min(CHUNK_SIZE)
}

impl Header {
    /// Builds a header for a payload whose length and checksum are known.
    ///
    /// # Errors
    /// [`EncodeError`] when the payload is longer than [`MAX_PAYLOAD_LEN`], the operator id
    /// longer than [`MAX_OPERATOR_ID_LEN`], or the deadline is `Some(i64::MIN)`.
    pub fn try_new(
        operator_id: &str,
        deadline: Option<i64>,
        payload_len: usize,
        crc32c: u32,
    ) -> Result<Self, EncodeError> {
        if payload_len > MAX_PAYLOAD_LEN {
            return Err(EncodeError::PayloadTooLarge {
                length: payload_len,
                max: MAX_PAYLOAD_LEN,
            });
        }
        if operator_id.len() > MAX_OPERATOR_ID_LEN {
            return Err(EncodeError::OperatorIdTooLong {
                length: operator_id.len(),
                max: MAX_OPERATOR_ID_LEN,
            });
        }
        if deadline == Some(i64::MIN) {
            return Err(EncodeError::ReservedDeadline);
        }
        let chunk_count = u32::try_from(chunk_count_for(payload_len)).map_err(|_| {
            EncodeError::PayloadTooLarge {
                length: payload_len,
                max: MAX_PAYLOAD_LEN,
            }
        })?;
        Ok(Header {
            version: FORMAT_VERSION,
            operator_id: operator_id.to_owned(),
            deadline,
            chunk_count,
            payload_len,
            crc32c,
        })
    }

    /// Sets the payload checksum (the encoder computes it after validating the other fields).
    pub(crate) fn set_crc32c(&mut self, crc32c: u32) {
        self.crc32c = crc32c;
    }

    /// The format version.
    pub fn version(&self) -> i32 {
        self.version
    }

    /// The operator that wrote the snapshot.
    pub fn operator_id(&self) -> &str {
        &self.operator_id
    }

    /// The processing-time deadline (for example the next processing-time timer), if any.
    pub fn deadline(&self) -> Option<i64> {
        self.deadline
    }

    /// Number of chunks that follow the header.
    pub fn chunk_count(&self) -> u32 {
        self.chunk_count
    }

    /// Length of the reassembled payload in bytes.
    pub fn payload_len(&self) -> usize {
        self.payload_len
    }

    /// CRC32C (Castagnoli) of the reassembled payload.
    pub fn crc32c(&self) -> u32 {
        self.crc32c
    }

    /// Expected length of chunk `index`; `None` when the header has no such chunk.
    pub fn chunk_len(&self, index: u32) -> Option<usize> {
        (index < self.chunk_count).then(|| chunk_len(self.payload_len, index as usize))
    }

    /// Length of the encoded header in bytes.
    pub fn encoded_len(&self) -> usize {
        FIXED_HEADER_LEN + self.operator_id.len()
    }

    /// Encodes the header (layout in the [crate documentation](crate#header)).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.version.to_be_bytes());
        out.extend_from_slice(&to_i32(self.operator_id.len()).to_be_bytes());
        out.extend_from_slice(self.operator_id.as_bytes());
        out.extend_from_slice(&self.deadline.unwrap_or(i64::MIN).to_be_bytes());
        out.extend_from_slice(&to_i32(self.chunk_count as usize).to_be_bytes());
        out.extend_from_slice(&to_i32(self.payload_len).to_be_bytes());
        out.extend_from_slice(&self.crc32c.to_be_bytes());
        out
    }

    /// Decodes and validates a header written for `expected_operator_id`.
    ///
    /// Checks, in this order: length of each field before reading it, magic, version,
    /// operator-id length, operator-id UTF-8, operator id equal to `expected_operator_id`,
    /// no trailing bytes, payload length >= 0, chunk count >= 0, chunk count consistent with
    /// the payload length. Nothing is allocated before the operator-id length is validated
    /// against the bytes actually present.
    ///
    /// # Errors
    /// The [`DecodeError`] of the first failing check.
    pub fn decode(bytes: &[u8], expected_operator_id: &str) -> Result<Self, DecodeError> {
        let mut r = Cursor::new(bytes);
        let magic: [u8; 4] = r.array().map_err(truncated("magic"))?;
        if magic != MAGIC {
            return Err(DecodeError::BadMagic { found: magic });
        }
        let version = i32::from_be_bytes(r.array().map_err(truncated("format version"))?);
        if !SUPPORTED_VERSIONS.contains(&version) {
            return Err(DecodeError::UnsupportedVersion {
                found: version,
                supported: SUPPORTED_VERSIONS,
            });
        }
        let id_len = i32::from_be_bytes(r.array().map_err(truncated("operator-id length"))?);
        let available = r.remaining();
        let id_bytes = usize::try_from(id_len)
            .ok()
            .filter(|&n| n <= MAX_OPERATOR_ID_LEN && n <= available)
            .and_then(|n| r.take(n).ok())
            .ok_or(DecodeError::OperatorIdLength {
                length: id_len,
                max: MAX_OPERATOR_ID_LEN,
                available,
            })?;
        let operator_id =
            std::str::from_utf8(id_bytes).map_err(|e| DecodeError::OperatorIdNotUtf8 {
                valid_up_to: e.valid_up_to(),
            })?;
        if operator_id != expected_operator_id {
            return Err(DecodeError::OperatorMismatch {
                expected: expected_operator_id.to_owned(),
                found: operator_id.to_owned(),
            });
        }
        let deadline =
            i64::from_be_bytes(r.array().map_err(truncated("processing-time deadline"))?);
        let chunk_count = i32::from_be_bytes(r.array().map_err(truncated("chunk count"))?);
        let payload_len = i32::from_be_bytes(r.array().map_err(truncated("payload length"))?);
        let crc32c = u32::from_be_bytes(r.array().map_err(truncated("payload CRC32C"))?);
        if r.remaining() != 0 {
            return Err(DecodeError::TrailingHeaderBytes {
                extra: r.remaining(),
            });
        }
        let payload_len_usize =
            usize::try_from(payload_len).map_err(|_| DecodeError::NegativePayloadLength {
                length: payload_len,
            })?;
        let chunk_count_u32 = u32::try_from(chunk_count)
            .map_err(|_| DecodeError::NegativeChunkCount { count: chunk_count })?;
        let expected_chunks = chunk_count_for(payload_len_usize);
        if chunk_count_u32 as usize != expected_chunks {
            return Err(DecodeError::ChunkCountMismatch {
                payload_length: payload_len,
                expected: to_i32(expected_chunks),
                found: chunk_count,
            });
        }
        Ok(Header {
            version,
            operator_id: operator_id.to_owned(),
            deadline: (deadline != i64::MIN).then_some(deadline),
            chunk_count: chunk_count_u32,
            payload_len: payload_len_usize,
            crc32c,
        })
    }
}

/// Converts a length the header's invariants already bound to `i32::MAX`.
fn to_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// The error for a header field cut short.
fn truncated(field: &'static str) -> impl Fn(Short) -> DecodeError {
    move |short| DecodeError::TruncatedHeader {
        field,
        offset: short.offset,
        needed: short.needed,
        available: short.available,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Header {
        Header::try_new("op-1", Some(1_700_000_000_000), 5, 0xdead_beef).unwrap()
    }

    #[test]
    fn worked_example_bytes() {
        let bytes = sample().encode();
        let expected: Vec<u8> = [
            &b"SFCS"[..],
            &[0, 0, 0, 1],
            &[0, 0, 0, 4],
            b"op-1",
            &1_700_000_000_000_i64.to_be_bytes(),
            &[0, 0, 0, 1],
            &[0, 0, 0, 5],
            &[0xde, 0xad, 0xbe, 0xef],
        ]
        .concat();
        assert_eq!(bytes, expected);
        assert_eq!(bytes.len(), sample().encoded_len());
        // The same bytes as printed in the crate documentation.
        let hex = bytes.iter().fold(String::new(), |mut s, b| {
            use std::fmt::Write as _;
            let _ = write!(s, "{b:02x}");
            s
        });
        assert_eq!(
            hex,
            "534643530000000100000004".to_owned()
                + "6f702d31000001"
                + "8bcfe568000000000100000005deadbeef"
        );
    }

    #[test]
    fn round_trip_with_and_without_deadline() {
        for deadline in [None, Some(0), Some(-1), Some(i64::MAX)] {
            let h = Header::try_new("x", deadline, CHUNK_SIZE + 1, 7).unwrap();
            assert_eq!(h.chunk_count(), 2);
            assert_eq!(Header::decode(&h.encode(), "x").unwrap(), h);
        }
    }

    #[test]
    fn chunk_lengths() {
        assert_eq!(chunk_count_for(0), 0);
        assert_eq!(chunk_count_for(1), 1);
        assert_eq!(chunk_count_for(CHUNK_SIZE), 1);
        assert_eq!(chunk_count_for(CHUNK_SIZE + 1), 2);
        assert_eq!(chunk_len(CHUNK_SIZE + 1, 0), CHUNK_SIZE);
        assert_eq!(chunk_len(CHUNK_SIZE + 1, 1), 1);
        let h = Header::try_new("x", None, CHUNK_SIZE + 1, 0).unwrap();
        assert_eq!(h.chunk_len(2), None);
    }

    #[test]
    fn encode_rejects_bad_input() {
        assert!(matches!(
            Header::try_new("x", Some(i64::MIN), 0, 0),
            Err(EncodeError::ReservedDeadline)
        ));
        let long = "a".repeat(MAX_OPERATOR_ID_LEN + 1);
        assert!(matches!(
            Header::try_new(&long, None, 0, 0),
            Err(EncodeError::OperatorIdTooLong {
                length: 1025,
                max: 1024
            })
        ));
        assert!(matches!(
            Header::try_new("x", None, MAX_PAYLOAD_LEN + 1, 0),
            Err(EncodeError::PayloadTooLarge { .. })
        ));
    }
}
