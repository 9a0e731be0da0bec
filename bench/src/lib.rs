//! Benchmarks for sfstate.
//!
//! - The end-to-end state benchmark (`sfstate-bench` binary, the repository's main job):
//!   workloads of issue 8 ([`workload`] generator and checksums, [`workloads`] operators)
//!   over typed-store and memory-store ([`backend`]), run by [`e2e`] (W1, W4 on one value
//!   table) and [`operator_runs`] (W2, W3 on the `operators` crate); see `bench/README.md`.
//! - Criterion suites in `benches/`: `cargo bench -p sfstate-bench`.

pub mod backend;
pub mod cli;
pub mod e2e;
pub mod error;
pub mod operator_runs;
mod pipeline;
mod source;
pub mod workload;
pub mod workloads;

pub use error::{BenchError, BenchResult};
