//! Integration tests of the public sfcs-format API: one test binary, one module per theme.

mod containers;
mod corruption;
mod flink_vectors;
mod roundtrip;
mod util;
