//! The savepoint reader: opens a savepoint, validates the native operator's keyed streams
//! and serves its key groups through [`Container`].

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sfcs_format::{Container, DecodeError, Header, Manifest, ManifestEntry};

use crate::block::{self, BlockSource, Loc, Reserved, ValueRef};
use crate::error::{Error, Result};
use crate::input::{Input, io_err};
use crate::metadata::{
    KeyedHandle, MAX_MAX_PARALLELISM, OperatorRecord, SavepointMetadata, StreamHandle,
};
use crate::operator_id::OperatorId;
use crate::proxy;
use crate::snappy::SnappyReader;

/// The name of the metadata file in a savepoint directory.
pub const METADATA_FILE: &str = "_metadata";

/// Which operator of a savepoint to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperatorSelector {
    /// By uid: the id is derived as Flink does ([`OperatorId::from_uid`]), and in v5+
    /// metadata the stored uid must equal it.
    Uid(String),
    /// By raw operator id.
    Id(OperatorId),
}

impl OperatorSelector {
    /// The operator id selected.
    pub fn id(&self) -> OperatorId {
        match self {
            OperatorSelector::Uid(uid) => OperatorId::from_uid(uid),
            OperatorSelector::Id(id) => *id,
        }
    }
}

/// Options of [`SavepointReader::open_with`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ReadOptions {
    /// The max parallelism the operator must have. Defaults to `None` (any valid one).
    pub max_parallelism: Option<u32>,
}

impl ReadOptions {
    /// Requires the operator's max parallelism to be `max_parallelism`.
    #[must_use]
    pub fn with_max_parallelism(mut self, max_parallelism: u32) -> Self {
        self.max_parallelism = Some(max_parallelism);
        self
    }
}

/// One keyed stream of the native operator.
#[derive(Debug, Clone)]
struct StreamInfo {
    path: PathBuf,
    base: u64,
    len: u64,
    subtask: i32,
}

/// A key group's validated reserved entries.
#[derive(Debug, Clone)]
struct KeyGroupEntry {
    stream: usize,
    header: Header,
    header_bytes: Vec<u8>,
    chunks: Vec<ValueRef>,
}

/// A Flink 2.3.0 canonical savepoint opened for reading one operator's native state.
///
/// [`open`](Self::open) parses `_metadata`, finds the operator, and reads every keyed
/// stream of it once: the proxy and state list, then every key-group block (through Snappy
/// when the stream is compressed). It validates everything FORMAT.md section 8 lists except
/// the payload checksums, and keeps in memory only each key group's header and the location
/// of each chunk. Chunk bytes are read from the files on demand; the CRC32C of a payload is
/// checked by [`read_payload_with`](Self::read_payload_with) and by
/// [`sfcs_format::read_envelope`] through the [`Container`] implementation, which is
/// read-only.
#[derive(Debug, Clone)]
pub struct SavepointReader {
    dir: PathBuf,
    metadata_version: i32,
    operator: OperatorInfo,
    streams: Vec<StreamInfo>,
    key_groups: BTreeMap<u32, KeyGroupEntry>,
}

/// What `_metadata` says about the operator read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OperatorInfo {
    /// The operator id.
    pub id: OperatorId,
    /// The uid stored in v5+ metadata.
    pub uid: Option<String>,
    /// The name stored in v5+ metadata.
    pub name: Option<String>,
    /// Parallelism of the job that wrote the savepoint.
    pub parallelism: i32,
    /// Max parallelism: the number of key groups.
    pub max_parallelism: u32,
}

impl SavepointReader {
    /// Opens the savepoint at `path` (its directory, or its `_metadata` file) and reads the
    /// operator `selector` names.
    ///
    /// # Errors
    /// A typed [`Error`] for every malformed or unsupported input (FORMAT.md section 8).
    pub fn open(path: impl AsRef<Path>, selector: &OperatorSelector) -> Result<Self> {
        Self::open_with(path, selector, &ReadOptions::default())
    }

