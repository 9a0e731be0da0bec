//! The TTL compaction filter: a compaction drops expired entries (reading only the 8-byte
//! timestamp prefix) and keeps live ones; tables without TTL keep everything.

use std::time::Duration;

use rocksdb::{DB, Options};
use state_api::{I64Codec, KeyedStateStore, ManualClock, TtlConfig};
use typed_store::{META_TABLE_CF_PREFIX, RocksSlot, RocksStore};

use crate::util::{full_config, key, mp128, read_all, write_all};

/// Entries physically present in `table`'s column family (opened raw after the store closed).
fn physical_entries(db_dir: &std::path::Path, table: &str) -> usize {
    let cfs = DB::list_cf(&Options::default(), db_dir).expect("list");
    let db = DB::open_cf(&Options::default(), db_dir, &cfs).expect("open raw");
    let cf_name = db
        .get(format!("{META_TABLE_CF_PREFIX}{table}"))
        .expect("get")
        .expect("mapping");
    let cf = db
        .cf_handle(std::str::from_utf8(&cf_name).expect("utf8"))
        .expect("cf");
    db.iterator_cf(cf, rocksdb::IteratorMode::Start).count()
}

#[test]
fn compaction_drops_expired_entries() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1_000);
    let mp = mp128();
    let old: Vec<_> = (0..1_000).map(|i| key(i, mp)).collect();
    let young: Vec<_> = (1_000..1_010).map(|i| key(i, mp)).collect();
    let db_dir = {
        let mut store = RocksStore::open(dir.path(), full_config(mp, &clock), &slot).expect("open");
        let ttl = TtlConfig::new(Duration::from_millis(100));
        let mut t = store.open_table("ttl", I64Codec, Some(ttl)).expect("table");
        let mut plain = store.open_table("plain", I64Codec, None).expect("table");
        let rows: Vec<_> = old.iter().map(|k| (k.clone(), Some(1))).collect();
        write_all(&mut t, &rows);
        write_all(&mut plain, &rows);
        store.flush_table("ttl").expect("flush");
        clock.set(1_050);
        write_all(
            &mut t,
            &young
                .iter()
                .map(|k| (k.clone(), Some(2)))
                .collect::<Vec<_>>(),
        );
        // Before expiry a compaction keeps everything.
        store.compact_table("ttl").expect("compact");
        clock.set(1_120); // old expired at 1100; young live until 1150
        store.compact_table("ttl").expect("compact");
        store.compact_table("plain").expect("compact");
        assert_eq!(read_all(&mut t, &young), vec![Some(2); young.len()]);
        assert_eq!(read_all(&mut plain, &old[..5]), vec![Some(1); 5]);
        store.db_dir()
    };
    assert_eq!(
        physical_entries(&db_dir, "ttl"),
        young.len(),
        "expired entries dropped"
    );
    assert_eq!(
        physical_entries(&db_dir, "plain"),
        old.len(),
        "no TTL: all kept"
    );
}
