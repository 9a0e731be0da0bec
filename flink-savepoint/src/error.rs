//! The crate's one error type.
//!
//! Every malformed input is a variant with typed context; nothing in this crate panics on
//! bad bytes. Variants are grouped as the reader meets them: `_metadata`, the native
//! operator, the keyed-state stream, Snappy framing, the SFCS envelope; then the writer's.

use std::path::PathBuf;

use crate::operator_id::OperatorId;

/// `Result` with this crate's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A Snappy-framed key-group block is malformed (FORMAT.md section 6).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnappyError {
    /// The block does not start with the stream identifier `ff 06 00 00 73 4e 61 50 70 59`.
    #[error("missing Snappy stream identifier")]
    MissingStreamIdentifier,
    /// A stream-identifier chunk (`ff`) has a wrong length or body.
    #[error("malformed Snappy stream identifier chunk")]
    BadStreamIdentifier,
    /// A chunk type in the reserved, unskippable range `02..=7f`.
    #[error("reserved Snappy chunk type {chunk_type:#04x}")]
    ReservedChunkType {
        /// The chunk type byte.
        chunk_type: u8,
    },
    /// A data chunk is too short to hold its 4-byte checksum, or longer than any chunk of at
    /// most 65536 uncompressed bytes can be.
    #[error("Snappy chunk of type {chunk_type:#04x} has invalid length {length}")]
    ChunkLength {
        /// The chunk type byte.
        chunk_type: u8,
        /// The 3-byte length field.
        length: u32,
    },
    /// A chunk decompresses to more than 65536 bytes.
    #[error("Snappy chunk decompresses to {length} bytes, more than 65536")]
    UncompressedTooLarge {
        /// The announced uncompressed length.
        length: u64,
    },
    /// The raw Snappy block is malformed (bad varint, bad copy offset, wrong length…).
    #[error("corrupt raw Snappy block: {reason}")]
    Corrupt {
        /// What the decoder reported.
        reason: String,
    },
    /// The masked CRC32C of a chunk's uncompressed bytes does not match (Flink itself does not
    /// check it; this reader does).
    #[error("Snappy chunk checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch {
        /// The masked checksum in the chunk.
        stored: u32,
        /// The masked checksum of the decompressed bytes.
        computed: u32,
    },
}

