//! TTL under both update types and visibilities, with a manual clock.

use std::time::Duration;

use super::{
    StoreFactory, bundle_keys, full_config, key, max_parallelism, read_all, snapshot_of, write_all,
};
use crate::codec::I64Codec;
use crate::snapshot::{CanonicalTable, restore_canonical_snapshot};
use crate::table::{KeyedStateStore, KeyedTable};
use crate::ttl::{ManualClock, TtlConfig, TtlUpdateType, TtlVisibility};

fn ttl(update: TtlUpdateType, visibility: TtlVisibility) -> TtlConfig {
    TtlConfig::new(Duration::from_millis(100))
        .with_update_type(update)
        .with_visibility(visibility)
}

/// `OnCreateAndWrite` + `NeverReturnExpired`: reads do not refresh; an entry written at `t`
/// is visible until `t + ttl - 1` and gone at `t + ttl`; a write refreshes it.
pub fn ttl_never_return_expired<F: StoreFactory>(f: &F) {
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1_000);
    let mut store = f.create(full_config(mp, &clock));
    let cfg = ttl(
        TtlUpdateType::OnCreateAndWrite,
        TtlVisibility::NeverReturnExpired,
    );
    let mut t = store.open_table("ttl", I64Codec, Some(cfg)).expect("open");
    let (a, b) = (key(1, mp), key(2, mp));
    write_all(&mut t, &[(a.clone(), Some(1)), (b.clone(), Some(2))]);
    clock.set(1_050);
    let before = t.stats().written_keys;
    assert_eq!(
        read_all(&mut t, &[a.clone(), b.clone()]),
        [Some(1), Some(2)]
    );
    assert_eq!(
        t.stats().written_keys,
        before,
        "OnCreateAndWrite reads write nothing"
    );
    write_all(&mut t, &[(b.clone(), Some(3))]); // refresh b at 1050
    clock.set(1_099);
    assert_eq!(
        read_all(&mut t, &[a.clone(), b.clone()]),
        [Some(1), Some(3)]
    );
    clock.set(1_100);
    assert_eq!(
        read_all(&mut t, &[a.clone(), b.clone()]),
        [None, Some(3)],
        "1000 + 100 <= 1100"
    );
    clock.set(1_150);
    assert_eq!(read_all(&mut t, &[a.clone(), b.clone()]), [None, None]);
    // Re-creating an expired key starts a fresh lifetime.
    write_all(&mut t, &[(a.clone(), Some(4))]);
    clock.set(1_249);
    assert_eq!(read_all(&mut t, &[a]), [Some(4)]);
}

/// `OnReadAndWrite`: a read of an unexpired entry refreshes its timestamp (and is a write).
pub fn ttl_on_read_and_write_refreshes_on_read<F: StoreFactory>(f: &F) {
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1_000);
    let mut store = f.create(full_config(mp, &clock));
    let cfg = ttl(
        TtlUpdateType::OnReadAndWrite,
        TtlVisibility::NeverReturnExpired,
    );
    let mut t = store.open_table("ttl", I64Codec, Some(cfg)).expect("open");
    let (a, b) = (key(1, mp), key(2, mp));
    write_all(&mut t, &[(a.clone(), Some(1)), (b.clone(), Some(2))]);
    clock.set(1_090);
    let before = t.stats().written_keys;
    assert_eq!(read_all(&mut t, std::slice::from_ref(&a)), [Some(1)]);
    assert_eq!(
        t.stats().written_keys - before,
        1,
        "the refresh is one write"
    );
    clock.set(1_150);
    // a was refreshed at 1090 (alive until 1189); b was not (expired at 1100).
    assert_eq!(read_all(&mut t, &[a.clone(), b.clone()]), [Some(1), None]);
    clock.set(1_249);
    assert_eq!(
        read_all(&mut t, std::slice::from_ref(&a)),
        [Some(1)],
        "refreshed at 1150"
    );
    clock.set(1_349);
    assert_eq!(read_all(&mut t, &[a]), [None]);
}

/// `ReturnExpiredIfNotCleanedUp`: the read that finds an expired entry returns it and clears
/// it; later reads see nothing.
pub fn ttl_return_expired_if_not_cleaned_up<F: StoreFactory>(f: &F) {
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1_000);
    let mut store = f.create(full_config(mp, &clock));
    for update in [
        TtlUpdateType::OnCreateAndWrite,
        TtlUpdateType::OnReadAndWrite,
    ] {
        let name = format!("ttl-{update:?}");
        let cfg = ttl(update, TtlVisibility::ReturnExpiredIfNotCleanedUp);
        let mut t = store.open_table(&name, I64Codec, Some(cfg)).expect("open");
        clock.set(1_000);
        let a = key(1, mp);
        write_all(&mut t, &[(a.clone(), Some(7))]);
        clock.set(1_100);
        t.begin_bundle(&bundle_keys(std::slice::from_ref(&a)))
            .expect("begin");
        assert_eq!(
            t.get(a.0, &a.1).expect("get"),
            Some(&7),
            "expired but not cleaned up"
        );
        assert_eq!(t.get(a.0, &a.1).expect("get"), None, "the read cleared it");
        t.commit_bundle().expect("commit");
        assert_eq!(read_all(&mut t, &[a]), [None]);
    }
}

