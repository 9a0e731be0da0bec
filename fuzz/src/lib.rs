//! The bodies of sfstate's fuzz targets.
//!
//! Each `fuzz_targets/<name>.rs` is a one-line libFuzzer entry point that calls the function of
//! the same name here; `tests/seed_corpus.rs` calls the same functions over every file of
//! `corpus/<name>/`, so each body also runs as an ordinary test. A body panics only when an
//! invariant is broken (that is what the fuzzer looks for); malformed input must come back as
//! a typed error.

mod restore;
mod savepoint;
mod store_model;
mod stored_value;

pub use restore::{canonical_restore, dir_container, manifest_decode, pristine_section};
pub use savepoint::{savepoint_metadata, savepoint_seeds};
pub use store_model::{ModelKey, StoreOp, store_model};
pub use stored_value::{stored_value, stored_value_seeds};

use arbitrary::{Arbitrary, Unstructured};
use sfcs_format::{Container, Header, MemoryContainer, SectionWriter, Sections};

/// Operator id the envelope targets expect.
pub const OPERATOR: &str = "fuzz-op";

/// Header decode of arbitrary bytes: never panics; a header that decodes re-encodes to the
/// same bytes (the decoder accepts exactly one encoding per header).
pub fn header_decode(data: &[u8]) {
    // Expect the operator id the bytes carry, when they carry one, so that the checks after
    // the operator comparison are reached too.
    let expected = data
        .get(8..12)
        .and_then(|len| usize::try_from(i32::from_be_bytes(len.try_into().ok()?)).ok())
        .and_then(|len| data.get(12..12 + len))
        .and_then(|id| std::str::from_utf8(id).ok())
        .unwrap_or(OPERATOR);
    if let Ok(header) = Header::decode(data, expected) {
        assert_eq!(
            header.encode(),
            data,
            "decoded header re-encodes differently"
        );
        assert_eq!(header.operator_id(), expected);
    }
}

/// What the envelope target stores in a container before reading it back.
#[derive(Debug, Arbitrary)]
pub struct StoredEnvelope {
    /// Header bytes, or `None` for a key group without a header.
    pub header: Option<Vec<u8>>,
    /// Chunks by index; `None` leaves that index empty.
    pub chunks: Vec<Option<Vec<u8>>>,
    /// When set, `header` is replaced by a valid header for the concatenated chunks with this
    /// many bits flipped in it, so the deeper checks are reached.
    pub valid_header_flips: Option<Vec<u16>>,
}

/// Envelope decode through a container: never panics; a payload that validates has exactly
/// the header's length and checksum.
pub fn envelope_container(data: &[u8]) {
    let Ok(input) = StoredEnvelope::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let mut container = MemoryContainer::new();
    let key_group = 7;
    let chunks: Vec<&[u8]> = input.chunks.iter().flatten().map(Vec::as_slice).collect();
    let header = match &input.valid_header_flips {
        Some(flips) => {
            let payload = chunks.concat();
            Some(valid_header_with_flips(&payload, flips))
        }
        None => input.header.clone(),
    };
    container
        .put_key_group(key_group, header.as_deref().unwrap_or(&[]), &[])
        .expect("memory container never fails");
    if header.is_none() {
        container
            .remove_key_group(key_group)
            .expect("memory container never fails");
    }
    for (index, chunk) in input.chunks.iter().enumerate() {
        if let (Ok(index), Some(chunk)) = (u32::try_from(index), chunk) {
            container.set_chunk_raw(key_group, index, Some(chunk.clone()));
        }
    }
    if let Ok((header, payload)) = sfcs_format::read_envelope(&container, key_group, OPERATOR) {
        assert_eq!(payload.len(), header.payload_len());
        assert_eq!(crc32c(&payload), header.crc32c());
    }
}

fn valid_header_with_flips(payload: &[u8], flips: &[u16]) -> Vec<u8> {
    let Ok(env) = sfcs_format::Envelope::encode(OPERATOR, None, payload) else {
        return Vec::new();
    };
    let mut bytes = env.header_bytes().to_vec();
    let bits = bytes.len() * 8;
    for &flip in flips.iter().take(4) {
        let bit = usize::from(flip) % bits;
        if let Some(byte) = bytes.get_mut(bit / 8) {
            *byte ^= 1 << (bit % 8);
        }
    }
    bytes
}

fn crc32c(bytes: &[u8]) -> u32 {
    // Recomputed through the public API: a one-chunk-or-more envelope's header checksum.
    sfcs_format::Envelope::encode(OPERATOR, None, bytes)
        .map(|e| e.header().crc32c())
        .unwrap_or_default()
}

/// Section framing decode of arbitrary bytes: never panics; framing that decodes re-encodes
/// to the same bytes.
pub fn sections_decode(data: &[u8]) {
    if let Ok(sections) = Sections::decode(data) {
        let mut writer = SectionWriter::new();
        for section in &sections {
            writer
                .push(section.name, section.data)
                .expect("decoded sections are valid input");
        }
        assert_eq!(
            writer.finish(),
            data,
            "decoded sections re-encode differently"
        );
    }
}

/// Row types the `binary_row_read` target picks from: every kind of slot and variable-part
/// encoding (inline and long strings, compact and non-compact DECIMAL and TIMESTAMP).
const ROW_TYPES: &[&str] = &[
    "BOOLEAN",
    "TINYINT",
    "SMALLINT",
    "INT",
    "BIGINT",
    "FLOAT",
    "DOUBLE",
    "CHAR(5)",
    "VARCHAR(20)",
    "STRING",
    "BINARY(4)",
    "VARBINARY(30)",
    "BYTES",
    "DECIMAL(10, 2)",
    "DECIMAL(38, 10)",
    "DATE",
    "TIME(3)",
    "TIMESTAMP(3)",
    "TIMESTAMP(9)",
    "TIMESTAMP_LTZ(6)",
];

/// BinaryRow reader over arbitrary bytes and an arbitrary row type: never panics; a row that
/// decodes re-encodes (through the writer) to a row that decodes to the same values, and its
/// hash and key group are computable.
///
/// Input layout: byte 0 = arity (mod 9), then one byte per field choosing its type from
/// [`ROW_TYPES`], then the row bytes.
pub fn binary_row_read(data: &[u8]) {
    let Some((&arity, rest)) = data.split_first() else {
        return;
    };
    let arity = usize::from(arity % 9);
    let Some((type_bytes, row)) = rest.split_at_checked(arity) else {
        return;
    };
    let types: Vec<keygroup::LogicalType> = type_bytes
        .iter()
        .map(|&b| {
            ROW_TYPES[usize::from(b) % ROW_TYPES.len()]
                .parse()
                .expect("the fixed type list parses")
        })
        .collect();
    let _ = keygroup::murmur_hash_bytes(row);
    let Ok(reader) = keygroup::BinaryRowReader::new(&types, row) else {
        return;
    };
    for pos in 0..arity + 2 {
        let _ = reader.is_null_at(pos);
        let _ = reader.read_field(pos);
    }
    if let Ok(values) = keygroup::decode_row(&types, row) {
        let rewritten = keygroup::BinaryRow::from_values(&types, &values)
            .expect("values read from a row are writable");
        let again =
            keygroup::decode_row(&types, rewritten.as_bytes()).expect("a written row decodes");
        assert_eq!(
            again, values,
            "values change across a write/read round trip"
        );
        let max_parallelism = keygroup::MaxParallelism::new(128).expect("valid");
        let _ = rewritten.key_group(max_parallelism);
    }
}
