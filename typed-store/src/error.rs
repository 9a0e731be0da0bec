//! The typed-store error type and its mapping onto [`state_api::Error`].

use std::path::PathBuf;

/// `Result` with this crate's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The class of a RocksDB failure, read once from the native error at this crate's boundary
/// (`rocksdb::Error` carries only a message; its `kind()` parses the status prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RocksErrorKind {
    /// `NotFound`.
    NotFound,
    /// `Corruption` (e.g. a block checksum mismatch).
    Corruption,
    /// `NotSupported`.
    NotSupported,
    /// `InvalidArgument`.
    InvalidArgument,
    /// `IOError`.
    Io,
    /// Any other status (busy, timed out, incomplete, aborted, ...).
    Other,
}

impl From<rocksdb::ErrorKind> for RocksErrorKind {
    fn from(kind: rocksdb::ErrorKind) -> Self {
        match kind {
            rocksdb::ErrorKind::NotFound => Self::NotFound,
            rocksdb::ErrorKind::Corruption => Self::Corruption,
            rocksdb::ErrorKind::NotSupported => Self::NotSupported,
            rocksdb::ErrorKind::InvalidArgument => Self::InvalidArgument,
            rocksdb::ErrorKind::IOError => Self::Io,
            _ => Self::Other,
        }
    }
}

/// Any failure of the RocksDB backend.
///
/// Trait methods of `state-api` return [`state_api::Error`]; these errors become the variant
/// of their meaning (see the `From` impl), with this error as `source` (downcast to recover
/// it). Constructors such as [`RocksStore::open`](crate::RocksStore::open) return this type
/// directly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A RocksDB call failed.
    #[error("RocksDB ({kind:?}) during {operation}: {source}")]
    Rocks {
        /// The classified status.
        kind: RocksErrorKind,
        /// What the store was doing.
        operation: &'static str,
        /// The native error.
        #[source]
        source: rocksdb::Error,
    },
    /// The store on disk was written with another on-disk format or arrow-row version.
    #[error("stored format {found:?} differs from this build's {expected:?}")]
    FormatVersionMismatch {
        /// This build's format string (see [`FORMAT_VERSION`](crate::FORMAT_VERSION)).
        expected: String,
        /// The format string found in the store's metadata (lossy UTF-8).
        found: String,
    },
    /// The store on disk was written for another max parallelism (another key-group prefix).
    #[error("store was written with max parallelism {found}, opened with {expected}")]
    MaxParallelismMismatch {
        /// The max parallelism of the configuration.
        expected: i32,
        /// The max parallelism recorded in the store.
        found: i32,
    },
    /// A table was opened with a codec whose value columns differ from the stored ones.
    #[error("table {table:?} holds values with columns {found:?}, the codec has {expected:?}")]
    TableSchemaMismatch {
        /// The table name.
        table: String,
        /// The codec's column description.
        expected: String,
        /// The stored column description.
        found: String,
    },
    /// A stored value failed the structural checks made before arrow-row decoding.
    #[error("table {table:?}: corrupt stored value: {reason}")]
    CorruptValue {
        /// The table name.
        table: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// Stored metadata is malformed.
    #[error("corrupt store metadata entry {key:?}")]
    CorruptMetadata {
        /// The metadata key.
        key: String,
    },
    /// arrow-row could not encode or decode the codec's columns.
    #[error("table {table:?}: arrow-row: {source}")]
    Arrow {
        /// The table name.
        table: String,
        /// The Arrow error.
        #[source]
        source: arrow_schema::ArrowError,
    },
    /// The stored-value codec failed otherwise (see [`typed_store_value::Error`]).
    #[error("table {table:?}: stored value: {source}")]
    Value {
        /// The table name.
        table: String,
        /// The stored-value error.
        #[source]
        source: typed_store_value::Error,
    },
    /// A file-system operation on the store's directories failed.
    #[error("I/O on {path}: {source}")]
    Io {
        /// The path concerned.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A native checkpoint is incomplete or not an sfstate store; nothing was replaced.
    #[error("invalid checkpoint {path}: {reason}")]
    InvalidCheckpoint {
        /// The checkpoint copy being opened.
        path: PathBuf,
        /// What is missing.
        reason: &'static str,
    },
    /// Invalid slot or store options.
    #[error("invalid option {option}: {reason}")]
    InvalidOption {
        /// The option.
        option: &'static str,
        /// Why it is invalid.
        reason: &'static str,
    },
}

impl Error {
    /// Wraps a RocksDB error, classifying it once.
    pub(crate) fn rocks(operation: &'static str) -> impl Fn(rocksdb::Error) -> Error {
        move |source| Error::Rocks {
            kind: source.kind().into(),
            operation,
            source,
        }
    }

    /// Wraps an I/O error on `path`.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }
}

impl From<Error> for state_api::Error {
    /// Maps onto the meaning of the failure, the typed-store error kept as `source`:
    ///
    /// | typed-store error | `state_api::Error` |
    /// |---|---|
    /// | [`CorruptValue`](Error::CorruptValue), [`CorruptMetadata`](Error::CorruptMetadata), [`Rocks`](Error::Rocks) of kind [`Corruption`](RocksErrorKind::Corruption) | `CorruptValue` |
    /// | [`Io`](Error::Io), [`Rocks`](Error::Rocks) of kind [`Io`](RocksErrorKind::Io) | `Io` |
    /// | [`InvalidCheckpoint`](Error::InvalidCheckpoint) | `InvalidNativeSnapshot` |
    /// | anything else | `Backend` |
    fn from(error: Error) -> Self {
        #[derive(Clone, Copy)]
        enum Meaning {
            Corrupt,
            Io,
            Snapshot,
            Other,
        }
        let meaning = match &error {
            Error::CorruptValue { .. }
            | Error::CorruptMetadata { .. }
            | Error::Rocks {
                kind: RocksErrorKind::Corruption,
                ..
            } => Meaning::Corrupt,
            Error::Io { .. }
            | Error::Rocks {
                kind: RocksErrorKind::Io,
                ..
            } => Meaning::Io,
            Error::InvalidCheckpoint { .. } => Meaning::Snapshot,
            _ => Meaning::Other,
        };
        let source = Box::new(error);
        match meaning {
            Meaning::Corrupt => state_api::Error::CorruptValue { source },
            Meaning::Io => state_api::Error::Io { source },
            Meaning::Snapshot => state_api::Error::InvalidNativeSnapshot { source },
            Meaning::Other => state_api::Error::Backend { source },
        }
    }
}

/// Shorthand: a RocksDB failure as a [`state_api::Error`].
pub(crate) fn rocks_api(operation: &'static str) -> impl Fn(rocksdb::Error) -> state_api::Error {
    move |source| Error::rocks(operation)(source).into()
}
