//! The `sfstate` command-line inspector for canonical snapshot directories
//! ([`DirContainer`](sfcs_format::DirContainer)s).
//!
//! ```text
//! sfstate inspect DIR [--json]
//! sfstate dump DIR --key-group N --section NAME -o FILE
//! sfstate verify DIR --operator-id ID --max-parallelism M --parallelism P [--rescale-from P1]
//! ```
//!
//! - [`inspect`]: every key group of the committed generation — header fields, chunk count,
//!   sizes, CRC status, manifest status, sections with their Arrow schema and row counts —
//!   as text or JSON. Invalid snapshots exit non-zero with the first typed error.
//! - [`dump`]: one section as an Arrow IPC **file**, readable by pyarrow, polars or `DuckDB`
//! - [`verify`]: the restore checks a restore at parallelism `P` would make (manifests,
//!   coverage of every subtask's key groups by exactly one source, vouched envelopes,
//!   sections that decode to valid canonical rows), and which sources each target subtask
//!   reads. `DIR` is one snapshot directory, or a directory of them (one per source
//!   subtask, in name order). What it cannot check: that the sections' schemas match the
//!   tables the operator will open (the CLI does not know them).
//!
//! Exit codes: 0 valid, 1 invalid snapshot (the typed error on stderr), 2 usage error.

#![forbid(unsafe_code)]

mod dump;
mod error;
mod inspect;
mod verify;

pub use dump::dump;
pub use error::{CliError, Result};
pub use inspect::{inspect, inspect_json, inspect_text};
pub use verify::{VerifyOptions, verify};
