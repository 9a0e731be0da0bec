//! Benchmarks for sfstate. The criterion benches live in `benches/`; run them with
//! `cargo bench -p sfstate-bench`.
