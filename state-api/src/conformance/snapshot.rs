//! Canonical snapshots: round trip, determinism, rescaling and all-or-nothing restore.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::RecordBatch;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::Schema;
use keygroup::{KeyGroup, MaxParallelism, Parallelism};
use sfcs_format::{
    Container, DecodeError, MemoryContainer, SectionWriter, Sections, read_envelope,
};

use super::{
    Key, StoreFactory, full_config, key, max_parallelism, read_all, snapshot_of, write_all,
};
use crate::codec::{F64Codec, I64Codec, I64F64StrCodec, ValueCodec};
use crate::error::{CorruptionKind, Error};
use crate::snapshot::{
    CanonicalTable, canonical_schema, encode_canonical_batch, restore_canonical_snapshot,
};
use crate::table::{KeyedStateStore, StoreConfig};
use crate::ttl::{ManualClock, TtlConfig};

type Row = (i64, f64, Option<String>);

fn row(i: usize) -> Row {
    let i = i as i64;
    (
        i * 3,
        i as f64 / 4.0,
        (i % 3 != 0).then(|| format!("label-{i}")),
    )
}

fn side_ttl() -> TtlConfig {
    TtlConfig::new(Duration::from_secs(3_600))
}

/// A store with a `main` (i64, no TTL) and a `side` (row, TTL) table over the full range of
/// max parallelism 128, filled with `n` keys (side gets every other key), value offset `off`.
struct Filled<S: KeyedStateStore> {
    store: S,
    main: S::Table<I64Codec>,
    side: S::Table<I64F64StrCodec>,
    keys: Vec<Key>,
}

impl<S: KeyedStateStore> Filled<S> {
    fn new<F: StoreFactory<Store = S>>(f: &F, clock: &ManualClock, n: usize, off: i64) -> Self {
        let mp = max_parallelism(128);
        let mut store = f.create(full_config(mp, clock));
        let mut main = store.open_table("main", I64Codec, None).expect("open main");
        let mut side = store
            .open_table("side", I64F64StrCodec, Some(side_ttl()))
            .expect("open side");
        let keys: Vec<Key> = (0..n).map(|i| key(i, mp)).collect();
        write_all(
            &mut main,
            &keys
                .iter()
                .enumerate()
                .map(|(i, k)| (k.clone(), Some(i as i64 + off)))
                .collect::<Vec<_>>(),
        );
        write_all(
            &mut side,
            &keys
                .iter()
                .enumerate()
                .step_by(2)
                .map(|(i, k)| (k.clone(), Some(row(i))))
                .collect::<Vec<_>>(),
        );
        Self {
            store,
            main,
            side,
            keys,
        }
    }

    fn snapshot(&self, operator_id: &str) -> MemoryContainer {
        snapshot_of(&self.store, operator_id, &[&self.main, &self.side])
    }

    fn restore(&mut self, operator_id: &str, sources: &[&dyn Container]) -> crate::Result<()> {
        let pool = Arc::clone(self.store.config().memory_pool());
        restore_canonical_snapshot(
            operator_id,
            sources,
            &mut [&mut self.main as &mut dyn CanonicalTable, &mut self.side],
            &pool,
        )
        .map(|_| ())
    }

    fn state(&mut self) -> (Vec<Option<i64>>, Vec<Option<Row>>) {
        (
            read_all(&mut self.main, &self.keys),
            read_all(&mut self.side, &self.keys),
        )
    }
}

/// Snapshot two tables, restore into a store that held other state: the restored state is
/// exactly the snapshot's (old rows gone), and its snapshot is byte-identical.
pub fn canonical_snapshot_round_trip<F: StoreFactory>(f: &F) {
    let clock = ManualClock::new(5_000);
    let source = Filled::new(f, &clock, 200, 0);
    let container = source.snapshot("op-1");
    assert!(!container.key_groups().expect("key groups").is_empty());
    let mut source = source;
    let expected = source.state();

    let mut target = Filled::new(f, &clock, 300, 1_000);
    target.restore("op-1", &[&container]).expect("restore");
    target.keys.truncate(200);
    assert_eq!(
        target.state(),
        expected,
        "restored state equals the snapshot"
    );
    let extra: Vec<Key> = (200..300).map(|i| key(i, max_parallelism(128))).collect();
    assert_eq!(
        read_all(&mut target.main, &extra),
        vec![None; 100],
        "old rows are replaced"
    );
    assert_eq!(
        target.snapshot("op-1"),
        container,
        "snapshot of the restore is byte-identical"
    );
}

