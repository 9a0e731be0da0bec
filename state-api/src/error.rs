//! The one error type of the state API, shared by every backend.

use keygroup::KeyGroupRange;

/// `Result` with this crate's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What is wrong with a canonical section that passed envelope validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CorruptionKind {
    /// The section's Arrow schema differs from the table's canonical schema.
    SchemaMismatch,
    /// The section's canonical format version (schema metadata) is missing or unknown.
    UnsupportedTableVersion,
    /// Keys are not strictly ascending by bytes (unsorted or duplicated).
    KeysNotSorted,
    /// A column holds a null where the canonical schema forbids one.
    UnexpectedNull,
    /// The section names a table the restoring operator did not open.
    UnknownTable,
}

impl std::fmt::Display for CorruptionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CorruptionKind::SchemaMismatch => "schema differs from the table's canonical schema",
            CorruptionKind::UnsupportedTableVersion => "missing or unsupported canonical version",
            CorruptionKind::KeysNotSorted => "keys are not strictly ascending",
            CorruptionKind::UnexpectedNull => "unexpected null",
            CorruptionKind::UnknownTable => "no open table has this name",
        })
    }
}

/// Any failure of a keyed-state operation, whatever the backend.
///
/// Backends map their native errors onto these variants (a storage failure they cannot
/// classify goes to [`Error::Backend`] with the native error as `source`). Every operation that
/// returns an error leaves the table's visible state as it was, unless its documentation says
/// otherwise.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A canonical section passed envelope validation but its contents are invalid.
    #[error("key group {key_group}, table {table:?}: corrupt canonical section: {kind}")]
    Corruption {
        /// The key group whose envelope held the section.
        key_group: i32,
        /// The section (table) name.
        table: String,
        /// What is wrong.
        kind: CorruptionKind,
    },
    /// A canonical section's Arrow IPC stream could not be read or written.
    #[error("key group {key_group}, table {table:?}: Arrow IPC: {source}")]
    Arrow {
        /// The key group.
        key_group: i32,
        /// The section (table) name.
        table: String,
        /// The Arrow error.
        #[source]
        source: arrow_schema::ArrowError,
    },
    /// Reading, validating or writing an SFCS envelope or its sections failed.
    #[error(transparent)]
    Snapshot(#[from] sfcs_format::Error),
    /// A value codec was given columns it cannot decode, or could not build its columns.
    #[error("value codec, column {column:?}: {reason}")]
    Codec {
        /// The value column concerned.
        column: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The memory pool cannot grant a reservation; nothing was changed.
    #[error("memory pool exhausted: requested {requested} bytes, {available} available")]
    MemoryExhausted {
        /// Bytes requested.
        requested: usize,
        /// Bytes still free in the pool.
        available: usize,
    },
    /// A key group outside the table's (or restore target's) key-group range.
    #[error("key group {key_group} is outside {range}")]
    KeyGroupOutOfRange {
        /// The key group given.
        key_group: i32,
        /// The range it must be in.
        range: KeyGroupRange,
    },
    /// Two restore sources both hold the same key group.
    #[error("key group {key_group} is present in restore sources {first} and {second}")]
    DuplicateKeyGroup {
        /// The key group.
        key_group: i32,
        /// Index of the first source holding it.
        first: usize,
        /// Index of the second source holding it.
        second: usize,
    },
    /// An operation was called in the wrong bundle state (see [`KeyedTable`](crate::KeyedTable)).
    #[error("{operation} requires {}", if *.requires_open { "an open bundle" } else { "no open bundle" })]
    BundleState {
        /// The operation called.
        operation: &'static str,
        /// Whether the operation needs a bundle to be open (`true`) or closed (`false`).
        requires_open: bool,
    },
    /// A table with this name is already open in the store.
    #[error("table {name:?} is already open")]
    TableExists {
        /// The table name.
        name: String,
    },
    /// Two tables given to one snapshot or restore call have different key-group ranges or
    /// share a name.
    #[error(
        "tables of one snapshot must share one key-group range and have distinct names: {table:?}"
    )]
    TableSetMismatch {
        /// The first offending table.
        table: String,
    },
    /// Invalid key-group arguments (see the `keygroup` crate).
    #[error(transparent)]
    KeyGroup(#[from] keygroup::Error),
    /// The backend does not support this operation.
    #[error("unsupported operation: {operation}")]
    Unsupported {
        /// The operation.
        operation: &'static str,
    },
    /// A storage failure of the backend that maps onto no other variant.
    #[error("backend error: {source}")]
    Backend {
        /// The backend's native error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A canonical section's Arrow IPC bytes failed structural validation before Arrow read
    /// them (see `state_api::validate` in the crate docs).
    #[error("key group {key_group}, table {table:?}: invalid Arrow IPC at byte {offset}: {reason}")]
    InvalidIpc {
        /// The key group whose envelope held the section.
        key_group: i32,
        /// The section (table) name.
        table: String,
        /// Byte offset in the section where the fault was found.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// Decoding a canonical section (or staging its rows) panicked inside a dependency or a
    /// backend; the panic was caught at the decode boundary and nothing was applied. The
    /// validation before decoding should have refused these bytes: report it as a bug.
    #[error("key group {key_group}, table {table:?}: decoding panicked: {message}")]
    DecodePanicked {
        /// The key group (-1 when the panic happened while staging a whole table).
        key_group: i32,
        /// The section (table) name.
        table: String,
        /// The panic message.
        message: String,
    },
    /// A canonical row breaks a rule of the canonical format (see
    /// [`validate_canonical_rows`](crate::validate_canonical_rows)).
    #[error("key group {key_group}, table {table:?}, row {row}: {reason}")]
    InvalidRow {
        /// The key group.
        key_group: i32,
        /// The table.
        table: String,
        /// Zero-based row index in its batch.
        row: usize,
        /// The rule broken.
        reason: &'static str,
    },
    /// A restore source holds no committed manifest: a snapshot still being written, one
    /// whose writer died, or one written without a manifest. Nothing is restored from it.
    #[error("restore source {source_index} has no manifest: the snapshot is incomplete")]
    IncompleteSnapshot {
        /// Index of the source in the restore call.
        source_index: usize,
    },
    /// A key group the restore needs is missing: listed in a source's manifest but absent
    /// from the source (`source_index` is `Some`), or covered by no source at all (`None`).
    #[error("key group {key_group} is missing (restore source {source_index:?})")]
    MissingKeyGroup {
        /// The key group.
        key_group: i32,
        /// The source whose manifest lists it, if any.
        source_index: Option<usize>,
    },
    /// A source holds an envelope for a key group its manifest does not list.
    #[error("key group {key_group} in restore source {source_index} is not in its manifest")]
    UnexpectedKeyGroup {
        /// The key group.
        key_group: i32,
        /// Index of the source.
        source_index: usize,
    },
    /// A snapshot of another max parallelism (key groups mean other keys there), or tables
    /// of one call that disagree on it. `None` means "not recorded / not known".
    #[error(
        "max parallelism mismatch: expected {expected:?}, found {found:?} (restore source {source_index:?})"
    )]
    MaxParallelismMismatch {
        /// The target's max parallelism.
        expected: Option<i32>,
        /// The snapshot's (or the disagreeing table's) max parallelism.
        found: Option<i32>,
        /// The source concerned, if any.
        source_index: Option<usize>,
    },
    /// A snapshot's canonical table format version is not one this reader knows.
    #[error("restore source {source_index}: unsupported canonical table version {found}")]
    UnsupportedSnapshotVersion {
        /// The version the manifest records.
        found: u32,
        /// Index of the source.
        source_index: usize,
    },
    /// A value (or metadata entry) stored by a persistent backend is corrupt: it fails the
    /// backend's structural checks or its storage reports a checksum failure.
    #[error("corrupt stored state: {source}")]
    CorruptValue {
        /// The backend's native error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The backend's storage failed with an I/O error (file system, device).
    #[error("storage I/O failure: {source}")]
    Io {
        /// The backend's native error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A native snapshot is incomplete, damaged or not this backend's; nothing was replaced.
    #[error("invalid native snapshot: {source}")]
    InvalidNativeSnapshot {
        /// The backend's native error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}
