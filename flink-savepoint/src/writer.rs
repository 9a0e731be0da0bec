//! The savepoint writer (the layout it writes is documented on [`write_savepoint`]).

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sfcs_format::{Container, DecodeError, Header};

use crate::block::{MAX_HEADER_LEN, META_DATA_FOLLOWS};
use crate::error::{Error, Result};
use crate::input::io_err;
use crate::metadata::{MAX_MAX_PARALLELISM, METADATA_MAGIC};
use crate::mutf8;
use crate::operator_id::OperatorId;
use crate::proxy;
use crate::reader::{METADATA_FILE, decode_header};
use crate::snappy_write::SnappyFramer;
use crate::stream_sink::{Finished, StreamSink};

/// Flink's default `execution.checkpointing.data-inline-threshold` (20 KiB): streams of at
/// most this many bytes are inlined in `_metadata`.
pub const DEFAULT_INLINE_THRESHOLD: u64 = 20 * 1024;

/// The constant `CheckpointProperties` trailer of a Flink 2.3.0 canonical savepoint
/// (FORMAT.md 4.7 and Appendix A; SHA-256 `a0d92903…509d19cb`).
const CHECKPOINT_PROPERTIES: &[u8] =
    include_bytes!("checkpoint-properties-canonical-savepoint.bin");

/// Write buffer of state files.
const WRITE_BUFFER: usize = 1 << 20;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The `_metadata` version to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MetadataVersion {
    /// Version 3: no operator name or uid, no Java-serialized trailer.
    V3,
    /// Version 6, what Flink 2.3.0 writes: name and uid per operator, then the constant
    /// `CheckpointProperties` blob. The default.
    #[default]
    V6,
}

/// How key-group blocks are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compression {
    /// Plain blocks (proxy flag `00`), what Flink writes by default. The default.
    #[default]
    None,
    /// Every key-group block Snappy-framed (proxy flag `01`), exactly as Flink 2.3.0 writes
    /// it with `execution.checkpointing.snapshot-compression: true` (see `snappy_write.rs`).
    Snappy,
}

/// Options of [`write_savepoint`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WriteOptions {
    /// The operator id (derived from the uid by [`WriteOptions::new`]).
    pub operator_id: OperatorId,
    /// The uid written in v6 metadata (`None`: absent).
    pub uid: Option<String>,
    /// The operator name written in v6 metadata. Defaults to `None` (absent).
    pub name: Option<String>,
    /// Max parallelism: the number of key groups.
    pub max_parallelism: u32,
    /// Parallelism: the number of subtasks (keyed handles).
    pub parallelism: u32,
    /// Defaults to [`MetadataVersion::V6`].
    pub metadata_version: MetadataVersion,
    /// Streams of at most this many bytes are inlined. Defaults to
    /// [`DEFAULT_INLINE_THRESHOLD`]; 0 writes every stream as a file.
    pub inline_threshold: u64,
    /// Key-group compression. Defaults to [`Compression::None`].
    pub compression: Compression,
}

impl WriteOptions {
    /// Options for the operator with `uid` (its id derived as Flink does).
    ///
    /// # Errors
    /// [`Error::InvalidMaxParallelism`] unless `1 <= max_parallelism <= 32768`;
    /// [`Error::InvalidParallelism`] unless `1 <= parallelism <= max_parallelism`.
    pub fn new(uid: &str, max_parallelism: u32, parallelism: u32) -> Result<Self> {
        let mut options =
            Self::for_operator_id(OperatorId::from_uid(uid), max_parallelism, parallelism)?;
        options.uid = Some(uid.to_owned());
        Ok(options)
    }

    /// Options for a raw operator id (no uid is written).
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn for_operator_id(
        operator_id: OperatorId,
        max_parallelism: u32,
        parallelism: u32,
    ) -> Result<Self> {
        if !(1..=MAX_MAX_PARALLELISM).contains(&max_parallelism) {
            return Err(Error::InvalidMaxParallelism {
                found: i64::from(max_parallelism),
            });
        }
        if !(1..=max_parallelism).contains(&parallelism) {
            return Err(Error::InvalidParallelism {
                found: i64::from(parallelism),
                max_parallelism,
            });
        }
        Ok(WriteOptions {
            operator_id,
            uid: None,
            name: None,
            max_parallelism,
            parallelism,
            metadata_version: MetadataVersion::default(),
            inline_threshold: DEFAULT_INLINE_THRESHOLD,
            compression: Compression::None,
        })
    }

    /// Sets the operator name written in v6 metadata.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the metadata version.
    #[must_use]
    pub fn with_metadata_version(mut self, version: MetadataVersion) -> Self {
        self.metadata_version = version;
        self
    }

