//! A `manifest.json` for a savepoint, in the schema of `shared/flink-savepoint/tool`
//! (`restore-check --expect` reads `operator.uid`, `operator.max_parallelism` and
//! `key_groups[*].{key_group, header_hex, chunk_count, sha256}`).

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::error::Result;
use crate::reader::SavepointReader;

/// Reads every key group of `savepoint` (checking each payload's CRC32C) and returns its
/// manifest: the operator, and per key group the header bytes and fields, the chunk lengths
/// and the SHA-256 of the reassembled payload. Memory: one chunk at a time.
///
/// `uid` is the operator's uid to record (`restore-check` derives the operator id from it);
/// `None` records the uid stored in v5+ metadata (v3 metadata stores none).
///
/// # Errors
/// The first failure of [`SavepointReader::read_payload_with`].
pub fn manifest_json(savepoint: &SavepointReader, uid: Option<&str>) -> Result<Value> {
    let op = savepoint.operator();
    let uid = uid.or(op.uid.as_deref());
    let mut key_groups = Vec::with_capacity(savepoint.key_group_count());
    for key_group in savepoint.key_group_ids() {
        let mut sha = Sha256::new();
        let Some(header) = savepoint.read_payload_with(key_group, None, |c| sha.update(c))? else {
            continue;
        };
        let header_hex = savepoint
            .header_bytes(key_group)
            .map(hex)
            .unwrap_or_default();
        let chunk_lengths: Vec<usize> = (0..header.chunk_count())
            .map(|i| header.chunk_len(i).unwrap_or(0))
            .collect();
        key_groups.push(json!({
            "key_group": key_group,
            "writer_subtask": savepoint.subtask_of(key_group),
            "header_hex": header_hex,
            "format_version": header.version(),
            "operator_id": header.operator_id(),
            "deadline": header.deadline(),
            "chunk_count": header.chunk_count(),
            "payload_length": header.payload_len(),
            "crc32c": header.crc32c(),
            "crc32c_hex": format!("{:08x}", header.crc32c()),
            "chunk_lengths": chunk_lengths,
            "sha256": hex(&sha.finalize()),
        }));
    }
    Ok(json!({
        "format": "sfstate-flink-savepoint-sample/1",
        "flink_version": "2.3.0",
        "written_by": "sfstate flink-savepoint (Rust)",
        "operator": {
            "uid": uid,
            "operator_id_hex": op.id.to_string(),
            "name": op.name,
            "parallelism": op.parallelism,
            "max_parallelism": op.max_parallelism,
            "key_group_prefix_bytes": if op.max_parallelism <= 128 { 1 } else { 2 },
        },
        "savepoint": { "metadata_version": savepoint.metadata_version() },
        "key_groups": key_groups,
    }))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}
