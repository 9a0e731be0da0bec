//! The directory container (layout on [`DirContainer`]).

use std::borrow::Cow;
use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Container, HEADER_STATE_NAME, chunk_state_name};
use crate::error::{Error, Result};
use crate::section::{MAX_SECTION_NAME_LEN, SECTION_FORMAT_VERSION};

const FILE_PREFIX: &str = "kg-";
const FILE_SUFFIX: &str = ".sfkg";
const TEMP_PREFIX: &str = ".tmp-";

/// Distinguishes temporary files of concurrent writers within one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A [`Container`] backed by a directory on disk.
///
/// One file per key group, replaced atomically.
///
/// Key group `k` lives in `kg-<k>.sfkg` (decimal, zero-padded to 5 digits). The file frames
/// the key group's reserved states exactly like a [section-framed payload](crate::Sections):
/// the section names are the reserved state names ([`HEADER_STATE_NAME`] first, then
/// [`chunk_state_name`]`(0)`, `(1)`, …) and the section data are the stored bytes.
///
/// ```text
/// u32 BE 1 | u32 BE entries | { u16 BE name len | name | u32 BE data len | data } ...
/// ```
///
/// A write goes to a temporary file in the same directory, is synced, and is renamed over the
/// key group's file; the directory is then synced. A crash leaves the old file or the new one,
/// never a mix; stray temporary files are removed by [`DirContainer::open`].
#[derive(Debug, Clone)]
pub struct DirContainer {
    root: PathBuf,
}

impl DirContainer {
    /// Opens (creating if needed) the container directory `root` and removes temporary files
    /// left by an interrupted write.
    ///
    /// # Errors
    /// [`Error::Io`] when the directory cannot be created or listed.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(|e| io_err(&root, e))?;
        for entry in fs::read_dir(&root).map_err(|e| io_err(&root, e))? {
            let entry = entry.map_err(|e| io_err(&root, e))?;
            if entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
                let path = entry.path();
                fs::remove_file(&path).map_err(|e| io_err(&path, e))?;
            }
        }
        Ok(DirContainer { root })
    }

    /// The container directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file that holds `key_group`.
    pub fn key_group_path(&self, key_group: u32) -> PathBuf {
        self.root
            .join(format!("{FILE_PREFIX}{key_group:05}{FILE_SUFFIX}"))
    }

    /// Finds the state called `name` in `key_group`'s file and reads its bytes. Lengths are
    /// checked against the file's size before anything is allocated.
    fn read_state(&self, key_group: u32, name: &str) -> Result<Option<Vec<u8>>> {
        let path = self.key_group_path(key_group);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(&path, e)),
        };
        let size = file.metadata().map_err(|e| io_err(&path, e))?.len();
        let mut r = BufReader::new(file);
        let corrupt = |reason| Error::CorruptContainer {
            path: path.clone(),
            reason,
        };
        let mut pos: u64 = 8;
        let mut fixed = [0_u8; 8];
        read_exact(&mut r, &mut fixed, &path)?;
        let (version, count) = fixed.split_at(4);
        if version != SECTION_FORMAT_VERSION.to_be_bytes() {
            return Err(corrupt("unsupported framing version"));
        }
        let count = u32::from_be_bytes(count.try_into().unwrap_or_default());
        let mut name_buf = Vec::with_capacity(MAX_SECTION_NAME_LEN);
        for _ in 0..count {
            let mut len2 = [0_u8; 2];
            read_exact(&mut r, &mut len2, &path)?;
            let name_len = usize::from(u16::from_be_bytes(len2));
            if name_len > MAX_SECTION_NAME_LEN {
                return Err(corrupt("state name too long"));
            }
            name_buf.resize(name_len, 0);
            read_exact(&mut r, &mut name_buf, &path)?;
            let mut len4 = [0_u8; 4];
            read_exact(&mut r, &mut len4, &path)?;
            let data_len = u64::from(u32::from_be_bytes(len4));
            pos += 2 + name_len as u64 + 4;
            if data_len > size.saturating_sub(pos) {
                return Err(corrupt("state length exceeds the file"));
            }
            if name_buf == name.as_bytes() {
                let len = usize::try_from(data_len).map_err(|_| corrupt("state too large"))?;
                let mut data = vec![0_u8; len];
                read_exact(&mut r, &mut data, &path)?;
                return Ok(Some(data));
            }
            let skip = i64::try_from(data_len).map_err(|_| corrupt("state too large"))?;
            r.seek_relative(skip).map_err(|e| io_err(&path, e))?;
            pos += data_len;
        }
        Ok(None)
    }
}

impl Container for DirContainer {
    fn put_key_group(&mut self, key_group: u32, header: &[u8], chunks: &[&[u8]]) -> Result<()> {
        let target = self.key_group_path(key_group);
        let temp = self.root.join(format!(
            "{TEMP_PREFIX}{key_group}-{}-{}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let result = write_file(&temp, header, chunks).and_then(|()| {
            fs::rename(&temp, &target).map_err(|e| io_err(&target, e))?;
            sync_dir(&self.root)
        });
        if result.is_err() {
            // Best effort: the temporary file is garbage either way and `open` removes it.
            let _ = fs::remove_file(&temp);
        }
        result
    }

