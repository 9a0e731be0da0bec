//! `sfstate inspect`: everything a snapshot directory holds, key group by key group.

use std::fmt::Write as _;
use std::path::Path;

use arrow_array::RecordBatch;
use serde_json::{Value, json};
use sfcs_format::{
    Container, DirContainer, Header, Manifest, Sections, assemble_payload, read_vouched_envelope,
};

use crate::error::{CliError, Result};

/// The operator id stored in a header's bytes, if they carry a readable one.
fn header_operator(bytes: &[u8]) -> Option<&str> {
    let len = usize::try_from(i32::from_be_bytes(bytes.get(8..12)?.try_into().ok()?)).ok()?;
    std::str::from_utf8(bytes.get(12..12 + len)?).ok()
}

/// Chunks stored for `key_group`, up to one past `limit`.
fn stored_chunks(c: &DirContainer, key_group: u32, limit: u32) -> Result<Vec<Vec<u8>>> {
    let mut chunks = Vec::new();
    for index in 0..=limit {
        match c.get_chunk(key_group, index)? {
            Some(chunk) => chunks.push(chunk.into_owned()),
            None => break,
        }
    }
    Ok(chunks)
}

fn schema_lines(batches: &[RecordBatch], schema: &arrow_schema::Schema) -> Vec<String> {
    let _ = batches;
    schema
        .fields()
        .iter()
        .map(|f| {
            format!(
                "{}: {}{}",
                f.name(),
                f.data_type(),
                if f.is_nullable() { "" } else { " not null" }
            )
        })
        .collect()
}

/// Inspects the snapshot in `dir`: a JSON report (see [`inspect_text`] for its text form)
/// and whether everything in it is valid. Every problem found is listed in the report's
/// `errors`; the first one is also returned as the error of [`inspect`].
///
/// # Errors
/// [`CliError::Container`] when the directory cannot be opened (a missing directory, a
/// damaged `CURRENT`).
#[allow(clippy::too_many_lines, reason = "one report, built top to bottom")]
pub fn inspect_json(dir: &Path) -> Result<(Value, Option<CliError>)> {
    let c = DirContainer::open_existing(dir)?;
    let mut errors: Vec<CliError> = Vec::new();
    let manifest = match c.get_manifest()? {
        None => {
            errors.push(CliError::Snapshot(state_api::Error::IncompleteSnapshot {
                source_index: 0,
            }));
            None
        }
        Some(bytes) => match Manifest::decode(&bytes, None) {
            Ok(m) => Some(m),
            Err(e) => {
                errors.push(CliError::Container(e.into()));
                None
            }
        },
    };
    let manifest_json = manifest.as_ref().map_or_else(
        || json!({"status": if errors.is_empty() { "missing" } else { "invalid" }}),
        |m| {
            json!({
                "status": "ok",
                "operator_id": m.operator_id(),
                "max_parallelism": m.max_parallelism(),
                "covered_key_groups": [m.covered().start, m.covered().end],
                "envelope_version": m.envelope_version(),
                "section_version": m.section_version(),
                "payload_version": m.payload_version(),
                "entries": m.entries().len(),
            })
        },
    );
    if let Some(m) = &manifest
        && let Err(e) = m.check_listing(&c)
    {
        errors.push(e.into());
    }
    let mut key_groups: Vec<u32> = c.key_groups()?;
    if let Some(m) = &manifest {
        key_groups.extend(m.entries().iter().map(|e| e.key_group));
    }
    key_groups.sort_unstable();
    key_groups.dedup();
    let mut groups = Vec::new();
    for kg in key_groups {
        let kg_i32 = i32::try_from(kg).unwrap_or(i32::MAX);
        let mut entry = json!({"key_group": kg});
        let header_bytes = c.get_header(kg)?.map(std::borrow::Cow::into_owned);
        let operator = manifest
            .as_ref()
            .map(|m| m.operator_id().to_owned())
            .or_else(|| {
                header_bytes
                    .as_deref()
                    .and_then(header_operator)
                    .map(str::to_owned)
            })
            .unwrap_or_default();
        let header = header_bytes
            .as_deref()
            .map(|b| Header::decode(b, &operator));
        let limit = match &header {
            Some(Ok(h)) => h.chunk_count(),
            _ => 1024,
        };
        let chunks = stored_chunks(&c, kg, limit)?;
        entry["chunks_stored"] = json!(chunks.len());
        entry["stored_bytes"] = json!(
            header_bytes.as_ref().map_or(0, Vec::len) + chunks.iter().map(Vec::len).sum::<usize>()
        );
        let mut payload = None;
        match &header {
            None => entry["header"] = Value::Null,
            Some(Err(e)) => {
                entry["header"] = json!({"error": e.to_string()});
                errors.push(CliError::Container(sfcs_format::Error::Envelope {
                    key_group: kg,
                    source: e.clone(),
                }));
            }
            Some(Ok(h)) => {
                entry["header"] = json!({
                    "version": h.version(),
                    "operator_id": h.operator_id(),
                    "deadline": h.deadline(),
                    "chunk_count": h.chunk_count(),
                    "payload_len": h.payload_len(),
                    "crc32c": format!("{:#010x}", h.crc32c()),
                });
                match assemble_payload(h, chunks.iter().map(|c| Some(c.as_slice())).chain([None])) {
                    Ok(p) => {
                        entry["crc"] = json!("ok");
                        payload = Some(p);
                    }
                    Err(e) => {
                        entry["crc"] = json!(e.to_string());
                        errors.push(CliError::Container(sfcs_format::Error::Envelope {
                            key_group: kg,
                            source: e,
                        }));
                    }
                }
            }
        }
        entry["manifest"] = match &manifest {
            None => json!("no manifest"),
            Some(m) => match read_vouched_envelope(&c, m, kg) {
                Ok(_) => json!("vouched"),
                Err(e) => {
                    let text = e.to_string();
                    if !matches!(e, sfcs_format::Error::Envelope { .. }) {
                        errors.push(e.into());
                    }
                    json!(text)
                }
            },
        };
        let mut sections_json = Vec::new();
        if let Some(payload) = &payload {
            match Sections::decode(payload) {
                Err(e) => {
                    entry["sections_error"] = json!(e.to_string());
                    errors.push(CliError::Container(e.into()));
                }
                Ok(sections) => {
                    for s in &sections {
                        let mut sj = json!({"name": s.name, "bytes": s.data.len()});
                        match state_api::decode_canonical_section(kg_i32, s.name, s.data) {
                            Ok((schema, batches)) => {
                                sj["rows"] =
                                    json!(batches.iter().map(RecordBatch::num_rows).sum::<usize>());
                                sj["schema"] = json!(schema_lines(&batches, &schema));
                            }
                            Err(e) => {
                                sj["error"] = json!(e.to_string());
                                errors.push(e.into());
                            }
                        }
                        sections_json.push(sj);
                    }
                }
            }
        }
        entry["sections"] = Value::Array(sections_json);
        groups.push(entry);
    }
    let report = json!({
        "dir": dir.display().to_string(),
        "generation": c.committed_generation(),
        "manifest": manifest_json,
        "key_groups": groups,
        "valid": errors.is_empty(),
        "errors": errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
    });
    Ok((report, errors.into_iter().next()))
}