    /// Sets the inline threshold in bytes.
    #[must_use]
    pub fn with_inline_threshold(mut self, bytes: u64) -> Self {
        self.inline_threshold = bytes;
        self
    }

    /// Sets the key-group compression.
    #[must_use]
    pub fn with_compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }
}

/// What [`write_savepoint`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteSummary {
    /// Key groups written.
    pub key_groups: usize,
    /// Chunks written.
    pub chunks: u64,
    /// Bytes of all keyed streams (inline or file).
    pub stream_bytes: u64,
    /// Subtasks whose stream is inline in `_metadata`.
    pub inline_subtasks: u32,
    /// State files written (names in the output directory).
    pub files: Vec<String>,
}

/// Subtask `index`'s inclusive key-group range `(start, end)`, as Flink's
/// `KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex` computes it:
/// `start = ceil(i·M / P)`, `end = ((i+1)·M − 1) / P`.
pub fn key_group_range(max_parallelism: u32, parallelism: u32, index: u32) -> (u32, u32) {
    let (m, p, i) = (
        u64::from(max_parallelism),
        u64::from(parallelism.max(1)),
        u64::from(index),
    );
    let start = (i * m).div_ceil(p);
    let end = ((i + 1) * m).saturating_sub(1) / p;
    (
        u32::try_from(start).unwrap_or(u32::MAX),
        u32::try_from(end).unwrap_or(u32::MAX),
    )
}

/// One key group to write, validated in the pre-pass.
struct Planned {
    key_group: u32,
    header_bytes: Vec<u8>,
    header: Header,
}

/// The stream of one subtask.
enum Written {
    Inline(Vec<u8>),
    File { name: String, size: u64 },
}

/// Writes a Flink 2.3.0 canonical savepoint of `source`'s key groups into the directory
/// `out` (created if missing).
///
/// # Layout written (FORMAT.md section 9, the rules Flink enforces)
///
/// ```text
/// _metadata   4960672d ; i32 version (3, or 6 = default) ; i64 checkpointId 1 ; i32 0 master states
///             i32 1 operator:
///               [v6] UTF name ; UTF uid
///               OperatorID (16) ; i32 P ; i32 M ; 00 (no coordinator state) ; i32 P subtasks
///               per subtask i: i32 i ; i32 0 ; i32 0 (no operator state)
///                 07 KeyGroupsSavepointStateHandle: i32 start_i ; i32 n_i ; n_i × i64 offset
///                    StreamHandle: 06 UTF file ; i64 size   (or 01 UTF name ; i32 len ; bytes)
///                 00 (no raw keyed state) ; i32 0 ; i32 0 (no channel state)
///             [v6] the constant 745-byte CheckpointProperties blob of a 2.3.0 canonical savepoint
/// stream i    proxy: i32 6 ; 00 (plain) or 01 (Snappy) ; IntSerializerSnapshot ; i16 (1 + C) states:
///                    the header state, then chunk states 0..C-1, each with the exact reserved meta
///                    (C = the largest chunk count of subtask i's key groups)
///             per non-empty key group kg of [start_i, end_i], ascending, back to back:
///               0000 | key | i32 (h+4) i32 h header
///               0001 | key | i32 (c0+4) i32 c0 chunk 0 | 0002 | … | FFFF
///               key = prefix(kg) | 0x80 ‖ i32 kg ‖ 00   (prefix: 1 byte if M <= 128, else 2 BE)
///               with Compression::Snappy each block is one Snappy framed stream of these bytes
///               (stream identifier, chunks of 65536 uncompressed bytes; `snappy_write.rs`),
///               and offset[kg] points at its stream identifier
/// ```
///
/// Subtask `i` holds exactly `computeKeyGroupRangeForOperatorIndex(M, P, i)`; key groups
/// without a snapshot get offset 0 and no block. A stream of at most the inline threshold
/// (Flink's `execution.checkpointing.data-inline-threshold`, default 20 KiB) is inlined in
/// `_metadata`, as Flink's filesystem storage does; larger ones are relative files named
/// `<operator id>-<i>-of-<P>`.
///
/// # Atomicity and memory
///
/// Each state file is written to a temporary name in the output directory, synced and
/// renamed; `_metadata` is written last the same way and the directory synced. A crash
/// leaves no `_metadata` (the directory does not parse as a savepoint) or the complete one.
/// An existing `_metadata` is never overwritten ([`Error::AlreadyExists`]).
///
/// The envelopes are copied verbatim (byte-identical), one chunk at a time: peak memory is
/// one chunk as the source container returns it (at most 4 MiB), a 1 MiB write buffer, the
/// headers of one subtask's key groups (at most 1056 bytes each, typically ~50) and 8 bytes
/// of offset per key group; an inline stream is at most the inline threshold. Every
/// envelope is validated on the way (header, chunk count and lengths, no surplus chunk,
/// CRC32C), so an invalid snapshot is refused rather than written.
///
/// # Errors
/// [`Error::AlreadyExists`] when `out/_metadata` exists; [`Error::KeyGroupOutOfRange`];
/// [`Error::Envelope`] for an invalid envelope in the source; [`Error::Container`] for the
/// source's errors; [`Error::Io`].
pub fn write_savepoint<C: Container + ?Sized>(
    source: &C,
    out: &Path,
    options: &WriteOptions,
) -> Result<WriteSummary> {
    let metadata_path = out.join(METADATA_FILE);
    if metadata_path.exists() {
        return Err(Error::AlreadyExists {
            path: metadata_path,
        });
    }
    fs::create_dir_all(out).map_err(|e| io_err(out, e))?;
    let m = options.max_parallelism;
    let key_groups = source.key_groups()?;
    if let Some(&key_group) = key_groups.iter().find(|&&kg| kg >= m) {
        return Err(Error::KeyGroupOutOfRange {
            key_group,
            max_parallelism: m,
        });
    }
    let mut summary = WriteSummary::default();
    let mut subtasks = Vec::with_capacity(options.parallelism as usize);
    for index in 0..options.parallelism {
        let (start, end) = key_group_range(m, options.parallelism, index);
        let planned = plan(
            source,
            key_groups
                .iter()
                .copied()
                .filter(|kg| (start..=end).contains(kg)),
        )?;
        let name = format!("{}-{index}-of-{}", options.operator_id, options.parallelism);
        let (offsets, written) = write_subtask(
            source,
            out,
            &name,
            start,
            end,
            &planned,
            options,
            &mut summary,
        )?;
        subtasks.push((start, offsets, written));
        summary.key_groups += planned.len();
    }
    sync_dir(out)?;
    let mut meta = Vec::new();
    metadata_bytes(options, &subtasks, &mut meta)?;
    let temp = temp_path(out, METADATA_FILE);
    write_atomically(&temp, &metadata_path, |w| {
        w.write_all(&meta).map_err(|e| io_err(&metadata_path, e))
    })?;
    sync_dir(out)?;
    Ok(summary)
}