    /// [`open`](Self::open) with options.
    ///
    /// # Errors
    /// As [`open`](Self::open); [`Error::MaxParallelismMismatch`] when the options name
    /// another max parallelism.
    pub fn open_with(
        path: impl AsRef<Path>,
        selector: &OperatorSelector,
        options: &ReadOptions,
    ) -> Result<Self> {
        let path = path.as_ref();
        let (dir, metadata_path) = if path.is_dir() {
            (path.to_path_buf(), path.join(METADATA_FILE))
        } else {
            let dir = path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
            (dir, path.to_path_buf())
        };
        let metadata = SavepointMetadata::read(&metadata_path)?;
        let record = metadata.operator(selector.id())?;
        if let (OperatorSelector::Uid(expected), Some(found)) = (selector, &record.uid)
            && expected != found
        {
            return Err(Error::UidMismatch {
                expected: expected.clone(),
                found: found.clone(),
            });
        }
        let max_parallelism = u32::try_from(record.max_parallelism)
            .ok()
            .filter(|m| (1..=MAX_MAX_PARALLELISM).contains(m))
            .ok_or(Error::InvalidMaxParallelism {
                found: i64::from(record.max_parallelism),
            })?;
        if let Some(expected) = options.max_parallelism
            && expected != max_parallelism
        {
            return Err(Error::MaxParallelismMismatch {
                expected,
                found: record.max_parallelism,
            });
        }
        let handles = native_handles(record, max_parallelism)?;
        let mut reader = SavepointReader {
            dir: dir.clone(),
            metadata_version: metadata.version,
            operator: OperatorInfo {
                id: record.id,
                uid: record.uid.clone(),
                name: record.name.clone(),
                parallelism: record.parallelism,
                max_parallelism,
            },
            streams: Vec::new(),
            key_groups: BTreeMap::new(),
        };
        for (subtask, handle) in handles {
            reader.read_handle(&metadata_path, subtask, handle)?;
        }
        Ok(reader)
    }

    /// Reads one keyed handle's stream.
    fn read_handle(
        &mut self,
        metadata_path: &Path,
        subtask: i32,
        handle: &KeyedHandle,
    ) -> Result<()> {
        let Some(stream) = &handle.stream else {
            if handle.offsets.iter().any(|&o| o != 0) {
                return Err(Error::MissingStream {
                    start: handle.start,
                });
            }
            return Ok(());
        };
        let (path, base, len) = self.locate(metadata_path, stream)?;
        let stream_index = self.streams.len();
        self.streams.push(StreamInfo {
            path: path.clone(),
            base,
            len,
            subtask,
        });
        let found = scan_stream(&path, base, len, handle, self.operator.max_parallelism)
            .map_err(|e| e.in_stream(subtask, &path))?;
        for (key_group, reserved) in found {
            let entry = validate_key_group(key_group, reserved, stream_index)?;
            if let Some(entry) = entry {
                self.key_groups.insert(key_group, entry);
            }
        }
        Ok(())
    }

    /// The file and window of a stream handle, with the file's size checked.
    fn locate(&self, metadata_path: &Path, stream: &StreamHandle) -> Result<(PathBuf, u64, u64)> {
        let (path, size) = match stream {
            StreamHandle::Inline { offset, len, .. } => {
                return Ok((metadata_path.to_path_buf(), *offset, *len));
            }
            StreamHandle::Relative { path, size } => {
                let plain = !path.is_empty()
                    && path != "."
                    && path != ".."
                    && !path.contains(['/', '\\', '\0']);
                if !plain {
                    return Err(Error::BadRelativePath { path: path.clone() });
                }
                (self.dir.join(path), *size)
            }
            StreamHandle::File { uri, size } => {
                let local = uri
                    .strip_prefix("file://")
                    .or_else(|| uri.strip_prefix("file:"))
                    .filter(|p| p.starts_with('/'))
                    .ok_or_else(|| Error::UnsupportedFileUri { uri: uri.clone() })?;
                (PathBuf::from(local), *size)
            }
        };
        let actual = std::fs::metadata(&path)
            .map_err(|e| io_err(&path, e))?
            .len();
        if u64::try_from(size).ok() != Some(actual) {
            return Err(Error::StateFileSize {
                path,
                expected: size,
                actual,
            });
        }
        Ok((path, 0, actual))
    }

