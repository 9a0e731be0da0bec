//! Snappy-framed key-group blocks (FORMAT.md section 6), as xerial snappy-java's
//! `SnappyFramedOutputStream` writes them for Flink's `SnappyStreamCompressionDecorator`.
//!
//! ```text
//! ff 06 00 00 73 4e 61 50 70 59                   stream identifier ("sNaPpY"), first
//! then chunks:  u8 type ‖ u24 LE length ‖ data
//!   00  compressed:    u32 LE masked CRC32C of the uncompressed bytes ‖ raw Snappy block
//!   01  uncompressed:  u32 LE masked CRC32C ‖ bytes
//!   80..=fe  skippable;  ff  stream identifier again;  02..=7f  reserved: refused
//! masked CRC = ((crc >> 15) | (crc << 17)) + 0xa282ead8   (mod 2^32)
//! ```
//!
//! A chunk holds at most 65536 uncompressed bytes. The raw blocks are decoded by the `snap`
//! crate's `raw::Decoder` (the Snappy block format); the framing is read here, because the
//! reader needs the file position of every chunk: a value inside a compressed block is
//! located by (position of the frame chunk holding its first byte, bytes to skip in that
//! chunk's output), so it can be re-read later without decompressing the block from its
//! start. Unlike Flink, this reader verifies every chunk's checksum.

use crate::error::{Error, Result, SnappyError};
use crate::input::Input;

/// The stream identifier chunk.
pub(crate) const STREAM_IDENTIFIER: [u8; 10] =
    [0xff, 0x06, 0x00, 0x00, b's', b'N', b'a', b'P', b'p', b'Y'];
/// Largest uncompressed chunk.
pub(crate) const MAX_CHUNK: usize = 65536;

/// Masks a CRC32C as the Snappy framing format does.
pub(crate) fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// Reads the decompressed bytes of one Snappy-framed block from an [`Input`].
pub(crate) struct SnappyReader<'a> {
    input: &'a mut Input,
    key_group: u32,
    /// Decompressed bytes of the current chunk.
    buf: Vec<u8>,
    /// Read position in `buf`.
    pos: usize,
    /// Stream position of the current chunk's type byte.
    chunk_start: u64,
    scratch: Vec<u8>,
    decoder: snap::raw::Decoder,
}

impl<'a> SnappyReader<'a> {
    /// Starts a block at the input's position: the stream identifier must come first.
    pub(crate) fn start(input: &'a mut Input, key_group: u32) -> Result<Self> {
        let offset = input.position();
        let id: [u8; 10] = input.array("Snappy stream identifier")?;
        let mut reader = SnappyReader::empty(input, key_group);
        if id != STREAM_IDENTIFIER {
            return Err(reader.error(offset, SnappyError::MissingStreamIdentifier));
        }
        reader.chunk_start = reader.input.position();
        Ok(reader)
    }

    /// Resumes inside a block at the chunk starting at stream position `chunk`, `skip` bytes
    /// into its decompressed output.
    pub(crate) fn resume(
        input: &'a mut Input,
        key_group: u32,
        chunk: u64,
        skip: u32,
    ) -> Result<Self> {
        input.seek(chunk)?;
        let mut reader = SnappyReader::empty(input, key_group);
        reader.chunk_start = chunk;
        reader.skip(u64::from(skip), "resumed Snappy position")?;
        Ok(reader)
    }

    fn empty(input: &'a mut Input, key_group: u32) -> Self {
        SnappyReader {
            input,
            key_group,
            buf: Vec::with_capacity(MAX_CHUNK),
            pos: 0,
            chunk_start: 0,
            scratch: Vec::new(),
            decoder: snap::raw::Decoder::new(),
        }
    }

    fn error(&self, offset: u64, source: SnappyError) -> Error {
        Error::Snappy {
            key_group: self.key_group,
            offset,
            source,
        }
    }

    /// The position of the next byte: the current chunk and the bytes consumed from it.
    pub(crate) fn mark(&self) -> (u64, u32) {
        (
            self.chunk_start,
            u32::try_from(self.pos).unwrap_or(u32::MAX),
        )
    }