/// The same logical state reached through different operation orders gives byte-identical
/// canonical snapshots.
pub fn canonical_snapshot_is_byte_identical<F: StoreFactory>(f: &F) {
    let clock = ManualClock::new(9_000);
    let a = Filled::new(f, &clock, 120, 0);

    let mp = max_parallelism(128);
    let mut store = f.create(full_config(mp, &clock));
    let mut side = store
        .open_table("side", I64F64StrCodec, Some(side_ttl()))
        .expect("open");
    let mut main = store.open_table("main", I64Codec, None).expect("open");
    let keys: Vec<Key> = (0..150).map(|i| key(i, mp)).collect();
    // Reverse order, junk values first, then the real ones, extra keys removed, several bundles.
    for chunk in keys.iter().enumerate().rev().collect::<Vec<_>>().chunks(17) {
        write_all(
            &mut main,
            &chunk
                .iter()
                .map(|(i, k)| ((*k).clone(), Some(-(*i as i64))))
                .collect::<Vec<_>>(),
        );
        write_all(
            &mut side,
            &chunk
                .iter()
                .map(|(i, k)| ((*k).clone(), Some(row(*i + 1))))
                .collect::<Vec<_>>(),
        );
    }
    write_all(
        &mut main,
        &keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), (i < 120).then_some(i as i64)))
            .collect::<Vec<_>>(),
    );
    write_all(
        &mut side,
        &keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), (i < 120 && i % 2 == 0).then(|| row(i))))
            .collect::<Vec<_>>(),
    );
    let b = snapshot_of(&store, "op", &[&side, &main]);
    assert_eq!(
        a.snapshot("op"),
        b,
        "canonical bytes depend only on the logical state"
    );
}

/// Several tables of one operator share one envelope per key group, one section per table
/// with rows there, in name order; key groups without rows get no envelope.
pub fn multiple_tables_share_one_envelope<F: StoreFactory>(f: &F) {
    let clock = ManualClock::new(1);
    let filled = Filled::new(f, &clock, 60, 0);
    let container = filled.snapshot("op");
    let mut with_both = 0;
    let mut key_groups: BTreeMap<u32, (bool, bool)> = BTreeMap::new();
    for (i, (kg, _)) in filled.keys.iter().enumerate() {
        let e = key_groups.entry(kg.get().cast_unsigned()).or_default();
        e.0 = true;
        e.1 |= i % 2 == 0;
    }
    assert_eq!(
        container.key_groups().expect("key groups"),
        key_groups.keys().copied().collect::<Vec<_>>(),
        "exactly the key groups with rows"
    );
    for (kg, (main, side)) in key_groups {
        let (_, payload) = read_envelope(&container, kg, "op").expect("envelope");
        let sections = Sections::decode(&payload).expect("sections");
        let names: Vec<&str> = sections.iter().map(|s| s.name).collect();
        let mut expected = Vec::new();
        if main {
            expected.push("main");
        }
        if side {
            expected.push("side");
        }
        assert_eq!(names, expected, "key group {kg}");
        with_both += usize::from(names.len() == 2);
    }
    assert!(with_both > 0, "some key group holds both tables");
}

/// Writes `n` keys through 3 subtasks made by `f`, snapshots them canonically, and restores
/// them onto 2 and onto 5 subtasks made by `g`.
fn rescale<F: StoreFactory, G: StoreFactory>(f: &F, g: &G, mp: MaxParallelism, n: usize) {
    let clock = ManualClock::new(1);
    let old_p = Parallelism::new(3).expect("p");
    let keys: Vec<Key> = (0..n).map(|i| key(i, mp)).collect();
    let value = |i: usize| i as i64 * 7 - 3;
    let mut containers = Vec::new();
    for index in 0..3 {
        let config = StoreConfig::for_subtask(mp, old_p, index)
            .expect("config")
            .with_clock(Arc::new(clock.clone()));
        let range = config.key_groups();
        let mut store = f.create(config);
        let mut t = store.open_table("main", I64Codec, None).expect("open");
        let rows: Vec<_> = keys
            .iter()
            .enumerate()
            .filter(|(_, k)| range.contains(k.0))
            .map(|(i, k)| (k.clone(), Some(value(i))))
            .collect();
        write_all(&mut t, &rows);
        containers.push(snapshot_of(&store, "op", &[&t]));
    }
    let sources: Vec<&dyn Container> = containers.iter().map(|c| c as &dyn Container).collect();
    for new_p in [2, 5] {
        let new_p = Parallelism::new(new_p).expect("p");
        let mut total = 0;
        for index in 0..new_p.get() {
            let config = StoreConfig::for_subtask(mp, new_p, index)
                .expect("config")
                .with_clock(Arc::new(clock.clone()));
            let range = config.key_groups();
            let mut store = g.create(config);
            let mut t = store.open_table("main", I64Codec, None).expect("open");
            let pool = Arc::clone(store.config().memory_pool());
            let summary =
                restore_canonical_snapshot("op", &sources, &mut [&mut t], &pool).expect("restore");
            let owned: Vec<(usize, Key)> = keys
                .iter()
                .cloned()
                .enumerate()
                .filter(|(_, k)| range.contains(k.0))
                .collect();
            assert_eq!(
                summary.rows,
                owned.len(),
                "subtask {index} of {new_p} restores its keys only"
            );
            let owned_keys: Vec<Key> = owned.iter().map(|(_, k)| k.clone()).collect();
            let expected: Vec<Option<i64>> = owned.iter().map(|(i, _)| Some(value(*i))).collect();
            assert_eq!(
                read_all(&mut t, &owned_keys),
                expected,
                "subtask {index} of {new_p}"
            );
            // Its own snapshot holds exactly its key groups.
            let own = snapshot_of(&store, "op", &[&t]);
            assert!(
                own.key_groups()
                    .expect("key groups")
                    .iter()
                    .all(|kg| range.contains(KeyGroup::new(kg.cast_signed()).expect("kg"))),
                "no foreign key group"
            );
            total += summary.rows;
        }
        assert_eq!(total, n, "every key exactly once after 3 -> {new_p}");
    }
}

