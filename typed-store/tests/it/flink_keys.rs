//! Namespaces: value-state and map-state keys built with keygroup's `CompositeKeyBuilder`
//! (void namespace, `TimeWindow`, a `Long` slice end, …) and written through a keyed table
//! and a map table are, byte for byte in RocksDB, the keys Flink 2.3.0's RocksDB backend
//! builds: every line of `rocksdb_keys.jsonl` is checked (`composite_key_namespace_hex` for
//! value state, `composite_key_namespace_user_key_hex` for map state).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use keygroup::{
    BinaryRowDataSerializer, CompositeKeyBuilder, IntSerializer, KeyGroup, LongSerializer,
    MaxParallelism, RowDataSerializer, StateSerializer, StringSerializer,
    TableTimeWindowSerializer, TimeWindow, TimeWindowSerializer, VoidNamespace,
    VoidNamespaceSerializer,
};
use serde_json::Value;
use state_api::{
    I64Codec, KeyedStateStore, KeyedTable, ManualClock, MapHydration, MapStateStore, MapTable,
    StoreConfig,
};
use typed_store::{RocksSlot, RocksStore};

use crate::util::{raw_entries, table_cf};

fn vectors_file() -> PathBuf {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let dir = std::env::var_os("FLINK_VECTORS_DIR")
        .map_or_else(|| root.join("testdata/flink-vectors"), |d| root.join(d));
    dir.join("rocksdb_keys.jsonl")
}

fn hex(text: &str) -> Result<Vec<u8>, String> {
    if !text.len().is_multiple_of(2) {
        return Err(format!("odd hex length: {text}"));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(|e| e.to_string()))
        .collect()
}

fn field<'a>(line: &'a Value, name: &str) -> Result<&'a Value, String> {
    line.get(name).ok_or_else(|| format!("no field {name}"))
}

fn text<'a>(line: &'a Value, name: &str) -> Result<&'a str, String> {
    field(line, name)?
        .as_str()
        .ok_or_else(|| format!("{name} is not a string"))
}

/// What a line's key (or user key) is, as the builder takes it.
enum Part {
    Int(i32),
    Long(i64),
    Str(String),
    Row(Vec<u8>),
}

/// The key (`prefix = "key"`) or user key (`"user_key"`) of a line.
fn part(line: &Value, prefix: &str) -> Result<Part, String> {
    let kind = text(line, &format!("{prefix}_kind"))?;
    let value = field(line, prefix)?;
    Ok(match kind {
        "int" => Part::Int(
            value
                .as_i64()
                .and_then(|v| i32::try_from(v).ok())
                .ok_or("int value")?,
        ),
        "long" => Part::Long(value.as_i64().ok_or("long value")?),
        "string" => Part::Str(value.as_str().ok_or("string value")?.to_owned()),
        // The BinaryRowData bytes Flink's key selector made (keygroup's own vector test
        // proves the row writer builds the same bytes from the values).
        "row" => Part::Row(hex(text(line, &format!("{prefix}_row_hex"))?)?),
        other => return Err(format!("unknown kind {other}")),
    })
}

/// Appends a serialized value to the buffer it is given.
type Serialize<'s> = dyn FnMut(&mut Vec<u8>) -> keygroup::Result<()> + 's;

/// Gets a part's serializing closure and whether its serializer is variable-length.
type WithSerialized<'f, R> = dyn FnMut(&mut Serialize<'_>, bool) -> R + 'f;

/// A line's builder inputs: key group, max parallelism, value-state key, map-state key.
type Built = (KeyGroup, MaxParallelism, Vec<u8>, Option<Vec<u8>>);

/// Per max parallelism: (key group, value-state key, map-state key, line id).
type Rows = BTreeMap<i32, Vec<(KeyGroup, Vec<u8>, Option<Vec<u8>>, String)>>;

