//! CRC32C equal to Java's `java.util.zip.CRC32C`, checked on the Flink 2.3.0 vector set.
//!
//! Reads `crc32c.jsonl` from `$FLINK_VECTORS_DIR` (default: the committed copy in
//! `testdata/flink-vectors`), checks every field of every line and fails on anything it
//! cannot check.

use std::path::PathBuf;

use serde_json::Value;

use crate::util::{splitmix_bytes, unhex};

/// `$FLINK_VECTORS_DIR`, or the committed copy. A relative path is taken from the workspace
/// root (cargo runs tests from the crate directory, not from where it was invoked).
fn vectors_dir() -> PathBuf {
    let root = crate::util::workspace_root();
    std::env::var_os("FLINK_VECTORS_DIR")
        .map_or_else(|| root.join("testdata/flink-vectors"), |dir| root.join(dir))
}

fn field<'a>(line: &'a Value, name: &str, at: &str) -> &'a Value {
    line.get(name)
        .unwrap_or_else(|| panic!("{at}: missing field {name:?}"))
}

fn check_line(line: &Value, at: &str) {
    let obj = line
        .as_object()
        .unwrap_or_else(|| panic!("{at}: not an object"));
    for key in obj.keys() {
        assert!(
            ["id", "len", "data_hex", "prng", "crc32c"].contains(&key.as_str()),
            "{at}: unknown field {key:?}"
        );
    }
    let id = field(line, "id", at).as_str().expect("id is a string");
    let at = format!("{at} ({id})");
    let len = usize::try_from(field(line, "len", &at).as_u64().expect("len is an integer"))
        .expect("len fits usize");
    let expected = u32::try_from(field(line, "crc32c", &at).as_u64().expect("crc32c is u32"))
        .expect("crc32c fits u32");
    let data = match (field(line, "data_hex", &at), field(line, "prng", &at)) {
        (Value::String(hex), Value::Null) => unhex(hex),
        (Value::Null, Value::Object(prng)) => {
            assert_eq!(prng.len(), 3, "{at}: unexpected prng fields {prng:?}");
            assert_eq!(prng["algo"], "splitmix64", "{at}: unknown generator");
            let seed = prng["seed"].as_str().expect("seed is a string");
            let seed = u64::from_str_radix(seed.trim_start_matches("0x"), 16).expect("hex seed");
            let data = splitmix_bytes(seed, len);
            let first = unhex(prng["first_16_bytes_hex"].as_str().expect("hex string"));
            assert_eq!(
                &data[..first.len()],
                &first[..],
                "{at}: generator check bytes differ"
            );
            data
        }
        other => panic!("{at}: need exactly one of data_hex and prng, got {other:?}"),
    };
    assert_eq!(data.len(), len, "{at}: len");
    assert_eq!(crc32c::crc32c(&data), expected, "{at}: crc32c");
    // The envelope's checksum is that same value, whatever the chunking.
    let env = sfcs_format::Envelope::encode("op", None, &data).expect("encodes");
    assert_eq!(env.header().crc32c(), expected, "{at}: envelope crc32c");
    let chunks = env.chunks().map(Some);
    let (_, payload) =
        sfcs_format::decode_to_vec(env.header_bytes(), "op", chunks).expect("decodes");
    assert_eq!(payload, data, "{at}: payload round trip");
}

#[test]
fn crc32c_equals_java_on_flink_vectors() {
    check_dir(&vectors_dir());
}

/// The extended set the project's own oracle made on Java 17 (`compat/flink-oracle`).
#[test]
fn crc32c_equals_java_on_flink_vectors_oracle_extended_set() {
    check_dir(&crate::util::workspace_root().join("testdata/flink-vectors-oracle"));
}

fn check_dir(dir: &std::path::Path) {
    let path = dir.join("crc32c.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut checked = 0;
    for (n, raw) in text.lines().enumerate() {
        let at = format!("crc32c.jsonl:{}", n + 1);
        let line: Value = serde_json::from_str(raw).unwrap_or_else(|e| panic!("{at}: {e}"));
        check_line(&line, &at);
        checked += 1;
    }
    assert!(checked > 0, "crc32c.jsonl has no vectors");
    println!("crc32c.jsonl: {checked} vectors checked");
}

#[test]
fn crc32c_check_value() {
    assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
}
