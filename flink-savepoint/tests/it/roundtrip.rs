//! Writer round trips: write a savepoint from a container, read it back, compare the
//! envelopes byte for byte; invalid sources and damaged savepoints give typed errors.

use std::borrow::Cow;

use flink_savepoint::{
    Compression, Error, MetadataVersion, OperatorId, OperatorSelector, SavepointMetadata,
    SavepointReader, StreamHandle, WriteOptions, key_group_range, write_savepoint,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sfcs_format::{CHUNK_SIZE, Container, MemoryContainer};

use crate::util::{committed_sample, sample_dirs};

/// Every key group of `reader` copied into a memory container.
pub(crate) fn extract(reader: &SavepointReader) -> MemoryContainer {
    let mut out = MemoryContainer::new();
    for kg in reader.key_groups().unwrap() {
        let header = reader.get_header(kg).unwrap().unwrap().into_owned();
        let count = reader.header(kg).unwrap().chunk_count();
        let chunks: Vec<Vec<u8>> = (0..count)
            .map(|i| reader.get_chunk(kg, i).unwrap().unwrap().into_owned())
            .collect();
        let refs: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        out.put_key_group(kg, &header, &refs).unwrap();
    }
    out
}

/// Asserts that `a` and `b` hold byte-identical envelopes.
pub(crate) fn assert_same(a: &dyn Container, b: &dyn Container) {
    let kgs = a.key_groups().unwrap();
    assert_eq!(kgs, b.key_groups().unwrap());
    for kg in kgs {
        assert_eq!(
            a.get_header(kg).unwrap(),
            b.get_header(kg).unwrap(),
            "kg {kg} header"
        );
        for i in 0.. {
            let (x, y) = (a.get_chunk(kg, i).unwrap(), b.get_chunk(kg, i).unwrap());
            assert_eq!(x, y, "kg {kg} chunk {i}");
            if x.is_none() {
                break;
            }
        }
    }
}

fn uid_of(dir: &std::path::Path) -> String {
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    m["operator"]["uid"].as_str().unwrap().to_owned()
}

#[test]
fn every_sample_relaid_at_other_parallelisms_reads_back_identically() {
    let tmp = tempfile::tempdir().unwrap();
    for dir in sample_dirs() {
        let uid = uid_of(&dir);
        let reader = SavepointReader::open(&dir, &OperatorSelector::Uid(uid.clone())).unwrap();
        let source = extract(&reader);
        let m = reader.operator().max_parallelism;
        for (p, version, threshold, compression) in [
            (1, MetadataVersion::V6, 0, Compression::None),
            (3, MetadataVersion::V3, 20 * 1024, Compression::None),
            (7, MetadataVersion::V6, u64::MAX, Compression::None),
            (2, MetadataVersion::V6, 0, Compression::Snappy),
            (5, MetadataVersion::V3, 20 * 1024, Compression::Snappy),
        ] {
            let p = p.min(m);
            let out = tmp.path().join(format!(
                "{}-{p}-{threshold}-{compression:?}",
                dir.file_name().unwrap().to_string_lossy()
            ));
            let options = WriteOptions::new(&uid, m, p)
                .unwrap()
                .with_metadata_version(version)
                .with_inline_threshold(threshold)
                .with_compression(compression);
            let summary = write_savepoint(&source, &out, &options).unwrap();
            assert_eq!(summary.key_groups, reader.key_group_count());
            if threshold == 0 {
                assert_eq!(summary.inline_subtasks, 0);
            }
            if compression == Compression::Snappy {
                assert_snappy_streams(&out, &uid);
            }
            let back = SavepointReader::open(&out, &OperatorSelector::Uid(uid.clone())).unwrap();
            assert_eq!(back.operator().parallelism, i32::try_from(p).unwrap());
            assert_eq!(back.verify(None).unwrap(), reader.key_group_count());
            assert_same(&source, &back);
            for kg in back.key_group_ids() {
                let subtask = u32::try_from(back.subtask_of(kg).unwrap()).unwrap();
                let (start, end) = key_group_range(m, p, subtask);
                assert!(
                    (start..=end).contains(&kg),
                    "kg {kg} in subtask {subtask}'s range"
                );
            }
        }
    }
}

/// Asserts that every keyed stream of the operator in `dir` has the compression flag set
/// and a stream identifier at every non-zero offset.
fn assert_snappy_streams(dir: &std::path::Path, uid: &str) {
    let meta = SavepointMetadata::read(&dir.join("_metadata")).unwrap();
    let op = meta.operator(OperatorId::from_uid(uid)).unwrap();
    let metadata_bytes = std::fs::read(dir.join("_metadata")).unwrap();
    for subtask in &op.subtasks {
        let handle = subtask.managed_keyed.as_ref().unwrap();
        let stream = match handle.stream.as_ref().unwrap() {
            StreamHandle::Relative { path, .. } => std::fs::read(dir.join(path)).unwrap(),
            StreamHandle::Inline { offset, len, .. } => {
                let at = usize::try_from(*offset).unwrap();
                metadata_bytes[at..at + usize::try_from(*len).unwrap()].to_vec()
            }
            other => panic!("unexpected handle {other:?}"),
        };
        assert_eq!(stream[4], 1, "usingKeyGroupCompression");
        for &offset in handle.offsets.iter().filter(|&&o| o != 0) {
            let at = usize::try_from(offset).unwrap();
            assert_eq!(&stream[at..at + 10], b"\xff\x06\x00\x00sNaPpY");
        }
    }
}

/// Seeded random snapshots at edge max parallelisms, with empty, 1-byte, exact 4 MiB and
/// 4 MiB + 1 payloads.
#[test]
fn random_snapshots_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(42);
    for (case, m) in [1_u32, 2, 128, 129, 4096, 32768].into_iter().enumerate() {
        let mut source = MemoryContainer::new();
        let lens = [0, 1, 17, CHUNK_SIZE, CHUNK_SIZE + 1, 3000];
        for (i, &len) in lens.iter().enumerate() {
            let kg = match i {
                0 => 0,
                1 => m - 1,
                _ => rng.random_range(0..m),
            };
            let mut payload = vec![0_u8; len];
            rng.fill(&mut payload[..]);
            let deadline = rng
                .random_bool(0.5)
                .then(|| rng.random_range(-100..i64::MAX));
            sfcs_format::write_envelope(&mut source, kg, "op-\u{e9}", deadline, &payload).unwrap();
        }
        let p = rng.random_range(1..=m.min(5));
        let out = tmp.path().join(format!("case-{case}"));
        let compression = if case % 2 == 0 {
            Compression::None
        } else {
            Compression::Snappy
        };
        write_savepoint(
            &source,
            &out,
            &WriteOptions::new("uid-\u{1F600}", m, p)
                .unwrap()
                .with_compression(compression),
        )
        .unwrap();
        let back =
            SavepointReader::open(&out, &OperatorSelector::Uid("uid-\u{1F600}".into())).unwrap();
        assert_eq!(back.operator().uid.as_deref(), Some("uid-\u{1F600}"));
        back.verify(Some("op-\u{e9}")).unwrap();
        assert_same(&source, &back);
    }
}

