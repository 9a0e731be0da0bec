//! Every savepoint under `$FLINK_SAVEPOINTS_DIR` (default: the committed copy of the
//! Flink 2.3.0 samples) is read and every key group checked against its `manifest.json`:
//! header bytes, chunk count, payload length, CRC32C, payload SHA-256 and the set of key
//! groups. Anything unreadable fails the test.

use std::collections::BTreeSet;

use flink_savepoint::{OperatorId, OperatorSelector, ReadOptions, SavepointReader};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::util::{hex, sample_dirs};

#[test]
fn flink_savepoints_match_their_manifests() {
    check_all(&sample_dirs());
}

/// Savepoints the Flink tool (`compat/flink-savepoint/tool`, `make-sample`) made in
/// configurations the shared samples do not have (see that folder's README).
#[test]
fn flink_savepoints_extra_tool_made_set() {
    let root = crate::util::repo_root().join("testdata/flink-savepoints-extra");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("_metadata").is_file())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no savepoint under {}", root.display());
    check_all(&dirs);
}

fn check_all(dirs: &[std::path::PathBuf]) {
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let manifest_path = dir.join("manifest.json");
        let text = std::fs::read_to_string(&manifest_path)
            .unwrap_or_else(|e| panic!("{name}: cannot read {}: {e}", manifest_path.display()));
        let manifest: Value = serde_json::from_str(&text).unwrap();
        let op = &manifest["operator"];
        let uid = op["uid"].as_str().expect("operator.uid");
        let max_parallelism = u32::try_from(op["max_parallelism"].as_u64().unwrap()).unwrap();
        let options = ReadOptions::default().with_max_parallelism(max_parallelism);
        let reader =
            SavepointReader::open_with(dir, &OperatorSelector::Uid(uid.to_owned()), &options)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Some(id) = op["operator_id_hex"].as_str() {
            assert_eq!(reader.operator().id.to_string(), id, "{name}: operator id");
            // The raw id selects the same operator (and the _metadata file itself is accepted).
            let by_id = SavepointReader::open(
                dir.join("_metadata"),
                &OperatorSelector::Id(OperatorId::from_hex(id).unwrap()),
            )
            .unwrap_or_else(|e| panic!("{name}: by id: {e}"));
            assert_eq!(by_id.key_group_count(), reader.key_group_count(), "{name}");
        }
        if let Some(p) = op["parallelism"].as_i64() {
            assert_eq!(
                i64::from(reader.operator().parallelism),
                p,
                "{name}: parallelism"
            );
        }
        let expected = manifest["key_groups"].as_array().expect("key_groups");
        let want: BTreeSet<u32> = expected
            .iter()
            .map(|k| u32::try_from(k["key_group"].as_u64().unwrap()).unwrap())
            .collect();
        let got: BTreeSet<u32> = reader.key_group_ids().collect();
        assert_eq!(got, want, "{name}: the set of key groups");
        let mut checked = 0;
        for k in expected {
            let kg = u32::try_from(k["key_group"].as_u64().unwrap()).unwrap();
            let header = reader.header_bytes(kg).unwrap();
            assert_eq!(
                hex(header),
                k["header_hex"].as_str().unwrap(),
                "{name} kg {kg}: header bytes"
            );
            let mut sha = Sha256::new();
            let mut len = 0_u64;
            let sfcs_op = k["operator_id"].as_str();
            let h = reader
                .read_payload_with(kg, sfcs_op, |c| {
                    sha.update(c);
                    len += c.len() as u64;
                })
                .unwrap_or_else(|e| panic!("{name} kg {kg}: {e}"))
                .unwrap();
            assert_eq!(
                hex(&sha.finalize()),
                k["sha256"].as_str().unwrap(),
                "{name} kg {kg}: payload SHA-256"
            );
            assert_eq!(
                u64::from(h.chunk_count()),
                k["chunk_count"].as_u64().unwrap(),
                "{name} kg {kg}"
            );
            if let Some(n) = k["payload_length"].as_u64() {
                assert_eq!(len, n, "{name} kg {kg}: payload length");
            }
            if let Some(crc) = k["crc32c"].as_u64() {
                assert_eq!(u64::from(h.crc32c()), crc, "{name} kg {kg}: CRC32C");
            }
            checked += 1;
        }
        assert_eq!(checked, want.len());
        println!("{name}: {checked} key groups checked");
    }
}

/// The same content through the `Container` trait and sfcs-format's validating reader.
#[test]
fn flink_savepoints_through_the_container_trait() {
    for dir in sample_dirs() {
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap())
                .unwrap();
        let uid = manifest["operator"]["uid"].as_str().unwrap().to_owned();
        let reader = SavepointReader::open(&dir, &OperatorSelector::Uid(uid)).unwrap();
        for k in manifest["key_groups"].as_array().unwrap() {
            let kg = u32::try_from(k["key_group"].as_u64().unwrap()).unwrap();
            let op = k["operator_id"].as_str().unwrap();
            let (_, payload) = sfcs_format::read_envelope(&reader, kg, op).unwrap();
            assert_eq!(
                crate::util::sha256_hex(&payload),
                k["sha256"].as_str().unwrap()
            );
        }
    }
}