/// The text form of an [`inspect_json`] report.
pub fn inspect_text(report: &Value) -> String {
    let mut out = String::new();
    let m = &report["manifest"];
    let _ = writeln!(
        out,
        "snapshot {} (generation {})",
        report["dir"].as_str().unwrap_or_default(),
        report["generation"]
    );
    let _ = writeln!(
        out,
        "manifest: {} operator {} max parallelism {} covers key groups {} versions envelope {} sections {} payload {}, {} entries",
        m["status"].as_str().unwrap_or_default(),
        m["operator_id"],
        m["max_parallelism"],
        m["covered_key_groups"],
        m["envelope_version"],
        m["section_version"],
        m["payload_version"],
        m["entries"]
    );
    for kg in report["key_groups"].as_array().into_iter().flatten() {
        let h = &kg["header"];
        let _ = writeln!(
            out,
            "key group {}: manifest {}, crc {}, {} chunks stored, {} bytes; header v{} operator {} deadline {} chunk count {} payload {} B crc {}",
            kg["key_group"],
            kg["manifest"],
            kg["crc"],
            kg["chunks_stored"],
            kg["stored_bytes"],
            h["version"],
            h["operator_id"],
            h["deadline"],
            h["chunk_count"],
            h["payload_len"],
            h["crc32c"]
        );
        for s in kg["sections"].as_array().into_iter().flatten() {
            let _ = writeln!(
                out,
                "  section {}: {} bytes, {} rows, schema [{}]{}",
                s["name"],
                s["bytes"],
                s["rows"],
                s["schema"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
                s.get("error")
                    .map(|e| format!(" ERROR {e}"))
                    .unwrap_or_default()
            );
        }
    }
    let _ = writeln!(
        out,
        "{}",
        if report["valid"].as_bool() == Some(true) {
            "valid"
        } else {
            "INVALID"
        }
    );
    for e in report["errors"].as_array().into_iter().flatten() {
        let _ = writeln!(out, "error: {}", e.as_str().unwrap_or_default());
    }
    out
}

/// `sfstate inspect DIR [--json]`: the report as text or JSON.
///
/// # Errors
/// The first problem found (after the report is complete), or the container error.
pub fn inspect(dir: &Path, as_json: bool) -> Result<String> {
    let (report, first) = inspect_json(dir)?;
    let text = if as_json {
        serde_json::to_string_pretty(&report).map_err(|e| CliError::Invalid(e.to_string()))? + "\n"
    } else {
        inspect_text(&report)
    };
    match first {
        None => Ok(text),
        Some(err) => {
            print!("{text}");
            Err(err)
        }
    }
}
