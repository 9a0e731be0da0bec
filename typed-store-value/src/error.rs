//! The error of stored-value encoding and decoding.

/// `Result` with this crate's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why stored values could not be encoded or decoded. typed-store maps each variant onto its
/// own error with the table's name (`CorruptValue` to its `Error::CorruptValue`, `Arrow` to
/// `Error::Arrow`, `Codec` passed through).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A stored value failed the structural guard; arrow-row never saw it.
    #[error("corrupt stored value: {reason}")]
    CorruptValue {
        /// What is wrong.
        reason: &'static str,
    },
    /// arrow-row could not encode or decode the codec's columns.
    #[error("arrow-row: {source}")]
    Arrow {
        /// The Arrow error.
        #[source]
        source: arrow_schema::ArrowError,
    },
    /// The value codec failed to encode or decode its columns, or decoded another number of
    /// values than there were rows.
    #[error("value codec: {source}")]
    Codec {
        /// The codec's error.
        #[source]
        source: state_api::Error,
    },
}
