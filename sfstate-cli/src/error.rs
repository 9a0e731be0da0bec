//! The inspector's errors.

use std::path::PathBuf;

/// `Result` with [`CliError`].
pub type Result<T, E = CliError> = std::result::Result<T, E>;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// The command line is malformed.
    #[error("usage: {0}")]
    Usage(String),
    /// The snapshot is invalid: the typed error of the first failing check.
    #[error(transparent)]
    Snapshot(#[from] state_api::Error),
    /// A container or envelope error.
    #[error(transparent)]
    Container(#[from] sfcs_format::Error),
    /// The snapshot is invalid for a reason no library error names (listed by `inspect`).
    #[error("invalid snapshot: {0}")]
    Invalid(String),
    /// Writing the output failed.
    #[error("cannot write {path}: {source}")]
    Output {
        /// The file.
        path: PathBuf,
        /// The I/O or Arrow error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl CliError {
    /// The process exit code: 2 for usage errors, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) => 2,
            _ => 1,
        }
    }
}
