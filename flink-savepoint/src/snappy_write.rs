//! Writing Snappy-framed key-group blocks exactly as Flink 2.3.0 frames them when
//! `execution.checkpointing.snapshot-compression` is on (FORMAT.md section 6; the framing is
//! documented in `snappy.rs`, which reads it).
//!
//! Flink's `SnappyStreamCompressionDecorator` wraps each key-group block in a fresh xerial
//! `SnappyFramedOutputStream(out, 65536, 0.85)`:
//!
//! ```text
//! ff 06 00 00 73 4e 61 50 70 59               stream identifier, once per key group
//! per 65536 uncompressed bytes of the block (the last chunk holds the rest, never empty):
//!   compressed = raw Snappy block of the bytes
//!   if len(compressed) / len(bytes) <= 0.85:
//!       00 ‖ u24 LE (4 + len(compressed)) ‖ u32 LE masked CRC32C(bytes) ‖ compressed
//!   else:
//!       01 ‖ u24 LE (4 + len(bytes))      ‖ u32 LE masked CRC32C(bytes) ‖ bytes
//! ```
//!
//! The block's bytes are buffered 65536 at a time (the decorator writes nothing else and
//! never flushes inside a block); the raw blocks are made by the `snap` crate's
//! `raw::Encoder`. Memory: one 64 KiB input buffer and one output buffer of
//! `max_compress_len(65536)` bytes (~76 KiB), reused for every key group.

use std::io::{self, Write};

use crate::snappy::{MAX_CHUNK, STREAM_IDENTIFIER, mask};

/// xerial's `DEFAULT_MIN_COMPRESSION_RATIO`, which Flink passes: a chunk is stored
/// compressed only when the compressed bytes are at most 85 % of the uncompressed ones.
const MIN_COMPRESSION_RATIO: f64 = 0.85;
/// Chunk type of a compressed chunk.
const COMPRESSED: u8 = 0x00;
/// Chunk type of an uncompressed chunk.
const UNCOMPRESSED: u8 = 0x01;

/// The reusable buffers of the framer.
pub(crate) struct SnappyFramer {
    input: Vec<u8>,
    output: Vec<u8>,
    encoder: snap::raw::Encoder,
}

impl SnappyFramer {
    pub(crate) fn new() -> Self {
        SnappyFramer {
            input: Vec::with_capacity(MAX_CHUNK),
            output: vec![0; snap::raw::max_compress_len(MAX_CHUNK)],
            encoder: snap::raw::Encoder::new(),
        }
    }

    /// Starts one framed stream (one key-group block) on `out`: writes the stream
    /// identifier. Write the block to the returned writer, then call
    /// [`FramedBlock::finish`].
    pub(crate) fn start<'a>(&'a mut self, out: &'a mut dyn Write) -> io::Result<FramedBlock<'a>> {
        out.write_all(&STREAM_IDENTIFIER)?;
        self.input.clear();
        Ok(FramedBlock { framer: self, out })
    }
}

/// One key-group block being framed.
pub(crate) struct FramedBlock<'a> {
    framer: &'a mut SnappyFramer,
    out: &'a mut dyn Write,
}

impl FramedBlock<'_> {
    /// Writes the buffered rest of the block as its last chunk.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.emit()
    }

    /// Writes the buffered bytes (if any) as one chunk.
    fn emit(&mut self) -> io::Result<()> {
        let f = &mut *self.framer;
        if f.input.is_empty() {
            return Ok(());
        }
        let crc = mask(crc32c::crc32c(&f.input));
        let n = f
            .encoder
            .compress(&f.input, &mut f.output)
            .map_err(io::Error::other)?;
        #[expect(
            clippy::cast_precision_loss,
            reason = "both lengths are at most max_compress_len(65536), exact in f64"
        )]
        let ratio = n as f64 / f.input.len() as f64;
        let (chunk_type, data) = if ratio <= MIN_COMPRESSION_RATIO {
            (COMPRESSED, f.output.get(..n).unwrap_or_default())
        } else {
            (UNCOMPRESSED, f.input.as_slice())
        };
        // At most 4 + max_compress_len(65536) < 2^24.
        let len = u32::try_from(data.len() + 4).unwrap_or(u32::MAX);
        let [l0, l1, l2, _] = len.to_le_bytes();
        let [c0, c1, c2, c3] = crc.to_le_bytes();
        self.out
            .write_all(&[chunk_type, l0, l1, l2, c0, c1, c2, c3])?;
        self.out.write_all(data)?;
        f.input.clear();
        Ok(())
    }
}

