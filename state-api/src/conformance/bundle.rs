//! Bundle lifecycle and point operations.

use keygroup::{KeyGroup, KeyGroupRange};

use super::{StoreFactory, bundle_keys, full_config, key, max_parallelism, read_all, write_all};
use crate::codec::{I64Codec, I64F64StrCodec};
use crate::error::Error;
use crate::snapshot::CanonicalTable;
use crate::table::{KeyedStateStore, KeyedTable, StoreConfig};
use crate::ttl::ManualClock;

/// `begin_bundle` issues at most one batched read; reads of named keys need no further read;
/// reads see the bundle's writes; `commit_bundle` writes each dirty key exactly once.
pub fn bundle_hydration_and_coalesced_commit<F: StoreFactory>(f: &F) {
    let mp = max_parallelism(128);
    let mut store = f.create(full_config(mp, &ManualClock::new(1)));
    let mut t = store.open_table("main", I64Codec, None).expect("open");
    let keys: Vec<_> = (0..10).map(|i| key(i, mp)).collect();
    let before = t.stats();
    write_all(
        &mut t,
        &keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), Some(i as i64)))
            .collect::<Vec<_>>(),
    );
    let after = t.stats();
    assert_eq!(
        after.written_keys - before.written_keys,
        10,
        "first commit writes 10 keys"
    );
    assert_eq!(after.bundles - before.bundles, 1);
    assert!(
        after.hydration_batches - before.hydration_batches <= 1,
        "one batched read"
    );

    // Second bundle names keys 0..=3 and one absent key.
    let mut named: Vec<_> = keys[..4].to_vec();
    named.push(key(99, mp));
    let before = t.stats();
    t.begin_bundle(&bundle_keys(&named)).expect("begin");
    let after_begin = t.stats();
    assert!(
        after_begin.hydration_batches - before.hydration_batches <= 1,
        "one batched read"
    );
    assert!(
        after_begin.hydrated_keys - before.hydrated_keys <= 5,
        "only named keys fetched"
    );
    for (i, (kg, k)) in named.iter().enumerate().take(4) {
        assert_eq!(t.get(*kg, k).expect("get"), Some(&(i as i64)));
    }
    assert_eq!(t.get(named[4].0, &named[4].1).expect("get"), None);
    let (k0, k1, k2) = (&keys[0], &keys[1], &keys[2]);
    t.put(k0.0, &k0.1, 100).expect("put");
    t.put(k0.0, &k0.1, 101).expect("put");
    assert_eq!(
        t.get(k0.0, &k0.1).expect("get"),
        Some(&101),
        "reads see own writes"
    );
    t.put(k0.0, &k0.1, 102).expect("put");
    t.put(k1.0, &k1.1, 7).expect("put");
    t.remove(k1.0, &k1.1).expect("remove");
    assert_eq!(
        t.get(k1.0, &k1.1).expect("get"),
        None,
        "reads see own removes"
    );
    t.put(k2.0, &k2.1, 22).expect("put");
    let mid = t.stats();
    assert_eq!(
        mid.point_hydrations, before.point_hydrations,
        "named keys need no point reads"
    );
    assert_eq!(mid.hydration_batches, after_begin.hydration_batches);
    t.commit_bundle().expect("commit");
    let after = t.stats();
    assert_eq!(
        after.written_keys - before.written_keys,
        3,
        "three dirty keys (k0 thrice, k1 put+remove, k2), one write each"
    );
    assert_eq!(
        read_all(&mut t, &keys[..4]),
        [Some(102), None, Some(22), Some(3)],
        "committed state"
    );

    // A bundle of pure reads (no TTL) writes nothing.
    let before = t.stats();
    read_all(&mut t, &keys);
    assert_eq!(
        t.stats().written_keys,
        before.written_keys,
        "reads are not writes"
    );
}

/// Point operations: overwrite, remove, remove of an absent key, equal key bytes in two key
/// groups are distinct entries, and values survive commits.
pub fn get_put_remove<F: StoreFactory>(f: &F) {
    let mp = max_parallelism(128);
    let mut store = f.create(full_config(mp, &ManualClock::new(1)));
    let mut t = store
        .open_table("rows", I64F64StrCodec, None)
        .expect("open");
    let a = (KeyGroup::new(3).expect("kg"), b"same".to_vec());
    let b = (KeyGroup::new(4).expect("kg"), b"same".to_vec());
    let empty = (KeyGroup::new(5).expect("kg"), Vec::new());
    let va = (1, 1.5, Some("a".to_owned()));
    let vb = (2, -0.5, None);
    write_all(
        &mut t,
        &[
            (a.clone(), Some(va.clone())),
            (b.clone(), Some(vb.clone())),
            (empty.clone(), Some(vb.clone())),
        ],
    );
    assert_eq!(
        read_all(&mut t, &[a.clone(), b.clone(), empty.clone()]),
        [Some(va.clone()), Some(vb.clone()), Some(vb.clone())]
    );
    let va2 = (3, 0.0, Some(String::new()));
    write_all(
        &mut t,
        &[
            (a.clone(), Some(va2.clone())),
            (b.clone(), None),
            (empty.clone(), None),
        ],
    );
    assert_eq!(
        read_all(&mut t, &[a.clone(), b.clone(), empty.clone()]),
        [Some(va2), None, None]
    );
    // Removing an absent key is not an error.
    write_all(&mut t, &[(b.clone(), None)]);
    assert_eq!(read_all(&mut t, &[b]), [None]);
}