/// Reads and validates the headers of a subtask's key groups.
fn plan<C: Container + ?Sized>(
    source: &C,
    key_groups: impl Iterator<Item = u32>,
) -> Result<Vec<Planned>> {
    let mut out = Vec::new();
    for key_group in key_groups {
        let header_bytes = source
            .get_header(key_group)?
            .ok_or(sfcs_format::Error::MissingHeader { key_group })?
            .into_owned();
        if header_bytes.len() > MAX_HEADER_LEN {
            return Err(Error::HeaderTooLarge {
                key_group,
                length: u32::try_from(header_bytes.len()).unwrap_or(u32::MAX),
                max: MAX_HEADER_LEN,
            });
        }
        let header =
            decode_header(&header_bytes).map_err(|source| Error::Envelope { key_group, source })?;
        out.push(Planned {
            key_group,
            header_bytes,
            header,
        });
    }
    Ok(out)
}

#[expect(
    clippy::too_many_arguments,
    reason = "one internal call site; the pieces of one subtask"
)]
fn write_subtask<C: Container + ?Sized>(
    source: &C,
    out: &Path,
    name: &str,
    start: u32,
    end: u32,
    planned: &[Planned],
    options: &WriteOptions,
    summary: &mut WriteSummary,
) -> Result<(Vec<i64>, Written)> {
    let prefix_bytes: u64 = if options.max_parallelism <= 128 { 1 } else { 2 };
    let max_chunks = planned
        .iter()
        .map(|p| p.header.chunk_count())
        .max()
        .unwrap_or(0);
    let snappy = options.compression == Compression::Snappy;
    let mut proxy_bytes = Vec::new();
    proxy::write(max_chunks, snappy, &mut proxy_bytes)?;
    let mut sink = StreamSink::new(options.inline_threshold, temp_path(out, name));
    let temp = sink.temp_path().to_path_buf();
    let io = |e: Error| match e {
        Error::Io { source, .. } => io_err(&temp, source),
        e => e,
    };
    sink.write_all(&proxy_bytes).map_err(|e| io_err(&temp, e))?;
    let mut offsets = vec![0_i64; (end - start + 1) as usize];
    let mut framer = snappy.then(SnappyFramer::new);
    for p in planned {
        let offset = i64::try_from(sink.position()).map_err(|_| Error::TooLarge {
            key_group: p.key_group,
            what: "stream offset",
        })?;
        if let Some(slot) = offsets.get_mut((p.key_group - start) as usize) {
            *slot = offset;
        }
        summary.chunks += u64::from(p.header.chunk_count());
        match &mut framer {
            Some(framer) => {
                let mut block = framer.start(&mut sink).map_err(|e| io_err(&temp, e))?;
                write_block(source, &mut block, prefix_bytes, p).map_err(io)?;
                block.finish().map_err(|e| io_err(&temp, e))?;
            }
            None => write_block(source, &mut sink, prefix_bytes, p).map_err(io)?,
        }
    }
    let size = sink.position();
    summary.stream_bytes += size;
    let written = match sink.finish(&out.join(name))? {
        Finished::Inline(bytes) => {
            summary.inline_subtasks += 1;
            Written::Inline(bytes)
        }
        Finished::File { size } => {
            summary.files.push(name.to_owned());
            Written::File {
                name: name.to_owned(),
                size,
            }
        }
    };
    debug_assert_eq!(
        size,
        match &written {
            Written::Inline(b) => b.len() as u64,
            Written::File { size, .. } => *size,
        }
    );
    Ok((offsets, written))
}

