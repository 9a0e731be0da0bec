//! The golden vectors made by Flink 2.3.0's own classes (`testdata/flink-vectors`, schema in
//! its README): every input is fed to this crate and every output field is recomputed and
//! compared. A field the test does not read, an unknown `kind`, type string or serializer
//! fails the test. Run against another vector directory with `FLINK_VECTORS_DIR=<dir>`
//! (relative paths are taken from the workspace root).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use keygroup::{
    BinaryRow, BinaryRowDataSerializer, BinaryRowReader, CompositeKeyBuilder, IntSerializer,
    JavaHashCode, KeyGroup, KeyGroupRange, LogicalType, LongSerializer, MaxParallelism,
    NullEncoding, Parallelism, RowDataSerializer, RowKind, StateSerializer, StringSerializer,
    TableTimeWindowSerializer, TimeWindow, TimeWindowSerializer, Timestamp, Value, VoidNamespace,
    VoidNamespaceSerializer, assign_key_to_parallel_operator, assign_to_key_group,
    compute_default_max_parallelism, compute_key_group_for_key_hash,
    compute_key_group_range_for_operator_index, compute_operator_index_for_key_group,
    fixed_part_size, is_ambiguous_key_possible, murmur_hash,
};
use serde_json::Value as Json;

use crate::util::{Line, check_eq, hex, unhex};

/// `$FLINK_VECTORS_DIR`, or the committed copy. A relative path is taken from the workspace
/// root (cargo runs tests from the crate directory, not from where it was invoked).
fn vectors_dir() -> PathBuf {
    let root = crate::util::workspace_root();
    std::env::var_os("FLINK_VECTORS_DIR")
        .map_or_else(|| root.join("testdata/flink-vectors"), |dir| root.join(dir))
}

/// Row bytes of the `key_selector` lines of `binary_rows.jsonl`, by case id.
type KeySelectorRows = HashMap<String, Vec<u8>>;

#[test]
fn flink_vectors() {
    check_dir(&vectors_dir());
}

/// The extended set the project's own oracle made from Flink 2.3.0's jars
/// (`compat/flink-oracle`, `--extended`): invalid parallelisms, max parallelism 1 and 129,
/// wide rows, every TIMESTAMP precision, surrogate pairs, NaN payloads.
#[test]
fn flink_vectors_oracle_extended_set() {
    check_dir(&crate::util::workspace_root().join("testdata/flink-vectors-oracle"));
}

