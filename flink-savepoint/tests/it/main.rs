//! Integration tests of flink-savepoint (one test binary; one theme per module).

mod bins;
mod flink_savepoints;
mod restore;
mod robustness;
mod roundtrip;
mod util;