#[test]
fn refuses_to_overwrite_a_savepoint() {
    let tmp = tempfile::tempdir().unwrap();
    let mut source = MemoryContainer::new();
    sfcs_format::write_envelope(&mut source, 3, "op", None, b"x").unwrap();
    let options = WriteOptions::new("u", 8, 2).unwrap();
    write_savepoint(&source, tmp.path(), &options).unwrap();
    let err = write_savepoint(&source, tmp.path(), &options).unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
}

/// A damaged source, and the check its error must pass.
type Case = (&'static str, MemoryContainer, fn(&Error) -> bool);

#[test]
#[expect(clippy::too_many_lines, reason = "one table of cases")]
fn invalid_sources_are_refused_and_leave_no_savepoint() {
    let tmp = tempfile::tempdir().unwrap();
    let options = WriteOptions::new("u", 8, 2).unwrap();
    let good = {
        let mut c = MemoryContainer::new();
        sfcs_format::write_envelope(&mut c, 1, "op", None, b"payload").unwrap();
        sfcs_format::write_envelope(&mut c, 6, "op", None, &vec![7; 30_000]).unwrap();
        c
    };
    let cases: Vec<Case> = vec![
        (
            "kg out of range",
            {
                let mut c = good.clone();
                sfcs_format::write_envelope(&mut c, 8, "op", None, b"x").unwrap();
                c
            },
            |e| matches!(e, Error::KeyGroupOutOfRange { key_group: 8, .. }),
        ),
        (
            "bad crc",
            {
                let mut c = good.clone();
                c.set_chunk_raw(6, 0, Some(vec![8; 30_000]));
                c
            },
            |e| {
                matches!(
                    e,
                    Error::Envelope {
                        key_group: 6,
                        source: sfcs_format::DecodeError::ChecksumMismatch { .. }
                    }
                )
            },
        ),
        (
            "missing chunk",
            {
                let mut c = good.clone();
                c.set_chunk_raw(6, 0, None);
                c
            },
            |e| {
                matches!(
                    e,
                    Error::Envelope {
                        source: sfcs_format::DecodeError::MissingChunk { .. },
                        ..
                    }
                )
            },
        ),
        (
            "surplus chunk",
            {
                let mut c = good.clone();
                c.set_chunk_raw(1, 1, Some(vec![1]));
                c
            },
            |e| {
                matches!(
                    e,
                    Error::Envelope {
                        source: sfcs_format::DecodeError::UnexpectedChunk { .. },
                        ..
                    }
                )
            },
        ),
        (
            "bad header",
            {
                let mut c = good.clone();
                c.set_header_raw(1, b"SFCX".to_vec());
                c
            },
            |e| {
                matches!(
                    e,
                    Error::Envelope {
                        source: sfcs_format::DecodeError::BadMagic { .. },
                        ..
                    }
                )
            },
        ),
    ];
    for (what, source, check) in cases {
        let out = tmp.path().join(what);
        let err =
            write_savepoint(&source, &out, &options.clone().with_inline_threshold(0)).unwrap_err();
        assert!(check(&err), "{what}: {err:?}");
        assert!(
            !out.join("_metadata").exists(),
            "{what}: no _metadata after a failed write"
        );
        let temps: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".tmp-")
            })
            .collect();
        assert!(temps.is_empty(), "{what}: temporary files left");
    }
}