    /// The savepoint directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The `_metadata` version (3..=6).
    pub fn metadata_version(&self) -> i32 {
        self.metadata_version
    }

    /// The operator read.
    pub fn operator(&self) -> &OperatorInfo {
        &self.operator
    }

    /// Key groups with native state, ascending.
    pub fn key_group_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.key_groups.keys().copied()
    }

    /// Number of key groups with native state.
    pub fn key_group_count(&self) -> usize {
        self.key_groups.len()
    }

    /// The decoded header of `key_group` (`None` when it has no native state).
    pub fn header(&self, key_group: u32) -> Option<&Header> {
        self.key_groups.get(&key_group).map(|e| &e.header)
    }

    /// The header bytes of `key_group` exactly as stored.
    pub fn header_bytes(&self, key_group: u32) -> Option<&[u8]> {
        self.key_groups
            .get(&key_group)
            .map(|e| e.header_bytes.as_slice())
    }

    /// The subtask of the savepoint whose stream holds `key_group`.
    pub fn subtask_of(&self, key_group: u32) -> Option<i32> {
        let entry = self.key_groups.get(&key_group)?;
        self.streams.get(entry.stream).map(|s| s.subtask)
    }

    /// Reads chunk `index` of `key_group` (`Ok(None)` when there is no such chunk). Its length
    /// was validated at open; its bytes are not checksummed here.
    ///
    /// # Errors
    /// [`Error::Io`], or a typed error when the file changed since it was opened.
    pub fn read_chunk(&self, key_group: u32, index: u32) -> Result<Option<Vec<u8>>> {
        let Some(entry) = self.key_groups.get(&key_group) else {
            return Ok(None);
        };
        let Some(value) = usize::try_from(index)
            .ok()
            .and_then(|i| entry.chunks.get(i))
        else {
            return Ok(None);
        };
        let Some(stream) = self.streams.get(entry.stream) else {
            return Ok(None);
        };
        let mut input = Input::open_window(&stream.path, stream.base, stream.len)?;
        let mut out = Vec::new();
        read_value(&mut input, key_group, value, &mut out)?;
        Ok(Some(out))
    }

    /// Streams `key_group`'s payload, chunk by chunk, to `sink`, then checks its CRC32C
    /// (and, when given, the SFCS operator id). Memory: one chunk (at most 4 MiB).
    ///
    /// Returns `Ok(None)` when the key group has no native state.
    ///
    /// # Errors
    /// [`Error::Envelope`] with [`DecodeError::OperatorMismatch`] or
    /// [`DecodeError::ChecksumMismatch`]; read errors as [`read_chunk`](Self::read_chunk).
    pub fn read_payload_with(
        &self,
        key_group: u32,
        expected_operator_id: Option<&str>,
        mut sink: impl FnMut(&[u8]),
    ) -> Result<Option<Header>> {
        let Some(entry) = self.key_groups.get(&key_group) else {
            return Ok(None);
        };
        let header = &entry.header;
        if let Some(expected) = expected_operator_id
            && expected != header.operator_id()
        {
            return Err(Error::Envelope {
                key_group,
                source: DecodeError::OperatorMismatch {
                    expected: expected.to_owned(),
                    found: header.operator_id().to_owned(),
                },
            });
        }
        let mut crc = 0_u32;
        if let Some(stream) = self.streams.get(entry.stream)
            && !entry.chunks.is_empty()
        {
            // One open window and one chunk buffer for the whole key group: the chunks lie
            // in stream order, so the reads move forward through one file.
            let mut input = Input::open_window(&stream.path, stream.base, stream.len)?;
            let mut buf = Vec::new();
            for value in &entry.chunks {
                read_value(&mut input, key_group, value, &mut buf)?;
                crc = crc32c::crc32c_append(crc, &buf);
                sink(&buf);
            }
        }
        if crc != header.crc32c() {
            return Err(Error::Envelope {
                key_group,
                source: DecodeError::ChecksumMismatch {
                    expected: header.crc32c(),
                    computed: crc,
                },
            });
        }
        Ok(Some(header.clone()))
    }

    /// Reads every key group's payload and checks its CRC32C (and operator id when given);
    /// returns the number of key groups checked.
    ///
    /// # Errors
    /// The first failure of [`read_payload_with`](Self::read_payload_with).
    pub fn verify(&self, expected_operator_id: Option<&str>) -> Result<usize> {
        for &key_group in self.key_groups.keys() {
            self.read_payload_with(key_group, expected_operator_id, |_| {})?;
        }
        Ok(self.key_groups.len())
    }
}

