//! Canonical restore bulk loads: a large restore (SST file + ingest) and a small one (write
//! batches) both give exactly the snapshot's state and byte-identical snapshots afterwards.

use sfcs_format::MemoryContainer;
use state_api::{
    CanonicalTable, I64F64StrCodec, KeyedStateStore, ManualClock, restore_canonical_snapshot,
    write_canonical_snapshot,
};
use typed_store::{RocksSlot, RocksStore};

use crate::util::{full_config, key, mp128, read_all, write_all};

fn row(i: usize) -> (i64, f64, Option<String>) {
    let v = i64::try_from(i).expect("small");
    (v, 0.5, (!i.is_multiple_of(3)).then(|| format!("label-{i}")))
}

#[test]
fn canonical_restore_small_and_large_is_exact() {
    let dir = tempfile::tempdir().expect("tmp");
    let slot = RocksSlot::try_new(64 << 20).expect("slot");
    let clock = ManualClock::new(1);
    let mp = mp128();
    for (n, name) in [(500, "small"), (30_000, "large")] {
        let keys: Vec<_> = (0..n).map(|i| key(i, mp)).collect();
        let mut source = RocksStore::open(
            dir.path().join(format!("{name}-src")),
            full_config(mp, &clock),
            &slot,
        )
        .expect("open");
        let mut t = source.open_table("t", I64F64StrCodec, None).expect("table");
        for chunk in keys.chunks(10_000).enumerate() {
            let (c, chunk) = chunk;
            write_all(
                &mut t,
                &chunk
                    .iter()
                    .enumerate()
                    .map(|(j, k)| (k.clone(), Some(row(c * 10_000 + j))))
                    .collect::<Vec<_>>(),
            );
        }
        let pool = source.config().memory_pool().clone();
        let mut container = MemoryContainer::new();
        write_canonical_snapshot("op", None, &[&t], &mut container, &pool).expect("snapshot");

        let mut target = RocksStore::open(
            dir.path().join(format!("{name}-dst")),
            full_config(mp, &clock),
            &slot,
        )
        .expect("open");
        let mut r = target.open_table("t", I64F64StrCodec, None).expect("table");
        // Old content that the restore replaces.
        let extra = key(n + 7, mp);
        write_all(&mut r, &[(extra.clone(), Some(row(1)))]);
        let summary = restore_canonical_snapshot(
            "op",
            &[&container],
            &mut [&mut r as &mut dyn CanonicalTable],
            &pool,
        )
        .expect("restore");
        assert_eq!(summary.rows, n, "{name}");
        let expected: Vec<_> = (0..n).map(|i| Some(row(i))).collect();
        assert_eq!(read_all(&mut r, &keys), expected, "{name}");
        assert_eq!(read_all(&mut r, &[extra]), [None], "{name}: replaced whole");
        let mut again = MemoryContainer::new();
        write_canonical_snapshot("op", None, &[&r], &mut again, &pool).expect("snapshot");
        assert_eq!(again, container, "{name}: byte-identical after restore");
        // No staging file is left behind.
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join(format!("{name}-dst")))
            .expect("dir")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}