fn check_dir(dir: &Path) {
    let dir = dir.to_path_buf();
    let mut failures = Vec::new();
    let mut key_rows = KeySelectorRows::new();
    check_file(&dir, "murmur.jsonl", &mut failures, check_murmur);
    check_file(
        &dir,
        "keygroup_math.jsonl",
        &mut failures,
        check_keygroup_math,
    );
    check_file(&dir, "binary_rows.jsonl", &mut failures, |line| {
        check_binary_row(line, &mut key_rows)
    });
    // After binary_rows: rocksdb_keys refers to its key_selector rows.
    check_file(&dir, "rocksdb_keys.jsonl", &mut failures, |line| {
        check_rocksdb_key(line, &key_rows)
    });
    assert!(
        failures.is_empty(),
        "{} vector failures, the first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(25)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Checks every line of one file, collecting failures; a missing or empty file is one.
fn check_file(
    dir: &Path,
    name: &str,
    failures: &mut Vec<String>,
    mut check: impl FnMut(&Line<'_>) -> Result<(), String>,
) {
    let path = dir.join(name);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) => {
            failures.push(format!("{}: cannot read: {err}", path.display()));
            return;
        }
    };
    let mut checked = 0;
    for (number, raw) in text.lines().enumerate() {
        let result = serde_json::from_str::<Json>(raw)
            .map_err(|e| e.to_string())
            .and_then(|json| {
                let line = Line::new(&json)?;
                check(&line)?;
                line.finish()
            });
        match result {
            Ok(()) => checked += 1,
            Err(err) => failures.push(format!("{name}:{}: {err}", number + 1)),
        }
    }
    if text.lines().next().is_none() {
        failures.push(format!("{name}: no vectors"));
    }
    println!("{name}: {checked} vectors checked");
}

fn check_murmur(line: &Line<'_>) -> Result<(), String> {
    check_eq(
        "murmur",
        line.i32("murmur")?,
        murmur_hash(line.i32("code")?),
    )
}

fn max_parallelism(line: &Line<'_>) -> Result<MaxParallelism, String> {
    MaxParallelism::new(line.i32("max_parallelism")?).map_err(|e| e.to_string())
}

fn parallelism(line: &Line<'_>) -> Result<Parallelism, String> {
    Parallelism::new(line.i32("parallelism")?).map_err(|e| e.to_string())
}

/// The `error` field against a result: the Java exception Flink threw, or null.
fn check_error<T>(line: &Line<'_>, result: &keygroup::Result<T>) -> Result<(), String> {
    let actual = match result {
        Ok(_) => None,
        Err(err) => Some(
            err.flink_exception()
                .ok_or_else(|| format!("error {err:?} has no Flink exception"))?,
        ),
    };
    check_eq("error", line.opt_str("error")?, actual.as_deref())
}

fn check_keygroup_math(line: &Line<'_>) -> Result<(), String> {
    match line.str("kind")? {
        "default_max_parallelism" => {
            let result =
                Parallelism::new(line.i32("parallelism")?).map(compute_default_max_parallelism);
            check_error(line, &result)?;
            check_eq(
                "default_max_parallelism",
                line.opt_i32("default_max_parallelism")?,
                result.ok().map(MaxParallelism::get),
            )
        }
        "range" => {
            // Flink's order: parallelism, then max parallelism, then mp >= p, then the range.
            let (mp, index) = (line.i32("max_parallelism")?, line.i32("operator_index")?);
            let result = Parallelism::new(line.i32("parallelism")?).and_then(|p| {
                compute_key_group_range_for_operator_index(MaxParallelism::new(mp)?, p, index)
            });
            check_error(line, &result)?;
            let range = result.ok();
            check_eq(
                "start",
                line.opt_i32("start")?,
                range.map(KeyGroupRange::start),
            )?;
            check_eq("end", line.opt_i32("end")?, range.map(KeyGroupRange::end))?;
            check_eq(
                "number_of_key_groups",
                line.opt_i32("number_of_key_groups")?,
                range.map(KeyGroupRange::number_of_key_groups),
            )?;
            if let Some(range) = range {
                check_eq("iteration", range.len(), range.iter().count())?;
            }
            Ok(())
        }
        "operator_index" => {
            let key_group = KeyGroup::new(line.i32("key_group")?).map_err(|e| e.to_string())?;
            check_eq(
                "operator_index",
                line.i32("operator_index")?,
                compute_operator_index_for_key_group(
                    max_parallelism(line)?,
                    parallelism(line)?,
                    key_group,
                ),
            )
        }
        "key_hash" => check_eq(
            "key_group",
            line.i32("key_group")?,
            compute_key_group_for_key_hash(line.i32("key_hash")?, max_parallelism(line)?).get(),
        ),
        "key" => {
            let key = line.get("key")?;
            match line.str("key_type")? {
                "Integer" => {
                    let key = key
                        .as_i64()
                        .and_then(|k| i32::try_from(k).ok())
                        .ok_or("key: not an int")?;
                    check_datastream_key(line, &key)
                }
                "Long" => check_datastream_key(line, &key.as_i64().ok_or("key: not a long")?),
                "String" => check_datastream_key(line, key.as_str().ok_or("key: not a string")?),
                other => Err(format!("unknown key_type {other:?}")),
            }
        }
        other => Err(format!("unknown kind {other:?}")),
    }
}

fn check_datastream_key<K: JavaHashCode + ?Sized>(line: &Line<'_>, key: &K) -> Result<(), String> {
    let mp = max_parallelism(line)?;
    check_eq(
        "java_hash_code",
        line.i32("java_hash_code")?,
        key.java_hash_code(),
    )?;
    check_eq(
        "murmur",
        line.i32("murmur")?,
        murmur_hash(key.java_hash_code()),
    )?;
    check_eq(
        "key_group",
        line.i32("key_group")?,
        assign_to_key_group(key, mp).get(),
    )?;
    check_eq(
        "operator_index",
        line.i32("operator_index")?,
        assign_key_to_parallel_operator(key, mp, parallelism(line)?),
    )
}

fn parse_types(json: &Json) -> Result<Vec<LogicalType>, String> {
    json.as_array()
        .ok_or("types: not an array")?
        .iter()
        .map(|t| {
            let text = t.as_str().ok_or("type: not a string")?;
            let ty: LogicalType = text.parse().map_err(|e: keygroup::Error| e.to_string())?;
            // Display gives Flink's summary spelling, which parses back to the same type.
            let again: LogicalType = ty
                .to_string()
                .parse()
                .map_err(|e: keygroup::Error| e.to_string())?;
            check_eq(
                &format!("type {text:?} printed and parsed again"),
                ty,
                again,
            )?;
            Ok(ty)
        })
        .collect()
}

fn parse_values(types: &[LogicalType], json: &Json) -> Result<Vec<Value>, String> {
    let values = json.as_array().ok_or("values: not an array")?;
    check_eq("number of values", types.len(), values.len())?;
    types
        .iter()
        .zip(values)
        .map(|(ty, v)| json_to_value(*ty, v))
        .collect()
}

/// A field value in the vectors' JSON form (README "Value JSON form").
fn json_to_value(ty: LogicalType, json: &Json) -> Result<Value, String> {
    if json.is_null() {
        return Ok(Value::Null);
    }
    let int = || {
        json.as_i64()
            .ok_or_else(|| format!("{ty}: not an integer: {json}"))
    };
    let text = || {
        json.as_str()
            .ok_or_else(|| format!("{ty}: not a string: {json}"))
    };
    let narrow = |v: i64| format!("{ty}: {v} out of range");
    Ok(match ty {
        LogicalType::Boolean => Value::Boolean(json.as_bool().ok_or("BOOLEAN: not a bool")?),
        LogicalType::TinyInt => {
            Value::TinyInt(i8::try_from(int()?).map_err(|_| narrow(int().unwrap_or_default()))?)
        }
        LogicalType::SmallInt => {
            Value::SmallInt(i16::try_from(int()?).map_err(|_| narrow(int().unwrap_or_default()))?)
        }
        LogicalType::Int => {
            Value::Int(i32::try_from(int()?).map_err(|_| narrow(int().unwrap_or_default()))?)
        }
        LogicalType::Date => {
            Value::Date(i32::try_from(int()?).map_err(|_| narrow(int().unwrap_or_default()))?)
        }
        LogicalType::Time { .. } => {
            Value::Time(i32::try_from(int()?).map_err(|_| narrow(int().unwrap_or_default()))?)
        }
        LogicalType::BigInt => Value::BigInt(int()?),
        LogicalType::Float => {
            let bits = float_bits(json, 8)?;
            let value = f32::from_bits(u32::try_from(bits).map_err(|_| "FLOAT bits")?);
            let display: f32 = java_float_display(json)?
                .parse()
                .map_err(|_| "FLOAT display")?;
            check_display(
                f64::from(value),
                f64::from(display),
                bits,
                u64::from(display.to_bits()),
            )?;
            Value::Float(value)
        }
        LogicalType::Double => {
            let bits = float_bits(json, 16)?;
            let value = f64::from_bits(bits);
            let display: f64 = java_float_display(json)?
                .parse()
                .map_err(|_| "DOUBLE display")?;
            check_display(value, display, bits, display.to_bits())?;
            Value::Double(value)
        }
        LogicalType::Decimal { scale, .. } => Value::Decimal {
            unscaled: parse_plain_decimal(text()?, scale)?,
            scale,
        },
        LogicalType::Char { .. } | LogicalType::VarChar { .. } => Value::String(text()?.to_owned()),
        LogicalType::Binary { .. } | LogicalType::VarBinary { .. } => {
            Value::Binary(unhex(text()?)?)
        }
        LogicalType::Timestamp { .. } => Value::Timestamp(json_timestamp(json)?),
        LogicalType::TimestampLtz { .. } => Value::TimestampLtz(json_timestamp(json)?),
        other => return Err(format!("no JSON value form for {other}")),
    })
}

/// The `bits` of a FLOAT/DOUBLE object (`digits` hex digits); the object may have only `bits`
/// and `display`.
fn float_bits(json: &Json, digits: usize) -> Result<u64, String> {
    let object = json.as_object().ok_or("float: not an object")?;
    if object.keys().any(|k| k != "bits" && k != "display") {
        return Err(format!("float: unknown field in {json}"));
    }
    let bits = object
        .get("bits")
        .and_then(Json::as_str)
        .ok_or("float: no bits")?;
    check_eq("float bits digits", digits, bits.len())?;
    u64::from_str_radix(bits, 16).map_err(|_| format!("float: bad bits {bits:?}"))
}

/// `Float.toString` / `Double.toString` in Rust's float syntax.
fn java_float_display(json: &Json) -> Result<String, String> {
    let display = json
        .get("display")
        .and_then(Json::as_str)
        .ok_or("float: no display")?;
    Ok(display.replace("Infinity", "inf"))
}

/// `display` must denote the value: the same NaN-ness, or a float at most one unit in the last
/// place away (Java 17's `toString` is not always the shortest round-trip form).
fn check_display(value: f64, display: f64, bits: u64, display_bits: u64) -> Result<(), String> {
    let close = if value.is_nan() {
        display.is_nan()
    } else {
        bits.abs_diff(display_bits) <= 1
    };
    if close {
        Ok(())
    } else {
        Err(format!("float display {display} does not match {value}"))
    }
}

/// `BigDecimal.toPlainString()` with exactly `scale` fraction digits, as an unscaled value.
fn parse_plain_decimal(text: &str, scale: u8) -> Result<i128, String> {
    let (int_part, frac) = text.split_once('.').unwrap_or((text, ""));
    check_eq(
        &format!("fraction digits of {text:?}"),
        usize::from(scale),
        frac.len(),
    )?;
    let digits = format!("{int_part}{frac}");
    digits.parse().map_err(|_| format!("bad decimal {text:?}"))
}

fn json_timestamp(json: &Json) -> Result<Timestamp, String> {
    let object = json.as_object().ok_or("timestamp: not an object")?;
    if object
        .keys()
        .any(|k| !["millis", "nanoOfMilli", "iso"].contains(&k.as_str()))
    {
        return Err(format!("timestamp: unknown field in {json}"));
    }
    let millis = object
        .get("millis")
        .and_then(Json::as_i64)
        .ok_or("timestamp: no millis")?;
    let nanos = object
        .get("nanoOfMilli")
        .and_then(Json::as_u64)
        .ok_or("timestamp: no nanoOfMilli")?;
    let nanos = u32::try_from(nanos).map_err(|_| "timestamp: nanoOfMilli")?;
    let ts = Timestamp::new(millis, nanos).map_err(|e| e.to_string())?;
    let iso = object
        .get("iso")
        .and_then(Json::as_str)
        .ok_or("timestamp: no iso")?;
    check_eq("timestamp iso", iso, java_local_date_time(ts).as_str())?;
    Ok(ts)
}

/// `TimestampData.toString()`, i.e. `LocalDateTime.toString()` of the UTC wall clock.
fn java_local_date_time(ts: Timestamp) -> String {
    let days = ts.millis.div_euclid(86_400_000);
    let millis_of_day = ts.millis.rem_euclid(86_400_000);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let year = if year.abs() < 1000 {
        format!("{}{:04}", if year < 0 { "-" } else { "" }, year.abs())
    } else if year > 9999 {
        format!("+{year}")
    } else {
        year.to_string()
    };
    let (hour, minute) = (millis_of_day / 3_600_000, millis_of_day / 60_000 % 60);
    let second = millis_of_day / 1000 % 60;
    let nano = (millis_of_day % 1000) * 1_000_000 + i64::from(ts.nano_of_milli);
    let mut out = format!("{year}-{month:02}-{day:02}T{hour:02}:{minute:02}");
    if second > 0 || nano > 0 {
        let _ = write!(out, ":{second:02}");
        let _ = match nano {
            0 => Ok(()),
            n if n % 1_000_000 == 0 => write!(out, ".{:03}", n / 1_000_000),
            n if n % 1000 == 0 => write!(out, ".{:06}", n / 1000),
            n => write!(out, ".{n:09}"),
        };
    }
    out
}

fn row_kind(name: &str) -> Result<RowKind, String> {
    [
        RowKind::Insert,
        RowKind::UpdateBefore,
        RowKind::UpdateAfter,
        RowKind::Delete,
    ]
    .into_iter()
    .find(|k| k.name() == name)
    .ok_or_else(|| format!("unknown row_kind {name:?}"))
}

fn serialized<T: ?Sized>(
    serializer: &impl StateSerializer<T>,
    value: &T,
) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    serializer
        .serialize(value, &mut out)
        .map_err(|e| e.to_string())?;
    Ok(out)
}

