//! Containers: the reserved state names, the memory and directory implementations, atomic
//! replacement, and typed errors for damaged contents.

use sfcs_format::{
    CHUNK_SIZE, Container, DecodeError, DirContainer, Error, HEADER_STATE_NAME, MemoryContainer,
    chunk_state_name, read_envelope, write_envelope,
};

use crate::util::splitmix_bytes;

#[test]
fn reserved_state_names() {
    assert_eq!(
        HEADER_STATE_NAME,
        "__streamfusion_canonical_native_state_v1"
    );
    assert_eq!(
        chunk_state_name(0),
        "__streamfusion_canonical_native_state_v1_chunk_0"
    );
    assert_eq!(
        chunk_state_name(12),
        "__streamfusion_canonical_native_state_v1_chunk_12"
    );
}

/// Writes three key groups of different sizes and reads them back.
fn exercise(container: &mut impl Container) {
    let payloads = [
        (3, Vec::new()),
        (17, splitmix_bytes(17, 1000)),
        (32_767, splitmix_bytes(9, CHUNK_SIZE + 1)),
    ];
    for (kg, payload) in &payloads {
        let header = write_envelope(container, *kg, "op", Some(5), payload).unwrap();
        assert_eq!(header.payload_len(), payload.len());
    }
    assert_eq!(container.key_groups().unwrap(), [3, 17, 32_767]);
    for (kg, payload) in &payloads {
        let (header, read) = read_envelope(container, *kg, "op").unwrap();
        assert_eq!(&read, payload);
        assert_eq!(header.deadline(), Some(5));
    }
    // Replacing a key group with a shorter payload leaves no stale chunk behind.
    write_envelope(container, 32_767, "op", None, b"short").unwrap();
    assert_eq!(read_envelope(container, 32_767, "op").unwrap().1, b"short");
    assert!(container.get_chunk(32_767, 1).unwrap().is_none());

    let err = read_envelope(container, 4, "op").unwrap_err();
    assert!(
        matches!(err, Error::MissingHeader { key_group: 4 }),
        "{err}"
    );
    let err = read_envelope(container, 17, "other").unwrap_err();
    assert!(
        matches!(
            err,
            Error::Envelope {
                key_group: 17,
                source: DecodeError::OperatorMismatch { .. }
            }
        ),
        "{err}"
    );
    container.remove_key_group(17).unwrap();
    container.remove_key_group(17).unwrap();
    assert_eq!(container.key_groups().unwrap(), [3, 32_767]);
}

#[test]
fn memory_container() {
    exercise(&mut MemoryContainer::new());
}

#[test]
fn dir_container() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = DirContainer::open(dir.path()).unwrap();
    exercise(&mut c);
    // Nothing is visible to another handle before the commit.
    let other = DirContainer::open(dir.path()).unwrap();
    assert!(other.key_groups().unwrap().is_empty());
    assert!(other.get_manifest().unwrap().is_none());
    c.commit_generation(b"manifest bytes").unwrap();
    // A reopened container sees what was committed.
    let reopened = DirContainer::open(dir.path()).unwrap();
    assert_eq!(read_envelope(&reopened, 3, "op").unwrap().1, b"");
    assert_eq!(
        reopened.get_manifest().unwrap().as_deref(),
        Some(&b"manifest bytes"[..])
    );
    // The handle opened before the commit still reads its pinned (empty) generation.
    assert!(other.key_groups().unwrap().is_empty());
}

#[test]
fn commit_without_a_generation_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = DirContainer::open(dir.path()).unwrap();
    assert!(matches!(c.commit_generation(b"m"), Err(Error::NotWriting)));
    let mut m = MemoryContainer::new();
    assert!(matches!(m.commit_generation(b"m"), Err(Error::NotWriting)));
}

/// Generations: a new snapshot written into a directory replaces the old one as a whole, and
/// an implicit begin starts from the committed envelopes.
#[test]
fn dir_generations_never_mix() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = DirContainer::open(dir.path()).unwrap();
    c.begin_generation().unwrap();
    write_envelope(&mut c, 1, "op", None, b"gen one, kg 1").unwrap();
    write_envelope(&mut c, 2, "op", None, b"gen one, kg 2").unwrap();
    c.commit_generation(b"m1").unwrap();
    let first = c.committed_generation().unwrap();

    // A second snapshot holds only key group 2.
    let reader = DirContainer::open(dir.path()).unwrap();
    c.begin_generation().unwrap();
    write_envelope(&mut c, 2, "op", None, b"gen two, kg 2").unwrap();
    // Until the commit, every other handle reads generation one whole.
    let during = DirContainer::open(dir.path()).unwrap();
    assert_eq!(during.key_groups().unwrap(), [1, 2]);
    assert_eq!(read_envelope(&during, 2, "op").unwrap().1, b"gen one, kg 2");
    c.commit_generation(b"m2").unwrap();
    assert!(c.committed_generation().unwrap() > first);

    let after = DirContainer::open(dir.path()).unwrap();
    assert_eq!(after.key_groups().unwrap(), [2]);
    assert_eq!(read_envelope(&after, 2, "op").unwrap().1, b"gen two, kg 2");
    assert_eq!(after.get_manifest().unwrap().as_deref(), Some(&b"m2"[..]));
    // The handle pinned to generation one finds it gone: typed absence, not a mix.
    assert!(reader.key_groups().unwrap().is_empty());
    assert!(reader.get_manifest().unwrap().is_none());

    // An implicit begin (a put after a commit) keeps the committed envelopes.
    write_envelope(&mut c, 5, "op", None, b"added").unwrap();
    assert_eq!(c.key_groups().unwrap(), [2, 5]);
    assert!(c.get_manifest().unwrap().is_none(), "not committed yet");
    c.commit_generation(b"m3").unwrap();
    let last = DirContainer::open(dir.path()).unwrap();
    assert_eq!(read_envelope(&last, 2, "op").unwrap().1, b"gen two, kg 2");
    // Only the committed generation is left on disk.
    let generations = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("gen-")
        })
        .count();
    assert_eq!(generations, 1);
}

