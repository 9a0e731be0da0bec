//! Writes a sample canonical snapshot directory (tables `counts` and `rows`, operator
//! `sample-op`, max parallelism 128, one subtask, 200 keys) for the inspector to read:
//!
//! ```text
//! cargo run -p sfstate-cli --example sample_snapshot -- DIR
//! sfstate inspect DIR
//! ```

#[path = "../tests/util/sample.rs"]
mod sample;

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "sample-snapshot".to_owned());
    let written = sample::write_sample(std::path::Path::new(&dir), 128, 1, 0, 200);
    println!(
        "wrote {written} key groups of operator {:?} to {dir}",
        sample::OPERATOR
    );
}