/// Reads a located value into `buf` (resized to its length; a reused buffer is not
/// zeroed again, the read overwrites it).
fn read_value(
    input: &mut Input,
    key_group: u32,
    value: &ValueRef,
    buf: &mut Vec<u8>,
) -> Result<()> {
    let len = value.len as usize;
    if buf.len() > len {
        buf.truncate(len);
    } else {
        buf.resize(len, 0);
    }
    match value.loc {
        Loc::Plain(pos) => {
            input.seek(pos)?;
            input.read_into(buf, "chunk value")
        }
        Loc::Snappy { chunk, skip } => {
            SnappyReader::resume(input, key_group, chunk, skip)?.read_into(buf, "chunk value")
        }
    }
}

/// The native operator's managed keyed handles, with the coverage of `[0, M)` checked.
fn native_handles(
    record: &OperatorRecord,
    max_parallelism: u32,
) -> Result<Vec<(i32, &KeyedHandle)>> {
    let mut covered = vec![false; max_parallelism as usize];
    let mut handles = Vec::new();
    for subtask in &record.subtasks {
        if subtask.index < 0 {
            continue;
        }
        if subtask.has_raw_keyed {
            return Err(Error::RawKeyedState {
                subtask: subtask.index,
            });
        }
        let Some(handle) = &subtask.managed_keyed else {
            continue;
        };
        let count = i32::try_from(handle.offsets.len()).unwrap_or(i32::MAX);
        let out_of_bounds = Error::KeyGroupRangeOutOfBounds {
            start: handle.start,
            count,
            max_parallelism,
        };
        let start = u32::try_from(handle.start).map_err(|_| out_of_bounds)?;
        for key_group in (0..handle.offsets.len() as u64).map(|j| u64::from(start) + j) {
            let slot = usize::try_from(key_group)
                .ok()
                .and_then(|k| covered.get_mut(k))
                .ok_or(Error::KeyGroupRangeOutOfBounds {
                    start: handle.start,
                    count,
                    max_parallelism,
                })?;
            if *slot {
                return Err(Error::OverlappingKeyGroup {
                    key_group: u32::try_from(key_group).unwrap_or(u32::MAX),
                });
            }
            *slot = true;
        }
        handles.push((subtask.index, handle));
    }
    if let Some(key_group) = covered.iter().position(|c| !c) {
        return Err(Error::UncoveredKeyGroup {
            key_group: u32::try_from(key_group).unwrap_or(u32::MAX),
        });
    }
    Ok(handles)
}

