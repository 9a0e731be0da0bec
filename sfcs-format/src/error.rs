//! Error types. Decoding, section framing, encoding and container I/O fail in different
//! ways, so each has its own enum; [`Error`] is the umbrella the container-level
//! functions return, and every specific error converts into it.

use std::path::PathBuf;

/// `Result` with this crate's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A canonical envelope (header + chunks) failed validation.
///
/// Variants are listed in the order the decoder checks them (see the
/// [crate documentation](crate#decode-validation-order)); the first failing check wins.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The header ended before a field could be read.
    #[error(
        "truncated SFCS header: {field} needs {needed} bytes at offset {offset}, {available} available"
    )]
    TruncatedHeader {
        /// The field being read.
        field: &'static str,
        /// Byte offset of the field in the header.
        offset: usize,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left in the header at `offset`.
        available: usize,
    },
    /// The first four bytes are not `SFCS`.
    #[error("bad SFCS magic: found {found:02x?}, expected \"SFCS\"")]
    BadMagic {
        /// The four bytes found.
        found: [u8; 4],
    },
    /// The format version is not one this reader accepts.
    #[error("unsupported SFCS format version {found}; this reader accepts {supported:?}")]
    UnsupportedVersion {
        /// The version in the header.
        found: i32,
        /// Every version this reader accepts.
        supported: &'static [i32],
    },
    /// The operator-id length is negative, above the format limit or past the header end.
    #[error("operator-id length {length} out of bounds (0..={max}, {available} header bytes left)")]
    OperatorIdLength {
        /// The length field as read.
        length: i32,
        /// [`MAX_OPERATOR_ID_LEN`](crate::MAX_OPERATOR_ID_LEN).
        max: usize,
        /// Header bytes left after the length field.
        available: usize,
    },
    /// The operator id is not valid UTF-8.
    #[error("operator id is not valid UTF-8 (first bad byte at index {valid_up_to})")]
    OperatorIdNotUtf8 {
        /// Length of the valid UTF-8 prefix.
        valid_up_to: usize,
    },
    /// The snapshot belongs to another operator.
    #[error("snapshot belongs to operator {found:?}, expected {expected:?}")]
    OperatorMismatch {
        /// The operator id the caller expects.
        expected: String,
        /// The operator id in the header.
        found: String,
    },
    /// The header has bytes after its last field.
    #[error("SFCS header has {extra} trailing bytes after the checksum")]
    TrailingHeaderBytes {
        /// Number of extra bytes.
        extra: usize,
    },
    /// The payload-length field is negative.
    #[error("negative payload length {length}")]
    NegativePayloadLength {
        /// The field as read.
        length: i32,
    },
    /// The chunk-count field is negative.
    #[error("negative chunk count {count}")]
    NegativeChunkCount {
        /// The field as read.
        count: i32,
    },
    /// The chunk count does not match the payload length (`ceil(length / CHUNK_SIZE)`).
    #[error(
        "chunk count {found} inconsistent with payload length {payload_length} (expected {expected} chunks)"
    )]
    ChunkCountMismatch {
        /// The payload length in the header.
        payload_length: i32,
        /// The chunk count the length implies.
        expected: i32,
        /// The chunk count in the header.
        found: i32,
    },
    /// A chunk the header announces is absent.
    #[error("chunk {index} of {chunk_count} is missing")]
    MissingChunk {
        /// Zero-based chunk index.
        index: u32,
        /// Chunk count announced by the header.
        chunk_count: u32,
    },
    /// A chunk has the wrong length (every chunk but the last is exactly `CHUNK_SIZE`).
    #[error("chunk {index} has {found} bytes, expected {expected}")]
    ChunkLength {
        /// Zero-based chunk index.
        index: u32,
        /// The length the header implies.
        expected: usize,
        /// The length found.
        found: usize,
    },
    /// More chunks were supplied than the header announces.
    #[error("unexpected chunk {index}: the header announces {chunk_count} chunks")]
    UnexpectedChunk {
        /// Zero-based index of the first surplus chunk.
        index: u32,
        /// Chunk count announced by the header.
        chunk_count: u32,
    },
    /// The chunks add up to a different total than the header's payload length.
    #[error("chunks hold {found} bytes in total, header says {expected}")]
    PayloadLength {
        /// The payload length in the header.
        expected: usize,
        /// The sum of the chunk lengths.
        found: usize,
    },
    /// The CRC32C of the reassembled payload differs from the header's.
    #[error(
        "payload CRC32C mismatch: header has {expected:#010x}, payload hashes to {computed:#010x}"
    )]
    ChecksumMismatch {
        /// The checksum in the header.
        expected: u32,
        /// The checksum of the bytes received.
        computed: u32,
    },
}