/// A container whose storage fails mid-way (a crash stand-in): no `_metadata` appears.
#[test]
fn a_failing_source_mid_write_leaves_no_metadata() {
    struct Failing(MemoryContainer);
    impl Container for Failing {
        fn put_key_group(&mut self, kg: u32, h: &[u8], c: &[&[u8]]) -> sfcs_format::Result<()> {
            self.0.put_key_group(kg, h, c)
        }
        fn get_header(&self, kg: u32) -> sfcs_format::Result<Option<Cow<'_, [u8]>>> {
            self.0.get_header(kg)
        }
        fn get_chunk(&self, kg: u32, i: u32) -> sfcs_format::Result<Option<Cow<'_, [u8]>>> {
            if kg == 5 {
                return Err(sfcs_format::Error::Io {
                    path: "x".into(),
                    source: std::io::Error::other("disk gone"),
                });
            }
            self.0.get_chunk(kg, i)
        }
        fn key_groups(&self) -> sfcs_format::Result<Vec<u32>> {
            self.0.key_groups()
        }
        fn remove_key_group(&mut self, kg: u32) -> sfcs_format::Result<()> {
            self.0.remove_key_group(kg)
        }
        fn begin_generation(&mut self) -> sfcs_format::Result<()> {
            self.0.begin_generation()
        }
        fn commit_generation(&mut self, manifest: &[u8]) -> sfcs_format::Result<()> {
            self.0.commit_generation(manifest)
        }
        fn get_manifest(&self) -> sfcs_format::Result<Option<Cow<'_, [u8]>>> {
            self.0.get_manifest()
        }
    }
    let mut inner = MemoryContainer::new();
    for kg in [0, 5] {
        sfcs_format::write_envelope(&mut inner, kg, "op", None, &vec![1; 50_000]).unwrap();
    }
    let tmp = tempfile::tempdir().unwrap();
    let err = write_savepoint(
        &Failing(inner),
        tmp.path(),
        &WriteOptions::new("u", 8, 1).unwrap(),
    )
    .unwrap_err();
    assert!(matches!(err, Error::Container(_)), "{err:?}");
    assert!(!tmp.path().join("_metadata").exists());
    assert!(SavepointReader::open(tmp.path(), &OperatorSelector::Uid("u".into())).is_err());
}