/// A TTL near `i64::MAX` does not overflow (Flink's saturating expiration timestamp).
pub fn ttl_overflow_never_expires<F: StoreFactory>(f: &F) {
    let mp = max_parallelism(128);
    let clock = ManualClock::new(i64::MAX - 10);
    let mut store = f.create(full_config(mp, &clock));
    let cfg = TtlConfig::new(Duration::from_millis(u64::MAX));
    let mut t = store.open_table("ttl", I64Codec, Some(cfg)).expect("open");
    let a = key(1, mp);
    write_all(&mut t, &[(a.clone(), Some(1))]);
    clock.set(i64::MAX - 1);
    assert_eq!(read_all(&mut t, std::slice::from_ref(&a)), [Some(1)]);
    clock.set(i64::MAX);
    assert_eq!(
        read_all(&mut t, &[a]),
        [None],
        "expiration saturates at i64::MAX <= now"
    );
}

/// Expired rows are left out of canonical snapshots; timestamps survive a restore (expiry
/// continues from the original write); sweeps remove at most what they are asked to and
/// never touch live entries.
pub fn ttl_expired_rows_leave_snapshots_and_sweeps<F: StoreFactory>(f: &F) {
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1_000);
    let cfg = ttl(
        TtlUpdateType::OnCreateAndWrite,
        TtlVisibility::ReturnExpiredIfNotCleanedUp,
    );
    let mut store = f.create(full_config(mp, &clock));
    let mut t = store.open_table("ttl", I64Codec, Some(cfg)).expect("open");
    let old: Vec<_> = (0..40).map(|i| key(i, mp)).collect();
    let young: Vec<_> = (40..50).map(|i| key(i, mp)).collect();
    write_all(
        &mut t,
        &old.iter().map(|k| (k.clone(), Some(1))).collect::<Vec<_>>(),
    );
    clock.set(1_060);
    write_all(
        &mut t,
        &young
            .iter()
            .map(|k| (k.clone(), Some(2)))
            .collect::<Vec<_>>(),
    );
    clock.set(1_120); // old expired (1100), young alive until 1159

    let container = snapshot_of(&store, "op", &[&t as &dyn CanonicalTable]);
    let mut restored_store = f.create(full_config(mp, &clock));
    let mut r = restored_store
        .open_table("ttl", I64Codec, Some(cfg))
        .expect("open");
    let summary = restore_canonical_snapshot(
        "op",
        &[&container],
        &mut [&mut r as &mut dyn CanonicalTable],
        restored_store.config().memory_pool(),
    )
    .expect("restore");
    assert_eq!(
        summary.rows,
        young.len(),
        "expired rows are not in the snapshot"
    );
    assert_eq!(read_all(&mut r, &old), vec![None; old.len()]);
    assert_eq!(read_all(&mut r, &young), vec![Some(2); young.len()]);
    clock.set(1_160);
    // Expired at 1060 + 100: the first read may still return the value (visibility
    // ReturnExpiredIfNotCleanedUp) and clears it; had the restore reset the timestamps,
    // the entries would still be alive on the second read.
    let first = read_all(&mut r, &young);
    assert!(
        first.iter().all(|v| v.is_none() || *v == Some(2)),
        "{first:?}"
    );
    assert_eq!(
        read_all(&mut r, &young),
        vec![None; young.len()],
        "timestamps survived"
    );

    // Sweeps on the original table: bounded, a pass (steps until `wrapped`) removes every
    // expired entry, and live entries stay.
    clock.set(1_120);
    let mut removed = 0;
    let mut passes = 0;
    for _ in 0..1_000 {
        let step = t.sweep_expired(7).expect("sweep");
        assert!(step.removed <= 7, "a sweep removes at most max_entries");
        removed += usize::try_from(step.removed).expect("small");
        if step.wrapped {
            passes += 1;
            if passes == 2 {
                break;
            }
        }
    }
    assert_eq!(passes, 2, "a sweep pass ends with `wrapped`");
    assert_eq!(
        t.sweep_expired(0).expect("sweep"),
        crate::SweepProgress::default(),
        "max_entries 0 does nothing"
    );
    assert!(removed <= old.len(), "only expired entries are swept");
    // Under ReturnExpiredIfNotCleanedUp a read returns an expired entry still stored: after
    // a pass none is (the sweep, or a background TTL compaction, removed them all).
    assert_eq!(
        read_all(&mut t, &old),
        vec![None; old.len()],
        "a pass leaves no expired entry"
    );
    assert_eq!(read_all(&mut t, &young), vec![Some(2); young.len()]);
}