/// Writes one key group's block, copying the envelope verbatim and validating it.
fn write_block<C: Container + ?Sized>(
    source: &C,
    w: &mut dyn Write,
    prefix_bytes: u64,
    p: &Planned,
) -> Result<()> {
    let kg = p.key_group;
    let envelope = |source| Error::Envelope {
        key_group: kg,
        source,
    };
    let io = |e| Error::Io {
        path: PathBuf::new(),
        source: e,
    };
    let mut key = Vec::with_capacity(7);
    if prefix_bytes == 1 {
        key.push(u8::try_from(kg).unwrap_or(0) | META_DATA_FOLLOWS);
    } else {
        let [hi, lo] = u16::try_from(kg).unwrap_or(0).to_be_bytes();
        key.extend_from_slice(&[hi | META_DATA_FOLLOWS, lo]);
    }
    key.extend_from_slice(&kg.to_be_bytes());
    key.push(0);
    let entry = |w: &mut dyn Write, value: &[u8]| -> Result<()> {
        let inner = i32::try_from(value.len())
            .ok()
            .filter(|&n| n <= i32::MAX - 4);
        let inner = inner.ok_or(Error::TooLarge {
            key_group: kg,
            what: "state value",
        })?;
        let key_len = i32::try_from(key.len()).unwrap_or(0);
        w.write_all(&key_len.to_be_bytes()).map_err(io)?;
        w.write_all(&key).map_err(io)?;
        w.write_all(&(inner + 4).to_be_bytes()).map_err(io)?;
        w.write_all(&inner.to_be_bytes()).map_err(io)?;
        w.write_all(value).map_err(io)
    };
    w.write_all(&0_u16.to_be_bytes()).map_err(io)?;
    entry(w, &p.header_bytes)?;
    let mut crc = 0_u32;
    let count = p.header.chunk_count();
    for index in 0..count {
        let chunk = source.get_chunk(kg, index)?.ok_or_else(|| {
            envelope(DecodeError::MissingChunk {
                index,
                chunk_count: count,
            })
        })?;
        let expected = p.header.chunk_len(index).unwrap_or(0);
        if chunk.len() != expected {
            return Err(envelope(DecodeError::ChunkLength {
                index,
                expected,
                found: chunk.len(),
            }));
        }
        crc = crc32c::crc32c_append(crc, &chunk);
        let state_id = u16::try_from(index + 1).map_err(|_| Error::TooLarge {
            key_group: kg,
            what: "chunk count",
        })?;
        w.write_all(&state_id.to_be_bytes()).map_err(io)?;
        entry(w, &chunk)?;
    }
    if source.get_chunk(kg, count)?.is_some() {
        return Err(envelope(DecodeError::UnexpectedChunk {
            index: count,
            chunk_count: count,
        }));
    }
    if crc != p.header.crc32c() {
        return Err(envelope(DecodeError::ChecksumMismatch {
            expected: p.header.crc32c(),
            computed: crc,
        }));
    }
    w.write_all(&0xFFFF_u16.to_be_bytes()).map_err(io)
}