#[test]
fn the_reader_is_read_only() {
    let dir = committed_sample("p1-hashmap-inline-mp128");
    let mut reader =
        SavepointReader::open(&dir, &OperatorSelector::Uid("native-op".into())).unwrap();
    for err in [
        reader.put_key_group(0, b"h", &[]).unwrap_err(),
        reader.remove_key_group(0).unwrap_err(),
    ] {
        let sfcs_format::Error::Io { source, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(source.kind(), std::io::ErrorKind::ReadOnlyFilesystem);
        let inner = source
            .get_ref()
            .and_then(|e| e.downcast_ref::<Error>())
            .unwrap();
        assert!(matches!(inner, Error::ReadOnly { .. }));
    }
}

/// Damaged copies of a written savepoint: truncated or resized state files, a flipped
/// payload byte, a wrong expected max parallelism or uid.
#[test]
fn damaged_written_savepoints_give_typed_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let mut source = MemoryContainer::new();
    sfcs_format::write_envelope(&mut source, 3, "op", None, &vec![9; CHUNK_SIZE + 10]).unwrap();
    let out = tmp.path().join("sp");
    let summary = write_savepoint(&source, &out, &WriteOptions::new("u", 256, 1).unwrap()).unwrap();
    let file = out.join(&summary.files[0]);
    let sel = OperatorSelector::Uid("u".into());

    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() - 1]).unwrap();
    let err = SavepointReader::open(&out, &sel).unwrap_err();
    assert!(matches!(err, Error::StateFileSize { .. }), "{err}");

    let mut flipped = bytes.clone();
    let at = bytes.len() - 100;
    flipped[at] ^= 1;
    std::fs::write(&file, &flipped).unwrap();
    let reader = SavepointReader::open(&out, &sel).unwrap();
    let err = reader.verify(None).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Envelope {
                key_group: 3,
                source: sfcs_format::DecodeError::ChecksumMismatch { .. }
            }
        ),
        "{err}"
    );
    let err = sfcs_format::read_envelope(&reader, 3, "op").unwrap_err();
    assert!(
        matches!(
            err.decode_error(),
            Some(sfcs_format::DecodeError::ChecksumMismatch { .. })
        ),
        "{err}"
    );
    std::fs::write(&file, &bytes).unwrap();

    let err = SavepointReader::open_with(
        &out,
        &sel,
        &flink_savepoint::ReadOptions::default().with_max_parallelism(128),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::MaxParallelismMismatch {
                expected: 128,
                found: 256
            }
        ),
        "{err}"
    );
    let err = SavepointReader::open(&out, &OperatorSelector::Uid("v".into())).unwrap_err();
    assert!(matches!(err, Error::OperatorNotFound { .. }), "{err}");

    let meta = std::fs::read(out.join("_metadata")).unwrap();
    // The v6 trailer is never deserialized (FORMAT.md 4.7): only its magic is required, so
    // cuts after it still parse.
    for cut in (0..meta.len() - 745 + 4).step_by(7) {
        std::fs::write(out.join("_metadata"), &meta[..cut]).unwrap();
        let err = SavepointReader::open(&out, &sel).unwrap_err();
        assert!(
            matches!(err, Error::Truncated { .. } | Error::MissingTrailer { .. }),
            "cut {cut}: {err:?}"
        );
    }
}