/// A section-framed payload failed validation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SectionError {
    /// The payload ended inside a field.
    #[error(
        "truncated section framing: {field} needs {needed} bytes at offset {offset}, {available} available"
    )]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Byte offset in the payload.
        offset: usize,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left at `offset`.
        available: usize,
    },
    /// The framing version is not one this reader accepts.
    #[error("unsupported section framing version {found}; this reader accepts {supported:?}")]
    UnsupportedVersion {
        /// The version found.
        found: u32,
        /// Every version this reader accepts.
        supported: &'static [u32],
    },
    /// The section count cannot fit in the remaining bytes.
    #[error("section count {count} cannot fit in {available} remaining bytes")]
    CountOutOfBounds {
        /// The count as read.
        count: u32,
        /// Bytes left after the count.
        available: usize,
    },
    /// A section name is empty or longer than [`MAX_SECTION_NAME_LEN`](crate::MAX_SECTION_NAME_LEN).
    #[error("section {index}: name length {length} out of bounds (1..={max})")]
    NameLength {
        /// Zero-based section index.
        index: u32,
        /// The length as read.
        length: usize,
        /// The limit.
        max: usize,
    },
    /// A section name is not valid UTF-8.
    #[error("section {index}: name is not valid UTF-8")]
    NameNotUtf8 {
        /// Zero-based section index.
        index: u32,
    },
    /// Two sections share a name.
    #[error("section {index}: duplicate name {name:?}")]
    DuplicateName {
        /// Zero-based index of the second occurrence.
        index: u32,
        /// The repeated name.
        name: String,
    },
    /// A section's data length runs past the end of the payload.
    #[error("section {index}: data length {length} exceeds the {available} remaining bytes")]
    DataLength {
        /// Zero-based section index.
        index: u32,
        /// The length as read.
        length: u64,
        /// Bytes left.
        available: usize,
    },
    /// Bytes follow the last section.
    #[error("{extra} trailing bytes after the last section")]
    TrailingBytes {
        /// Number of extra bytes.
        extra: usize,
    },
}

/// A snapshot manifest failed validation (checks in the order of the
/// [manifest documentation](crate::Manifest)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// The manifest ended before a field could be read.
    #[error(
        "truncated manifest: {field} needs {needed} bytes at offset {offset}, {available} available"
    )]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Byte offset of the field.
        offset: usize,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left at `offset`.
        available: usize,
    },
    /// The first four bytes are not `SFCM`.
    #[error("bad manifest magic: found {found:02x?}, expected \"SFCM\"")]
    BadMagic {
        /// The four bytes found.
        found: [u8; 4],
    },
    /// The manifest version is not one this reader accepts.
    #[error("unsupported manifest version {found}; this reader accepts {supported:?}")]
    UnsupportedVersion {
        /// The version found.
        found: u32,
        /// Every version this reader accepts.
        supported: &'static [u32],
    },
    /// The manifest's own CRC32C does not match its bytes.
    #[error("manifest CRC32C mismatch: stored {expected:#010x}, bytes hash to {computed:#010x}")]
    ChecksumMismatch {
        /// The stored checksum.
        expected: u32,
        /// The checksum of the bytes read.
        computed: u32,
    },
    /// The envelopes or payloads use a format version this reader does not know.
    #[error(
        "manifest names envelope version {envelope_version} / section framing version {section_version}, not supported"
    )]
    UnsupportedFormat {
        /// The SFCS header version recorded.
        envelope_version: i32,
        /// The section framing version recorded.
        section_version: u32,
    },
    /// The max parallelism is above 32768.
    #[error("manifest max parallelism {found} out of bounds (0 = not recorded, 1..=32768)")]
    MaxParallelism {
        /// The value recorded.
        found: u32,
    },
    /// The covered key-group range does not fit the max parallelism.
    #[error(
        "manifest covers key groups {first}..{first}+{count}, beyond max parallelism {max_parallelism}"
    )]
    KeyGroupRange {
        /// First covered key group.
        first: u32,
        /// Number of covered key groups.
        count: u32,
        /// The recorded max parallelism (0 = not recorded, then 32768 bounds the range).
        max_parallelism: u32,
    },
    /// The operator-id length is out of bounds or its bytes are not UTF-8.
    #[error("manifest operator id of length {length} is out of bounds or not UTF-8")]
    OperatorId {
        /// The length field.
        length: u32,
    },
    /// The manifest belongs to another operator.
    #[error("manifest belongs to operator {found:?}, expected {expected:?}")]
    OperatorMismatch {
        /// The operator id the caller expects.
        expected: String,
        /// The operator id in the manifest.
        found: String,
    },
    /// The entry count cannot fit in the remaining bytes.
    #[error("manifest entry count {count} cannot fit in {available} remaining bytes")]
    EntryCount {
        /// The count as read.
        count: u32,
        /// Bytes left after the count.
        available: usize,
    },
    /// An entry is out of order, outside the covered range or has impossible lengths.
    #[error("manifest entry {index} (key group {key_group}): {reason}")]
    Entry {
        /// Zero-based entry index.
        index: u32,
        /// The entry's key group.
        key_group: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// Bytes follow the last entry.
    #[error("{extra} trailing bytes in the manifest")]
    TrailingBytes {
        /// Number of extra bytes.
        extra: usize,
    },
}

