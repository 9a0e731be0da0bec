//! The slot's memtable options reach RocksDB: the sequential insert hint is in every column
//! family's persisted options when on (the default) and absent when off, and the state a
//! store holds does not depend on it.

use std::path::Path;

use keygroup::KeyGroup;
use state_api::{I64Codec, ManualClock, MapHydration, MapStateStore, MapTable};
use typed_store::{MemtableOptions, RocksSlot, RocksStore};

use crate::util::{full_config, mp128, raw_entries};

const HINT_LINE: &str = "memtable_insert_with_hint_prefix_extractor=";

/// Per column-family section of the newest `OPTIONS-*` file: (family name, the hint's value).
fn hint_per_family(db_dir: &Path) -> Vec<(String, String)> {
    let newest = std::fs::read_dir(db_dir)
        .expect("read db dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("OPTIONS-"))
        .max_by_key(|n| n.trim_start_matches("OPTIONS-").parse::<u64>().unwrap_or(0))
        .expect("an OPTIONS file");
    let text = std::fs::read_to_string(db_dir.join(newest)).expect("read OPTIONS");
    let mut out = Vec::new();
    let mut family = None;
    for line in text.lines().map(str::trim) {
        if let Some(name) = line
            .strip_prefix("[CFOptions \"")
            .and_then(|rest| rest.strip_suffix("\"]"))
        {
            family = Some(name.to_owned());
        } else if line.starts_with('[') {
            family = None;
        } else if let (Some(name), Some(value)) = (&family, line.strip_prefix(HINT_LINE)) {
            out.push((name.clone(), value.to_owned()));
        }
    }
    out
}

/// Writes 3 bundles of 200 map entries each (descending keys within a bundle, so the store's
/// own ordering is what RocksDB sees) and returns the database directory.
fn write_map(dir: &Path, slot: &RocksSlot) -> std::path::PathBuf {
    let clock = ManualClock::new(1_000);
    let mut store = RocksStore::open(dir, full_config(mp128(), &clock), slot).expect("open");
    let mut m = store.open_map_table("m", I64Codec, None).expect("map");
    for bundle in 0..3_i64 {
        m.begin_bundle(MapHydration::none()).expect("begin");
        for i in (0..200_i64).rev() {
            let kg = KeyGroup::new(i32::try_from(i % 128).expect("kg")).expect("kg");
            let user_key = format!("u{:05}", i * 3 + bundle);
            m.put(kg, &i.to_be_bytes(), user_key.as_bytes(), i + bundle)
                .expect("put");
        }
        m.commit_bundle().expect("commit");
    }
    drop(m);
    store.flush_table("m").expect("flush");
    store.db_dir()
}

#[test]
fn the_insert_hint_is_in_every_family_when_on_and_the_state_is_the_same_when_off() {
    let on_dir = tempfile::tempdir().expect("tmp");
    let on_slot = RocksSlot::try_new(16 << 20).expect("slot");
    assert!(on_slot.memtable().sequential_insert_hint, "default on");
    let on_db = write_map(on_dir.path(), &on_slot);
    let on = hint_per_family(&on_db);
    assert!(on.len() >= 2, "default and table families: {on:?}");
    assert!(
        on.iter().all(|(_, v)| v == "rocksdb.FixedPrefix.0"),
        "{on:?}"
    );

    let off_dir = tempfile::tempdir().expect("tmp");
    let mut memtable = MemtableOptions::default();
    memtable.sequential_insert_hint = false;
    let off_slot = RocksSlot::try_new(16 << 20)
        .expect("slot")
        .with_memtable(memtable);
    let off_db = write_map(off_dir.path(), &off_slot);
    let off = hint_per_family(&off_db);
    assert!(off.len() >= 2, "{off:?}");
    assert!(off.iter().all(|(_, v)| v == "nullptr"), "{off:?}");

    // Same entries, byte for byte (column family names included).
    let (on_entries, off_entries) = (raw_entries(&on_db), raw_entries(&off_db));
    assert_eq!(on_entries.len(), off_entries.len());
    assert!(on_entries.len() >= 600, "{}", on_entries.len());
    assert_eq!(on_entries, off_entries);
}