impl Write for FramedBlock<'_> {
    fn write(&mut self, mut buf: &[u8]) -> io::Result<usize> {
        let written = buf.len();
        while !buf.is_empty() {
            if self.framer.input.len() == MAX_CHUNK {
                self.emit()?;
            }
            let room = MAX_CHUNK - self.framer.input.len();
            let (now, rest) = buf.split_at(room.min(buf.len()));
            self.framer.input.extend_from_slice(now);
            buf = rest;
        }
        Ok(written)
    }

    /// Flushes `out` only: a chunk is written when 65536 bytes are buffered or the block
    /// ends, as Flink does.
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::metadata::{SavepointMetadata, StreamHandle};
    use crate::operator_id::OperatorId;

    /// One parsed frame chunk: type, stored length, masked CRC, uncompressed bytes.
    type Chunk = (u8, u32, u32, Vec<u8>);

    /// Parses one framed stream completely (test helper; the reader's own parser is
    /// `SnappyReader`).
    fn parse(framed: &[u8]) -> Vec<Chunk> {
        assert_eq!(&framed[..10], &STREAM_IDENTIFIER);
        let mut at = 10;
        let mut out = Vec::new();
        while at < framed.len() {
            let t = framed[at];
            let len = u32::from_le_bytes([framed[at + 1], framed[at + 2], framed[at + 3], 0]);
            let crc = u32::from_le_bytes(framed[at + 4..at + 8].try_into().unwrap());
            let data = &framed[at + 8..at + 4 + len as usize];
            let bytes = match t {
                0 => snap::raw::Decoder::new().decompress_vec(data).unwrap(),
                1 => data.to_vec(),
                _ => panic!("chunk type {t:#x}"),
            };
            assert_eq!(mask(crc32c::crc32c(&bytes)), crc);
            out.push((t, len, crc, bytes));
            at += 4 + len as usize;
        }
        assert_eq!(at, framed.len());
        out
    }

    fn frame(block: &[u8], framer: &mut SnappyFramer, write_sizes: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut b = framer.start(&mut out).unwrap();
        for piece in block.chunks(write_sizes) {
            b.write_all(piece).unwrap();
        }
        b.finish().unwrap();
        out
    }

    /// Every Snappy-framed key-group block of the native operator in a committed Flink
    /// sample: (key group, framed bytes).
    fn flink_blocks(sample: &str) -> Vec<(u32, Vec<u8>)> {
        // The crate directory at run time (a binary reused from another checkout's build).
        let dir: PathBuf = std::env::var_os("CARGO_MANIFEST_DIR")
            .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
            .join("../testdata/flink-savepoints")
            .join(sample);
        let meta = SavepointMetadata::read(&dir.join("_metadata")).unwrap();
        let op = meta.operator(OperatorId::from_uid("native-op")).unwrap();
        let mut out = Vec::new();
        for subtask in &op.subtasks {
            let handle = subtask.managed_keyed.as_ref().unwrap();
            let Some(StreamHandle::Relative { path, .. }) = &handle.stream else {
                panic!("{sample}: expected relative files");
            };
            let stream = std::fs::read(dir.join(path)).unwrap();
            assert_eq!(stream[4], 1, "usingKeyGroupCompression");
            let mut starts: Vec<(u32, usize)> = (0_u32..)
                .zip(&handle.offsets)
                .filter(|&(_, &o)| o != 0)
                .map(|(j, &o)| {
                    (
                        u32::try_from(handle.start).unwrap() + j,
                        usize::try_from(o).unwrap(),
                    )
                })
                .collect();
            starts.sort_by_key(|&(_, o)| o);
            for (i, &(kg, start)) in starts.iter().enumerate() {
                let end = starts.get(i + 1).map_or(stream.len(), |&(_, o)| o);
                out.push((kg, stream[start..end].to_vec()));
            }
        }
        out
    }

    /// Framing Flink's own decompressed key-group blocks again gives Flink's framing: the
    /// same stream identifier, chunk boundaries (65536 uncompressed bytes, the last one
    /// partial), chunk types (the 0.85 rule), masked CRCs and uncompressed bytes. The raw
    /// Snappy blocks are `snap`'s, not the C++ library's that snappy-java calls: most chunks
    /// and blocks are byte-identical to Flink's (counts printed), the others differ in the
    /// raw encoding only (a few bytes longer or shorter) and decode to the same bytes.
    #[test]
    fn reframing_flink_blocks_gives_flink_framing() {
        let mut framer = SnappyFramer::new();
        let (mut blocks, mut total, mut multi_chunk, mut chunks_seen, mut identical) =
            (0, 0, 0, 0, 0);
        for sample in [
            "p3-hashmap-files-mp4096-snappy",
            "p2-rocksdb-files-mp4096-snappy-timers-multichunk",
        ] {
            for (kg, framed) in flink_blocks(sample) {
                let chunks = parse(&framed);
                let block: Vec<u8> = chunks.iter().flat_map(|c| c.3.clone()).collect();
                // Flink's chunks: all full but the last, and never empty.
                for (i, c) in chunks.iter().enumerate() {
                    if i + 1 < chunks.len() {
                        assert_eq!(c.3.len(), MAX_CHUNK, "{sample} kg {kg} chunk {i}");
                    }
                    assert!(!c.3.is_empty());
                }
                multi_chunk += usize::from(chunks.len() > 1);
                for write_size in [1 << 20, 7] {
                    let ours = frame(&block, &mut framer, write_size);
                    let mine = parse(&ours);
                    assert_eq!(mine.len(), chunks.len(), "{sample} kg {kg} chunk count");
                    for (i, (x, y)) in mine.iter().zip(&chunks).enumerate() {
                        // type, masked CRC, uncompressed bytes
                        assert_eq!((x.0, x.2), (y.0, y.2), "{sample} kg {kg} chunk {i}");
                        assert!(x.3 == y.3, "{sample} kg {kg} chunk {i} bytes");
                        if write_size == 7 {
                            chunks_seen += 1;
                            identical += usize::from(x.1 == y.1);
                        }
                    }
                    if write_size == 7 {
                        total += 1;
                        blocks += usize::from(ours == framed);
                    }
                }
            }
        }
        assert!(chunks_seen >= 200, "{chunks_seen} chunks checked");
        assert!(multi_chunk >= 2, "{multi_chunk} multi-chunk blocks");
        println!(
            "{identical} of {chunks_seen} chunks and {blocks} of {total} blocks byte-identical to Flink's"
        );
        // 234 of 258 chunks and 57 of 82 blocks on the committed samples: the rest differ in
        // the raw Snappy encoding only.
        assert!(
            identical * 10 >= chunks_seen * 8,
            "{identical} of {chunks_seen}"
        );
        assert!(blocks * 3 >= total * 2, "{blocks} of {total} blocks");
    }

    #[test]
    fn incompressible_chunks_are_stored_uncompressed_and_the_last_is_partial() {
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let noise: Vec<u8> = (0..MAX_CHUNK + 10)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_le_bytes()[0]
            })
            .collect();
        let ours = frame(&noise, &mut SnappyFramer::new(), 4096);
        let chunks = parse(&ours);
        assert_eq!(chunks.len(), 2);
        assert_eq!((chunks[0].0, chunks[0].3.len()), (UNCOMPRESSED, MAX_CHUNK));
        assert_eq!((chunks[1].0, chunks[1].3.len()), (UNCOMPRESSED, 10));
        let zeros = frame(&vec![0; 3 * MAX_CHUNK], &mut SnappyFramer::new(), 1000);
        let chunks = parse(&zeros);
        assert_eq!(chunks.len(), 3);
        assert!(chunks.iter().all(|c| c.0 == COMPRESSED));
        assert_eq!(frame(&[], &mut SnappyFramer::new(), 1), STREAM_IDENTIFIER);
    }
}
