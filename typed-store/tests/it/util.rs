//! Shared helpers: stores in temporary directories, key helpers, bundle helpers.

use std::path::Path;
use std::sync::Arc;

use keygroup::{KeyGroup, MaxParallelism, compute_key_group_for_key_hash, murmur_hash_bytes};
use state_api::{KeyedTable, ManualClock, StoreConfig, ValueOf};

/// A bundle key: key group and key bytes.
pub(crate) type Key = (KeyGroup, Vec<u8>);

/// Max parallelism 128 (1-byte key-group prefix).
pub(crate) fn mp128() -> MaxParallelism {
    MaxParallelism::new(128).expect("valid")
}

/// A config owning every key group of `mp`, with `clock`.
pub(crate) fn full_config(mp: MaxParallelism, clock: &ManualClock) -> StoreConfig {
    StoreConfig::try_new(mp, mp.key_groups())
        .expect("range")
        .with_clock(Arc::new(clock.clone()))
}

/// Key `i` and its Flink key group.
pub(crate) fn key(i: usize, mp: MaxParallelism) -> (KeyGroup, Vec<u8>) {
    let bytes = format!("key-{i:06}").into_bytes();
    (
        compute_key_group_for_key_hash(murmur_hash_bytes(&bytes), mp),
        bytes,
    )
}

/// Writes (`Some`) or removes (`None`) in one bundle naming every key.
pub(crate) fn write_all<T: KeyedTable>(table: &mut T, rows: &[(Key, Option<ValueOf<T>>)]) {
    let keys: Vec<(KeyGroup, &[u8])> = rows
        .iter()
        .map(|((kg, k), _)| (*kg, k.as_slice()))
        .collect();
    table.begin_bundle(&keys).expect("begin");
    for ((kg, k), v) in rows {
        match v {
            Some(v) => table.put(*kg, k, v.clone()).expect("put"),
            None => table.remove(*kg, k).expect("remove"),
        }
    }
    table.commit_bundle().expect("commit");
}

/// Reads `keys` in one bundle.
pub(crate) fn read_all<T: KeyedTable>(
    table: &mut T,
    keys: &[(KeyGroup, Vec<u8>)],
) -> Vec<Option<ValueOf<T>>> {
    let named: Vec<(KeyGroup, &[u8])> = keys.iter().map(|(kg, k)| (*kg, k.as_slice())).collect();
    table.begin_bundle(&named).expect("begin");
    let out = keys
        .iter()
        .map(|(kg, k)| table.get(*kg, k).expect("get").cloned())
        .collect();
    table.commit_bundle().expect("commit");
    out
}

/// Finds the typed-store error inside a state-api error (the `source` of whichever variant
/// it was mapped onto).
pub(crate) fn backend_error(err: &state_api::Error) -> Option<&typed_store::Error> {
    std::error::Error::source(err)?.downcast_ref::<typed_store::Error>()
}

/// Every (column family, key, value) of the database in `dir`, opened raw.
pub(crate) fn raw_entries(dir: &Path) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let cfs = rocksdb::DB::list_cf(&rocksdb::Options::default(), dir).expect("list");
    let db = rocksdb::DB::open_cf(&rocksdb::Options::default(), dir, &cfs).expect("open raw");
    let mut out = Vec::new();
    for name in &cfs {
        let cf = db.cf_handle(name).expect("cf");
        for item in db.iterator_cf(cf, rocksdb::IteratorMode::Start) {
            let (k, v) = item.expect("item");
            out.push((name.clone(), k.to_vec(), v.to_vec()));
        }
    }
    out
}

/// The column family of `table` according to the store's metadata in `entries`.
pub(crate) fn table_cf(entries: &[(String, Vec<u8>, Vec<u8>)], table: &str) -> String {
    let meta = format!("{}{table}", typed_store::META_TABLE_CF_PREFIX);
    let (_, _, cf) = entries
        .iter()
        .find(|(cf, k, _)| cf == "default" && k == meta.as_bytes())
        .expect("table mapping");
    String::from_utf8(cf.clone()).expect("utf8")
}
