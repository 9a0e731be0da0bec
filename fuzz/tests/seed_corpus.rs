//! Runs every fuzz target's body over its committed seed corpus (`corpus/<target>/`), so the
//! targets' invariants are checked by the ordinary test suite too.

use std::path::Path;

fn run_corpus(target: &str, body: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("seed corpus {} missing: {e}", dir.display()))
        .map(|e| e.expect("readable corpus entry").path())
        .collect();
    entries.sort();
    assert!(
        !entries.is_empty(),
        "seed corpus {} is empty",
        dir.display()
    );
    for path in &entries {
        let data = std::fs::read(path).expect("readable corpus file");
        body(&data);
    }
    println!("{target}: {} corpus inputs", entries.len());
}

#[test]
fn header_decode_corpus() {
    run_corpus("header_decode", sfstate_fuzz::header_decode);
}

#[test]
fn envelope_container_corpus() {
    run_corpus("envelope_container", sfstate_fuzz::envelope_container);
}

#[test]
fn sections_decode_corpus() {
    run_corpus("sections_decode", sfstate_fuzz::sections_decode);
}

#[test]
fn binary_row_read_corpus() {
    run_corpus("binary_row_read", sfstate_fuzz::binary_row_read);
}

#[test]
fn canonical_restore_corpus() {
    run_corpus("canonical_restore", sfstate_fuzz::canonical_restore);
}

#[test]
fn manifest_decode_corpus() {
    run_corpus("manifest_decode", sfstate_fuzz::manifest_decode);
}

#[test]
fn savepoint_metadata_corpus() {
    run_corpus("savepoint_metadata", sfstate_fuzz::savepoint_metadata);
}

/// Checks that each of `seeds` is in `corpus/<target>/` exactly as its generator makes it
/// (`FUZZ_BLESS=1` writes them) and runs `body` over it.
fn check_generated_seeds(target: &str, seeds: &[(String, Vec<u8>)], body: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    for (name, bytes) in seeds {
        let path = dir.join(name);
        if std::env::var_os("FUZZ_BLESS").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, bytes).unwrap();
        }
        let stored = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (FUZZ_BLESS=1 writes it)", path.display()));
        assert_eq!(
            &stored,
            bytes,
            "{} differs from its generator",
            path.display()
        );
        body(bytes);
    }
    println!("{target}: {} generated seeds", seeds.len());
}

/// The `savepoint_metadata` seeds (committed Flink `_metadata` files, the samples unedited
/// and edited) are in its corpus exactly as their generator makes them; each is also run.
#[test]
fn savepoint_seeds_are_in_the_corpus() {
    check_generated_seeds(
        "savepoint_metadata",
        &sfstate_fuzz::savepoint_seeds(),
        sfstate_fuzz::savepoint_metadata,
    );
}

#[test]
fn stored_value_corpus() {
    run_corpus("stored_value", sfstate_fuzz::stored_value);
}

/// The `stored_value` seeds (real values encoded by `typed_store_value::encode_stored_values`)
/// are in its corpus exactly as their generator makes them; each is also run.
#[test]
fn stored_value_seeds_are_in_the_corpus() {
    check_generated_seeds(
        "stored_value",
        &sfstate_fuzz::stored_value_seeds(),
        sfstate_fuzz::stored_value,
    );
}

#[test]
fn dir_container_corpus() {
    run_corpus("dir_container", sfstate_fuzz::dir_container);
}

