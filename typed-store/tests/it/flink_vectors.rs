//! `memory_formulas.jsonl` made by Flink 2.3.0's `RocksDBMemoryControllerUtils`: every field
//! of every line is recomputed and compared; a line or field the test cannot check fails it.
//! Run against another directory with `FLINK_VECTORS_DIR=<dir>` (relative to the workspace
//! root).

use std::path::PathBuf;

use serde_json::Value;
use typed_store::{
    calculate_actual_cache_capacity, calculate_default_arena_block_size, calculate_mutable_limit,
    calculate_write_buffer_manager_capacity, validate_arena_block_size,
};

fn vectors_dir() -> PathBuf {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    std::env::var_os("FLINK_VECTORS_DIR").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../testdata/flink-vectors"
            ))
        },
        |dir| root.join(dir),
    )
}

/// Reads the fields of `line`, failing on any field not in `allowed`.
fn fields<'a>(
    line: &'a Value,
    allowed: &[&str],
) -> Result<&'a serde_json::Map<String, Value>, String> {
    let object = line.as_object().ok_or("not an object")?;
    if let Some(extra) = object.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!("unchecked field {extra:?}"));
    }
    for name in allowed {
        if !object.contains_key(*name) {
            return Err(format!("missing field {name:?}"));
        }
    }
    Ok(object)
}

fn int(object: &serde_json::Map<String, Value>, name: &str) -> Result<i64, String> {
    object
        .get(name)
        .and_then(Value::as_i64)
        .ok_or_else(|| format!("{name} is not an integer"))
}

/// The text of the number field `name` in the raw JSON line, parsed with Rust's correctly
/// rounded `f64` parser.
fn raw_number(raw: &str, name: &str) -> Result<f64, String> {
    let marker = format!("\"{name}\":");
    let start = raw
        .find(&marker)
        .ok_or_else(|| format!("no {name} in the line"))?
        + marker.len();
    let text: String = raw[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))
        .collect();
    text.parse::<f64>()
        .map_err(|e| format!("{name} {text:?}: {e}"))
}

fn check_line(raw: &str, line: &Value) -> Result<(), String> {
    match line.get("kind").and_then(Value::as_str) {
        Some("shared_resources") => {
            let o = fields(
                line,
                &[
                    "kind",
                    "total_memory",
                    "write_buffer_ratio_bits",
                    "write_buffer_ratio",
                    "cache_capacity",
                    "write_buffer_manager_capacity",
                ],
            )?;
            let total = int(o, "total_memory")?;
            let bits = o
                .get("write_buffer_ratio_bits")
                .and_then(Value::as_str)
                .ok_or("write_buffer_ratio_bits is not a string")?;
            let ratio = f64::from_bits(
                u64::from_str_radix(bits, 16).map_err(|e| format!("bad bits {bits}: {e}"))?,
            );
            if !o.get("write_buffer_ratio").is_some_and(Value::is_f64) {
                return Err("write_buffer_ratio is not a number".to_owned());
            }
            // serde_json's default float parser is not correctly rounded; Rust's is, so the
            // decimal is read from the raw text and must name exactly the bits.
            let decimal = raw_number(raw, "write_buffer_ratio")?;
            if decimal.to_bits() != ratio.to_bits() {
                return Err(format!("ratio {decimal} differs from its bits {bits}"));
            }
            let cache = calculate_actual_cache_capacity(total, ratio);
            let wbm = calculate_write_buffer_manager_capacity(total, ratio);
            if cache != int(o, "cache_capacity")? {
                return Err(format!("cache_capacity: got {cache}"));
            }
            if wbm != int(o, "write_buffer_manager_capacity")? {
                return Err(format!("write_buffer_manager_capacity: got {wbm}"));
            }
        }
        Some("write_buffer") => {
            let o = fields(
                line,
                &[
                    "kind",
                    "write_buffer_size",
                    "default_arena_block_size",
                    "mutable_limit",
                ],
            )?;
            let size = int(o, "write_buffer_size")?;
            let arena = calculate_default_arena_block_size(size);
            let limit = calculate_mutable_limit(size);
            if arena != int(o, "default_arena_block_size")? {
                return Err(format!("default_arena_block_size: got {arena}"));
            }
            if limit != int(o, "mutable_limit")? {
                return Err(format!("mutable_limit: got {limit}"));
            }
        }
        Some("validate_arena_block_size") => {
            let o = fields(
                line,
                &["kind", "arena_block_size", "mutable_limit", "valid"],
            )?;
            let valid = o
                .get("valid")
                .and_then(Value::as_bool)
                .ok_or("valid is not a boolean")?;
            let got =
                validate_arena_block_size(int(o, "arena_block_size")?, int(o, "mutable_limit")?);
            if got != valid {
                return Err(format!("valid: got {got}"));
            }
        }
        other => return Err(format!("unknown kind {other:?}")),
    }
    Ok(())
}

#[test]
fn flink_vectors_memory_formulas() {
    check_dir(&vectors_dir());
}

/// The extended set the project's own oracle made from Flink 2.3.0 (`compat/flink-oracle`).
#[test]
fn flink_vectors_memory_formulas_oracle_extended_set() {
    check_dir(&PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/flink-vectors-oracle"
    )));
}

fn check_dir(dir: &std::path::Path) {
    let path = dir.join("memory_formulas.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut failures = Vec::new();
    let mut checked = 0;
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let result = serde_json::from_str::<Value>(line)
            .map_err(|e| e.to_string())
            .and_then(|v| check_line(line, &v));
        match result {
            Ok(()) => checked += 1,
            Err(e) => failures.push(format!("line {}: {e}: {line}", number + 1)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked > 0, "no vectors in {}", path.display());
    println!("memory_formulas.jsonl: {checked} vectors checked");
}