fn check_binary_row(line: &Line<'_>, key_rows: &mut KeySelectorRows) -> Result<(), String> {
    let case = line.str("case")?;
    let path = line.str("path")?;
    check_eq("id", line.str("id")?, format!("{case}/{path}").as_str())?;
    line.str("note")?; // free text describing the case
    let types = parse_types(line.get("types")?)?;
    let values = parse_values(&types, line.get("values")?)?;
    let input_kind = row_kind(line.str("row_kind")?)?;
    let (kind, nulls) = match path {
        "writer" => (input_kind, NullEncoding::KeySelector),
        "row_data_serializer" => (input_kind, NullEncoding::RowDataSerializer),
        // The key selector writes INSERT whatever the input row's kind.
        "key_selector" => (RowKind::Insert, NullEncoding::KeySelector),
        other => return Err(format!("unknown path {other:?}")),
    };
    let row =
        BinaryRow::from_values_with(kind, &types, &values, nulls).map_err(|e| e.to_string())?;
    let bytes = row.as_bytes();
    line.check_hex("row_hex", bytes)?;
    check_eq("header_byte", line.i64("header_byte")?, i64::from(bytes[0]))?;
    check_eq(
        "header_byte kind",
        line.i64("header_byte")?,
        i64::from(row.row_kind().to_byte()),
    )?;
    check_eq("arity", line.usize("arity")?, row.arity())?;
    check_eq(
        "fixed_part_size",
        line.usize("fixed_part_size")?,
        fixed_part_size(row.arity()),
    )?;
    check_eq(
        "size_in_bytes",
        line.usize("size_in_bytes")?,
        row.size_in_bytes(),
    )?;
    check_eq("hash_code", line.i32("hash_code")?, row.hash_code())?;
    let key_groups = line
        .get("key_groups")?
        .as_object()
        .ok_or("key_groups: not an object")?;
    if key_groups.is_empty() {
        return Err("key_groups: empty".into());
    }
    for (mp, kg) in key_groups {
        let mp = MaxParallelism::new(mp.parse().map_err(|_| format!("key_groups: key {mp:?}"))?)
            .map_err(|e| e.to_string())?;
        let kg = kg.as_i64().ok_or("key_groups: value not an integer")?;
        check_eq(
            &format!("key_groups[{mp}]"),
            kg,
            i64::from(row.key_group(mp).get()),
        )?;
        check_eq(
            &format!("assign_to_key_group[{mp}]"),
            kg,
            i64::from(assign_to_key_group(&row, mp).get()),
        )?;
    }
    let serialized_row = serialized(&BinaryRowDataSerializer, bytes)?;
    line.check_hex("serialized_hex", &serialized_row)?;
    check_eq(
        "RowDataSerializer bytes",
        hex(&serialized_row),
        hex(&serialized(&RowDataSerializer, bytes)?),
    )?;
    // Decode Flink's bytes with the reader: the values and the kind must come back.
    let flink_bytes = line.hex("row_hex")?;
    let reader = BinaryRowReader::new(&types, &flink_bytes).map_err(|e| e.to_string())?;
    check_eq("decoded row kind", kind, reader.row_kind())?;
    check_eq(
        "decoded values",
        &values,
        &reader.read_all().map_err(|e| e.to_string())?,
    )?;
    if path == "key_selector" {
        key_rows.insert(case.to_owned(), bytes.to_vec());
    }
    Ok(())
}

