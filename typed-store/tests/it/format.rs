//! The on-disk format: exact key and value bytes, the metadata checks at open, and bad stored
//! bytes as typed errors (never a panic).

use std::path::Path;

use keygroup::{KeyGroup, MaxParallelism};
use rocksdb::{DB, Options};
use state_api::{I64Codec, I64F64StrCodec, KeyedStateStore, KeyedTable, ManualClock, TtlConfig};
use typed_store::{Error, FORMAT_VERSION, META_FORMAT_KEY, RocksSlot, RocksStore};

use crate::util::{backend_error, full_config, mp128, raw_entries, read_all, table_cf, write_all};

/// Opens the database in `dir` raw and applies `f`.
fn with_raw(dir: &Path, f: impl FnOnce(&DB)) {
    let cfs = DB::list_cf(&Options::default(), dir).expect("list");
    let db = DB::open_cf(&Options::default(), dir, &cfs).expect("open raw");
    f(&db);
}

#[test]
fn stored_bytes_are_flink_keys_and_ttl_prefixed_arrow_rows() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1_000);
    let db_dir;
    {
        let mut store =
            RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("open");
        let ttl = TtlConfig::new(std::time::Duration::from_secs(60));
        let mut t = store.open_table("t", I64Codec, Some(ttl)).expect("table");
        let mut plain = store.open_table("plain", I64Codec, None).expect("table");
        let kg = KeyGroup::new(5).expect("kg");
        write_all(&mut t, &[((kg, b"k".to_vec()), Some(7))]);
        write_all(&mut plain, &[((kg, b"k".to_vec()), Some(-1))]);
        db_dir = store.db_dir();
    }
    let entries = raw_entries(&db_dir);
    let t_cf = table_cf(&entries, "t");
    let plain_cf = table_cf(&entries, "plain");
    assert_ne!(t_cf, plain_cf, "one column family per table");
    let in_cf = |cf: &str| -> Vec<(Vec<u8>, Vec<u8>)> {
        entries
            .iter()
            .filter(|(c, _, _)| c == cf)
            .map(|(_, k, v)| (k.clone(), v.clone()))
            .collect()
    };
    assert_eq!(
        in_cf(&t_cf),
        [(
            vec![0x05, b'k'],
            vec![
                0, 0, 0, 0, 0, 0, 0x03, 0xe8, 0x01, 0x80, 0, 0, 0, 0, 0, 0, 0x07
            ]
        )]
    );
    // Without TTL the timestamp is 0; -1 with the sign bit flipped is 0x7f ff .. ff.
    assert_eq!(
        in_cf(&plain_cf),
        [(
            vec![0x05, b'k'],
            vec![
                0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff
            ]
        )]
    );
    let format = entries
        .iter()
        .find(|(cf, k, _)| cf == "default" && k == META_FORMAT_KEY)
        .expect("format entry");
    assert_eq!(format.2, FORMAT_VERSION.as_bytes());
}

#[test]
fn two_byte_key_group_prefix_above_max_parallelism_128() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = MaxParallelism::new(32_768).expect("mp");
    let db_dir;
    {
        let mut store = RocksStore::open(dir.path(), full_config(mp, &clock), &slot).expect("open");
        let mut t = store.open_table("t", I64Codec, None).expect("table");
        let kg = KeyGroup::new(0x1234).expect("kg");
        write_all(&mut t, &[((kg, b"k".to_vec()), Some(1))]);
        assert_eq!(read_all(&mut t, &[(kg, b"k".to_vec())]), [Some(1)]);
        db_dir = store.db_dir();
    }
    let entries = raw_entries(&db_dir);
    let cf = table_cf(&entries, "t");
    let keys: Vec<&Vec<u8>> = entries
        .iter()
        .filter(|(c, _, _)| *c == cf)
        .map(|e| &e.1)
        .collect();
    assert_eq!(keys, [&vec![0x12, 0x34, b'k']]);
    // Reopening with another max parallelism (another prefix width) is refused.
    let err = RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect_err("mp");
    assert!(
        matches!(
            err,
            Error::MaxParallelismMismatch {
                expected: 128,
                found: 32_768
            }
        ),
        "{err}"
    );
}

