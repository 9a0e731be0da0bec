//! Integration tests of the public API: one test binary, one module per theme.

mod flink_vectors;
mod properties;
mod util;