/// Reads the proxy and every non-empty block of one stream.
fn scan_stream(
    path: &Path,
    base: u64,
    len: u64,
    handle: &KeyedHandle,
    max_parallelism: u32,
) -> Result<Vec<(u32, Reserved)>> {
    let mut input = Input::open_window(path, base, len)?;
    let proxy = proxy::read(&mut input)?;
    let min = input.position();
    let prefix_bytes = if max_parallelism <= 128 { 1 } else { 2 };
    let mut out = Vec::new();
    for (j, &offset) in (0_u32..).zip(&handle.offsets) {
        if offset == 0 {
            continue;
        }
        // `native_handles` checked 0 <= start and start + j < max parallelism.
        let key_group = u32::try_from(handle.start)
            .unwrap_or(u32::MAX)
            .saturating_add(j);
        let pos = u64::try_from(offset)
            .ok()
            .filter(|&p| p >= min && p < input.len())
            .ok_or(Error::OffsetOutOfRange {
                key_group,
                offset,
                min,
                max: input.len(),
            })?;
        input.seek(pos)?;
        let mut source = if proxy.compressed {
            BlockSource::Snappy(SnappyReader::start(&mut input, key_group)?)
        } else {
            BlockSource::Plain(&mut input)
        };
        let reserved = block::scan(&mut source, key_group, prefix_bytes, &proxy.states)?;
        out.push((key_group, reserved));
    }
    Ok(out)
}

/// Checks one key group's reserved entries against its header (all but the checksum).
fn validate_key_group(
    key_group: u32,
    reserved: Reserved,
    stream: usize,
) -> Result<Option<KeyGroupEntry>> {
    let envelope = |source| Error::Envelope { key_group, source };
    let Some((_, header_bytes)) = reserved.header else {
        return match reserved.chunks.keys().next() {
            Some(&chunk) => Err(Error::ChunkWithoutHeader { key_group, chunk }),
            None => Ok(None),
        };
    };
    let header = decode_header(&header_bytes).map_err(envelope)?;
    let chunk_count = header.chunk_count();
    let mut chunks = Vec::with_capacity(reserved.chunks.len());
    for (expected_index, (&index, value)) in (0_u32..).zip(&reserved.chunks) {
        if index >= chunk_count {
            return Err(envelope(DecodeError::UnexpectedChunk {
                index,
                chunk_count,
            }));
        }
        if index != expected_index {
            return Err(envelope(DecodeError::MissingChunk {
                index: expected_index,
                chunk_count,
            }));
        }
        let expected = header.chunk_len(index).unwrap_or(0);
        if value.len as usize != expected {
            return Err(envelope(DecodeError::ChunkLength {
                index,
                expected,
                found: value.len as usize,
            }));
        }
        chunks.push(*value);
    }
    let present = u32::try_from(chunks.len()).unwrap_or(u32::MAX);
    if present < chunk_count {
        return Err(envelope(DecodeError::MissingChunk {
            index: present,
            chunk_count,
        }));
    }
    Ok(Some(KeyGroupEntry {
        stream,
        header,
        header_bytes,
        chunks,
    }))
}

/// Decodes a header strictly, accepting whatever operator id it names.
pub(crate) fn decode_header(bytes: &[u8]) -> Result<Header, DecodeError> {
    let own_id = bytes
        .get(8..12)
        .and_then(|b| b.try_into().ok())
        .map(i32::from_be_bytes)
        .and_then(|n| usize::try_from(n).ok())
        .and_then(|n| bytes.get(12..12 + n.min(sfcs_format::MAX_OPERATOR_ID_LEN)))
        .and_then(|id| std::str::from_utf8(id).ok())
        .unwrap_or_default();
    Header::decode(bytes, own_id)
}

/// The error a [`Container`] method returns for a failure of this crate: an I/O error
/// carrying the typed [`Error`] as its source.
fn container_error(path: &Path, error: Error) -> sfcs_format::Error {
    let kind = match &error {
        Error::ReadOnly { .. } => std::io::ErrorKind::ReadOnlyFilesystem,
        Error::Io { source, .. } => source.kind(),
        _ => std::io::ErrorKind::InvalidData,
    };
    sfcs_format::Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(kind, error),
    }
}