/// 3 subtasks at max parallelism 128 restored onto 2 and onto 5: every key exactly once, at
/// the subtask owning its key group.
pub fn rescale_at_max_parallelism_128<F: StoreFactory>(f: &F) {
    rescale(f, f, max_parallelism(128), 600);
}

/// As [`rescale_at_max_parallelism_128`] at max parallelism 32768 (2-byte key-group
/// prefixes in RocksDB).
pub fn rescale_at_max_parallelism_32768<F: StoreFactory>(f: &F) {
    rescale(f, f, max_parallelism(32_768), 400);
}

/// Two backends: the same logical state gives byte-identical canonical snapshots on both, and
/// state moves `f` -> `g` -> `f` exactly (each restore replaces other state the target held).
/// Not part of [`conformance_tests!`](crate::conformance_tests), which sees one backend; run
/// it from a crate that depends on both.
pub fn cross_backend_exchange<F: StoreFactory, G: StoreFactory>(f: &F, g: &G) {
    let clock = ManualClock::new(7_000);
    let mut on_f = Filled::new(f, &clock, 200, 0);
    let on_g = Filled::new(g, &clock, 200, 0);
    let snapshot = on_f.snapshot("op");
    assert!(!snapshot.key_groups().expect("key groups").is_empty());
    assert_eq!(
        on_g.snapshot("op"),
        snapshot,
        "the same logical state gives byte-identical canonical snapshots on both backends"
    );
    let expected = on_f.state();

    let mut moved_to_g = Filled::new(g, &clock, 50, 500);
    moved_to_g
        .restore("op", &[&snapshot])
        .expect("restore f -> g");
    moved_to_g.keys.clone_from(&on_f.keys);
    assert_eq!(moved_to_g.state(), expected, "state after f -> g");
    let from_g = moved_to_g.snapshot("op");
    assert_eq!(from_g, snapshot, "f -> g keeps the canonical bytes");

    let mut back_to_f = Filled::new(f, &clock, 10, 900);
    back_to_f.restore("op", &[&from_g]).expect("restore g -> f");
    back_to_f.keys.clone_from(&on_f.keys);
    assert_eq!(back_to_f.state(), expected, "state after f -> g -> f");
    assert_eq!(
        back_to_f.snapshot("op"),
        snapshot,
        "f -> g -> f keeps the canonical bytes"
    );
}

/// Two backends: 3 subtasks of `f` restored onto 2 and onto 5 subtasks of `g`, at max
/// parallelism 128 and 32768; every key exactly once, at the subtask owning its key group.
/// Like [`cross_backend_exchange`], run from a crate that depends on both backends.
pub fn cross_backend_rescale<F: StoreFactory, G: StoreFactory>(f: &F, g: &G) {
    rescale(f, g, max_parallelism(128), 300);
    rescale(f, g, max_parallelism(32_768), 200);
}

/// A target holding state A; a restore from `sources` (state B, corrupted by `corrupt`)
/// must fail with an error `check` accepts and leave A untouched.
fn assert_restore_fails<F: StoreFactory>(
    f: &F,
    operator_id: &str,
    corrupt: impl FnOnce(&mut MemoryContainer, u32),
    second_source: Option<&MemoryContainer>,
    check: impl Fn(&Error) -> bool,
) {
    let clock = ManualClock::new(77);
    let mut source = Filled::new(f, &clock, 80, 500).snapshot("op");
    let last = *source
        .key_groups()
        .expect("key groups")
        .last()
        .expect("non-empty");
    corrupt(&mut source, last);
    let mut target = Filled::new(f, &clock, 50, 0);
    let before_bytes = target.snapshot("op");
    let before_state = target.state();
    let mut sources: Vec<&dyn Container> = vec![&source];
    if let Some(second) = second_source {
        sources.push(second);
    }
    let err = target
        .restore(operator_id, &sources)
        .expect_err("restore must fail");
    assert!(check(&err), "unexpected error: {err:?}");
    assert_eq!(
        target.state(),
        before_state,
        "target state unchanged after {err}"
    );
    assert_eq!(
        target.snapshot("op"),
        before_bytes,
        "target snapshot unchanged after {err}"
    );
}

fn decode_error(err: &Error) -> Option<&DecodeError> {
    match err {
        Error::Snapshot(e) => e.decode_error(),
        _ => None,
    }
}