/// A state key (or map-state user key) of a `rocksdb_keys.jsonl` line.
enum KeyValue {
    Int(i32),
    Long(i64),
    Str(String),
    Row(BinaryRow),
}

impl KeyValue {
    /// Reads `<prefix>kind`, `<prefix>` (the value), `<prefix>row_types`, `<prefix>row_hex`.
    /// Row keys are built as the key selector builds them and must equal the row bytes.
    fn parse(line: &Line<'_>, prefix: &str) -> Result<Self, String> {
        let value = line.get(prefix.trim_end_matches('_'))?;
        let row_types = line.get(&format!("{prefix}row_types"))?;
        let row_hex = format!("{prefix}row_hex");
        let kind = line.str(&format!("{prefix}kind"))?;
        if kind != "row" && (!row_types.is_null() || !line.is_null(&row_hex)?) {
            return Err(format!("{prefix}: row fields set for kind {kind:?}"));
        }
        Ok(match kind {
            "int" => Self::Int(
                value
                    .as_i64()
                    .and_then(|v| i32::try_from(v).ok())
                    .ok_or("int key")?,
            ),
            "long" => Self::Long(value.as_i64().ok_or("long key")?),
            "string" => Self::Str(value.as_str().ok_or("string key")?.to_owned()),
            "row" => {
                let types = parse_types(row_types)?;
                let values = parse_values(&types, value)?;
                let row = BinaryRow::from_values(&types, &values).map_err(|e| e.to_string())?;
                line.check_hex(&row_hex, row.as_bytes())?;
                Self::Row(row)
            }
            other => return Err(format!("unknown {prefix}kind {other:?}")),
        })
    }

