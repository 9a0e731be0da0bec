//! The shared canonical snapshot functions, driven through a minimal `BTreeMap` table, and
//! a golden-bytes check of the canonical encoding.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use keygroup::{KeyGroup, KeyGroupRange, MaxParallelism};
use sfcs_format::{Container, MemoryContainer, Sections, read_envelope};
use state_api::{
    BoundedMemoryPool, CanonicalTable, CorruptionKind, Error, I64Codec, MemoryPool,
    UnboundedMemoryPool, ValueCodec, canonical_schema, decode_canonical_batch,
    encode_canonical_batch, restore_canonical_snapshot, write_canonical_snapshot,
};

/// (key group, key) -> (last access, value).
type Rows = BTreeMap<(i32, Vec<u8>), (i64, i64)>;

/// A reference table: one sorted map, no bundles, no TTL.
struct RefTable {
    name: String,
    range: KeyGroupRange,
    rows: Rows,
    staged: Option<Rows>,
}

impl RefTable {
    fn new(name: &str, range: KeyGroupRange) -> Self {
        Self {
            name: name.to_owned(),
            range,
            rows: BTreeMap::new(),
            staged: None,
        }
    }
}

impl CanonicalTable for RefTable {
    fn table_name(&self) -> &str {
        &self.name
    }

    fn table_key_groups(&self) -> KeyGroupRange {
        self.range
    }

    fn canonical_schema(&self) -> SchemaRef {
        canonical_schema(&I64Codec.fields())
    }

    fn export_key_group(&self, key_group: KeyGroup) -> state_api::Result<Option<RecordBatch>> {
        let kg = key_group.get();
        let rows: Vec<(&[u8], i64, &i64)> = self
            .rows
            .range((kg, Vec::new())..(kg + 1, Vec::new()))
            .map(|((_, k), (ts, v))| (k.as_slice(), *ts, v))
            .collect();
        if rows.is_empty() {
            return Ok(None);
        }
        encode_canonical_batch(&self.canonical_schema(), &I64Codec, &rows).map(Some)
    }

    fn stage_restore(&mut self, batches: Vec<(KeyGroup, RecordBatch)>) -> state_api::Result<()> {
        let mut staged = BTreeMap::new();
        for (kg, batch) in batches {
            let decoded = decode_canonical_batch(&I64Codec, &batch)?;
            for (i, v) in decoded.values.iter().enumerate() {
                staged.insert(
                    (kg.get(), decoded.keys.value(i).to_vec()),
                    (decoded.last_access[i], *v),
                );
            }
        }
        self.staged = Some(staged);
        Ok(())
    }

    fn commit_restore(&mut self) {
        self.rows = self.staged.take().unwrap_or_default();
    }

    fn abort_restore(&mut self) {
        self.staged = None;
    }

    fn table_max_parallelism(&self) -> MaxParallelism {
        MaxParallelism::new(128).unwrap()
    }

    /// The reference table keeps the timestamps it is given (`sample()` has one).
    fn table_has_ttl(&self) -> bool {
        true
    }
}

fn unbounded() -> Arc<dyn MemoryPool> {
    Arc::new(UnboundedMemoryPool::new())
}

fn range(start: i32, end: i32) -> KeyGroupRange {
    KeyGroupRange::new(start, end).unwrap()
}

fn sample() -> RefTable {
    let mut t = RefTable::new("main", range(0, 7));
    t.rows.insert((5, b"b".to_vec()), (0, 2));
    t.rows.insert((5, b"a".to_vec()), (0, 1));
    t.rows.insert((6, b"c".to_vec()), (1_700_000_000_000, -3));
    t
}

/// The exact bytes of key group 5's envelope for `sample()`. Any change to the canonical
/// encoding (our layout, the SFCS framing or Arrow IPC's stream format) breaks this test and
/// must be a deliberate, versioned change.
const GOLDEN_KEY_GROUP_5: &str = include_str!("golden/main_kg5.hex");

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[test]
fn canonical_bytes_match_golden() {
    let t = sample();
    let mut container = MemoryContainer::new();
    let summary =
        write_canonical_snapshot("op-golden", None, &[&t], &mut container, &unbounded()).unwrap();
    assert_eq!((summary.key_groups, summary.rows), (2, 3));
    assert_eq!(container.key_groups().unwrap(), [5, 6]);
    let header = container.get_header(5).unwrap().unwrap();
    let chunk = container.get_chunk(5, 0).unwrap().unwrap();
    let actual = format!("{}\n{}\n", hex(&header), hex(&chunk));
    if std::env::var_os("SFSTATE_BLESS").is_some() {
        std::fs::write(
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/main_kg5.hex"),
            &actual,
        )
        .unwrap();
    }
    assert_eq!(
        actual, GOLDEN_KEY_GROUP_5,
        "canonical encoding changed (SFSTATE_BLESS=1 to re-bless)"
    );
    // The section really is the table's rows, sorted by key.
    let (_, payload) = read_envelope(&container, 5, "op-golden").unwrap();
    let sections = Sections::decode(&payload).unwrap();
    assert_eq!(
        sections.iter().map(|s| s.name).collect::<Vec<_>>(),
        ["main"]
    );
}