fn ipc_bytes(batch: &RecordBatch, schema: &Schema) -> Vec<u8> {
    let mut writer = StreamWriter::try_new(Vec::new(), schema).expect("ipc writer");
    writer.write(batch).expect("ipc write");
    writer.finish().expect("ipc finish");
    writer.into_inner().expect("ipc bytes")
}

/// Replaces key group `kg`'s envelope with one holding `sections` and re-seals the manifest,
/// as a buggy or hostile writer would: every checksum is valid, the content is not.
pub(crate) fn put_sections(container: &mut MemoryContainer, kg: u32, sections: &[(&str, Vec<u8>)]) {
    let mut writer = SectionWriter::new();
    for (name, bytes) in sections {
        writer.push(name, bytes).expect("section");
    }
    put_payload(container, kg, "op", None, &writer.finish());
}

/// Replaces key group `kg`'s envelope in the committed generation (no re-seal).
pub(crate) fn put_envelope_raw(
    container: &mut MemoryContainer,
    kg: u32,
    operator_id: &str,
    deadline: Option<i64>,
    payload: &[u8],
) {
    let env = sfcs_format::Envelope::encode(operator_id, deadline, payload).expect("envelope");
    container.set_header_raw(kg, env.header_bytes().to_vec());
    container.set_chunk_raw(kg, 0, None);
    for (i, chunk) in env.chunks().enumerate() {
        container.set_chunk_raw(kg, i as u32, Some(chunk.to_vec()));
    }
}

/// [`put_envelope_raw`], then [`reseal`].
pub(crate) fn put_payload(
    container: &mut MemoryContainer,
    kg: u32,
    operator_id: &str,
    deadline: Option<i64>,
    payload: &[u8],
) {
    put_envelope_raw(container, kg, operator_id, deadline, payload);
    reseal(container);
}

/// Rewrites the manifest so that it vouches for the envelopes the container holds now.
pub(crate) fn reseal(container: &mut MemoryContainer) {
    let bytes = container
        .get_manifest()
        .expect("get manifest")
        .expect("a manifest to re-seal")
        .into_owned();
    let manifest = sfcs_format::Manifest::decode(&bytes, None).expect("valid manifest");
    let rebuilt = manifest.rebuilt_from(container).expect("rebuilt manifest");
    container.set_manifest_raw(Some(rebuilt.encode()));
}

fn i64_batch(rows: &[(&[u8], i64, &i64)]) -> (RecordBatch, Arc<Schema>) {
    let schema = canonical_schema(&I64Codec.fields());
    (
        encode_canonical_batch(&schema, &I64Codec, rows).expect("batch"),
        schema,
    )
}

/// A flipped payload byte fails the CRC32C check; nothing is applied.
pub fn restore_rejects_corrupt_chunk<F: StoreFactory>(f: &F) {
    assert_restore_fails(
        f,
        "op",
        |c, kg| {
            let mut chunk = c
                .get_chunk(kg, 0)
                .expect("get")
                .expect("chunk")
                .into_owned();
            let mid = chunk.len() / 2;
            chunk[mid] ^= 0x40;
            c.set_chunk_raw(kg, 0, Some(chunk));
        },
        None,
        |e| matches!(decode_error(e), Some(DecodeError::ChecksumMismatch { .. })),
    );
}

/// A truncated chunk, a missing chunk and a truncated header are refused; nothing is applied.
pub fn restore_rejects_truncated_snapshot<F: StoreFactory>(f: &F) {
    assert_restore_fails(
        f,
        "op",
        |c, kg| {
            let mut chunk = c
                .get_chunk(kg, 0)
                .expect("get")
                .expect("chunk")
                .into_owned();
            chunk.pop();
            c.set_chunk_raw(kg, 0, Some(chunk));
        },
        None,
        |e| matches!(decode_error(e), Some(DecodeError::ChunkLength { .. })),
    );
    assert_restore_fails(
        f,
        "op",
        |c, kg| c.set_chunk_raw(kg, 0, None),
        None,
        |e| matches!(decode_error(e), Some(DecodeError::MissingChunk { .. })),
    );
    assert_restore_fails(
        f,
        "op",
        |c, kg| {
            let header = c.get_header(kg).expect("get").expect("header").into_owned();
            c.set_header_raw(kg, header[..10].to_vec());
        },
        None,
        |e| {
            matches!(
                e,
                Error::Snapshot(sfcs_format::Error::NotVouched {
                    field: "header length",
                    ..
                })
            )
        },
    );
}

/// A snapshot of another operator is refused; nothing is applied.
pub fn restore_rejects_wrong_operator<F: StoreFactory>(f: &F) {
    assert_restore_fails(
        f,
        "other-op",
        |_, _| {},
        None,
        |e| {
            matches!(
                e,
                Error::Snapshot(sfcs_format::Error::Manifest(
                    sfcs_format::ManifestError::OperatorMismatch { .. }
                ))
            )
        },
    );
}

