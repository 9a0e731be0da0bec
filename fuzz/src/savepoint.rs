//! The Flink savepoint reader target (`flink_savepoint::SavepointReader`).
//!
//! The reader opens savepoint directories (it reads `_metadata` and the state files by
//! path), so the body writes its input into a per-process scratch directory and opens that.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use flink_savepoint::{
    MetadataVersion, OperatorId, OperatorSelector, SavepointMetadata, SavepointReader,
    StreamHandle, WriteOptions, write_savepoint,
};
use sfcs_format::MemoryContainer;

/// The uids of the samples' native operators, tried on arbitrary `_metadata`.
const UIDS: [&str; 3] = ["native-op", "native-op-\u{fc}\u{2713}\u{1F600}", "x/op 1"];

/// Most operators of one `_metadata` opened by raw id.
const MAX_OPERATORS_TRIED: usize = 4;

/// Most byte edits applied to a stream.
const MAX_EDITS: usize = 16;

/// A valid savepoint, held in memory, whose key-group streams the edit mode changes.
struct Sample {
    /// Files of the savepoint directory, `_metadata` first.
    files: Vec<(String, Vec<u8>)>,
    uid: &'static str,
    /// The native operator's keyed streams: (index into `files`, offset, length).
    streams: Vec<(usize, usize, usize)>,
    /// Key groups with native state in the unedited sample.
    key_groups: usize,
}

/// The committed Flink-made samples of the edit mode: those whose files are all small
/// (inline key-group streams in `_metadata`; heap and `RocksDB` layouts, timers, other
/// operators, Snappy, a non-ASCII and a `/`-and-space uid).
const FLINK_SAMPLES: [(&str, &str); 4] = [
    ("flink-savepoints/p1-hashmap-inline-mp128", UIDS[0]),
    (
        "flink-savepoints/p2-rocksdb-inline-mp128-timers-otherops",
        UIDS[0],
    ),
    (
        "flink-savepoints/p3-hashmap-inline-mp256-timers-otherop-snappy-utf8",
        UIDS[1],
    ),
    (
        "flink-savepoints-extra/x-p4-rocksdb-inline-mp129-snappy-timers-chained-v2",
        UIDS[2],
    ),
];

/// The committed `_metadata` files that seed the arbitrary-bytes mode (each below 60 KB).
pub const METADATA_SEEDS: [&str; 7] = [
    "flink-savepoints/p1-hashmap-inline-mp128",
    "flink-savepoints/p2-rocksdb-inline-mp128-timers-otherops",
    "flink-savepoints/p3-hashmap-inline-mp256-timers-otherop-snappy-utf8",
    "flink-savepoints-extra/x-p4-rocksdb-inline-mp129-snappy-timers-chained-v2",
    "flink-savepoints/p2-rocksdb-files-mp256-multichunk",
    "flink-savepoints/p2-rocksdb-files-mp4096-snappy-timers-multichunk",
    "flink-savepoints/p3-hashmap-files-mp4096-snappy",
];

/// The repository's `testdata` directory.
pub fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata")
}