/// Seeds made by the code they exercise: valid inputs of the snapshot-level targets. With
/// `FUZZ_BLESS=1` they are (re)written into the corpus; otherwise the test checks they are
/// there, so the corpus cannot silently lose its valid inputs.
/// Calls of [`generated_seeds`]: each gets its own temporary directory, since tests of this
/// binary run in parallel and two of them build the seeds.
static SEED_CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn generated_seeds() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    use sfcs_format::{Container, DirContainer, Manifest, ManifestEntry};

    let pristine = sfstate_fuzz::pristine_section();
    let mut seeds = vec![
        (
            "canonical_restore",
            "seed-pristine-section",
            [&[0][..], &pristine].concat(),
        ),
        ("canonical_restore", "seed-pristine-edited-none", vec![1]),
        (
            "canonical_restore",
            "seed-pristine-edited",
            vec![1, 0, 100, 0xff, 0, 200, 1],
        ),
        (
            "canonical_restore",
            "seed-not-arrow",
            [&[0][..], b"not arrow"].concat(),
        ),
    ];
    let header = sfcs_format::Header::try_new("fuzz-op", Some(7), 12, 0xdead_beef).unwrap();
    let manifest = Manifest::try_new(
        "fuzz-op",
        8,
        0,
        8,
        1,
        vec![
            ManifestEntry::for_header(1, &header),
            ManifestEntry::for_header(5, &header),
        ],
    )
    .unwrap();
    seeds.push(("manifest_decode", "seed-valid-manifest", manifest.encode()));
    seeds.push((
        "manifest_decode",
        "seed-empty-manifest",
        Manifest::try_new("fuzz-op", 0, 0, 0, 1, Vec::new())
            .unwrap()
            .encode(),
    ));
    // A real one-key-group directory snapshot, as the dir_container input framing.
    let call = SEED_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("sfstate-fuzz-seed-{}-{call}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut c = DirContainer::open(&dir).unwrap();
    c.begin_generation().unwrap();
    let h = sfcs_format::write_envelope(&mut c, 3, "fuzz-op", None, b"payload bytes").unwrap();
    let m = Manifest::try_new(
        "fuzz-op",
        8,
        0,
        8,
        1,
        vec![ManifestEntry::for_header(3, &h)],
    )
    .unwrap()
    .encode();
    c.commit_generation(&m).unwrap();
    let kg_file = std::fs::read(c.key_group_path(3)).unwrap();
    let _ = c.key_groups();
    let _ = std::fs::remove_dir_all(&dir);
    let framed = |b: &[u8]| [&u16::try_from(b.len()).unwrap().to_be_bytes()[..], b].concat();
    seeds.push((
        "dir_container",
        "seed-one-key-group",
        [&[2][..], &framed(&m), &[3], &framed(&kg_file)].concat(),
    ));
    seeds.push((
        "dir_container",
        "seed-no-manifest",
        [&[0][..], &[3], &framed(&kg_file)].concat(),
    ));
    seeds
}

#[test]
fn generated_seeds_are_in_the_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for (target, name, bytes) in generated_seeds() {
        let path = root.join(target).join(name);
        if std::env::var_os("FUZZ_BLESS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        let stored = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (FUZZ_BLESS=1 writes it)", path.display()));
        assert_eq!(
            stored,
            bytes,
            "{} differs from its generator",
            path.display()
        );
    }
}

/// A seeded stand-in for a fuzzer run in the ordinary test suite: each snapshot-level body
/// over 3,000 random byte edits of its seeds (splitmix64, fixed seed).
/// A fuzz body.
type Body = fn(&[u8]);

#[test]
#[allow(
    clippy::cast_possible_truncation,
    reason = "random indices reduced modulo small lengths"
)]
fn snapshot_targets_survive_seeded_edits() {
    let mut state = 0x5eed_f022_u64;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let bodies: [(&str, Body); 3] = [
        ("canonical_restore", sfstate_fuzz::canonical_restore),
        ("manifest_decode", sfstate_fuzz::manifest_decode),
        ("dir_container", sfstate_fuzz::dir_container),
    ];
    let seeds = generated_seeds();
    for (target, body) in bodies {
        let inputs: Vec<&Vec<u8>> = seeds
            .iter()
            .filter(|(t, _, _)| *t == target)
            .map(|(_, _, b)| b)
            .collect();
        let runs = if target == "dir_container" {
            300
        } else {
            3_000
        };
        for _ in 0..runs {
            let mut input = inputs[(next() % inputs.len() as u64) as usize].clone();
            for _ in 0..=(next() % 4) {
                if input.is_empty() {
                    break;
                }
                let at = (next() % input.len() as u64) as usize;
                match next() % 3 {
                    0 => input[at] ^= 1 << (next() % 8),
                    1 => input[at] = next() as u8,
                    _ => input.truncate(at.max(1)),
                }
            }
            body(&input);
        }
        println!("{target}: {runs} seeded edits");
    }
}

#[test]
fn store_model_corpus() {
    run_corpus("store_model", sfstate_fuzz::store_model);
}