/// An unknown envelope version or canonical table version is refused; nothing is applied.
pub fn restore_rejects_wrong_version<F: StoreFactory>(f: &F) {
    assert_restore_fails(
        f,
        "op",
        |c, kg| {
            let mut header = c.get_header(kg).expect("get").expect("header").into_owned();
            header[4..8].copy_from_slice(&99_i32.to_be_bytes());
            c.set_header_raw(kg, header);
        },
        None,
        // The manifest vouches for the header bytes: a changed version field is caught there.
        |e| {
            matches!(
                e,
                Error::Snapshot(sfcs_format::Error::NotVouched {
                    field: "header CRC32C",
                    ..
                })
            )
        },
    );
    assert_restore_fails(
        f,
        "op",
        |c, kg| {
            let (batch, schema) = i64_batch(&[(b"k", 0, &1)]);
            let unversioned = Schema::new(schema.fields().clone());
            let batch =
                RecordBatch::try_new(Arc::new(unversioned.clone()), batch.columns().to_vec())
                    .expect("batch");
            put_sections(c, kg, &[("main", ipc_bytes(&batch, &unversioned))]);
        },
        None,
        |e| {
            matches!(
                e,
                Error::Corruption {
                    kind: CorruptionKind::UnsupportedTableVersion,
                    ..
                }
            )
        },
    );
}

/// A section that is not an Arrow IPC stream is refused; nothing is applied.
pub fn restore_rejects_unreadable_section<F: StoreFactory>(f: &F) {
    assert_restore_fails(
        f,
        "op",
        |c, kg| put_sections(c, kg, &[("main", b"definitely not arrow".to_vec())]),
        None,
        |e| matches!(e, Error::InvalidIpc { table, offset: 0, .. } if table == "main"),
    );
}

/// A section written by another codec (other value columns) is refused; nothing is applied.
pub fn restore_rejects_schema_mismatch<F: StoreFactory>(f: &F) {
    assert_restore_fails(
        f,
        "op",
        |c, kg| {
            let schema = canonical_schema(&F64Codec.fields());
            let batch =
                encode_canonical_batch(&schema, &F64Codec, &[(b"k", 0, &1.0)]).expect("batch");
            put_sections(c, kg, &[("main", ipc_bytes(&batch, &schema))]);
        },
        None,
        |e| {
            matches!(
                e,
                Error::Corruption {
                    kind: CorruptionKind::SchemaMismatch,
                    ..
                }
            )
        },
    );
}

/// Unsorted or duplicated keys are refused; nothing is applied.
pub fn restore_rejects_unsorted_keys<F: StoreFactory>(f: &F) {
    for rows in [
        [(&b"b"[..], 0, &1), (b"a", 0, &2)],
        [(b"a", 0, &1), (b"a", 0, &2)],
    ] {
        assert_restore_fails(
            f,
            "op",
            |c, kg| {
                let (batch, schema) = i64_batch(&rows);
                put_sections(c, kg, &[("main", ipc_bytes(&batch, &schema))]);
            },
            None,
            |e| {
                matches!(
                    e,
                    Error::Corruption {
                        kind: CorruptionKind::KeysNotSorted,
                        ..
                    }
                )
            },
        );
    }
}

/// A section for a table the operator did not open is refused; nothing is applied.
pub fn restore_rejects_unknown_table<F: StoreFactory>(f: &F) {
    assert_restore_fails(
        f,
        "op",
        |c, kg| {
            let (batch, schema) = i64_batch(&[(b"k", 0, &1)]);
            put_sections(c, kg, &[("nope", ipc_bytes(&batch, &schema))]);
        },
        None,
        |e| {
            matches!(
                e,
                Error::Corruption {
                    kind: CorruptionKind::UnknownTable,
                    ..
                }
            )
        },
    );
}

/// Two sources holding the same key group are refused; nothing is applied.
pub fn restore_rejects_duplicate_key_group<F: StoreFactory>(f: &F) {
    let clock = ManualClock::new(77);
    let other = Filled::new(f, &clock, 3, 0).snapshot("op");
    assert_restore_fails(
        f,
        "op",
        |_, _| {},
        Some(&other),
        |e| matches!(e, Error::DuplicateKeyGroup { .. }),
    );
}

// Used by the memory cases.
pub(crate) fn filled_snapshot<F: StoreFactory>(f: &F, n: usize) -> MemoryContainer {
    Filled::new(f, &ManualClock::new(3), n, 0).snapshot("op")
}

/// An `i64` codec that refuses to decode negative values: a stand-in for a codec that finds
/// a value it cannot represent after the section passed every schema check.
#[derive(Debug, Clone, Copy)]
struct NonNegativeCodec;

impl ValueCodec for NonNegativeCodec {
    type Value = i64;

    fn fields(&self) -> arrow_schema::Fields {
        I64Codec.fields()
    }

    fn encode<'a, I>(&self, values: I) -> crate::Result<Vec<arrow_array::ArrayRef>>
    where
        I: ExactSizeIterator<Item = &'a i64> + Clone,
    {
        I64Codec.encode(values)
    }