/// A scratch directory of this process and thread (the seed-corpus tests run the body on
/// several threads at once).
fn scratch(name: &str) -> PathBuf {
    thread_local! {
        static ROOT: PathBuf = std::env::temp_dir().join(format!(
            "sfstate-fuzz-savepoint-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ).replace(['(', ')'], ""));
    }
    ROOT.with(|root| root.join(name))
}

/// Writes `files` into the fresh scratch directory `name` and returns it.
fn materialise(name: &str, files: &[(String, Vec<u8>)]) -> PathBuf {
    let dir = scratch(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    for (file, bytes) in files {
        std::fs::write(dir.join(file), bytes).expect("write scratch file");
    }
    dir
}

/// Two savepoints made by this crate's writer: key groups with empty, small and
/// several-kilobyte payloads and two operator ids, one as relative files (v6, 1-byte key-group
/// prefixes) and one inline (v3, max parallelism 300: 2-byte prefixes).
fn written_samples() -> Vec<Sample> {
    let mut snapshot = MemoryContainer::new();
    for (kg, len) in [(0_u32, 0_usize), (3, 1), (64, 100), (127, 5000), (99, 17)] {
        let payload: Vec<u8> = (0..len)
            .map(|i| u8::try_from((i * 31 + kg as usize) % 251).unwrap_or_default())
            .collect();
        let deadline = (kg % 2 == 1).then_some(i64::from(kg) * 1000);
        let op = if kg == 99 { "top-n" } else { "group aggregate" };
        sfcs_format::write_envelope(&mut snapshot, kg, op, deadline, &payload)
            .expect("valid envelope");
    }
    let layouts = [
        WriteOptions::new(UIDS[0], 128, 2)
            .expect("valid options")
            .with_inline_threshold(0),
        WriteOptions::new(UIDS[1], 300, 3)
            .expect("valid options")
            .with_metadata_version(MetadataVersion::V3),
    ];
    let mut out = Vec::new();
    for (i, options) in layouts.iter().enumerate() {
        let dir = scratch(&format!("written-{i}"));
        let _ = std::fs::remove_dir_all(&dir);
        write_savepoint(&snapshot, &dir, options).expect("the writer writes a valid snapshot");
        let uid = UIDS[i];
        out.push(load_sample(&dir, uid));
    }
    out
}

/// Loads a savepoint directory into memory with its native operator's stream windows.
fn load_sample(dir: &Path, uid: &'static str) -> Sample {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("sample dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n != "manifest.json" && n != "_metadata")
        .collect();
    names.sort();
    names.insert(0, "_metadata".to_owned());
    let files: Vec<(String, Vec<u8>)> = names
        .into_iter()
        .map(|n| {
            let bytes = std::fs::read(dir.join(&n)).expect("sample file");
            (n, bytes)
        })
        .collect();
    let metadata = SavepointMetadata::read(&dir.join("_metadata")).expect("valid sample");
    let record = metadata
        .operator(OperatorId::from_uid(uid))
        .expect("the sample has its operator");
    let mut streams = Vec::new();
    for subtask in &record.subtasks {
        let Some(stream) = subtask
            .managed_keyed
            .as_ref()
            .and_then(|h| h.stream.as_ref())
        else {
            continue;
        };
        let window = match stream {
            StreamHandle::Inline { offset, len, .. } => (
                0,
                usize::try_from(*offset).expect("small"),
                usize::try_from(*len).expect("small"),
            ),
            StreamHandle::Relative { path, .. } => {
                let index = files
                    .iter()
                    .position(|(n, _)| n == path)
                    .expect("state file present");
                (index, 0, files[index].1.len())
            }
            _ => continue,
        };
        streams.push(window);
    }
    let reader = SavepointReader::open(dir, &OperatorSelector::Uid(uid.to_owned()))
        .expect("valid sample opens");
    reader.verify(None).expect("valid sample verifies");
    Sample {
        files,
        uid,
        streams,
        key_groups: reader.key_group_count(),
    }
}

fn samples() -> &'static [Sample] {
    static SAMPLES: OnceLock<Vec<Sample>> = OnceLock::new();
    SAMPLES.get_or_init(|| {
        let mut all = written_samples();
        for (path, uid) in FLINK_SAMPLES {
            all.push(load_sample(&testdata().join(path), uid));
        }
        all
    })
}

/// Opens, verifies and reads every key group of the savepoint in `dir`. Returns the number
/// of key groups when it opens and verifies. Invariant: a savepoint that verifies serves
/// every key group through the [`Container`] trait with the payload its header describes.
fn exercise(dir: &Path, selector: &OperatorSelector) -> Option<usize> {
    let reader = SavepointReader::open(dir, selector).ok()?;
    let verified = reader.verify(None);
    let key_groups: Vec<u32> = reader.key_group_ids().collect();
    let max_parallelism = reader.operator().max_parallelism;
    for &kg in &key_groups {
        assert!(kg < max_parallelism, "key group {kg} >= {max_parallelism}");
        let header = reader.header(kg).expect("listed key group has a header");
        let _ = reader.subtask_of(kg);
        for index in 0..=header.chunk_count() {
            let _ = reader.read_chunk(kg, index);
        }
        let read = sfcs_format::read_envelope(&reader, kg, header.operator_id());
        if verified.is_ok() {
            let (decoded, payload) = read.expect("a verified savepoint reads every key group");
            assert_eq!(payload.len(), decoded.payload_len());
            assert_eq!(&decoded, header);
        }
    }
    verified.ok()
}

/// The savepoint reader over arbitrary bytes.
///
/// Byte 0 chooses the mode:
/// - even: the rest is `_metadata`, alone in a scratch directory. It is parsed, every
///   operator it lists (at most 4) is opened by raw id, and the samples' uids are tried.
/// - odd: a valid savepoint (byte 1 picks one of the samples: two written here, four made
///   by Flink) gets up to 16 byte edits in one of its native operator's key-group streams
///   (byte 2 picks it), each edit 5 bytes: `u24 BE offset (mod the stream length + 1) |
///   op | value` with op mod 4 = xor, set, insert, delete. When the stream's length changes,
///   the length field that frames it in `_metadata` is rewritten, so the stream itself is
///   parsed.
///
/// Invariants: never a panic or an allocation by an unchecked length; an opened savepoint
/// that verifies serves every key group's payload through `read_envelope`; an unedited
/// sample opens and verifies with its key groups.
pub fn savepoint_metadata(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        arbitrary_metadata(rest);
    } else {
        edited_sample(rest);
    }
}

fn arbitrary_metadata(bytes: &[u8]) {
    let dir = materialise("metadata", &[("_metadata".to_owned(), bytes.to_vec())]);
    if let Ok(metadata) = SavepointMetadata::read(&dir.join("_metadata")) {
        for record in metadata.operators.iter().take(MAX_OPERATORS_TRIED) {
            exercise(&dir, &OperatorSelector::Id(record.id));
        }
    }
    for uid in UIDS {
        exercise(&dir, &OperatorSelector::Uid(uid.to_owned()));
    }
}

fn edited_sample(data: &[u8]) {
    let (Some(&pick), Some(&stream_pick)) = (data.first(), data.get(1)) else {
        return;
    };
    let edits = data.get(2..).unwrap_or_default();
    let all = samples();
    let sample = &all[usize::from(pick) % all.len()];
    let mut files = sample.files.clone();
    let mut changed = false;
    if !sample.streams.is_empty() {
        let (file, offset, len) = sample.streams[usize::from(stream_pick) % sample.streams.len()];
        let mut window = files[file].1[offset..offset + len].to_vec();
        for edit in edits.chunks_exact(5).take(MAX_EDITS) {
            let at = usize::from(edit[0]) << 16 | usize::from(edit[1]) << 8 | usize::from(edit[2]);
            changed |= apply_edit(&mut window, at, edit[3], edit[4]);
        }
        if window.len() != len {
            reframe(&mut files, file, offset, len, window.len());
        }
        files[file].1.splice(offset..offset + len, window);
    }
    let dir = materialise("edited", &files);
    let found = exercise(&dir, &OperatorSelector::Uid(sample.uid.to_owned()));
    if !changed {
        assert_eq!(
            found,
            Some(sample.key_groups),
            "an unedited sample must open and verify with all its key groups"
        );
    }
}

/// Applies one edit; returns whether the bytes changed.
fn apply_edit(window: &mut Vec<u8>, at: usize, op: u8, value: u8) -> bool {
    let at = at % (window.len() + 1);
    match op % 4 {
        0 if at < window.len() && value != 0 => window[at] ^= value,
        1 if at < window.len() && window[at] != value => window[at] = value,
        2 => window.insert(at, value),
        3 if at < window.len() => {
            window.remove(at);
        }
        _ => return false,
    }
    true
}

/// Rewrites the field that frames a stream whose length changed from `old` to `new`: the
/// `i32` before inline data in `_metadata`, or the `i64` size after a relative file's name.
fn reframe(files: &mut [(String, Vec<u8>)], file: usize, offset: usize, old: usize, new: usize) {
    let Ok(new32) = i32::try_from(new) else {
        return;
    };
    if file == 0 {
        if let Some(field) = offset
            .checked_sub(4)
            .and_then(|at| files[0].1.get_mut(at..offset))
        {
            field.copy_from_slice(&new32.to_be_bytes());
        }
        return;
    }
    // RelativeFileStateHandle: UTF name (u16 length, bytes), then i64 size.
    let name = files[file].0.clone();
    let mut needle = u16::try_from(name.len())
        .expect("short name")
        .to_be_bytes()
        .to_vec();
    needle.extend_from_slice(name.as_bytes());
    needle.extend_from_slice(&i64::try_from(old).expect("small").to_be_bytes());
    let metadata = &mut files[0].1;
    if let Some(at) = metadata.windows(needle.len()).position(|w| w == needle) {
        let size_at = at + needle.len() - 8;
        metadata[size_at..size_at + 8].copy_from_slice(&i64::from(new32).to_be_bytes());
    }
}

/// Valid inputs of [`savepoint_metadata`]: every committed seed `_metadata` (arbitrary-bytes
/// mode), and every sample unedited and with one edit of each kind (edit mode).
#[must_use]
pub fn savepoint_seeds() -> Vec<(String, Vec<u8>)> {
    let mut seeds = Vec::new();
    for path in METADATA_SEEDS {
        let bytes = std::fs::read(testdata().join(path).join("_metadata")).expect("committed");
        let name = path.rsplit('/').next().unwrap_or(path);
        seeds.push((format!("seed-metadata-{name}"), [&[0][..], &bytes].concat()));
    }
    let count = u8::try_from(FLINK_SAMPLES.len() + 2).expect("few samples");
    for pick in 0..count {
        seeds.push((format!("seed-sample-{pick}-unedited"), vec![1, pick, 0]));
        seeds.push((
            format!("seed-sample-{pick}-edited"),
            vec![1, pick, 1, 0, 0, 40, 0, 0x10, 0, 0, 90, 2, 7, 0, 1, 0, 3, 0],
        ));
    }
    seeds
}
