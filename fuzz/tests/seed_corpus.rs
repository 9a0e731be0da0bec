//! Runs every fuzz target's body over its committed seed corpus (`corpus/<target>/`), so the
//! targets' invariants are checked by the ordinary test suite too.

use std::path::Path;

fn run_corpus(target: &str, body: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("seed corpus {} missing: {e}", dir.display()))
        .map(|e| e.expect("readable corpus entry").path())
        .collect();
    entries.sort();
    assert!(
        !entries.is_empty(),
        "seed corpus {} is empty",
        dir.display()
    );
    for path in &entries {
        let data = std::fs::read(path).expect("readable corpus file");
        body(&data);
    }
    println!("{target}: {} corpus inputs", entries.len());
}

#[test]
fn header_decode_corpus() {
    run_corpus("header_decode", sfstate_fuzz::header_decode);
}

#[test]
fn envelope_container_corpus() {
    run_corpus("envelope_container", sfstate_fuzz::envelope_container);
}

#[test]
fn sections_decode_corpus() {
    run_corpus("sections_decode", sfstate_fuzz::sections_decode);
}

#[test]
fn binary_row_read_corpus() {
    run_corpus("binary_row_read", sfstate_fuzz::binary_row_read);
}