    fn hash_code(&self) -> i32 {
        match self {
            Self::Int(v) => v.java_hash_code(),
            Self::Long(v) => v.java_hash_code(),
            Self::Str(v) => v.java_hash_code(),
            Self::Row(v) => v.java_hash_code(),
        }
    }
}

/// A namespace of a `rocksdb_keys.jsonl` line.
enum Namespace {
    Void,
    Window(TimeWindow),
    Long(i64),
    Str(String),
}

fn check_rocksdb_key(line: &Line<'_>, key_rows: &KeySelectorRows) -> Result<(), String> {
    line.str("id")?; // a line label
    let mp = max_parallelism(line)?;
    check_eq(
        "key_group_prefix_bytes",
        line.usize("key_group_prefix_bytes")?,
        mp.key_group_prefix_bytes(),
    )?;
    let key = KeyValue::parse(line, "key_")?;
    check_eq("key_hash_code", line.i32("key_hash_code")?, key.hash_code())?;
    let key_group = compute_key_group_for_key_hash(key.hash_code(), mp);
    check_eq("key_group", line.i32("key_group")?, key_group.get())?;
    match (line.opt_str("key_row_case")?, &key) {
        (Some(case), KeyValue::Row(row)) => {
            let selector_row = key_rows.get(case).ok_or_else(|| {
                format!("key_row_case {case:?} has no key_selector line in binary_rows.jsonl")
            })?;
            check_eq(
                "key row vs binary_rows",
                hex(selector_row),
                hex(row.as_bytes()),
            )?;
        }
        (None, KeyValue::Row(_)) => return Err("row key without key_row_case".into()),
        (Some(_), _) => return Err("key_row_case set for a non-row key".into()),
        (None, _) => {}
    }
    let namespace = match line.str("namespace_kind")? {
        "void" if line.is_null("namespace")? => Namespace::Void,
        "time_window" => {
            let ns = line.get("namespace")?;
            let field = |name: &str| {
                ns.get(name)
                    .and_then(Json::as_i64)
                    .ok_or(format!("namespace.{name}"))
            };
            if ns.as_object().is_none_or(|o| o.len() != 2) {
                return Err(format!("namespace: unexpected {ns}"));
            }
            Namespace::Window(TimeWindow {
                start: field("start")?,
                end: field("end")?,
            })
        }
        "long" => Namespace::Long(line.i64("namespace")?),
        "string" => Namespace::Str(line.str("namespace")?.to_owned()),
        other => {
            return Err(format!(
                "unknown namespace_kind {other:?} (or a void namespace with a value)"
            ));
        }
    };
    let user_key = if line.is_null("user_key_serializer")? {
        for field in [
            "user_key_kind",
            "user_key",
            "user_key_row_types",
            "user_key_row_hex",
            "user_key_serialized_hex",
            "composite_key_namespace_user_key_hex",
        ] {
            if !line.is_null(field)? {
                return Err(format!("{field} set without a user key serializer"));
            }
        }
        None
    } else {
        Some(KeyValue::parse(line, "user_key_")?)
    };
    let key_serializer = line.str("key_serializer")?;
    let key_group = mp.key_group(key_group.get()).map_err(|e| e.to_string())?;
    let ctx = Ctx {
        line,
        mp,
        key_group,
        namespace: &namespace,
        user_key: user_key.as_ref(),
    };
    match (key_serializer, &key) {
        ("IntSerializer", KeyValue::Int(k)) => ctx.with_key(IntSerializer, k),
        ("LongSerializer", KeyValue::Long(k)) => ctx.with_key(LongSerializer, k),
        ("StringSerializer", KeyValue::Str(k)) => ctx.with_key(StringSerializer, k.as_str()),
        ("RowDataSerializer", KeyValue::Row(k)) => ctx.with_key(RowDataSerializer, k.as_bytes()),
        ("BinaryRowDataSerializer", KeyValue::Row(k)) => {
            ctx.with_key(BinaryRowDataSerializer, k.as_bytes())
        }
        (other, _) => Err(format!("unknown key serializer {other:?} for its key kind")),
    }
}