#[test]
fn round_trip_through_reference_table_and_stale_key_groups_are_removed() {
    let t = sample();
    let mut container = MemoryContainer::new();
    // A stale entry for a key group that is now empty must disappear.
    sfcs_format::write_envelope(&mut container, 3, "op", None, b"stale").unwrap();
    write_canonical_snapshot("op", None, &[&t], &mut container, &unbounded()).unwrap();
    assert_eq!(container.key_groups().unwrap(), [5, 6]);
    let mut r = RefTable::new("main", range(0, 7));
    r.rows.insert((1, b"old".to_vec()), (0, 0));
    let summary =
        restore_canonical_snapshot("op", &[&container], &mut [&mut r], &unbounded()).unwrap();
    assert_eq!((summary.key_groups, summary.rows), (2, 3));
    assert_eq!(r.rows, t.rows);
}

#[test]
fn restore_takes_only_its_key_groups() {
    let t = sample();
    let mut container = MemoryContainer::new();
    write_canonical_snapshot("op", None, &[&t], &mut container, &unbounded()).unwrap();
    let mut r = RefTable::new("main", range(6, 7));
    restore_canonical_snapshot("op", &[&container], &mut [&mut r], &unbounded()).unwrap();
    assert_eq!(r.rows.keys().map(|k| k.0).collect::<Vec<_>>(), [6]);
}

#[test]
fn table_sets_must_share_a_range_and_have_distinct_names() {
    let a = RefTable::new("a", range(0, 7));
    let b = RefTable::new("b", range(0, 6));
    let a2 = RefTable::new("a", range(0, 7));
    let mut c = MemoryContainer::new();
    for tables in [[&a, &b], [&a, &a2]] {
        let err =
            write_canonical_snapshot("op", None, &[tables[0], tables[1]], &mut c, &unbounded())
                .unwrap_err();
        assert!(matches!(err, Error::TableSetMismatch { .. }), "{err}");
    }
    let (mut a, mut b) = (a, b);
    let err =
        restore_canonical_snapshot("op", &[&c], &mut [&mut a, &mut b], &unbounded()).unwrap_err();
    assert!(matches!(err, Error::TableSetMismatch { .. }), "{err}");
    // No tables: nothing to do.
    let summary = write_canonical_snapshot("op", None, &[], &mut c, &unbounded()).unwrap();
    assert_eq!(summary.rows, 0);
}

#[test]
fn snapshot_refuses_unsorted_export() {
    struct Unsorted(RefTable);
    impl CanonicalTable for Unsorted {
        fn table_name(&self) -> &str {
            self.0.table_name()
        }
        fn table_key_groups(&self) -> KeyGroupRange {
            self.0.table_key_groups()
        }
        fn canonical_schema(&self) -> SchemaRef {
            self.0.canonical_schema()
        }
        fn export_key_group(&self, _: KeyGroup) -> state_api::Result<Option<RecordBatch>> {
            let rows: Vec<(&[u8], i64, &i64)> = vec![(b"b", 0, &1), (b"a", 0, &2)];
            encode_canonical_batch(&self.canonical_schema(), &I64Codec, &rows).map(Some)
        }
        fn stage_restore(&mut self, b: Vec<(KeyGroup, RecordBatch)>) -> state_api::Result<()> {
            self.0.stage_restore(b)
        }
        fn commit_restore(&mut self) {
            self.0.commit_restore();
        }
        fn abort_restore(&mut self) {
            self.0.abort_restore();
        }
        fn table_max_parallelism(&self) -> MaxParallelism {
            self.0.table_max_parallelism()
        }
        fn table_has_ttl(&self) -> bool {
            self.0.table_has_ttl()
        }
    }
    let t = Unsorted(RefTable::new("main", range(0, 0)));
    let err =
        write_canonical_snapshot("op", None, &[&t], &mut MemoryContainer::new(), &unbounded())
            .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Corruption {
                kind: CorruptionKind::KeysNotSorted,
                key_group: 0,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn snapshot_and_restore_reserve_from_the_pool() {
    let t = sample();
    let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(100));
    let err = write_canonical_snapshot("op", None, &[&t], &mut MemoryContainer::new(), &pool)
        .unwrap_err();
    assert!(matches!(err, Error::MemoryExhausted { .. }), "{err}");
    assert_eq!(pool.used(), 0);
    let mut container = MemoryContainer::new();
    write_canonical_snapshot("op", None, &[&t], &mut container, &unbounded()).unwrap();
    let mut r = RefTable::new("main", range(0, 7));
    let err = restore_canonical_snapshot("op", &[&container], &mut [&mut r], &pool).unwrap_err();
    assert!(matches!(err, Error::MemoryExhausted { .. }), "{err}");
    assert!(r.rows.is_empty() && r.staged.is_none());
    assert_eq!(pool.used(), 0);
}
