//! Encoding a payload into a header plus borrowed chunks, and validating chunks back into a
//! payload.

use std::borrow::Cow;

use crate::error::{DecodeError, EncodeError};
use crate::header::{CHUNK_SIZE, Header};

/// Bytes checksummed per step when copying and checksumming in one pass: small enough that
/// the block is still in L1/L2 when it is copied.
const FUSED_BLOCK: usize = 64 * 1024;

/// An encoded canonical envelope: the header bytes and the payload's chunks, borrowed from
/// the payload (encoding copies no payload byte).
///
/// ```
/// use sfcs_format::{CHUNK_SIZE, Envelope};
///
/// let payload = vec![7_u8; CHUNK_SIZE + 10];
/// let env = Envelope::encode("my-operator", None, &payload)?;
/// assert_eq!(env.chunk_count(), 2);
/// assert_eq!(env.chunk(1).map(<[u8]>::len), Some(10));
///
/// let chunks: Vec<Option<&[u8]>> = env.chunks().map(Some).collect();
/// let decoded = sfcs_format::decode(env.header_bytes(), "my-operator", chunks)?;
/// assert_eq!(decoded.to_payload().as_ref(), &payload[..]);
/// # Ok::<(), sfcs_format::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Envelope<'a> {
    header: Header,
    header_bytes: Vec<u8>,
    payload: &'a [u8],
}

impl<'a> Envelope<'a> {
    /// Checksums `payload` and builds its header. One pass over the payload (CRC32C); the
    /// chunks are slices of `payload`.
    ///
    /// # Errors
    /// [`EncodeError`] for a payload over [`MAX_PAYLOAD_LEN`](crate::MAX_PAYLOAD_LEN), an
    /// operator id over [`MAX_OPERATOR_ID_LEN`](crate::MAX_OPERATOR_ID_LEN) bytes or a
    /// deadline of `Some(i64::MIN)`.
    pub fn encode(
        operator_id: &str,
        deadline: Option<i64>,
        payload: &'a [u8],
    ) -> Result<Self, EncodeError> {
        // Validate the cheap fields before spending a pass over the payload.
        let mut header = Header::try_new(operator_id, deadline, payload.len(), 0)?;
        header.set_crc32c(crc32c::crc32c(payload));
        let header_bytes = header.encode();
        Ok(Envelope {
            header,
            header_bytes,
            payload,
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The encoded header: what is stored under
    /// [`HEADER_STATE_NAME`](crate::HEADER_STATE_NAME).
    pub fn header_bytes(&self) -> &[u8] {
        &self.header_bytes
    }

    /// Number of chunks.
    pub fn chunk_count(&self) -> u32 {
        self.header.chunk_count()
    }

    /// Chunk `index`, borrowed from the payload.
    pub fn chunk(&self, index: u32) -> Option<&'a [u8]> {
        let start = (index as usize).checked_mul(CHUNK_SIZE)?;
        let len = self.header.chunk_len(index)?;
        self.payload.get(start..start + len)
    }

    /// All chunks in order, borrowed from the payload.
    pub fn chunks(&self) -> std::slice::Chunks<'a, u8> {
        self.payload.chunks(CHUNK_SIZE)
    }
}

/// A validated envelope whose chunks are borrowed from the caller.
#[derive(Debug, Clone)]
pub struct Decoded<'c> {
    header: Header,
    chunks: Vec<&'c [u8]>,
}

impl<'c> Decoded<'c> {
    /// The validated header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The validated chunks, in order.
    pub fn chunks(&self) -> &[&'c [u8]] {
        &self.chunks
    }

    /// The payload: borrowed when it is one chunk (or empty), else the chunks concatenated.
    pub fn to_payload(&self) -> Cow<'c, [u8]> {
        match self.chunks.as_slice() {
            [] => Cow::Borrowed(&[]),
            [only] => Cow::Borrowed(only),
            many => Cow::Owned(many.concat()),
        }
    }
}

/// Validates an envelope: the header (see [`Header::decode`]), then every chunk's presence and
/// length, the total length, and the CRC32C of the payload. Nothing is copied; on success the
/// chunks are handed back as validated slices.
///
/// `chunks` yields chunk 0, 1, … in order; `None` (or the end of the iterator) marks a chunk
/// that is missing from the container.
///
/// # Errors
/// The [`DecodeError`] of the first failing check, in the
/// [documented order](crate#decode-validation-order).
pub fn decode<'c, I>(
    header_bytes: &[u8],
    expected_operator_id: &str,
    chunks: I,
) -> Result<Decoded<'c>, DecodeError>
where
    I: IntoIterator<Item = Option<&'c [u8]>>,
{
    let header = Header::decode(header_bytes, expected_operator_id)?;
    let chunks = check_chunks(&header, chunks)?;
    let computed = chunks
        .iter()
        .fold(0, |crc, chunk| crc32c::crc32c_append(crc, chunk));
    check_crc(&header, computed)?;
    Ok(Decoded { header, chunks })
}