/// The parts of a `rocksdb_keys.jsonl` line, while the serializers are dispatched one level
/// at a time (key, namespace, user key).
struct Ctx<'l, 'a> {
    line: &'l Line<'a>,
    mp: MaxParallelism,
    key_group: KeyGroup,
    namespace: &'l Namespace,
    user_key: Option<&'l KeyValue>,
}

impl Ctx<'_, '_> {
    fn with_key<K: ?Sized, S: StateSerializer<K>>(
        &self,
        serializer: S,
        key: &K,
    ) -> Result<(), String> {
        self.line
            .check_hex("key_serialized_hex", &serialized(&serializer, key)?)?;
        let mut builder = CompositeKeyBuilder::new(&serializer, self.mp);
        check_eq(
            "builder prefix bytes",
            self.mp.key_group_prefix_bytes(),
            builder.key_group_prefix_bytes(),
        )?;
        builder
            .set_key_and_key_group(key, self.key_group)
            .map_err(|e| e.to_string())?;
        self.line
            .check_hex("key_group_and_key_hex", builder.build())?;
        let ns_serializer = self.line.str("namespace_serializer")?;
        match (ns_serializer, self.namespace) {
            ("VoidNamespaceSerializer", Namespace::Void) => {
                self.with_namespace(&mut builder, &VoidNamespaceSerializer, &VoidNamespace)
            }
            ("TimeWindow.Serializer", Namespace::Window(w)) => {
                self.with_namespace(&mut builder, &TimeWindowSerializer, w)
            }
            ("table.TimeWindow.Serializer", Namespace::Window(w)) => {
                self.with_namespace(&mut builder, &TableTimeWindowSerializer, w)
            }
            ("LongSerializer", Namespace::Long(n)) => {
                self.with_namespace(&mut builder, &LongSerializer, n)
            }
            ("StringSerializer", Namespace::Str(n)) => {
                self.with_namespace(&mut builder, &StringSerializer, n.as_str())
            }
            (other, _) => Err(format!(
                "unknown namespace serializer {other:?} for its namespace kind"
            )),
        }
    }

