//! The checkpoint manifest: every file of a native checkpoint with its size and CRC32C, and
//! RocksDB's latest sequence number, written last (atomically) into the checkpoint.
//!
//! A checkpoint is used (restored in place or opened as a new store) only when its manifest
//! vouches for it: the manifest's own checksum holds, the directory holds exactly the listed
//! files, each file has the listed size and CRC32C **read from the file itself** (never
//! through RocksDB's block cache, which may hold blocks of an earlier good copy), and the
//! opened copy's latest sequence number is the recorded one. A truncated or replaced RocksDB
//! `MANIFEST-*`, a damaged or missing SST, an extra file and a checkpoint whose manifest was
//! never written (an interrupted checkpoint) are all refused.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::{Read, Write};
use std::path::Path;

use crate::error::{Error, Result};

/// The manifest's file name inside a checkpoint directory.
pub const CHECKPOINT_MANIFEST_FILE: &str = "SFSTATE-CHECKPOINT";

/// The temporary name the manifest is written under before the rename.
const MANIFEST_TMP: &str = "SFSTATE-CHECKPOINT.tmp";

/// The first line of a manifest.
const MAGIC: &str = "sfstate-checkpoint v1";

/// Bytes read at once while checksumming a file.
const READ_CHUNK: usize = 1 << 20;

/// What a manifest records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckpointManifest {
    /// RocksDB's latest sequence number when the checkpoint was taken.
    pub(crate) sequence: u64,
    /// File name -> (size in bytes, CRC32C of its bytes).
    files: BTreeMap<String, (u64, u32)>,
}

fn invalid(dir: &Path, reason: &'static str) -> Error {
    Error::InvalidCheckpoint {
        path: dir.to_owned(),
        reason,
    }
}

/// Size and CRC32C of `path`, read from the file.
fn file_digest(path: &Path) -> Result<(u64, u32)> {
    let mut file = fs::File::open(path).map_err(Error::io(path))?;
    let mut buf = vec![0_u8; READ_CHUNK];
    let mut crc = 0_u32;
    let mut size = 0_u64;
    loop {
        let n = file.read(&mut buf).map_err(Error::io(path))?;
        let Some(chunk) = buf.get(..n) else { break };
        if chunk.is_empty() {
            break;
        }
        crc = crc32c::crc32c_append(crc, chunk);
        size += n as u64;
    }
    Ok((size, crc))
}

/// The regular files of `dir` but the manifest (and its temporary file), by name.
fn checkpoint_files(dir: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(Error::io(dir))? {
        let entry = entry.map_err(Error::io(dir))?;
        let name = entry
            .file_name()
            .into_string()
            .map_err(|_| invalid(dir, "a file name is not UTF-8"))?;
        if name == CHECKPOINT_MANIFEST_FILE || name == MANIFEST_TMP {
            continue;
        }
        out.push(name);
    }
    out.sort();
    Ok(out)
}

impl CheckpointManifest {
    /// Digests every file of the checkpoint in `dir`.
    pub(crate) fn of_dir(dir: &Path, sequence: u64) -> Result<Self> {
        let mut files = BTreeMap::new();
        for name in checkpoint_files(dir)? {
            files.insert(name.clone(), file_digest(&dir.join(&name))?);
        }
        Ok(Self { sequence, files })
    }

    /// The manifest's text:
    ///
    /// ```text
    /// sfstate-checkpoint v1
    /// sequence <u64, decimal>
    /// file <name> <size, decimal> <crc32c, 8 lowercase hex digits>     (one per file, by name)
    /// checksum <crc32c of every byte above, 8 lowercase hex digits>
    /// ```
    fn encode(&self) -> String {
        let mut text = format!("{MAGIC}\nsequence {}\n", self.sequence);
        for (name, (size, crc)) in &self.files {
            let _ = writeln!(text, "file {name} {size} {crc:08x}");
        }
        let checksum = crc32c::crc32c(text.as_bytes());
        let _ = writeln!(text, "checksum {checksum:08x}");
        text
    }