/// Serializes `part` with the serializer named `name` and hands the builder-ready value on.
fn with_part<R>(name: &str, part: &Part, f: &mut WithSerialized<'_, R>) -> Result<R, String> {
    fn go<T: ?Sized, S: StateSerializer<T>, R>(s: &S, v: &T, f: &mut WithSerialized<'_, R>) -> R {
        f(&mut |out| s.serialize(v, out), s.fixed_length().is_none())
    }
    Ok(match (name, part) {
        ("IntSerializer", Part::Int(v)) => go(&IntSerializer, v, f),
        ("LongSerializer", Part::Long(v)) => go(&LongSerializer, v, f),
        ("StringSerializer", Part::Str(v)) => go(&StringSerializer, v.as_str(), f),
        ("RowDataSerializer", Part::Row(v)) => go(&RowDataSerializer, v.as_slice(), f),
        ("BinaryRowDataSerializer", Part::Row(v)) => go(&BinaryRowDataSerializer, v.as_slice(), f),
        (other, _) => return Err(format!("serializer {other} does not fit its value")),
    })
}

/// A serializer adapter over pre-serialized bytes, so one builder type serves every key
/// serializer of the file: `fixed_length` is what the real serializer says (it decides
/// whether the builder writes the ambiguity lengths), `serialize` appends the bytes the real
/// serializer wrote.
struct Serialized {
    variable: bool,
}

impl StateSerializer<[u8]> for Serialized {
    fn fixed_length(&self) -> Option<usize> {
        if self.variable { None } else { Some(0) }
    }

    fn serialize(&self, value: &[u8], out: &mut Vec<u8>) -> keygroup::Result<()> {
        out.extend_from_slice(value);
        Ok(())
    }
}