    fn decode(&self, columns: &[arrow_array::ArrayRef], out: &mut Vec<i64>) -> crate::Result<()> {
        let start = out.len();
        I64Codec.decode(columns, out)?;
        if out[start..].iter().any(|v| *v < 0) {
            return Err(Error::Codec {
                column: "value".to_owned(),
                reason: "negative value",
            });
        }
        Ok(())
    }
}

/// A value that only the second table's codec refuses, found while staging: the first table
/// (already staged) must be left unchanged too.
pub fn restore_rejects_undecodable_values<F: StoreFactory>(f: &F) {
    let mp = max_parallelism(128);
    let clock = ManualClock::new(1);
    let keys: Vec<Key> = (0..30).map(|i| key(i, mp)).collect();
    let mut source_store = f.create(full_config(mp, &clock));
    let mut a = source_store.open_table("a", I64Codec, None).expect("open");
    let mut b = source_store.open_table("b", I64Codec, None).expect("open");
    write_all(
        &mut a,
        &keys
            .iter()
            .map(|k| (k.clone(), Some(1)))
            .collect::<Vec<_>>(),
    );
    write_all(
        &mut b,
        &keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), Some(10 - i as i64)))
            .collect::<Vec<_>>(),
    );
    let source = snapshot_of(&source_store, "op", &[&a, &b]);

    let mut store = f.create(full_config(mp, &clock));
    let mut ta = store.open_table("a", I64Codec, None).expect("open");
    let mut tb = store.open_table("b", NonNegativeCodec, None).expect("open");
    write_all(
        &mut ta,
        &keys
            .iter()
            .map(|k| (k.clone(), Some(-5)))
            .collect::<Vec<_>>(),
    );
    let before = snapshot_of(&store, "op", &[&ta, &tb]);
    let pool = Arc::clone(store.config().memory_pool());
    let err = restore_canonical_snapshot(
        "op",
        &[&source],
        &mut [&mut ta as &mut dyn CanonicalTable, &mut tb],
        &pool,
    )
    .expect_err("b holds negative values");
    assert!(
        matches!(
            err,
            Error::Codec {
                reason: "negative value",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        read_all(&mut ta, &keys),
        vec![Some(-5); keys.len()],
        "a unchanged"
    );
    assert_eq!(snapshot_of(&store, "op", &[&ta, &tb]), before);
}

/// A snapshot of `filled` at max parallelism 128 with a deadline on every third key group.
fn snapshot_at<S: KeyedStateStore>(filled: &Filled<S>) -> MemoryContainer {
    let mut container = MemoryContainer::new();
    crate::snapshot::write_canonical_snapshot_at(
        max_parallelism(128),
        "op",
        &deadline_of,
        &[&filled.main, &filled.side],
        &mut container,
        filled.store.config().memory_pool(),
    )
    .expect("snapshot");
    container
}

/// The deadline [`snapshot_at`] writes for a key group.
fn deadline_of(kg: KeyGroup) -> Option<i64> {
    (kg.get() % 3 == 0).then(|| 1_000_000 + i64::from(kg.get()))
}

/// Two key groups of `c` that hold envelopes.
fn two_key_groups(c: &MemoryContainer) -> (u32, u32) {
    let kgs = c.key_groups().expect("key groups");
    (kgs[0], kgs[kgs.len() / 2])
}

/// A key group's envelope deleted after the manifest was written: refused, naming it.
pub fn restore_rejects_missing_key_group<F: StoreFactory>(f: &F) {
    let clock = ManualClock::new(77);
    let mut source = Filled::new(f, &clock, 80, 500).snapshot("op");
    let (kg, _) = two_key_groups(&source);
    let manifest = source
        .get_manifest()
        .expect("get")
        .expect("manifest")
        .into_owned();
    source.remove_key_group(kg).expect("remove");
    source.set_manifest_raw(Some(manifest));
    let mut target = Filled::new(f, &clock, 20, 0);
    let before = target.snapshot("op");
    let err = target
        .restore("op", &[&source])
        .expect_err("missing key group");
    assert!(
        matches!(err, Error::MissingKeyGroup { key_group, source_index: Some(0) } if key_group == kg as i32),
        "{err}"
    );
    assert_eq!(target.snapshot("op"), before, "target unchanged");
}

/// Two key groups' envelopes swapped, or one copied over another: refused, naming the key
/// group, before any of its payload is decoded.
pub fn restore_rejects_swapped_or_copied_key_groups<F: StoreFactory>(f: &F) {
    let clock = ManualClock::new(77);
    let source = Filled::new(f, &clock, 80, 500).snapshot("op");
    let (a, b) = two_key_groups(&source);
    let mut swapped = source.clone();
    swapped.copy_key_group_raw(a, u32::MAX);
    swapped.copy_key_group_raw(b, a);
    swapped.copy_key_group_raw(u32::MAX, b);
    swapped.remove_key_group(u32::MAX).expect("remove");
    swapped.set_manifest_raw(
        source
            .get_manifest()
            .expect("get")
            .map(std::borrow::Cow::into_owned),
    );
    let mut copied = source.clone();
    copied.copy_key_group_raw(a, b);
    for (label, bad) in [("swapped", swapped), ("copied", copied)] {
        let mut target = Filled::new(f, &clock, 20, 0);
        let before = target.snapshot("op");
        let err = target.restore("op", &[&bad]).expect_err(label);
        assert!(
            matches!(
                err,
                Error::Snapshot(sfcs_format::Error::NotVouched { key_group, .. })
                    if key_group == a || key_group == b
            ),
            "{label}: {err}"
        );
        assert_eq!(target.snapshot("op"), before, "{label}: target unchanged");
    }
}

/// An envelope the manifest does not list: refused, naming it.
pub fn restore_rejects_extra_key_group<F: StoreFactory>(f: &F) {
    let clock = ManualClock::new(77);
    let mut source = Filled::new(f, &clock, 80, 500).snapshot("op");
    let listed = source.key_groups().expect("key groups");
    let extra = (0..128)
        .find(|k| !listed.contains(k))
        .expect("a free key group");
    put_envelope_raw(
        &mut source,
        extra,
        "op",
        None,
        &SectionWriter::new().finish(),
    );
    let mut target = Filled::new(f, &clock, 20, 0);
    let before = target.snapshot("op");
    let err = target
        .restore("op", &[&source])
        .expect_err("extra key group");
    assert!(
        matches!(err, Error::UnexpectedKeyGroup { key_group, source_index: 0 } if key_group == extra as i32),
        "{err}"
    );
    assert_eq!(target.snapshot("op"), before, "target unchanged");
}

/// A container without a committed manifest (a snapshot being written, or one whose writer
/// died) is never taken for a complete snapshot.
pub fn restore_rejects_incomplete_snapshot<F: StoreFactory>(f: &F) {
    let clock = ManualClock::new(77);
    let filled = Filled::new(f, &clock, 80, 500);
    // A writer that died after some envelopes: a generation begun and never committed.
    let mut partial = filled.snapshot("op");
    partial.begin_generation().expect("begin");
    sfcs_format::write_envelope(&mut partial, 3, "op", None, b"").expect("envelope");
    assert!(partial.is_writing());
    let mut no_manifest = filled.snapshot("op");
    no_manifest.set_manifest_raw(None);
    for (label, bad) in [("partial", partial), ("no manifest", no_manifest)] {
        let mut target = Filled::new(f, &clock, 20, 0);
        let before = target.snapshot("op");
        let err = target.restore("op", &[&bad]).expect_err(label);
        assert!(
            matches!(err, Error::IncompleteSnapshot { source_index: 0 }),
            "{label}: {err}"
        );
        assert_eq!(target.snapshot("op"), before, "{label}: target unchanged");
    }
}

/// A snapshot taken at max parallelism 128 is refused by a target of max parallelism 256 (and
/// one that does not record its max parallelism by a target that knows its own); a target
/// whose range lies beyond the snapshot's max parallelism is refused even when the target's
/// own is unknown.
pub fn restore_rejects_other_max_parallelism<F: StoreFactory>(f: &F) {
    let clock = ManualClock::new(77);
    let filled = Filled::new(f, &clock, 80, 500);
    let at_128 = snapshot_at(&filled);
    let unrecorded = {
        let mut c = at_128.clone();
        let m =
            sfcs_format::Manifest::decode(&c.get_manifest().expect("get").expect("manifest"), None)
                .expect("manifest");
        let entries = m.entries().to_vec();
        let m = sfcs_format::Manifest::try_new("op", 0, 0, 128, 1, entries).expect("manifest");
        c.set_manifest_raw(Some(m.encode()));
        c
    };
    let mp256 = max_parallelism(256);
    let mut store = f.create(full_config(mp256, &clock));
    let mut t = store.open_table("main", I64Codec, None).expect("open");
    let pool = Arc::clone(store.config().memory_pool());
    for (label, source, expected) in [
        ("128 into 256", &at_128, Some(128)),
        ("unrecorded into 256", &unrecorded, None),
    ] {
        let err = crate::snapshot::restore_canonical_snapshot_at(
            mp256,
            "op",
            &[source],
            &mut [&mut t as &mut dyn CanonicalTable],
            &pool,
        )
        .expect_err(label);
        assert!(
            matches!(
                err,
                Error::MaxParallelismMismatch { expected: Some(256), found, source_index: Some(0) }
                    if found == expected
            ),
            "{label}: {err}"
        );
    }
    // Without an explicit max parallelism, a target range beyond the snapshot's is refused.
    let err = restore_canonical_snapshot(
        "op",
        &[&at_128],
        &mut [&mut t as &mut dyn CanonicalTable],
        &pool,
    )
    .expect_err("range 0..=255 against a snapshot of 128");
    assert!(
        matches!(
            err,
            Error::MaxParallelismMismatch { .. }
                | Error::DuplicateKeyGroup { .. }
                | Error::MissingKeyGroup { .. }
        ),
        "{err}"
    );
    // The right max parallelism restores.
    let mut target = Filled::new(f, &clock, 10, 0);
    let pool = Arc::clone(target.store.config().memory_pool());
    crate::snapshot::restore_canonical_snapshot_at(
        max_parallelism(128),
        "op",
        &[&at_128],
        &mut [
            &mut target.main as &mut dyn CanonicalTable,
            &mut target.side,
        ],
        &pool,
    )
    .expect("same max parallelism");
}

/// Restore returns the processing-time deadline each restored key group's envelope carries;
/// a key group with a deadline and no rows keeps its deadline.
pub fn restore_returns_deadlines<F: StoreFactory>(f: &F) {
    let clock = ManualClock::new(77);
    let filled = Filled::new(f, &clock, 40, 500);
    let container = snapshot_at(&filled);
    let mut target = Filled::new(f, &clock, 5, 0);
    let pool = Arc::clone(target.store.config().memory_pool());
    let summary = crate::snapshot::restore_canonical_snapshot_at(
        max_parallelism(128),
        "op",
        &[&container],
        &mut [
            &mut target.main as &mut dyn CanonicalTable,
            &mut target.side,
        ],
        &pool,
    )
    .expect("restore");
    let expected: Vec<(KeyGroup, Option<i64>)> = container
        .key_groups()
        .expect("key groups")
        .into_iter()
        .map(|kg| {
            let kg = KeyGroup::new(kg as i32).expect("kg");
            (kg, deadline_of(kg))
        })
        .collect();
    assert_eq!(
        summary.deadlines, expected,
        "one deadline per restored key group"
    );
    assert_eq!(summary.key_groups, expected.len());
    // Every key group with a deadline has an envelope, rows or not.
    let with_deadline = (0..128)
        .filter(|k| deadline_of(KeyGroup::new(*k).expect("kg")).is_some())
        .count();
    assert_eq!(
        summary
            .deadlines
            .iter()
            .filter(|(_, d)| d.is_some())
            .count(),
        with_deadline
    );
    assert_eq!(summary.earliest_deadline(), Some(1_000_000));
}

/// A non-zero `last_access` in a table without TTL is refused (every backend reports
/// whether its tables have TTL, [`CanonicalTable::table_has_ttl`]); the target is unchanged.
pub fn restore_rejects_last_access_without_ttl<F: StoreFactory>(f: &F) {
    let clock = ManualClock::new(77);
    let probe = Filled::new(f, &clock, 1, 0);
    assert!(!probe.main.table_has_ttl(), "the main table has no TTL");
    assert_restore_fails(
        f,
        "op",
        |c, kg| {
            let (batch, schema) = i64_batch(&[(b"k", 1_234, &1)]);
            put_sections(c, kg, &[("main", ipc_bytes(&batch, &schema))]);
        },
        None,
        |e| matches!(e, Error::InvalidRow { table, row: 0, .. } if table == "main"),
    );
}

/// Snapshots written into a directory: a new snapshot replaces the old one whole (no mix of
/// generations), a writer that dies half-way leaves the old one readable, and stray
/// temporary files change nothing.
pub fn dir_container_snapshots_are_atomic<F: StoreFactory>(f: &F) {
    let clock = ManualClock::new(77);
    let root = std::env::temp_dir().join(format!(
        "sfstate-conformance-dir-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let first = Filled::new(f, &clock, 60, 0);
    let second = Filled::new(f, &clock, 30, 1_000);
    let mut dir = sfcs_format::DirContainer::open(&root).expect("open");
    let pool = Arc::clone(first.store.config().memory_pool());
    let write = |filled: &Filled<F::Store>, dir: &mut sfcs_format::DirContainer| {
        crate::snapshot::write_canonical_snapshot(
            "op",
            None,
            &[&filled.main, &filled.side],
            dir,
            &pool,
        )
        .expect("snapshot")
    };
    write(&first, &mut dir);
    write(&second, &mut dir);
    // A third writer dies after a few envelopes of the first state.
    let mut killed = sfcs_format::DirContainer::open(&root).expect("open");
    killed.begin_generation().expect("begin");
    let some = first.snapshot("op");
    for kg in some.key_groups().expect("kgs").into_iter().take(5) {
        let header = some.get_header(kg).expect("get").expect("header");
        let chunk = some.get_chunk(kg, 0).expect("get").expect("chunk");
        killed.put_key_group(kg, &header, &[&chunk]).expect("put");
    }
    drop(killed);
    std::fs::write(root.join(".tmp-stray"), b"junk").expect("stray");
    let reader = sfcs_format::DirContainer::open(&root).expect("open");
    let mut target = Filled::new(f, &clock, 10, 5);
    target
        .restore("op", &[&reader])
        .expect("restore the second snapshot");
    let mut expected = Filled::new(f, &clock, 30, 1_000);
    target.keys.clone_from(&first.keys);
    expected.keys.clone_from(&first.keys);
    assert_eq!(
        target.state(),
        expected.state(),
        "exactly the second snapshot"
    );
    let _ = std::fs::remove_dir_all(&root);
}