/// Input that cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// The payload is longer than an `i32` length field can hold.
    #[error("payload of {length} bytes exceeds the format limit of {max} bytes")]
    PayloadTooLarge {
        /// The payload length.
        length: usize,
        /// [`MAX_PAYLOAD_LEN`](crate::MAX_PAYLOAD_LEN).
        max: usize,
    },
    /// The operator id is longer than [`MAX_OPERATOR_ID_LEN`](crate::MAX_OPERATOR_ID_LEN) bytes.
    #[error("operator id of {length} bytes exceeds the limit of {max} bytes")]
    OperatorIdTooLong {
        /// The operator id's UTF-8 length.
        length: usize,
        /// The limit.
        max: usize,
    },
    /// `Some(i64::MIN)` was given as a deadline; that value is the wire encoding of "none".
    #[error("deadline i64::MIN is reserved for \"no deadline\"; pass None")]
    ReservedDeadline,
    /// A section name is empty or too long.
    #[error("section name length {length} out of bounds (1..={max})")]
    SectionNameLength {
        /// The name's UTF-8 length.
        length: usize,
        /// [`MAX_SECTION_NAME_LEN`](crate::MAX_SECTION_NAME_LEN).
        max: usize,
    },
    /// Two sections share a name.
    #[error("duplicate section name {name:?}")]
    DuplicateSectionName {
        /// The repeated name.
        name: String,
    },
}

/// Any failure of this crate: the umbrella returned by container-level functions.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An envelope read from key group `key_group` failed validation.
    #[error("key group {key_group}: {source}")]
    Envelope {
        /// The key group whose snapshot was read.
        key_group: u32,
        /// What failed.
        #[source]
        source: DecodeError,
    },
    /// A key group has no header in the container.
    #[error("key group {key_group}: no canonical snapshot header")]
    MissingHeader {
        /// The key group.
        key_group: u32,
    },
    /// An envelope failed validation (no container involved).
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// Section framing failed validation.
    #[error(transparent)]
    Section(#[from] SectionError),
    /// Input could not be encoded.
    #[error(transparent)]
    Encode(#[from] EncodeError),
    /// A container file is malformed.
    #[error("corrupt container file {path}: {reason}")]
    CorruptContainer {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A snapshot manifest failed validation.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The manifest lists a key group whose envelope is absent from the container.
    #[error("key group {key_group}: listed in the manifest but absent from the container")]
    KeyGroupMissing {
        /// The key group.
        key_group: u32,
    },
    /// The container holds an envelope for a key group the manifest does not list.
    #[error("key group {key_group}: present in the container but not listed in the manifest")]
    KeyGroupUnlisted {
        /// The key group.
        key_group: u32,
    },
    /// An envelope differs from what the manifest recorded for its key group (swapped,
    /// copied from another key group, or rewritten after the manifest).
    #[error(
        "key group {key_group}: envelope {field} is {found:#x}, the manifest recorded {expected:#x}"
    )]
    NotVouched {
        /// The key group.
        key_group: u32,
        /// The field that differs.
        field: &'static str,
        /// The manifest's value.
        expected: u32,
        /// The envelope's value.
        found: u32,
    },
    /// [`Container::commit_generation`](crate::Container::commit_generation) was called with
    /// no generation being written.
    #[error("no snapshot generation is being written")]
    NotWriting,
    /// An I/O operation of a container failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// The envelope validation failure behind this error, if it is one, whether or not it
    /// carries a key group.
    pub fn decode_error(&self) -> Option<&DecodeError> {
        match self {
            Error::Envelope { source, .. } | Error::Decode(source) => Some(source),
            _ => None,
        }
    }
}