/// (value-state key, map-state key) as `CompositeKeyBuilder` builds them for `line`.
fn build(line: &Value) -> Result<Built, String> {
    let mp = MaxParallelism::new(
        i32::try_from(field(line, "max_parallelism")?.as_i64().ok_or("mp")?)
            .map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let key_group = mp
        .key_group(
            i32::try_from(field(line, "key_group")?.as_i64().ok_or("key group")?)
                .map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
    let key = part(line, "key")?;
    let (key_bytes, key_variable) = with_part(
        text(line, "key_serializer")?,
        &key,
        &mut |serialize, variable| {
            let mut out = Vec::new();
            serialize(&mut out).map(|()| (out, variable))
        },
    )?
    .map_err(|e| e.to_string())?;
    let mut builder = CompositeKeyBuilder::new(
        Serialized {
            variable: key_variable,
        },
        mp,
    );
    builder
        .set_key_and_key_group(key_bytes.as_slice(), key_group)
        .map_err(|e| e.to_string())?;
    let ns = field(line, "namespace")?;
    let window = || -> Result<TimeWindow, String> {
        Ok(TimeWindow {
            start: ns.get("start").and_then(Value::as_i64).ok_or("start")?,
            end: ns.get("end").and_then(Value::as_i64).ok_or("end")?,
        })
    };
    let set = match text(line, "namespace_serializer")? {
        "VoidNamespaceSerializer" => {
            builder.set_namespace(&VoidNamespace, &VoidNamespaceSerializer)
        }
        "TimeWindow.Serializer" => builder.set_namespace(&window()?, &TimeWindowSerializer),
        "table.TimeWindow.Serializer" => {
            builder.set_namespace(&window()?, &TableTimeWindowSerializer)
        }
        "LongSerializer" => builder.set_namespace(&ns.as_i64().ok_or("long ns")?, &LongSerializer),
        "StringSerializer" => {
            builder.set_namespace(ns.as_str().ok_or("string ns")?, &StringSerializer)
        }
        other => return Err(format!("unknown namespace serializer {other}")),
    };
    set.map_err(|e| e.to_string())?;
    let value_key = builder.build().to_vec();
    let map_key = match field(line, "user_key_serializer")?.as_str() {
        None => None,
        Some(serializer) => {
            let user_key = part(line, "user_key")?;
            let bytes = with_part(serializer, &user_key, &mut |serialize, _| {
                let mut out = Vec::new();
                serialize(&mut out).map(|()| out)
            })?
            .map_err(|e| e.to_string())?;
            Some(
                builder
                    .build_composite_key_user_key(bytes.as_slice(), &Serialized { variable: true })
                    .map_err(|e| e.to_string())?
                    .to_vec(),
            )
        }
    };
    Ok((key_group, mp, value_key, map_key))
}

#[test]
fn flink_vectors_rocksdb_keys_are_the_stored_keys() {
    let path = vectors_file();
    let content = std::fs::read_to_string(&path).expect("rocksdb_keys.jsonl");
    let mut by_mp: Rows = BTreeMap::new();
    let mut failures = Vec::new();
    for raw in content.lines() {
        let line: Value = serde_json::from_str(raw).expect("json line");
        let id = line["id"].as_str().unwrap_or("?").to_owned();
        let checked = build(&line).and_then(|(kg, mp, value_key, map_key)| {
            let want = hex(text(&line, "composite_key_namespace_hex")?)?;
            if value_key != want {
                return Err(format!("builder value key {value_key:02x?} != {want:02x?}"));
            }
            let want_map = match field(&line, "composite_key_namespace_user_key_hex")?.as_str() {
                Some(h) => Some(hex(h)?),
                None => None,
            };
            if map_key != want_map {
                return Err(format!("builder map key {map_key:02x?} != {want_map:02x?}"));
            }
            by_mp
                .entry(mp.get())
                .or_default()
                .push((kg, value_key, map_key, id.clone()));
            Ok(())
        });
        if let Err(e) = checked {
            failures.push(format!("{id}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");

    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mut lines = 0;
    for (mp, rows) in &by_mp {
        let mp = MaxParallelism::new(*mp).expect("mp");
        let prefix_bytes = mp.key_group_prefix_bytes();
        let root = dir.path().join(format!("mp-{}", mp.get()));
        let config = StoreConfig::try_new(mp, mp.key_groups())
            .expect("config")
            .with_clock(std::sync::Arc::new(clock.clone()));
        let db_dir = {
            let mut store = RocksStore::open(&root, config, &slot).expect("open");
            let mut value = store.open_table("value", I64Codec, None).expect("table");
            let mut map = store.open_map_table("map", I64Codec, None).expect("map");
            value.begin_bundle(&[]).expect("begin");
            map.begin_bundle(MapHydration::none()).expect("begin");
            for (kg, value_key, map_key, _) in rows {
                // The table's key is the composite key without its key-group prefix.
                value.put(*kg, &value_key[prefix_bytes..], 1).expect("put");
                if let Some(map_key) = map_key {
                    let prefix = &value_key[prefix_bytes..];
                    let user_key = &map_key[value_key.len()..];
                    map.put(*kg, prefix, user_key, 2).expect("put");
                }
            }
            value.commit_bundle().expect("commit");
            map.commit_bundle().expect("commit");
            store.db_dir()
        };
        let entries = raw_entries(&db_dir);
        let stored = |table: &str| -> BTreeSet<Vec<u8>> {
            let cf = table_cf(&entries, table);
            entries
                .iter()
                .filter(|(c, _, _)| *c == cf)
                .map(|(_, k, _)| k.clone())
                .collect()
        };
        let want_value: BTreeSet<Vec<u8>> = rows.iter().map(|r| r.1.clone()).collect();
        let want_map: BTreeSet<Vec<u8>> = rows.iter().filter_map(|r| r.2.clone()).collect();
        assert_eq!(
            stored("value"),
            want_value,
            "value-state keys, mp {}",
            mp.get()
        );
        assert_eq!(stored("map"), want_map, "map-state keys, mp {}", mp.get());
        lines += rows.len();
    }
    println!("rocksdb_keys.jsonl: {lines} vectors checked against stored RocksDB keys");
    assert_eq!(lines, content.lines().count());
}
