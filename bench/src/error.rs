//! The benchmark binary's errors.

/// What can stop a benchmark run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// A state-api operation failed.
    #[error("state: {0}")]
    State(#[from] state_api::Error),
    /// typed-store could not open a store or slot.
    #[cfg(feature = "typed")]
    #[error("typed-store: {0}")]
    Rocks(#[from] typed_store::Error),
    /// A snapshot container failed.
    #[error("snapshot container: {0}")]
    Container(#[from] state_api::sfcs_format::Error),
    /// A key-group computation failed.
    #[error("key group: {0}")]
    KeyGroup(#[from] state_api::keygroup::Error),
    /// File-system work (temporary directories, sizes) failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// A result differs from the expected one.
    #[error("{run}: {what} is {got:#018x}, expected {expected:#018x}")]
    Mismatch {
        /// The run (workload, backend, mode, parallelism).
        run: String,
        /// Which figure.
        what: &'static str,
        /// What the run produced.
        got: u64,
        /// What was expected.
        expected: u64,
    },
    /// A worker thread panicked.
    #[error("a subtask thread panicked")]
    Thread,
    /// Bad command-line arguments.
    #[error("usage: {0}")]
    Usage(String),
}

/// The benchmark's result type.
pub type BenchResult<T> = Result<T, BenchError>;
