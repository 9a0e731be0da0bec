//! Every validation failure is its own typed error, detected before any payload byte is
//! handed on.

use sfcs_format::{
    CHUNK_SIZE, DecodeError, Envelope, Header, MAX_OPERATOR_ID_LEN, SUPPORTED_VERSIONS, decode,
    decode_to_vec,
};

use crate::util::{owned_chunks, present, splitmix_bytes};

const OP: &str = "op-7";

/// Header fields after the operator id, at their offsets for `OP`.
const DEADLINE_AT: usize = 12 + OP.len();
const CHUNK_COUNT_AT: usize = DEADLINE_AT + 8;
const PAYLOAD_LEN_AT: usize = CHUNK_COUNT_AT + 4;
const CRC_AT: usize = PAYLOAD_LEN_AT + 4;

fn header_with(payload: &[u8], edit: impl FnOnce(&mut Vec<u8>)) -> Result<Header, DecodeError> {
    let env = Envelope::encode(OP, Some(99), payload).unwrap();
    let mut bytes = env.header_bytes().to_vec();
    edit(&mut bytes);
    Header::decode(&bytes, OP)
}

fn put_i32(bytes: &mut [u8], at: usize, v: i32) {
    bytes[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

#[test]
fn truncated_header_at_every_length() {
    let env = Envelope::encode(OP, None, b"abc").unwrap();
    let full = env.header_bytes();
    for cut in 0..full.len() {
        let err = Header::decode(&full[..cut], OP).unwrap_err();
        assert!(
            matches!(
                err,
                DecodeError::TruncatedHeader { .. } | DecodeError::OperatorIdLength { .. }
            ),
            "cut {cut}: {err}"
        );
    }
    assert!(matches!(
        Header::decode(&full[..3], OP),
        Err(DecodeError::TruncatedHeader {
            field: "magic",
            offset: 0,
            needed: 4,
            available: 3
        })
    ));
    assert!(matches!(
        Header::decode(&full[..CRC_AT + 2], OP),
        Err(DecodeError::TruncatedHeader {
            field: "payload CRC32C",
            ..
        })
    ));
}

#[test]
fn bad_magic() {
    let err = header_with(b"x", |b| b[0] = b'X').unwrap_err();
    assert!(
        matches!(err, DecodeError::BadMagic { found } if &found == b"XFCS"),
        "{err}"
    );
}

#[test]
fn unsupported_version_names_the_accepted_ones() {
    for version in [0, 2, -1, i32::MAX] {
        let err = header_with(b"x", |b| put_i32(b, 4, version)).unwrap_err();
        assert!(
            matches!(err, DecodeError::UnsupportedVersion { found, supported } if found == version && supported == SUPPORTED_VERSIONS),
            "{err}"
        );
        assert!(err.to_string().contains("accepts [1]"), "{err}");
    }
}

#[test]
fn operator_id_length_out_of_bounds() {
    for length in [
        -1,
        i32::MIN,
        5,
        1000,
        i32::try_from(MAX_OPERATOR_ID_LEN).unwrap() + 1,
    ] {
        let err = header_with(b"x", |b| put_i32(b, 8, length)).unwrap_err();
        // 5 and 1000 run past the header end only after the id; a length that fits the
        // bytes but not the fields after it is reported as a truncated field instead.
        assert!(
            matches!(err, DecodeError::OperatorIdLength { length: l, .. } if l == length)
                || matches!(
                    err,
                    DecodeError::TruncatedHeader { .. } | DecodeError::OperatorMismatch { .. }
                ),
            "length {length}: {err}"
        );
    }
    let err = header_with(b"x", |b| put_i32(b, 8, -1)).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::OperatorIdLength {
            length: -1,
            max: 1024,
            ..
        }
    ));
    let err = header_with(b"x", |b| put_i32(b, 8, 1 << 30)).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::OperatorIdLength {
            length: 0x4000_0000,
            ..
        }
    ));
}

