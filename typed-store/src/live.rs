//! The root directory of a store: the `LIVE` pointer to the live database directory,
//! replaced atomically, and the `live-<n>` directories.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The file naming the live database directory.
pub const LIVE_POINTER_FILE: &str = "LIVE";

/// The temporary file a new [`LIVE_POINTER_FILE`] is written to before the rename.
pub(crate) const LIVE_POINTER_TMP: &str = "LIVE.tmp";

pub(crate) fn live_dirs(root: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    if !root.exists() {
        return Ok(out);
    }
    for entry in fs::read_dir(root).map_err(Error::io(root))? {
        let entry = entry.map_err(Error::io(root))?;
        let name = entry.file_name();
        if let Some(n) = name.to_str().and_then(live_number) {
            out.push((n, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// `n` of a directory name `live-<n>` (decimal, no sign, no leading `+`).
fn live_number(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("live-")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The live directory name `LIVE` holds, `None` when there is no `LIVE` file.
pub(crate) fn read_live_pointer(root: &Path) -> Result<Option<String>> {
    let path = root.join(LIVE_POINTER_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path)(e)),
    };
    let name = text.strip_suffix('\n').unwrap_or(&text);
    if live_number(name).is_none() {
        return Err(Error::CorruptMetadata {
            key: path.display().to_string(),
        });
    }
    Ok(Some(name.to_owned()))
}

/// Makes `LIVE` name `name`, atomically: write `LIVE.tmp`, fsync it, rename it over `LIVE`,
/// fsync the root directory. On error `LIVE.tmp` is removed; `LIVE` names either the old
/// or the new directory (the old one unless the rename happened).
pub(crate) fn write_live_pointer(root: &Path, name: &str) -> Result<()> {
    let tmp = root.join(LIVE_POINTER_TMP);
    let path = root.join(LIVE_POINTER_FILE);
    let written = fs::File::create(&tmp)
        .and_then(|mut file| {
            file.write_all(name.as_bytes())?;
            file.write_all(b"\n")?;
            file.sync_all()
        })
        .map_err(Error::io(&tmp));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    if let Err(e) = fs::rename(&tmp, &path) {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io(&path)(e));
    }
    fs::File::open(root)
        .and_then(|dir| dir.sync_all())
        .map_err(Error::io(root))
}

/// Removes every `live-*` directory but `keep` (best effort: leftovers of an interrupted
/// restore, never opened again).
pub(crate) fn remove_stale_live_dirs(root: &Path, keep: &str) {
    let Ok(dirs) = live_dirs(root) else { return };
    for (_, dir) in dirs {
        if dir.file_name().and_then(|n| n.to_str()) != Some(keep) {
            let _ = fs::remove_dir_all(dir);
        }
    }
    let _ = fs::remove_file(root.join(LIVE_POINTER_TMP));
}
