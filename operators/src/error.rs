//! The crate's error type.

use arrow_schema::DataType;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors of the operators. Input errors (the first five variants) are detected before a
/// bundle touches any state, so a failed bundle leaves the operator's state unchanged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input batch has no column at an index the spec names.
    #[error("input column {index} is missing (the batch has {columns} columns)")]
    MissingColumn {
        /// The column index the spec names.
        index: usize,
        /// Columns in the batch.
        columns: usize,
    },
    /// An input column has another Arrow type than the operator's input schema.
    #[error("input column {index} has type {actual}, expected {expected}")]
    WrongType {
        /// The column index.
        index: usize,
        /// The schema's type.
        expected: DataType,
        /// The batch's type.
        actual: DataType,
    },
    /// A null in a column the input schema declares non-nullable.
    #[error("null in non-nullable input column {index} at row {row}")]
    NullInNonNullable {
        /// The column index.
        index: usize,
        /// The row index in the batch.
        row: usize,
    },
    /// A `RowKind` the operator cannot take
    /// (e.g. a retraction into an insert-only Top-1).
    #[error("row {row}: row kind {kind} not accepted ({reason})")]
    RowKind {
        /// The row index.
        row: usize,
        /// The kind as `+I`/`-U`/`+U`/`-D`, or the unknown byte.
        kind: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The batch and its `RowKind` vector differ in length.
    #[error("batch has {rows} rows but {kinds} row kinds")]
    KindCount {
        /// Rows in the batch.
        rows: usize,
        /// Row kinds given.
        kinds: usize,
    },
    /// The spec asks for something this crate does not implement (yet).
    #[error("unsupported: {what}")]
    Unsupported {
        /// What is not supported.
        what: String,
    },
    /// A query Flink 2.3.0's planner itself refuses (its message), so there is no Flink
    /// behaviour to reproduce.
    #[error("Flink 2.3.0 refuses this query: {message}")]
    RefusedByFlink {
        /// Flink's exception message.
        message: String,
    },
    /// The spec is inconsistent (an index out of range, an aggregate without its argument).
    #[error("invalid spec: {reason}")]
    InvalidSpec {
        /// What is wrong.
        reason: String,
    },
    /// Stored state that does not decode as this operator wrote it.
    #[error("corrupt operator state in table {table}: {reason}")]
    CorruptState {
        /// The table.
        table: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// A state-api (store) failure.
    #[error(transparent)]
    State(#[from] state_api::Error),
    /// A key-encoding failure (BinaryRow writer).
    #[error(transparent)]
    Key(#[from] keygroup::Error),
    /// An Arrow failure building an output batch.
    #[error(transparent)]
    Arrow(#[from] arrow_schema::ArrowError),
}

impl Error {
    /// An [`Error::Unsupported`] for `what`.
    pub(crate) fn unsupported(what: impl Into<String>) -> Self {
        Self::Unsupported { what: what.into() }
    }

    /// An [`Error::RefusedByFlink`] with Flink's `message`.
    pub(crate) fn refused(message: impl Into<String>) -> Self {
        Self::RefusedByFlink {
            message: message.into(),
        }
    }

    /// An [`Error::InvalidSpec`] for `reason`.
    pub(crate) fn spec(reason: impl Into<String>) -> Self {
        Self::InvalidSpec {
            reason: reason.into(),
        }
    }
}