fn metadata_bytes(
    options: &WriteOptions,
    subtasks: &[(u32, Vec<i64>, Written)],
    out: &mut Vec<u8>,
) -> Result<()> {
    let version: i32 = match options.metadata_version {
        MetadataVersion::V3 => 3,
        MetadataVersion::V6 => 6,
    };
    out.extend_from_slice(&METADATA_MAGIC.to_be_bytes());
    out.extend_from_slice(&version.to_be_bytes());
    out.extend_from_slice(&1_i64.to_be_bytes());
    out.extend_from_slice(&0_i32.to_be_bytes());
    out.extend_from_slice(&1_i32.to_be_bytes());
    if version >= 5 {
        mutf8::encode_prefixed(options.name.as_deref().unwrap_or(""), "operator name", out)?;
        mutf8::encode_prefixed(options.uid.as_deref().unwrap_or(""), "operator uid", out)?;
    }
    let to_i32 = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
    out.extend_from_slice(&options.operator_id.0);
    out.extend_from_slice(&to_i32(options.parallelism).to_be_bytes());
    out.extend_from_slice(&to_i32(options.max_parallelism).to_be_bytes());
    out.push(0);
    out.extend_from_slice(&to_i32(options.parallelism).to_be_bytes());
    for (index, (start, offsets, written)) in (0_u32..).zip(subtasks) {
        out.extend_from_slice(&to_i32(index).to_be_bytes());
        out.extend_from_slice(&0_i32.to_be_bytes());
        out.extend_from_slice(&0_i32.to_be_bytes());
        out.push(7);
        out.extend_from_slice(&to_i32(*start).to_be_bytes());
        out.extend_from_slice(&i32::try_from(offsets.len()).unwrap_or(0).to_be_bytes());
        for offset in offsets {
            out.extend_from_slice(&offset.to_be_bytes());
        }
        match written {
            Written::Inline(bytes) => {
                out.push(1);
                let name = format!("{}-{index}-of-{}", options.operator_id, options.parallelism);
                mutf8::encode_prefixed(&name, "inline handle name", out)?;
                let len = i32::try_from(bytes.len()).map_err(|_| Error::TooLarge {
                    key_group: 0,
                    what: "inline stream",
                })?;
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(bytes);
            }
            Written::File { name, size } => {
                out.push(6);
                mutf8::encode_prefixed(name, "relative file name", out)?;
                let size = i64::try_from(*size).unwrap_or(i64::MAX);
                out.extend_from_slice(&size.to_be_bytes());
            }
        }
        out.push(0);
        out.extend_from_slice(&0_i32.to_be_bytes());
        out.extend_from_slice(&0_i32.to_be_bytes());
    }
    if version >= 4 {
        out.extend_from_slice(CHECKPOINT_PROPERTIES);
    }
    Ok(())
}

fn temp_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!(
        ".tmp-{name}-{}-{}",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Writes `temp` with `fill`, syncs it and renames it to `target`; removes `temp` on failure.
fn write_atomically(
    temp: &Path,
    target: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    let result = (|| -> Result<()> {
        let created = File::create(temp).map_err(|e| io_err(temp, e))?;
        let mut w = BufWriter::with_capacity(WRITE_BUFFER, created);
        fill(&mut w)?;
        let written = w.into_inner().map_err(|e| io_err(temp, e.into_error()))?;
        written.sync_all().map_err(|e| io_err(temp, e))?;
        fs::rename(temp, target).map_err(|e| io_err(target, e))
    })();
    if result.is_err() {
        // Best effort: the temporary file is garbage either way.
        let _ = fs::remove_file(temp);
    }
    result
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_match_flink_examples() {
        // FORMAT.md 10.1: M = 256, P = 2.
        assert_eq!(key_group_range(256, 2, 0), (0, 127));
        assert_eq!(key_group_range(256, 2, 1), (128, 255));
        assert_eq!(key_group_range(4096, 3, 1), (1366, 2730));
        assert_eq!(key_group_range(1, 1, 0), (0, 0));
    }

    #[test]
    fn options_validate_parallelism() {
        assert!(matches!(
            WriteOptions::new("u", 0, 1),
            Err(Error::InvalidMaxParallelism { .. })
        ));
        assert!(matches!(
            WriteOptions::new("u", 32769, 1),
            Err(Error::InvalidMaxParallelism { .. })
        ));
        assert!(matches!(
            WriteOptions::new("u", 8, 9),
            Err(Error::InvalidParallelism { .. })
        ));
        assert!(matches!(
            WriteOptions::new("u", 8, 0),
            Err(Error::InvalidParallelism { .. })
        ));
        assert_eq!(
            WriteOptions::new("native-op", 8, 8).unwrap().operator_id,
            OperatorId::from_uid("native-op")
        );
    }
}
