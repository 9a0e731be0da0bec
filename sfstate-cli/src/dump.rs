//! `sfstate dump`: one section of one key group as an Arrow IPC file.

use std::path::Path;

use arrow_ipc::writer::FileWriter;
use sfcs_format::{Container, DirContainer, Manifest, Sections, read_vouched_envelope};

use crate::error::{CliError, Result};

/// Writes section `section` of `key_group` of the snapshot in `dir` to `out` as an Arrow IPC
/// file (the random-access format Arrow tools open directly). The envelope must be vouched
/// for by the manifest and the section must pass the canonical validation. Returns the
/// number of rows written.
///
/// # Errors
/// A container, manifest, envelope or section error; [`CliError::Invalid`] when the section
/// does not exist; [`CliError::Output`] when the file cannot be written.
pub fn dump(dir: &Path, key_group: u32, section: &str, out: &Path) -> Result<usize> {
    let c = DirContainer::open_existing(dir)?;
    let bytes = c
        .get_manifest()?
        .ok_or(state_api::Error::IncompleteSnapshot { source_index: 0 })?;
    let manifest = Manifest::decode(&bytes, None).map_err(sfcs_format::Error::from)?;
    let (_, payload) = read_vouched_envelope(&c, &manifest, key_group)?;
    let sections = Sections::decode(&payload).map_err(sfcs_format::Error::from)?;
    let data = sections.get(section).ok_or_else(|| {
        CliError::Invalid(format!(
            "key group {key_group} has no section {section:?} (it has {:?})",
            sections.iter().map(|s| s.name).collect::<Vec<_>>()
        ))
    })?;
    let kg = i32::try_from(key_group).unwrap_or(i32::MAX);
    let (schema, batches) = state_api::decode_canonical_section(kg, section, data)?;
    let output = |source: Box<dyn std::error::Error + Send + Sync>| CliError::Output {
        path: out.to_path_buf(),
        source,
    };
    let file = std::fs::File::create(out).map_err(|e| output(e.into()))?;
    let mut writer = FileWriter::try_new(file, &schema).map_err(|e| output(e.into()))?;
    let mut rows = 0;
    for batch in &batches {
        writer.write(batch).map_err(|e| output(e.into()))?;
        rows += batch.num_rows();
    }
    writer.finish().map_err(|e| output(e.into()))?;
    Ok(rows)
}