/// A key not named in `begin_bundle` is still read and written correctly (hydrated alone).
pub fn get_of_key_not_in_bundle<F: StoreFactory>(f: &F) {
    let mp = max_parallelism(128);
    let mut store = f.create(full_config(mp, &ManualClock::new(1)));
    let mut t = store.open_table("main", I64Codec, None).expect("open");
    let (x, y, z) = (key(1, mp), key(2, mp), key(3, mp));
    write_all(&mut t, &[(x.clone(), Some(10)), (y.clone(), Some(20))]);
    let before = t.stats();
    t.begin_bundle(&bundle_keys(std::slice::from_ref(&y)))
        .expect("begin");
    assert_eq!(t.get(x.0, &x.1).expect("get unnamed"), Some(&10));
    let after = t.stats();
    assert!(
        after.point_hydrations - before.point_hydrations <= 1,
        "an unnamed key is hydrated alone"
    );
    assert_eq!(t.get(x.0, &x.1).expect("get unnamed again"), Some(&10));
    assert!(
        t.stats().point_hydrations - after.point_hydrations == 0,
        "a second read of the hydrated key is a hit"
    );
    assert_eq!(t.get(z.0, &z.1).expect("get unnamed absent"), None);
    t.put(z.0, &z.1, 30).expect("put unnamed");
    t.put(x.0, &x.1, 11).expect("put unnamed");
    t.commit_bundle().expect("commit");
    assert_eq!(read_all(&mut t, &[x, y, z]), [Some(11), Some(20), Some(30)]);
}

/// Point operations and commits outside a bundle, `begin_bundle` inside one, and snapshots
/// or sweeps during one are [`Error::BundleState`] and change nothing.
pub fn bundle_misuse_is_rejected<F: StoreFactory>(f: &F) {
    let mp = max_parallelism(128);
    let mut store = f.create(full_config(mp, &ManualClock::new(1)));
    let mut t = store.open_table("main", I64Codec, None).expect("open");
    let k = key(1, mp);
    let misuse = |r: crate::Result<()>, what: &str| {
        let err = r.expect_err(what);
        assert!(matches!(err, Error::BundleState { .. }), "{what}: {err}");
    };
    misuse(t.get(k.0, &k.1).map(|_| ()), "get outside a bundle");
    misuse(t.put(k.0, &k.1, 1), "put outside a bundle");
    misuse(t.remove(k.0, &k.1), "remove outside a bundle");
    misuse(t.commit_bundle(), "commit outside a bundle");
    t.begin_bundle(&bundle_keys(std::slice::from_ref(&k)))
        .expect("begin");
    t.put(k.0, &k.1, 5).expect("put");
    misuse(t.begin_bundle(&[]), "begin inside a bundle");
    misuse(t.sweep_expired(10).map(|_| ()), "sweep inside a bundle");
    misuse(
        t.export_key_group(k.0).map(|_| ()),
        "export inside a bundle",
    );
    misuse(t.stage_restore(Vec::new()), "restore inside a bundle");
    // The open bundle is intact.
    assert_eq!(t.get(k.0, &k.1).expect("get"), Some(&5));
    t.commit_bundle().expect("commit");
    assert_eq!(read_all(&mut t, std::slice::from_ref(&k)), [Some(5)]);
    // Sweeping a table without TTL removes nothing live, and a pass of small steps ends.
    let wrapped = (0..1_000).any(|_| t.sweep_expired(1).expect("sweep").wrapped);
    assert!(wrapped, "steps of a sweep pass reach `wrapped`");
    assert_eq!(read_all(&mut t, &[k]), [Some(5)]);
}

/// Key groups outside the table's range are [`Error::KeyGroupOutOfRange`]; a failed
/// `begin_bundle` leaves no bundle open.
pub fn key_group_out_of_range_is_rejected<F: StoreFactory>(f: &F) {
    let mp = max_parallelism(128);
    let range = KeyGroupRange::new(0, 42).expect("range");
    let config = StoreConfig::try_new(mp, range).expect("config");
    let mut store = f.create(config);
    let mut t = store.open_table("main", I64Codec, None).expect("open");
    let inside = KeyGroup::new(42).expect("kg");
    let outside = KeyGroup::new(43).expect("kg");
    let err = t
        .begin_bundle(&[(inside, b"a"), (outside, b"b")])
        .expect_err("out-of-range key in begin_bundle");
    assert!(
        matches!(err, Error::KeyGroupOutOfRange { key_group: 43, .. }),
        "{err}"
    );
    t.begin_bundle(&[(inside, b"a")])
        .expect("no bundle was left open");
    let err = t.put(outside, b"b", 1).expect_err("put out of range");
    assert!(matches!(err, Error::KeyGroupOutOfRange { .. }), "{err}");
    let err = t.get(outside, b"b").expect_err("get out of range");
    assert!(matches!(err, Error::KeyGroupOutOfRange { .. }), "{err}");
    let err = t.remove(outside, b"b").expect_err("remove out of range");
    assert!(matches!(err, Error::KeyGroupOutOfRange { .. }), "{err}");
    t.put(inside, b"a", 1).expect("put in range");
    t.commit_bundle().expect("commit");
    assert_eq!(read_all(&mut t, &[(inside, b"a".to_vec())]), [Some(1)]);
}

/// A table name can be opened once per store.
pub fn open_table_twice_is_rejected<F: StoreFactory>(f: &F) {
    let mp = max_parallelism(128);
    let mut store = f.create(full_config(mp, &ManualClock::new(1)));
    let _t = store.open_table("main", I64Codec, None).expect("open");
    let err = store
        .open_table("main", I64Codec, None)
        .map(|_| ())
        .expect_err("second open");
    assert!(
        matches!(err, Error::TableExists { ref name } if name == "main"),
        "{err}"
    );
    store
        .open_table("other", I64Codec, None)
        .expect("another name");
}
