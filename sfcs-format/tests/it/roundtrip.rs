//! Encode -> decode round trips at the chunk-size edges and on random payloads.

use proptest::prelude::*;
use sfcs_format::{CHUNK_SIZE, Envelope, Header, SectionWriter, Sections, decode, decode_to_vec};

use crate::util::splitmix_bytes;

fn round_trip(payload: &[u8], deadline: Option<i64>) {
    let env = Envelope::encode("operator-α", deadline, payload).unwrap();
    let expected_chunks = payload.len().div_ceil(CHUNK_SIZE);
    assert_eq!(env.chunk_count() as usize, expected_chunks);
    assert_eq!(env.chunks().len(), expected_chunks);
    for (i, chunk) in env.chunks().enumerate() {
        let i = u32::try_from(i).unwrap();
        assert_eq!(env.chunk(i), Some(chunk));
        // Borrowed, not copied: the chunk points into the payload.
        assert!(payload.as_ptr_range().contains(&chunk.as_ptr()));
    }
    assert_eq!(env.chunk(env.chunk_count()), None);

    let decoded = decode(env.header_bytes(), "operator-α", env.chunks().map(Some)).unwrap();
    assert_eq!(decoded.header(), env.header());
    assert_eq!(decoded.header().deadline(), deadline);
    assert_eq!(decoded.to_payload().as_ref(), payload);

    let (header, owned) =
        decode_to_vec(env.header_bytes(), "operator-α", env.chunks().map(Some)).unwrap();
    assert_eq!(&header, env.header());
    assert_eq!(owned, payload);
}

#[test]
fn chunk_size_edges() {
    for len in [
        0,
        1,
        CHUNK_SIZE - 1,
        CHUNK_SIZE,
        CHUNK_SIZE + 1,
        3 * CHUNK_SIZE + 17,
    ] {
        let payload = splitmix_bytes(len as u64, len);
        round_trip(&payload, Some(-5));
        round_trip(&payload, None);
    }
}

#[test]
fn empty_payload_has_zero_chunks() {
    let env = Envelope::encode("op", None, &[]).unwrap();
    assert_eq!(env.chunk_count(), 0);
    assert_eq!(env.header().crc32c(), 0);
    let header = Header::decode(env.header_bytes(), "op").unwrap();
    assert_eq!(header.payload_len(), 0);
}

#[test]
fn single_chunk_payload_is_borrowed() {
    let payload = vec![1_u8; 100];
    let env = Envelope::encode("op", None, &payload).unwrap();
    let decoded = decode(env.header_bytes(), "op", env.chunks().map(Some)).unwrap();
    assert!(matches!(
        decoded.to_payload(),
        std::borrow::Cow::Borrowed(_)
    ));
}

proptest! {
    #[test]
    fn random_payloads_round_trip(
        payload in proptest::collection::vec(any::<u8>(), 0..4096),
        deadline in proptest::option::of(i64::MIN + 1..=i64::MAX),
    ) {
        round_trip(&payload, deadline);
    }

    #[test]
    fn sections_round_trip(
        sections in proptest::collection::btree_map("[a-z]{1,12}", proptest::collection::vec(any::<u8>(), 0..300), 0..8)
    ) {
        let mut w = SectionWriter::new();
        for (name, data) in &sections {
            w.push(name, data).unwrap();
        }
        let bytes = w.finish();
        let decoded = Sections::decode(&bytes).unwrap();
        prop_assert_eq!(decoded.len(), sections.len());
        for ((name, data), section) in sections.iter().zip(decoded.iter()) {
            prop_assert_eq!(name.as_str(), section.name);
            prop_assert_eq!(data.as_slice(), section.data);
        }
    }

    #[test]
    fn arbitrary_header_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
        let _ = Header::decode(&bytes, "op");
    }

    #[test]
    fn arbitrary_section_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = Sections::decode(&bytes);
    }
}

proptest! {
    // Multi-megabyte cases: few of them, the edges are covered by `chunk_size_edges`.
    #![proptest_config(ProptestConfig::with_cases(6))]
    #[test]
    fn random_multi_chunk_lengths_round_trip(extra in 0_usize..(2 * CHUNK_SIZE), seed: u64) {
        let len = CHUNK_SIZE - 1 + extra;
        round_trip(&splitmix_bytes(seed, len), None);
    }
}