#[test]
fn damaged_chunks_in_a_container_are_typed_errors() {
    let mut c = MemoryContainer::new();
    let payload = splitmix_bytes(1, CHUNK_SIZE + 3);
    write_envelope(&mut c, 5, "op", None, &payload).unwrap();

    let mut missing = c.clone();
    missing.set_chunk_raw(5, 1, None);
    let err = read_envelope(&missing, 5, "op").unwrap_err();
    assert!(
        matches!(
            err,
            Error::Envelope {
                key_group: 5,
                source: DecodeError::MissingChunk { index: 1, .. }
            }
        ),
        "{err}"
    );

    let mut surplus = c.clone();
    surplus.set_chunk_raw(5, 2, Some(vec![1]));
    let err = read_envelope(&surplus, 5, "op").unwrap_err();
    assert!(
        matches!(
            err,
            Error::Envelope {
                source: DecodeError::UnexpectedChunk { index: 2, .. },
                ..
            }
        ),
        "{err}"
    );

    let mut flipped = c.clone();
    flipped.set_chunk_raw(5, 1, Some(vec![0, 0, 0]));
    let err = read_envelope(&flipped, 5, "op").unwrap_err();
    assert!(
        matches!(
            err.decode_error(),
            Some(DecodeError::ChecksumMismatch { .. })
        ),
        "{err}"
    );

    let mut bad_header = c.clone();
    bad_header.set_header_raw(5, b"SFCS".to_vec());
    let err = read_envelope(&bad_header, 5, "op").unwrap_err();
    assert!(
        matches!(
            err.decode_error(),
            Some(DecodeError::TruncatedHeader { .. })
        ),
        "{err}"
    );
}

/// A crash mid-write leaves an uncommitted generation and temporary files; the directory
/// still reads as the committed snapshot, and the next begin removes the leftovers.
#[test]
fn interrupted_dir_write_leaves_the_old_contents() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = DirContainer::open(dir.path()).unwrap();
    write_envelope(&mut c, 9, "op", None, b"old state").unwrap();
    c.commit_generation(b"m").unwrap();

    // What a writer killed half-way through leaves behind: a generation without a manifest,
    // never named by CURRENT, and temporary files.
    let mut killed = DirContainer::open(dir.path()).unwrap();
    killed.begin_generation().unwrap();
    write_envelope(&mut killed, 9, "op", None, b"new state, longer").unwrap();
    write_envelope(&mut killed, 10, "op", None, b"new key group").unwrap();
    let leftover = dir.path().join(".tmp-9-1234-0");
    std::fs::write(&leftover, b"half a file").unwrap();
    let stray_current = dir.path().join(".tmp-current");
    std::fs::write(&stray_current, b"SFCG").unwrap();
    drop(killed);

    let c = DirContainer::open(dir.path()).unwrap();
    assert_eq!(read_envelope(&c, 9, "op").unwrap().1, b"old state");
    assert_eq!(c.key_groups().unwrap(), [9]);
    assert_eq!(c.get_manifest().unwrap().as_deref(), Some(&b"m"[..]));
    let mut next = DirContainer::open(dir.path()).unwrap();
    next.begin_generation().unwrap();
    assert!(!leftover.exists() && !stray_current.exists());
    let dirs = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(dirs, 3, "CURRENT, the committed generation and the new one");
}

/// A damaged CURRENT pointer is a typed error, not an empty or older snapshot.
#[test]
fn damaged_current_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = DirContainer::open(dir.path()).unwrap();
    write_envelope(&mut c, 1, "op", None, b"x").unwrap();
    c.commit_generation(b"m").unwrap();
    let path = dir.path().join(sfcs_format::CURRENT_FILE);
    let good = std::fs::read(&path).unwrap();
    for i in 0..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 0x10;
        std::fs::write(&path, &bad).unwrap();
        assert!(
            matches!(
                DirContainer::open(dir.path()),
                Err(Error::CorruptContainer { .. })
            ),
            "byte {i}"
        );
    }
    std::fs::write(&path, &good[..7]).unwrap();
    assert!(matches!(
        DirContainer::open(dir.path()),
        Err(Error::CorruptContainer { .. })
    ));
}

/// A key-group file cut anywhere never validates as something else: it either still holds the
/// full snapshot or reads as a typed error.
#[test]
fn truncated_dir_file_never_validates_as_other_state() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = DirContainer::open(dir.path()).unwrap();
    let payload = splitmix_bytes(7, 300);
    write_envelope(&mut c, 1, "op", Some(1), &payload).unwrap();
    let path = c.key_group_path(1);
    let full = std::fs::read(&path).unwrap();
    for cut in 0..full.len() {
        std::fs::write(&path, &full[..cut]).unwrap();
        match read_envelope(&c, 1, "op") {
            Ok((_, read)) => assert_eq!(read, payload, "cut {cut}"),
            Err(
                Error::CorruptContainer { .. }
                | Error::MissingHeader { .. }
                | Error::Envelope { .. },
            ) => {}
            Err(other) => panic!("cut {cut}: unexpected {other}"),
        }
    }
}