#[test]
fn operator_id_not_utf8() {
    let err = header_with(b"x", |b| b[13] = 0xff).unwrap_err();
    assert!(
        matches!(err, DecodeError::OperatorIdNotUtf8 { valid_up_to: 1 }),
        "{err}"
    );
}

#[test]
fn wrong_operator_is_refused() {
    let env = Envelope::encode(OP, None, b"payload").unwrap();
    let err = decode(env.header_bytes(), "op-8", env.chunks().map(Some)).unwrap_err();
    assert_eq!(
        err,
        DecodeError::OperatorMismatch {
            expected: "op-8".into(),
            found: OP.into()
        }
    );
}

#[test]
fn trailing_header_bytes() {
    let err = header_with(b"x", |b| b.extend_from_slice(&[0, 0])).unwrap_err();
    assert!(
        matches!(err, DecodeError::TrailingHeaderBytes { extra: 2 }),
        "{err}"
    );
}

#[test]
fn negative_payload_length() {
    let err = header_with(b"x", |b| put_i32(b, PAYLOAD_LEN_AT, -4)).unwrap_err();
    assert!(
        matches!(err, DecodeError::NegativePayloadLength { length: -4 }),
        "{err}"
    );
}

#[test]
fn negative_chunk_count() {
    let err = header_with(b"x", |b| put_i32(b, CHUNK_COUNT_AT, -1)).unwrap_err();
    assert!(
        matches!(err, DecodeError::NegativeChunkCount { count: -1 }),
        "{err}"
    );
}

#[test]
fn chunk_count_inconsistent_with_length() {
    let err = header_with(b"x", |b| put_i32(b, CHUNK_COUNT_AT, 2)).unwrap_err();
    assert!(
        matches!(
            err,
            DecodeError::ChunkCountMismatch {
                payload_length: 1,
                expected: 1,
                found: 2
            }
        ),
        "{err}"
    );
    // Zero chunks for a non-empty payload, and a huge count, are inconsistent too.
    let err = header_with(b"x", |b| put_i32(b, CHUNK_COUNT_AT, 0)).unwrap_err();
    assert!(
        matches!(err, DecodeError::ChunkCountMismatch { found: 0, .. }),
        "{err}"
    );
    let err = header_with(b"", |b| put_i32(b, CHUNK_COUNT_AT, i32::MAX)).unwrap_err();
    assert!(
        matches!(err, DecodeError::ChunkCountMismatch { expected: 0, .. }),
        "{err}"
    );
    // A length that implies another chunk count than the stored one.
    let err = header_with(b"x", |b| put_i32(b, PAYLOAD_LEN_AT, i32::MAX)).unwrap_err();
    assert!(
        matches!(err, DecodeError::ChunkCountMismatch { expected: 512, .. }),
        "{err}"
    );
}

#[test]
fn missing_chunk() {
    let payload = splitmix_bytes(1, 2 * CHUNK_SIZE + 5);
    let env = Envelope::encode(OP, None, &payload).unwrap();
    let chunks = owned_chunks(&env);
    // A gap in the middle.
    let with_gap = chunks
        .iter()
        .enumerate()
        .map(|(i, c)| (i != 1).then_some(c.as_slice()));
    let err = decode(env.header_bytes(), OP, with_gap).unwrap_err();
    assert_eq!(
        err,
        DecodeError::MissingChunk {
            index: 1,
            chunk_count: 3
        }
    );
    // The last chunk absent altogether.
    let err = decode_to_vec(env.header_bytes(), OP, present(&chunks[..2])).unwrap_err();
    assert_eq!(
        err,
        DecodeError::MissingChunk {
            index: 2,
            chunk_count: 3
        }
    );
}