    /// Loads the next data chunk into `buf` (skipping skippable and identifier chunks).
    fn next_chunk(&mut self) -> Result<()> {
        loop {
            let start = self.input.position();
            let head: [u8; 4] = self.input.array("Snappy chunk header")?;
            let [chunk_type, l0, l1, l2] = head;
            let length = u32::from_le_bytes([l0, l1, l2, 0]);
            let bad_length = SnappyError::ChunkLength { chunk_type, length };
            match chunk_type {
                0x00 | 0x01 => {
                    let max = if chunk_type == 0 {
                        snap::raw::max_compress_len(MAX_CHUNK)
                    } else {
                        MAX_CHUNK
                    };
                    let data_len = usize::try_from(length).unwrap_or(usize::MAX);
                    if data_len < 4 || data_len - 4 > max {
                        return Err(self.error(start, bad_length));
                    }
                    let stored = self.input.u32("Snappy chunk checksum")?.swap_bytes();
                    self.scratch.resize(data_len - 4, 0);
                    self.input
                        .read_into(&mut self.scratch, "Snappy chunk data")?;
                    if chunk_type == 0 {
                        let n = snap::raw::decompress_len(&self.scratch).map_err(|e| {
                            self.error(
                                start,
                                SnappyError::Corrupt {
                                    reason: e.to_string(),
                                },
                            )
                        })?;
                        if n > MAX_CHUNK {
                            return Err(self.error(
                                start,
                                SnappyError::UncompressedTooLarge { length: n as u64 },
                            ));
                        }
                        self.buf.resize(n, 0);
                        self.decoder
                            .decompress(&self.scratch, &mut self.buf)
                            .map_err(|e| {
                                self.error(
                                    start,
                                    SnappyError::Corrupt {
                                        reason: e.to_string(),
                                    },
                                )
                            })?;
                    } else {
                        self.buf.clear();
                        self.buf.extend_from_slice(&self.scratch);
                    }
                    let computed = mask(crc32c::crc32c(&self.buf));
                    if computed != stored {
                        return Err(
                            self.error(start, SnappyError::ChecksumMismatch { stored, computed })
                        );
                    }
                    self.pos = 0;
                    self.chunk_start = start;
                    if !self.buf.is_empty() {
                        return Ok(());
                    }
                }
                0xff => {
                    let mut body = [0_u8; 6];
                    if length != 6 {
                        return Err(self.error(start, SnappyError::BadStreamIdentifier));
                    }
                    self.input
                        .read_into(&mut body, "Snappy stream identifier")?;
                    if STREAM_IDENTIFIER.get(4..) != Some(&body[..]) {
                        return Err(self.error(start, SnappyError::BadStreamIdentifier));
                    }
                }
                0x80..=0xfe => self
                    .input
                    .skip(u64::from(length), "skippable Snappy chunk")?,
                _ => return Err(self.error(start, SnappyError::ReservedChunkType { chunk_type })),
            }
        }
    }

    /// Fills `out` with the next decompressed bytes.
    pub(crate) fn read_into(&mut self, mut out: &mut [u8], _what: &'static str) -> Result<()> {
        while !out.is_empty() {
            if self.pos == self.buf.len() {
                self.next_chunk()?;
            }
            let avail = self.buf.get(self.pos..).unwrap_or_default();
            let n = avail.len().min(out.len());
            let (head, rest) = out.split_at_mut(n);
            head.copy_from_slice(avail.get(..n).unwrap_or_default());
            self.pos += n;
            out = rest;
        }
        Ok(())
    }

    /// Skips `n` decompressed bytes (decompressing them; nothing is allocated by `n`).
    pub(crate) fn skip(&mut self, mut n: u64, _what: &'static str) -> Result<()> {
        while n > 0 {
            if self.pos == self.buf.len() {
                self.next_chunk()?;
            }
            let avail = (self.buf.len() - self.pos) as u64;
            let k = avail.min(n);
            self.pos += usize::try_from(k).unwrap_or(0);
            n -= k;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_of_a_known_checksum() {
        // CRC32C("123456789") = e3069283 (the standard check value); masked by hand:
        // rotate right 15 = 2507c60d, + a282ead8 = c78ab0e5.
        let crc = crc32c::crc32c(b"123456789");
        assert_eq!(crc, 0xe306_9283);
        assert_eq!(mask(crc), 0xc78a_b0e5);
        assert_eq!(mask(0), 0xa282_ead8);
    }
}