    /// Parses a manifest, checking its checksum and shape.
    fn decode(dir: &Path, text: &str) -> Result<Self> {
        let bad = |reason| invalid(dir, reason);
        let body_end = text
            .trim_end_matches('\n')
            .rfind('\n')
            .map(|i| i + 1)
            .ok_or(bad("checkpoint manifest too short"))?;
        let (body, last) = text.split_at(body_end);
        let checksum = last
            .strip_prefix("checksum ")
            .and_then(|c| c.strip_suffix('\n'))
            .and_then(|c| u32::from_str_radix(c, 16).ok())
            .ok_or(bad("checkpoint manifest has no checksum line"))?;
        if crc32c::crc32c(body.as_bytes()) != checksum {
            return Err(bad("checkpoint manifest checksum mismatch"));
        }
        let mut lines = body.lines();
        if lines.next() != Some(MAGIC) {
            return Err(bad("not an sfstate checkpoint manifest (v1)"));
        }
        let sequence = lines
            .next()
            .and_then(|l| l.strip_prefix("sequence "))
            .and_then(|s| s.parse().ok())
            .ok_or(bad("checkpoint manifest has no sequence number"))?;
        let mut files = BTreeMap::new();
        for line in lines {
            let mut parts = line.strip_prefix("file ").unwrap_or_default().split(' ');
            let (Some(name), Some(size), Some(crc), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err(bad("malformed checkpoint manifest line"));
            };
            let size = size.parse().map_err(|_| bad("malformed file size"))?;
            let crc = u32::from_str_radix(crc, 16).map_err(|_| bad("malformed file CRC"))?;
            files.insert(name.to_owned(), (size, crc));
        }
        Ok(Self { sequence, files })
    }

    /// Writes the manifest into `dir` atomically (temporary file, fsync, rename, directory
    /// fsync), so a checkpoint without its complete manifest is never taken for a complete
    /// checkpoint.
    pub(crate) fn write(&self, dir: &Path) -> Result<()> {
        let tmp = dir.join(MANIFEST_TMP);
        let path = dir.join(CHECKPOINT_MANIFEST_FILE);
        fs::File::create(&tmp)
            .and_then(|mut file| {
                file.write_all(self.encode().as_bytes())?;
                file.sync_all()
            })
            .map_err(Error::io(&tmp))?;
        fs::rename(&tmp, &path).map_err(Error::io(&path))?;
        fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(Error::io(dir))
    }

    /// Reads the manifest of the checkpoint in `dir` and checks every file against it:
    /// exactly the listed files, each of the listed size and CRC32C (read from the file).
    /// Returns the manifest (its sequence number is checked once the copy is open).
    pub(crate) fn verify_dir(dir: &Path) -> Result<Self> {
        let path = dir.join(CHECKPOINT_MANIFEST_FILE);
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(invalid(
                    dir,
                    "no checkpoint manifest: incomplete checkpoint",
                ));
            }
            Err(_) => return Err(invalid(dir, "unreadable checkpoint manifest")),
        };
        let manifest = Self::decode(dir, &text)?;
        let present = checkpoint_files(dir)?;
        if present.len() != manifest.files.len()
            || !present.iter().all(|n| manifest.files.contains_key(n))
        {
            return Err(invalid(
                dir,
                "checkpoint files differ from its manifest (missing or extra)",
            ));
        }
        for (name, expected) in &manifest.files {
            if file_digest(&dir.join(name))? != *expected {
                return Err(invalid(
                    dir,
                    "a checkpoint file's size or checksum differs from its manifest",
                ));
            }
        }
        Ok(manifest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_round_trips_and_refuses_damage() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("000001.sst"), b"sst bytes").unwrap();
        fs::write(dir.path().join("MANIFEST-000005"), b"manifest").unwrap();
        let manifest = CheckpointManifest::of_dir(dir.path(), 42).unwrap();
        manifest.write(dir.path()).unwrap();
        assert_eq!(
            CheckpointManifest::verify_dir(dir.path()).unwrap(),
            manifest
        );
        let text = manifest.encode();
        assert!(text.starts_with("sfstate-checkpoint v1\nsequence 42\nfile 000001.sst 9 "));

        // A truncated file, an extra file, a damaged manifest: each refused.
        fs::write(dir.path().join("MANIFEST-000005"), b"manifes").unwrap();
        assert!(CheckpointManifest::verify_dir(dir.path()).is_err());
        fs::write(dir.path().join("MANIFEST-000005"), b"manifest").unwrap();
        fs::write(dir.path().join("extra"), b"").unwrap();
        assert!(CheckpointManifest::verify_dir(dir.path()).is_err());
        fs::remove_file(dir.path().join("extra")).unwrap();
        let damaged = text.replace("sequence 42", "sequence 43");
        fs::write(dir.path().join(CHECKPOINT_MANIFEST_FILE), damaged).unwrap();
        assert!(CheckpointManifest::verify_dir(dir.path()).is_err());
        fs::remove_file(dir.path().join(CHECKPOINT_MANIFEST_FILE)).unwrap();
        assert!(CheckpointManifest::verify_dir(dir.path()).is_err());
    }
}