    fn get_header(&self, key_group: u32) -> Result<Option<Cow<'_, [u8]>>> {
        Ok(self
            .read_state(key_group, HEADER_STATE_NAME)?
            .map(Cow::Owned))
    }

    fn get_chunk(&self, key_group: u32, index: u32) -> Result<Option<Cow<'_, [u8]>>> {
        Ok(self
            .read_state(key_group, &chunk_state_name(index))?
            .map(Cow::Owned))
    }

    fn key_groups(&self) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(&self.root).map_err(|e| io_err(&self.root, e))? {
            let entry = entry.map_err(|e| io_err(&self.root, e))?;
            let name = entry.file_name();
            let key_group = name
                .to_str()
                .and_then(|n| n.strip_prefix(FILE_PREFIX))
                .and_then(|n| n.strip_suffix(FILE_SUFFIX))
                .and_then(|n| n.parse::<u32>().ok());
            out.extend(key_group);
        }
        out.sort_unstable();
        Ok(out)
    }

    fn remove_key_group(&mut self, key_group: u32) -> Result<()> {
        let path = self.key_group_path(key_group);
        match fs::remove_file(&path) {
            Ok(()) => sync_dir(&self.root),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err(&path, e)),
        }
    }
}

/// Writes a key group's states to `path` and syncs the file.
fn write_file(path: &Path, header: &[u8], chunks: &[&[u8]]) -> Result<()> {
    let too_large = || Error::CorruptContainer {
        path: path.to_path_buf(),
        reason: "too many chunks or a chunk too large for the container format",
    };
    let file = File::create(path).map_err(|e| io_err(path, e))?;
    let mut w = BufWriter::new(file);
    let count = u32::try_from(chunks.len() + 1).map_err(|_| too_large())?;
    let mut put = |bytes: &[u8]| w.write_all(bytes).map_err(|e| io_err(path, e));
    put(&SECTION_FORMAT_VERSION.to_be_bytes())?;
    put(&count.to_be_bytes())?;
    let states = std::iter::once((Cow::Borrowed(HEADER_STATE_NAME), header)).chain(
        (0_u32..)
            .zip(chunks)
            .map(|(i, c)| (Cow::Owned(chunk_state_name(i)), *c)),
    );
    for (name, data) in states {
        let name_len = u16::try_from(name.len()).map_err(|_| too_large())?;
        let data_len = u32::try_from(data.len()).map_err(|_| too_large())?;
        put(&name_len.to_be_bytes())?;
        put(name.as_bytes())?;
        put(&data_len.to_be_bytes())?;
        put(data)?;
    }
    let file = w.into_inner().map_err(|e| io_err(path, e.into_error()))?;
    file.sync_all().map_err(|e| io_err(path, e))
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err(dir, e))
}

fn read_exact(r: &mut impl Read, buf: &mut [u8], path: &Path) -> Result<()> {
    r.read_exact(buf).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::CorruptContainer {
                path: path.to_path_buf(),
                reason: "file ends inside an entry",
            }
        } else {
            io_err(path, e)
        }
    })
}

fn io_err(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_key_group_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        let c = DirContainer::open(dir.path()).unwrap();
        assert!(c.get_header(3).unwrap().is_none());
        assert!(c.get_chunk(3, 0).unwrap().is_none());
        assert!(c.key_groups().unwrap().is_empty());
    }

    #[test]
    fn file_layout_is_section_framing() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = DirContainer::open(dir.path()).unwrap();
        c.put_key_group(7, b"HDR", &[b"c0", b"c1"]).unwrap();
        let bytes = fs::read(c.key_group_path(7)).unwrap();
        let sections = crate::Sections::decode(&bytes).unwrap();
        let names: Vec<_> = sections.iter().map(|s| s.name.to_owned()).collect();
        assert_eq!(
            names,
            [
                HEADER_STATE_NAME.to_owned(),
                chunk_state_name(0),
                chunk_state_name(1)
            ]
        );
        assert_eq!(sections.get(&chunk_state_name(1)), Some(&b"c1"[..]));
        assert!(c.key_group_path(7).ends_with("kg-00007.sfkg"));
    }

    #[test]
    fn truncated_file_is_a_typed_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = DirContainer::open(dir.path()).unwrap();
        c.put_key_group(1, b"HDR", &[b"chunk"]).unwrap();
        let path = c.key_group_path(1);
        let full = fs::read(&path).unwrap();
        for cut in 0..full.len() {
            fs::write(&path, &full[..cut]).unwrap();
            // Either the header is readable before the cut or we get a corrupt-file error;
            // never a panic or an oversized allocation.
            match c.get_chunk(1, 0) {
                Ok(None) | Err(Error::CorruptContainer { .. }) => {}
                other => panic!("cut {cut}: {other:?}"),
            }
        }
    }
}