#[test]
fn format_version_mismatch_is_refused_at_open() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let db_dir = {
        let mut store =
            RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("open");
        let mut t = store.open_table("t", I64Codec, None).expect("table");
        write_all(
            &mut t,
            &[((KeyGroup::new(1).expect("kg"), b"a".to_vec()), Some(1))],
        );
        store.db_dir()
    };
    // A clean reopen works and sees the data.
    {
        let mut store =
            RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("reopen");
        let mut t = store.open_table("t", I64Codec, None).expect("table");
        assert_eq!(
            read_all(&mut t, &[(KeyGroup::new(1).expect("kg"), b"a".to_vec())]),
            [Some(1)]
        );
        // Another codec (other columns) for the same table is refused.
        let err = store.open_table("t2", I64Codec, None).map(|_| ());
        assert!(err.is_ok());
    }
    {
        let mut store =
            RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("reopen");
        let err = store
            .open_table("t", I64F64StrCodec, None)
            .expect_err("other codec");
        assert!(
            matches!(backend_error(&err), Some(Error::TableSchemaMismatch { table, .. }) if table == "t"),
            "{err}"
        );
    }
    with_raw(&db_dir, |db| {
        db.put(META_FORMAT_KEY, b"typed-store-format=1;arrow-row=59.0.0")
            .expect("put");
    });
    let err =
        RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect_err("mismatch");
    match err {
        Error::FormatVersionMismatch { expected, found } => {
            assert_eq!(expected, FORMAT_VERSION);
            assert_eq!(found, "typed-store-format=1;arrow-row=59.0.0");
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn corrupt_stored_values_are_errors_not_panics() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(16 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let kg = KeyGroup::new(3).expect("kg");
    let db_dir = {
        let mut store =
            RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("open");
        let mut t = store
            .open_table("rows", I64F64StrCodec, None)
            .expect("table");
        write_all(
            &mut t,
            &[((kg, b"good".to_vec()), Some((1, 2.0, Some("x".repeat(40)))))],
        );
        store.db_dir()
    };
    let good = {
        let entries = raw_entries(&db_dir);
        let cf = table_cf(&entries, "rows");
        entries
            .into_iter()
            .find(|(c, k, _)| *c == cf && k.ends_with(b"good"))
            .expect("good entry")
    };
    let bad_values: Vec<Vec<u8>> = vec![
        vec![1, 2, 3],                       // shorter than the timestamp
        good.2[..good.2.len() - 1].to_vec(), // truncated string block
        [good.2.clone(), vec![0]].concat(),  // trailing byte
        {
            let mut v = good.2.clone();
            v[8 + 9 + 9 + 1 + 8] = 0x30;
            v
        }, // bad block length
        {
            let mut v = good.2.clone();
            v[8 + 9 + 9 + 1] = 0xFF;
            v
        }, // a string byte that is not UTF-8 (arrow-row's decoder panicked on it)
    ];
    for (i, bad) in bad_values.iter().enumerate() {
        with_raw(&db_dir, |db| {
            let cf = db.cf_handle(&good.0).expect("cf");
            db.put_cf(
                cf,
                [&[3_u8][..], format!("bad{i}").as_bytes()].concat(),
                bad,
            )
            .expect("put");
        });
    }
    let mut store =
        RocksStore::open(dir.path(), full_config(mp128(), &clock), &slot).expect("reopen");
    let mut t = store
        .open_table("rows", I64F64StrCodec, None)
        .expect("table");
    for i in 0..bad_values.len() {
        let key = format!("bad{i}").into_bytes();
        let err = t.begin_bundle(&[(kg, &key)]).expect_err("corrupt value");
        assert!(
            matches!(backend_error(&err), Some(Error::CorruptValue { .. })),
            "value {i}: {err}"
        );
        // No bundle was left open; a point read of the same key fails the same way.
        t.begin_bundle(&[]).expect("begin");
        let err = t.get(kg, &key).expect_err("corrupt value");
        assert!(
            matches!(backend_error(&err), Some(Error::CorruptValue { .. })),
            "{err}"
        );
        t.commit_bundle().expect("commit");
    }
    assert_eq!(
        read_all(&mut t, &[(kg, b"good".to_vec())]),
        [Some((1, 2.0, Some("x".repeat(40))))]
    );
}