/// Any failure of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---------------------------------------------------------------- I/O and bounds
    /// An I/O operation failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A structure ends before a field could be read.
    #[error(
        "truncated {what} in {path}: {needed} bytes needed at offset {offset}, {available} available"
    )]
    Truncated {
        /// The field being read.
        what: &'static str,
        /// The file being read.
        path: PathBuf,
        /// Offset of the field within its stream (for an inline handle: within its data).
        offset: u64,
        /// Bytes the field needs.
        needed: u64,
        /// Bytes left in the stream at `offset`.
        available: u64,
    },
    /// A length or count field is negative.
    #[error("negative {what}: {value}")]
    NegativeLength {
        /// The field.
        what: &'static str,
        /// The value read.
        value: i64,
    },
    /// A string is not valid modified UTF-8 (`DataOutput.writeUTF`).
    #[error("invalid modified UTF-8 in {what} at byte {index}")]
    InvalidModifiedUtf8 {
        /// The field.
        what: &'static str,
        /// Index of the first bad byte within the string.
        index: usize,
    },

    // ---------------------------------------------------------------- _metadata
    /// `_metadata` does not start with `4960672d`.
    #[error("not a Flink savepoint: _metadata magic {found:#010x}, expected 0x4960672d")]
    BadMetadataMagic {
        /// The first four bytes.
        found: u32,
    },
    /// A metadata version outside 3..=6.
    #[error("unsupported _metadata version {found}; this reader accepts 3..=6")]
    UnsupportedMetadataVersion {
        /// The version read.
        found: i32,
    },
    /// The checkpoint id is negative.
    #[error("negative checkpoint id {found}")]
    NegativeCheckpointId {
        /// The id read.
        found: i64,
    },
    /// A master state has a wrong magic number.
    #[error("master state {index}: magic {found:#010x}, expected 0xc96b1696")]
    BadMasterStateMagic {
        /// Index of the master state.
        index: u32,
        /// The magic read.
        found: u32,
    },
    /// A master state's length is not positive.
    #[error("master state {index}: length {length} must be > 0")]
    MasterStateLength {
        /// Index of the master state.
        index: u32,
        /// The length read.
        length: i32,
    },
    /// A stream-handle tag this reader does not accept in that place.
    #[error("unsupported {context} stream-handle tag {tag}")]
    StreamHandleTag {
        /// Where the handle is (`"coordinator"`, `"keyed"`, `"operator"`).
        context: &'static str,
        /// The tag byte.
        tag: u8,
    },
    /// An operator-state-handle tag other than 0 or 4.
    #[error("unsupported operator-state-handle tag {tag}")]
    OperatorStateHandleTag {
        /// The tag byte.
        tag: u8,
    },
    /// An operator-state distribution mode above 2.
    #[error("unknown operator-state distribution mode {mode}")]
    DistributionMode {
        /// The mode byte.
        mode: u8,
    },
    /// A keyed-state-handle tag other than 0, 3, 7 or 12 (incremental and changelog handles are
    /// not canonical savepoints).
    #[error("unsupported keyed-state-handle tag {tag}")]
    KeyedHandleTag {
        /// The tag byte.
        tag: u8,
    },
    /// A subtask carries channel state (savepoints never do).
    #[error("subtask {subtask}: {input} input and {output} output channel states in a savepoint")]
    ChannelState {
        /// The subtask index.
        subtask: i32,
        /// `numInputChannelStates`.
        input: i32,
        /// `numResultSubpartitionStates`.
        output: i32,
    },
    /// A finished operator (negative subtask count) with coordinator state.
    #[error("finished operator {id} has coordinator state")]
    FinishedWithCoordinatorState {
        /// The operator.
        id: OperatorId,
    },
    /// A v4+ `_metadata` without the Java-serialized `CheckpointProperties` trailer.
    #[error("_metadata version {version} lacks the CheckpointProperties trailer (aced0005)")]
    MissingTrailer {
        /// The metadata version.
        version: i32,
    },

    // ---------------------------------------------------------------- the native operator
    /// No operator with that id is in the savepoint.
    #[error("operator {id} is not in the savepoint")]
    OperatorNotFound {
        /// The id looked for.
        id: OperatorId,
    },
    /// Two operator records carry the same id.
    #[error("operator {id} appears twice in _metadata")]
    DuplicateOperator {
        /// The id.
        id: OperatorId,
    },
    /// The v5+ uid of the operator differs from the uid looked for (the ids agree).
    #[error("operator uid {found:?} differs from the expected {expected:?}")]
    UidMismatch {
        /// The uid looked for.
        expected: String,
        /// The uid in `_metadata`.
        found: String,
    },
    /// The operator's max parallelism differs from the one the caller expects.
    #[error("max parallelism {found} differs from the expected {expected}")]
    MaxParallelismMismatch {
        /// The expected max parallelism.
        expected: u32,
        /// The max parallelism in `_metadata`.
        found: i32,
    },
    /// A max parallelism outside 1..=32768.
    #[error("max parallelism {found} outside 1..=32768")]
    InvalidMaxParallelism {
        /// The value.
        found: i64,
    },
    /// A parallelism outside 1..=max parallelism.
    #[error("parallelism {found} outside 1..={max_parallelism}")]
    InvalidParallelism {
        /// The value.
        found: i64,
        /// The max parallelism.
        max_parallelism: u32,
    },
    /// A keyed handle's key-group range does not fit in `[0, max parallelism)`.
    #[error("keyed handle range start {start}, {count} key groups, outside [0, {max_parallelism})")]
    KeyGroupRangeOutOfBounds {
        /// First key group of the handle.
        start: i32,
        /// Number of key groups.
        count: i32,
        /// The operator's max parallelism.
        max_parallelism: u32,
    },
    /// Two handles of the native operator cover one key group.
    #[error("key group {key_group} is covered by two keyed handles")]
    OverlappingKeyGroup {
        /// The key group.
        key_group: u32,
    },
    /// No handle of the native operator covers a key group.
    #[error("key group {key_group} is covered by no keyed handle")]
    UncoveredKeyGroup {
        /// The key group.
        key_group: u32,
    },
    /// The native operator has raw keyed state (never written for it).
    #[error("subtask {subtask} of the native operator has raw keyed state")]
    RawKeyedState {
        /// The subtask index.
        subtask: i32,
    },
    /// A keyed handle with non-zero offsets but no stream.
    #[error("keyed handle starting at key group {start} has offsets but no stream")]
    MissingStream {
        /// First key group of the handle.
        start: i32,
    },
    /// A relative state-file path that is not one plain file name.
    #[error("relative state file {path:?} is not a plain file name")]
    BadRelativePath {
        /// The path as stored.
        path: String,
    },
    /// An absolute state-file URI this reader cannot open (only `file:` is supported).
    #[error("unsupported state file URI {uri:?} (only file: paths are supported)")]
    UnsupportedFileUri {
        /// The URI as stored.
        uri: String,
    },
    /// A state file's length differs from its handle's size.
    #[error("state file {path} has {actual} bytes, its handle says {expected}")]
    StateFileSize {
        /// The file.
        path: PathBuf,
        /// The size in the handle.
        expected: i64,
        /// The file's length.
        actual: u64,
    },

    // ---------------------------------------------------------------- keyed-state stream
    /// A keyed-state stream failed; `source` says how.
    #[error("keyed stream of subtask {subtask} ({path}): {source}")]
    Stream {
        /// The subtask index whose handle holds the stream.
        subtask: i32,
        /// The file holding the stream (`_metadata` for an inline handle).
        path: PathBuf,
        /// What failed.
        #[source]
        source: Box<Error>,
    },
    /// A `KeyedBackendSerializationProxy` version other than 6.
    #[error("keyed backend serialization proxy version {found}, expected 6")]
    ProxyVersion {
        /// The version read.
        found: i32,
    },
    /// A boolean byte other than 0 or 1.
    #[error("{what}: boolean byte {found:#04x}")]
    BadBoolean {
        /// The field.
        what: &'static str,
        /// The byte read.
        found: u8,
    },
    /// A serializer-snapshot proxy version other than 2.
    #[error("serializer snapshot proxy version {found}, expected 2")]
    SnapshotProxyVersion {
        /// The version read.
        found: i32,
    },
    /// A serializer-snapshot class this reader does not know (its body cannot be skipped).
    #[error("unknown serializer snapshot class {class:?}")]
    UnknownSerializerSnapshot {
        /// The class name.
        class: String,
    },
    /// A serializer snapshot of a known class with a version this reader does not accept.
    #[error("serializer snapshot {class:?} version {version} not accepted")]
    SerializerSnapshotVersion {
        /// The class name.
        class: String,
        /// The version read.
        version: i32,
    },
    /// A composite or nested serializer snapshot's magic number is wrong.
    #[error("{what} magic {found:#010x}, expected {expected:#010x}")]
    SnapshotMagic {
        /// Which magic (`"composite"` or `"nested serializers"`).
        what: &'static str,
        /// The value read.
        found: i32,
        /// The value required.
        expected: i32,
    },
    /// Serializer snapshots nest deeper than this reader allows (16 levels).
    #[error("serializer snapshots nest deeper than {max} levels")]
    SnapshotNesting {
        /// The limit.
        max: u32,
    },
    /// A backend state type above 3.
    #[error("state {state:?}: backend state type {found} unknown")]
    BackendStateType {
        /// The state name.
        state: String,
        /// The value read.
        found: i32,
    },
    /// The key serializer is not `IntSerializer` (the native operator's key type).
    #[error("key serializer snapshot {class:?}, expected IntSerializer$IntSerializerSnapshot")]
    KeySerializer {
        /// The class found.
        class: String,
    },
    /// Two states of one stream share a name.
    #[error("state {name:?} is listed twice in one keyed stream")]
    DuplicateStateName {
        /// The repeated name.
        name: String,
    },
    /// A reserved state whose meta is not exactly the one FORMAT.md section 5.3 specifies.
    #[error("reserved state {state:?}: {reason}")]
    ReservedStateMeta {
        /// The state name.
        state: String,
        /// What differs.
        reason: &'static str,
    },
    /// A key-group offset that points into the state list or beyond the stream.
    #[error("key group {key_group}: offset {offset} outside [{min}, {max})")]
    OffsetOutOfRange {
        /// The key group.
        key_group: u32,
        /// The offset in the handle.
        offset: i64,
        /// First byte after the state list.
        min: u64,
        /// The stream length.
        max: u64,
    },
    /// A state id at or above the number of listed states.
    #[error("key group {key_group}: state id {state_id} >= {num_states} states")]
    StateIdOutOfRange {
        /// The key group.
        key_group: u32,
        /// The id read.
        state_id: u16,
        /// Number of states in the stream.
        num_states: u16,
    },
    /// A block with no entry (a non-zero offset pointing at `FFFF`).
    #[error("key group {key_group}: empty key-group block")]
    EmptyBlock {
        /// The key group.
        key_group: u32,
    },
    /// An entry whose key-group prefix differs from its block's key group.
    #[error("key group {key_group}: entry of state {state:?} has key-group prefix {found}")]
    KeyGroupPrefix {
        /// The block's key group.
        key_group: u32,
        /// The state name.
        state: String,
        /// The prefix found (flag cleared).
        found: u32,
    },
    /// A key shorter than its key-group prefix.
    #[error("key group {key_group}: key of {length} bytes is shorter than its prefix")]
    KeyTooShort {
        /// The key group.
        key_group: u32,
        /// The key length.
        length: u32,
    },
    /// A reserved-state key other than `prefix ‖ i32 kg ‖ 00`.
    #[error(
        "key group {key_group}: reserved state {state:?} has a key other than prefix ‖ i32 kg ‖ 00"
    )]
    ReservedKey {
        /// The key group.
        key_group: u32,
        /// The state name.
        state: String,
    },
    /// A reserved value whose outer frame is not `i32 (n + 4) ‖ i32 n ‖ n bytes`.
    #[error(
        "key group {key_group}: reserved state {state:?} value frame {outer} holds inner length {inner}"
    )]
    ReservedValueLength {
        /// The key group.
        key_group: u32,
        /// The state name.
        state: String,
        /// The outer `bytes32` length.
        outer: i64,
        /// The inner `byte[]` length.
        inner: i64,
    },
    /// A reserved state with two entries in one key group.
    #[error("key group {key_group}: reserved state {state:?} has more than one entry")]
    DuplicateReservedEntry {
        /// The key group.
        key_group: u32,
        /// The state name.
        state: String,
    },
    /// A priority-queue (timer) entry with a non-empty value.
    #[error("key group {key_group}: timer state {state:?} entry has a {length}-byte value")]
    TimerValue {
        /// The key group.
        key_group: u32,
        /// The state name.
        state: String,
        /// The value length.
        length: i64,
    },
    /// Entries in `StreamFusion`'s v2 states, which a v1 reader must refuse (FORMAT.md 7.3), or
    /// in a state named with the chunk prefix but not `_chunk_<n>` in canonical decimal.
    #[error(
        "key group {key_group}: state {state:?} (StreamFusion v2 or a non-canonical chunk name) has entries"
    )]
    StreamFusionV2Entry {
        /// The key group.
        key_group: u32,
        /// The state name.
        state: String,
    },
    /// A Snappy-framed block is malformed.
    #[error("key group {key_group}: Snappy block at stream offset {offset}: {source}")]
    Snappy {
        /// The key group.
        key_group: u32,
        /// Stream offset of the chunk that failed.
        offset: u64,
        /// What failed.
        #[source]
        source: SnappyError,
    },

    // ---------------------------------------------------------------- SFCS envelope
    /// A key group with chunk entries but no header entry.
    #[error("key group {key_group}: chunk {chunk} without a header")]
    ChunkWithoutHeader {
        /// The key group.
        key_group: u32,
        /// The lowest chunk index found.
        chunk: u32,
    },
    /// A header value longer than any valid SFCS header.
    #[error("key group {key_group}: header value of {length} bytes exceeds {max}")]
    HeaderTooLarge {
        /// The key group.
        key_group: u32,
        /// The value length.
        length: u32,
        /// The largest valid header.
        max: usize,
    },
    /// A key group's SFCS envelope fails validation (header, chunk count, chunk lengths, CRC).
    #[error("key group {key_group}: {source}")]
    Envelope {
        /// The key group.
        key_group: u32,
        /// What failed.
        #[source]
        source: sfcs_format::DecodeError,
    },

    // ---------------------------------------------------------------- Container use and writer
    /// A savepoint opened for reading is read-only: `put_key_group` / `remove_key_group`.
    #[error("a Flink savepoint opened for reading is read-only ({operation})")]
    ReadOnly {
        /// The refused operation.
        operation: &'static str,
    },
    /// The source container failed, or holds an invalid snapshot.
    #[error("source container: {0}")]
    Container(#[from] sfcs_format::Error),
    /// A source key group at or beyond the max parallelism.
    #[error("source key group {key_group} outside [0, {max_parallelism})")]
    KeyGroupOutOfRange {
        /// The key group.
        key_group: u32,
        /// The max parallelism.
        max_parallelism: u32,
    },
    /// The output directory already holds a `_metadata`.
    #[error("{path} already exists: refusing to overwrite a savepoint")]
    AlreadyExists {
        /// The `_metadata` path.
        path: PathBuf,
    },
    /// A string too long for `writeUTF` (65535 bytes of modified UTF-8).
    #[error("{what} is {length} bytes of modified UTF-8, more than 65535")]
    StringTooLong {
        /// The field.
        what: &'static str,
        /// Its encoded length.
        length: usize,
    },
    /// A key group's envelope is too large for the keyed-stream format (an `i32` value frame)
    /// or a stream beyond `i64` offsets.
    #[error("key group {key_group}: {what} too large for the savepoint format")]
    TooLarge {
        /// The key group.
        key_group: u32,
        /// What overflowed.
        what: &'static str,
    },
    /// A hexadecimal operator id that is not 32 hex digits.
    #[error("operator id {input:?} is not 32 hexadecimal digits")]
    BadOperatorIdHex {
        /// The text given.
        input: String,
    },
}

impl Error {
    /// Wraps `self` as a failure of `subtask`'s keyed stream in `path` (not twice).
    pub(crate) fn in_stream(self, subtask: i32, path: &std::path::Path) -> Error {
        match self {
            e @ Error::Stream { .. } => e,
            e => Error::Stream {
                subtask,
                path: path.to_path_buf(),
                source: Box::new(e),
            },
        }
    }

    /// The innermost error: through [`Error::Stream`] wrappers.
    pub fn root(&self) -> &Error {
        match self {
            Error::Stream { source, .. } => source.root(),
            e => e,
        }
    }
}