#[test]
fn chunk_of_wrong_length() {
    let payload = splitmix_bytes(2, CHUNK_SIZE + 10);
    let env = Envelope::encode(OP, None, &payload).unwrap();
    let mut chunks = owned_chunks(&env);
    chunks[1].push(0);
    let err = decode(env.header_bytes(), OP, present(&chunks)).unwrap_err();
    assert_eq!(
        err,
        DecodeError::ChunkLength {
            index: 1,
            expected: 10,
            found: 11
        }
    );
    chunks[1].truncate(9);
    let err = decode(env.header_bytes(), OP, present(&chunks)).unwrap_err();
    assert_eq!(
        err,
        DecodeError::ChunkLength {
            index: 1,
            expected: 10,
            found: 9
        }
    );
}

#[test]
fn surplus_chunk() {
    let env = Envelope::encode(OP, None, b"abc").unwrap();
    let chunks = vec![b"abc".to_vec(), b"zzz".to_vec()];
    let err = decode(env.header_bytes(), OP, present(&chunks)).unwrap_err();
    assert_eq!(
        err,
        DecodeError::UnexpectedChunk {
            index: 1,
            chunk_count: 1
        }
    );
}

#[test]
fn checksum_mismatch_in_header() {
    let env = Envelope::encode(OP, None, b"abc").unwrap();
    let mut header = env.header_bytes().to_vec();
    header[CRC_AT] ^= 1;
    let err = decode(&header, OP, env.chunks().map(Some)).unwrap_err();
    assert!(matches!(err, DecodeError::ChecksumMismatch { .. }), "{err}");
}

/// Every single-byte change of a chunk, to every other value, is detected (CRC32C detects
/// all bursts of up to 32 bits).
#[test]
fn every_single_byte_change_is_detected_small() {
    let payload = splitmix_bytes(3, 257);
    let env = Envelope::encode(OP, None, &payload).unwrap();
    let mut chunk = payload.clone();
    for pos in 0..chunk.len() {
        let original = chunk[pos];
        for delta in 1..=255_u8 {
            chunk[pos] = original ^ delta;
            let err = decode(env.header_bytes(), OP, [Some(chunk.as_slice())]).unwrap_err();
            assert!(
                matches!(err, DecodeError::ChecksumMismatch { .. }),
                "pos {pos}"
            );
        }
        chunk[pos] = original;
    }
}

/// The same over a multi-chunk payload, at chunk boundaries and spread positions, through the
/// copying decoder.
#[test]
fn single_byte_changes_detected_across_chunks() {
    let payload = splitmix_bytes(4, 2 * CHUNK_SIZE + 333);
    let env = Envelope::encode(OP, None, &payload).unwrap();
    let mut chunks = owned_chunks(&env);
    let mut positions = vec![
        0,
        1,
        CHUNK_SIZE - 1,
        CHUNK_SIZE,
        2 * CHUNK_SIZE,
        payload.len() - 1,
    ];
    positions.extend((1..24).map(|i| i * (payload.len() / 24) + i));
    for pos in positions {
        let (c, off) = (pos / CHUNK_SIZE, pos % CHUNK_SIZE);
        for delta in [0x01, 0x80, 0xff] {
            chunks[c][off] ^= delta;
            let err = decode_to_vec(env.header_bytes(), OP, present(&chunks)).unwrap_err();
            assert!(
                matches!(err, DecodeError::ChecksumMismatch { .. }),
                "pos {pos}"
            );
            chunks[c][off] ^= delta;
        }
    }
    assert_eq!(
        decode_to_vec(env.header_bytes(), OP, present(&chunks))
            .unwrap()
            .1,
        payload
    );
}

/// Swapping two equally long chunks keeps every length right but changes the payload.
#[test]
fn reordered_chunks_are_detected() {
    let payload = splitmix_bytes(5, 2 * CHUNK_SIZE);
    let env = Envelope::encode(OP, None, &payload).unwrap();
    let mut chunks = owned_chunks(&env);
    chunks.swap(0, 1);
    let err = decode(env.header_bytes(), OP, present(&chunks)).unwrap_err();
    assert!(matches!(err, DecodeError::ChecksumMismatch { .. }), "{err}");
}
