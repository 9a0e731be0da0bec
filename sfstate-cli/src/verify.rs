//! `sfstate verify`: would a restore at a parallelism succeed, and what would each subtask
//! read.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use keygroup::{
    KeyGroupRange, MaxParallelism, Parallelism, compute_key_group_range_for_operator_index,
};
use sfcs_format::{
    CURRENT_FILE, Container, DirContainer, Manifest, Sections, read_vouched_envelope,
};

use crate::error::{CliError, Result};

/// What `verify` checks against.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct VerifyOptions {
    /// The operator id every manifest must name.
    pub operator_id: String,
    /// The target's max parallelism.
    pub max_parallelism: MaxParallelism,
    /// The target's parallelism.
    pub parallelism: Parallelism,
    /// The parallelism the sources were written at, to name them as source subtasks.
    pub rescale_from: Option<Parallelism>,
}

impl VerifyOptions {
    /// Options for `operator_id` at `max_parallelism` / `parallelism`.
    pub fn new(
        operator_id: &str,
        max_parallelism: MaxParallelism,
        parallelism: Parallelism,
    ) -> Self {
        VerifyOptions {
            operator_id: operator_id.to_owned(),
            max_parallelism,
            parallelism,
            rescale_from: None,
        }
    }

    /// Names sources as subtasks of `from` (each source must cover exactly one such
    /// subtask's key-group range).
    #[must_use]
    pub fn with_rescale_from(mut self, from: Parallelism) -> Self {
        self.rescale_from = Some(from);
        self
    }
}

/// The snapshot directories under `dir`: `dir` itself when it holds a `CURRENT`, else each
/// subdirectory that does, in name order.
fn source_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    if dir.join(CURRENT_FILE).exists() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let io = |e: std::io::Error| {
        CliError::Container(sfcs_format::Error::Io {
            path: dir.to_path_buf(),
            source: e,
        })
    };
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(std::result::Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join(CURRENT_FILE).exists())
        .collect();
    out.sort();
    if out.is_empty() {
        return Err(state_api::Error::IncompleteSnapshot { source_index: 0 }.into());
    }
    Ok(out)
}

/// One source checked completely: manifest, listing, every envelope and section.
fn check_source(path: &Path, index: usize, options: &VerifyOptions) -> Result<Manifest> {
    let c = DirContainer::open_existing(path)?;
    let bytes = c
        .get_manifest()?
        .ok_or(state_api::Error::IncompleteSnapshot {
            source_index: index,
        })?;
    let manifest =
        Manifest::decode(&bytes, Some(&options.operator_id)).map_err(sfcs_format::Error::from)?;
    let expected = options.max_parallelism.get();
    let found = manifest.max_parallelism().map(u32::cast_signed);
    if found != Some(expected) {
        return Err(state_api::Error::MaxParallelismMismatch {
            expected: Some(expected),
            found,
            source_index: Some(index),
        }
        .into());
    }
    manifest.check_listing(&c)?;
    for entry in manifest.entries() {
        let (_, payload) = read_vouched_envelope(&c, &manifest, entry.key_group)?;
        let sections = Sections::decode(&payload).map_err(sfcs_format::Error::from)?;
        let kg = entry.key_group.cast_signed();
        for s in &sections {
            state_api::decode_canonical_section(kg, s.name, s.data)?;
        }
    }
    Ok(manifest)
}

fn covered_range(m: &Manifest) -> Option<KeyGroupRange> {
    let covered = m.covered();
    if covered.is_empty() {
        return None;
    }
    KeyGroupRange::new(covered.start.cast_signed(), (covered.end - 1).cast_signed()).ok()
}

/// `sfstate verify`: checks every source completely, then that every key group of every
/// target subtask's range is covered by exactly one source; returns the plan as text
/// (target subtask ← sources, with key groups).
///
/// # Errors
/// The first failing check's typed error ([`state_api::Error::MissingKeyGroup`] with no
/// source for an uncovered key group, [`state_api::Error::DuplicateKeyGroup`],
/// [`state_api::Error::MaxParallelismMismatch`], …).
pub fn verify(dir: &Path, options: &VerifyOptions) -> Result<String> {
    let dirs = source_dirs(dir)?;
    let mut manifests = Vec::with_capacity(dirs.len());
    for (index, path) in dirs.iter().enumerate() {
        manifests.push(check_source(path, index, options)?);
    }
    let mp = options.max_parallelism;
    let mut names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    if let Some(from) = options.rescale_from {
        for (index, m) in manifests.iter().enumerate() {
            let range = covered_range(m);
            let subtask = (0..from.get())
                .find(|&j| compute_key_group_range_for_operator_index(mp, from, j).ok() == range);
            let Some(j) = subtask else {
                return Err(CliError::Invalid(format!(
                    "source {} covers key groups {:?}, not one subtask's range at parallelism {}",
                    names[index],
                    m.covered(),
                    from.get()
                )));
            };
            names[index] = format!("source subtask {j} ({})", names[index]);
        }
    }
    let mut out = String::new();
    let p = options.parallelism;
    let _ = writeln!(
        out,
        "operator {:?}, max parallelism {}, {} source(s), restore at parallelism {}",
        options.operator_id,
        mp.get(),
        dirs.len(),
        p.get()
    );
    for i in 0..p.get() {
        let range = compute_key_group_range_for_operator_index(mp, p, i)
            .map_err(|e| CliError::Snapshot(e.into()))?;
        let mut reads: Vec<(usize, i32, i32)> = Vec::new();
        for kg in range {
            let k = kg.get().cast_unsigned();
            let owners: Vec<usize> = (0..manifests.len())
                .filter(|&s| manifests[s].covers(k))
                .collect();
            match owners.as_slice() {
                [] => {
                    return Err(state_api::Error::MissingKeyGroup {
                        key_group: kg.get(),
                        source_index: None,
                    }
                    .into());
                }
                [one] => match reads.last_mut() {
                    Some(last) if last.0 == *one && last.2 + 1 == kg.get() => last.2 = kg.get(),
                    _ => reads.push((*one, kg.get(), kg.get())),
                },
                [first, second, ..] => {
                    return Err(state_api::Error::DuplicateKeyGroup {
                        key_group: kg.get(),
                        first: *first,
                        second: *second,
                    }
                    .into());
                }
            }
        }
        let _ = writeln!(
            out,
            "target subtask {i} (key groups {}..={}) reads:",
            range.start(),
            range.end()
        );
        for (source, start, end) in reads {
            let _ = writeln!(out, "  {} key groups {start}..={end}", names[source]);
        }
    }
    let _ = writeln!(
        out,
        "ok: a restore at parallelism {} would succeed",
        p.get()
    );
    Ok(out)
}
