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
    exercise(&mut DirContainer::open(dir.path()).unwrap());
    // A reopened container sees what was written.
    let reopened = DirContainer::open(dir.path()).unwrap();
    assert_eq!(read_envelope(&reopened, 3, "op").unwrap().1, b"");
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

/// A crash mid-write leaves a temporary file; the key group still reads as its previous
/// contents, and reopening removes the leftover.
#[test]
fn interrupted_dir_write_leaves_the_old_contents() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = DirContainer::open(dir.path()).unwrap();
    write_envelope(&mut c, 9, "op", None, b"old state").unwrap();

    // What a writer killed half-way through its temporary file leaves behind.
    let mut partial = DirContainer::open(dir.path().join("scratch")).unwrap();
    write_envelope(&mut partial, 9, "op", None, b"new state, longer").unwrap();
    let bytes = std::fs::read(partial.key_group_path(9)).unwrap();
    let leftover = dir.path().join(".tmp-9-1234-0");
    std::fs::write(&leftover, &bytes[..bytes.len() / 2]).unwrap();

    assert_eq!(read_envelope(&c, 9, "op").unwrap().1, b"old state");
    let c = DirContainer::open(dir.path()).unwrap();
    assert!(!leftover.exists());
    assert_eq!(c.key_groups().unwrap(), [9]);
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