/// Validates an envelope like [`decode`] and returns the payload as one owned buffer,
/// checksumming and copying in a single pass (each block is checksummed, then copied while
/// still in cache). The buffer is handed out only after the checksum matched.
///
/// # Errors
/// As [`decode`].
pub fn decode_to_vec<'c, I>(
    header_bytes: &[u8],
    expected_operator_id: &str,
    chunks: I,
) -> Result<(Header, Vec<u8>), DecodeError>
where
    I: IntoIterator<Item = Option<&'c [u8]>>,
{
    let header = Header::decode(header_bytes, expected_operator_id)?;
    let payload = assemble_payload(&header, chunks)?;
    Ok((header, payload))
}

/// Validates chunks against an already validated header and returns the payload as one
/// owned buffer: the second half of [`decode_to_vec`], for callers that decode the header
/// first to learn how many chunks to fetch.
///
/// # Errors
/// [`DecodeError::MissingChunk`], [`DecodeError::ChunkLength`],
/// [`DecodeError::UnexpectedChunk`], [`DecodeError::PayloadLength`] or
/// [`DecodeError::ChecksumMismatch`].
pub fn assemble_payload<'c, I>(header: &Header, chunks: I) -> Result<Vec<u8>, DecodeError>
where
    I: IntoIterator<Item = Option<&'c [u8]>>,
{
    let mut payload = Vec::new();
    assemble_payload_into(header, chunks, &mut payload)?;
    Ok(payload)
}

/// [`assemble_payload`] into a caller-owned buffer, so that restoring many key groups reuses
/// one allocation (a fresh multi-megabyte buffer costs more in page faults than the copy).
/// `out` is cleared first; on error it is left empty.
///
/// # Errors
/// As [`assemble_payload`].
pub fn assemble_payload_into<'c, I>(
    header: &Header,
    chunks: I,
    out: &mut Vec<u8>,
) -> Result<(), DecodeError>
where
    I: IntoIterator<Item = Option<&'c [u8]>>,
{
    out.clear();
    let chunks = check_chunks(header, chunks)?;
    // The capacity is the validated payload length, which the chunk lengths just confirmed.
    out.reserve(header.payload_len());
    let mut crc = 0;
    for block in chunks.iter().flat_map(|c| c.chunks(FUSED_BLOCK)) {
        crc = crc32c::crc32c_append(crc, block);
        out.extend_from_slice(block);
    }
    check_crc(header, crc).inspect_err(|_| out.clear())
}

/// Checks presence, length and number of the chunks against a validated header. Allocates at
/// most `header.chunk_count()` slice references (at most 512, by the i32 length field).
fn check_chunks<'c, I>(header: &Header, chunks: I) -> Result<Vec<&'c [u8]>, DecodeError>
where
    I: IntoIterator<Item = Option<&'c [u8]>>,
{
    let count = header.chunk_count();
    let mut out = Vec::with_capacity(count as usize);
    let mut chunks = chunks.into_iter();
    let mut total = 0_usize;
    for index in 0..count {
        let chunk = chunks.next().flatten().ok_or(DecodeError::MissingChunk {
            index,
            chunk_count: count,
        })?;
        let expected = header.chunk_len(index).unwrap_or(0);
        if chunk.len() != expected {
            return Err(DecodeError::ChunkLength {
                index,
                expected,
                found: chunk.len(),
            });
        }
        total += chunk.len();
        out.push(chunk);
    }
    if chunks.next().flatten().is_some() {
        return Err(DecodeError::UnexpectedChunk {
            index: count,
            chunk_count: count,
        });
    }
    // Implied by the per-chunk lengths; kept as a separate, cheap guard of the invariant.
    if total != header.payload_len() {
        return Err(DecodeError::PayloadLength {
            expected: header.payload_len(),
            found: total,
        });
    }
    Ok(out)
}

fn check_crc(header: &Header, computed: u32) -> Result<(), DecodeError> {
    if computed == header.crc32c() {
        Ok(())
    } else {
        Err(DecodeError::ChecksumMismatch {
            expected: header.crc32c(),
            computed,
        })
    }
}