    /// `builder` holds the key; its key serializer `S` serializes `K`.
    fn with_namespace<K: ?Sized, S: StateSerializer<K>, N: ?Sized>(
        &self,
        builder: &mut CompositeKeyBuilder<&S>,
        serializer: &impl StateSerializer<N>,
        namespace: &N,
    ) -> Result<(), String> {
        self.line.check_hex(
            "namespace_serialized_hex",
            &serialized(serializer, namespace)?,
        )?;
        check_eq(
            "ambiguous_key_possible",
            self.line.bool("ambiguous_key_possible")?,
            is_ambiguous_key_possible::<K, N>(builder.key_serializer(), serializer),
        )?;
        let key = builder
            .build_composite_key_namespace(namespace, serializer)
            .map_err(|e| e.to_string())?
            .to_vec();
        self.line.check_hex("composite_key_namespace_hex", &key)?;
        let Some(user_key) = self.user_key else {
            return Ok(());
        };
        let (uk_bytes, full) = match (self.line.str("user_key_serializer")?, user_key) {
            ("IntSerializer", KeyValue::Int(u)) => {
                with_user_key(builder, namespace, serializer, &IntSerializer, u)?
            }
            ("LongSerializer", KeyValue::Long(u)) => {
                with_user_key(builder, namespace, serializer, &LongSerializer, u)?
            }
            ("StringSerializer", KeyValue::Str(u)) => with_user_key(
                builder,
                namespace,
                serializer,
                &StringSerializer,
                u.as_str(),
            )?,
            ("RowDataSerializer", KeyValue::Row(u)) => with_user_key(
                builder,
                namespace,
                serializer,
                &RowDataSerializer,
                u.as_bytes(),
            )?,
            (other, _) => {
                return Err(format!(
                    "unknown user key serializer {other:?} for its user key kind"
                ));
            }
        };
        self.line.check_hex("user_key_serialized_hex", &uk_bytes)?;
        self.line
            .check_hex("composite_key_namespace_user_key_hex", &full)
    }
}

/// Builds the full map-state key twice (in one call, and through the reused namespace) and
/// returns the user key's own bytes and the composite key.
fn with_user_key<S, N: ?Sized, U: ?Sized>(
    builder: &mut CompositeKeyBuilder<S>,
    namespace: &N,
    namespace_serializer: &impl StateSerializer<N>,
    user_key_serializer: &impl StateSerializer<U>,
    user_key: &U,
) -> Result<(Vec<u8>, Vec<u8>), String> {
    let own = serialized(user_key_serializer, user_key)?;
    let full = builder
        .build_composite_key_namespace_user_key(
            namespace,
            namespace_serializer,
            user_key,
            user_key_serializer,
        )
        .map_err(|e| e.to_string())?
        .to_vec();
    let reused = builder
        .build_composite_key_user_key(user_key, user_key_serializer)
        .map_err(|e| e.to_string())?;
    check_eq("build_composite_key_user_key", hex(&full), hex(reused))?;
    Ok((own, full))
}