/// Read-only: the savepoint's key groups as canonical snapshots. `put_key_group` and
/// `remove_key_group` return [`sfcs_format::Error::Io`] of kind `ReadOnlyFilesystem` whose
/// source is [`Error::ReadOnly`]; a read failure is [`sfcs_format::Error::Io`] whose source
/// is this crate's typed [`Error`].
impl Container for SavepointReader {
    fn put_key_group(
        &mut self,
        _key_group: u32,
        _header: &[u8],
        _chunks: &[&[u8]],
    ) -> sfcs_format::Result<()> {
        Err(container_error(
            &self.dir,
            Error::ReadOnly {
                operation: "put_key_group",
            },
        ))
    }

    fn get_header(&self, key_group: u32) -> sfcs_format::Result<Option<Cow<'_, [u8]>>> {
        Ok(self.header_bytes(key_group).map(Cow::Borrowed))
    }

    fn get_chunk(&self, key_group: u32, index: u32) -> sfcs_format::Result<Option<Cow<'_, [u8]>>> {
        self.read_chunk(key_group, index)
            .map(|c| c.map(Cow::Owned))
            .map_err(|e| container_error(&self.dir, e))
    }

    fn key_groups(&self) -> sfcs_format::Result<Vec<u32>> {
        Ok(self.key_groups.keys().copied().collect())
    }

    fn remove_key_group(&mut self, _key_group: u32) -> sfcs_format::Result<()> {
        Err(container_error(
            &self.dir,
            Error::ReadOnly {
                operation: "remove_key_group",
            },
        ))
    }

    fn begin_generation(&mut self) -> sfcs_format::Result<()> {
        Err(container_error(
            &self.dir,
            Error::ReadOnly {
                operation: "begin_generation",
            },
        ))
    }

    fn commit_generation(&mut self, _manifest: &[u8]) -> sfcs_format::Result<()> {
        Err(container_error(
            &self.dir,
            Error::ReadOnly {
                operation: "commit_generation",
            },
        ))
    }

    /// A savepoint holds no SFCS manifest of its own: Flink's metadata is what vouches for
    /// completeness (its keyed-state handles cover every key group `0..max parallelism` of
    /// the operator, with an offset for each). The reader therefore derives the manifest
    /// from what it validated while opening: the operator id of the envelopes, the
    /// operator's max parallelism, the whole key-group range as covered, and one entry per
    /// key group that holds an envelope (its header length and CRC, its payload length and
    /// CRC). The payload version is [`SFSTATE_PAYLOAD_VERSION`], the canonical table format
    /// sfstate's writer puts into envelopes.
    fn get_manifest(&self) -> sfcs_format::Result<Option<Cow<'_, [u8]>>> {
        let mut entries = Vec::with_capacity(self.key_groups.len());
        let mut operator_id: Option<String> = None;
        for &key_group in self.key_groups.keys() {
            let Some(header) = self.header(key_group) else {
                continue;
            };
            if operator_id.is_none() {
                operator_id = Some(header.operator_id().to_owned());
            }
            entries.push(ManifestEntry::for_header(key_group, header));
        }
        let Some(operator_id) = operator_id else {
            return Ok(None);
        };
        let max_parallelism = self.operator.max_parallelism;
        let manifest = Manifest::try_new(
            &operator_id,
            max_parallelism,
            0,
            max_parallelism,
            SFSTATE_PAYLOAD_VERSION,
            entries,
        )
        .map_err(sfcs_format::Error::from)?;
        Ok(Some(Cow::Owned(manifest.encode())))
    }
}

/// The canonical payload (table format) version sfstate's canonical snapshot writer uses;
/// the manifest a [`SavepointReader`] derives records it (see `Container::get_manifest`).
pub const SFSTATE_PAYLOAD_VERSION: u32 = 1;
