//! Fuzz-style robustness: seeded mutations of the samples' `_metadata` and state files.
//! Every outcome is `Ok` or a typed error — never a panic (a panic fails the test) and never
//! an allocation sized by an unchecked length (which would abort the process).

use std::path::Path;

use flink_savepoint::{OperatorSelector, SavepointReader};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::util::{committed_sample, copy_dir};

/// Applies one random mutation to `bytes`.
fn mutate(rng: &mut StdRng, bytes: &mut Vec<u8>) {
    if bytes.is_empty() {
        bytes.push(rng.random());
        return;
    }
    let at = rng.random_range(0..bytes.len());
    match rng.random_range(0..7) {
        0 => bytes[at] ^= 1 << rng.random_range(0..8),
        1 => bytes[at] = rng.random(),
        2 => bytes.truncate(at),
        3 => {
            let n = rng.random_range(1..16).min(bytes.len() - at);
            bytes.drain(at..at + n);
        }
        4 => {
            let extra: Vec<u8> = (0..rng.random_range(1..16)).map(|_| rng.random()).collect();
            bytes.splice(at..at, extra);
        }
        _ => {
            // An interesting 4-byte big-endian integer over a length or count field.
            let v: i32 = *[
                0,
                1,
                -1,
                i32::MAX,
                i32::MIN,
                0x7fff,
                0x8000,
                0xffff,
                4,
                5,
                6,
                7,
                12,
            ]
            .get(rng.random_range(0..13))
            .unwrap();
            for (i, b) in v.to_be_bytes().into_iter().enumerate() {
                if let Some(slot) = bytes.get_mut(at + i) {
                    *slot = b;
                }
            }
        }
    }
}

/// Opens, verifies and reads every chunk; any `Err` is fine, a panic is not.
fn exercise(dir: &Path, uid: &str) {
    let Ok(reader) = SavepointReader::open(dir, &OperatorSelector::Uid(uid.to_owned())) else {
        return;
    };
    let _ = reader.verify(None);
    for kg in reader.key_group_ids().collect::<Vec<_>>() {
        let _ = sfcs_format::read_envelope(&reader, kg, "x");
        for i in 0..reader
            .header(kg)
            .map_or(0, sfcs_format::Header::chunk_count)
        {
            let _ = reader.read_chunk(kg, i);
        }
    }
}

fn fuzz_sample(sample: &str, uid: &str, files: &[&str], rounds: usize, seed: u64) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(sample);
    copy_dir(&committed_sample(sample), &dir);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut outcomes = [0_usize; 2];
    for file in files {
        let path = dir.join(file);
        let original = std::fs::read(&path).unwrap();
        for _ in 0..rounds {
            let mut bytes = original.clone();
            for _ in 0..rng.random_range(1..4) {
                mutate(&mut rng, &mut bytes);
            }
            std::fs::write(&path, &bytes).unwrap();
            exercise(&dir, uid);
            let ok = SavepointReader::open(&dir, &OperatorSelector::Uid(uid.to_owned()))
                .and_then(|r| r.verify(None))
                .is_ok();
            outcomes[usize::from(ok)] += 1;
        }
        std::fs::write(&path, &original).unwrap();
    }
    // The mutations must mostly be caught: a reader that accepted everything would pass the
    // no-panic half of this test trivially.
    assert!(
        outcomes[0] > outcomes[1],
        "{sample}: {outcomes:?} (refused, accepted)"
    );
    println!(
        "{sample}: {} mutations refused with a typed error, {} still valid",
        outcomes[0], outcomes[1]
    );
}

#[test]
fn mutated_inline_heap_savepoint_never_panics() {
    fuzz_sample(
        "p1-hashmap-inline-mp128",
        "native-op",
        &["_metadata"],
        600,
        1,
    );
}

#[test]
fn mutated_inline_rocksdb_timers_savepoint_never_panics() {
    fuzz_sample(
        "p2-rocksdb-inline-mp128-timers-otherops",
        "native-op",
        &["_metadata"],
        600,
        2,
    );
}

#[test]
fn mutated_inline_snappy_utf8_savepoint_never_panics() {
    fuzz_sample(
        "p3-hashmap-inline-mp256-timers-otherop-snappy-utf8",
        "native-op-\u{fc}\u{2713}\u{1F600}",
        &["_metadata"],
        600,
        3,
    );
}

#[test]
fn mutated_file_savepoints_never_panic() {
    fuzz_sample(
        "p3-hashmap-files-mp4096-snappy",
        "native-op",
        &[
            "_metadata",
            "e58a7d53-afe6-4bf3-8206-a2ba9bb1b997",
            "3de6f90c-2bdc-4a2e-a0b0-a8d3d410dcba",
        ],
        300,
        4,
    );
    fuzz_sample(
        "p1-rocksdb-files-mp32768",
        "native-op",
        &["_metadata", "1e3c7915-8824-4234-812e-a518efe45de2"],
        80,
        5,
    );
}
