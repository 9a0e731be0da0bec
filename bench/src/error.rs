//! The benchmark binary's errors.

/// What can stop a benchmark run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// A state-api operation failed.
    #[error("state: {0}")]
    State(#[from] state_api::Error),
    /// An operator of the `operators` crate failed.
    #[error("operator: {0}")]
    Operator(#[from] operators::Error),
    /// Two backends produced different checksums for the same run.
    #[error("{run} differs from {other}: {got} vs {expected} (chk_changelog / chk_final)")]
    BackendsDisagree {
        /// The run that differs.
        run: String,
        /// The earlier run it was compared with.
        other: String,
        /// This run's checksums.
        got: String,
        /// The earlier run's checksums.
        expected: String,
    },
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
