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
const GENERATION_PREFIX: &str = "gen-";
/// The pointer file naming the committed generation.
pub const CURRENT_FILE: &str = "CURRENT";
/// The manifest file inside a generation directory.
pub const MANIFEST_FILE: &str = "MANIFEST";
const CURRENT_MAGIC: [u8; 4] = *b"SFCG";
/// Largest manifest file read: the fixed fields, a 1 KiB operator id and 32768 entries.
const MAX_MANIFEST_FILE_LEN: u64 = 48 + 1024 + 20 * 32_768;

/// Distinguishes temporary files of concurrent writers within one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A [`Container`] backed by a directory on disk, written in generations.
///
/// ```text
/// <root>/CURRENT                     16 bytes: "SFCG" | generation u64 BE | CRC32C u32 BE of
///                                    the first 12 bytes; names the committed generation
/// <root>/gen-<n>/                    generation n (n: 10 decimal digits, zero-padded)
/// <root>/gen-<n>/MANIFEST            the generation's manifest (see crate::Manifest)
/// <root>/gen-<n>/kg-<k>.sfkg         key group k (5 decimal digits, zero-padded)
/// <root>/.tmp-*                      temporary files (ignored by readers)
/// ```
///
/// A key-group file frames the key group's reserved states exactly like a
/// [section-framed payload](crate::Sections): the section names are the reserved state names
/// ([`HEADER_STATE_NAME`] first, then [`chunk_state_name`]`(0)`, `(1)`, …) and the section
/// data are the stored bytes.
///
/// ```text
/// u32 BE 1 | u32 BE entries | { u16 BE name len | name | u32 BE data len | data } ...
/// ```
///
/// A handle pins the generation `CURRENT` names when it is opened ([`refresh`](Self::refresh)
/// re-reads it), so its reads never mix two generations. A write goes to a new generation
/// directory that no reader looks at: each file is written to a temporary name, synced and
/// renamed; [`commit_generation`](Container::commit_generation) writes and syncs the
/// `MANIFEST`, syncs the directory, then replaces `CURRENT` atomically (temporary file,
/// sync, rename, sync of the root) and removes older generations. A crash at any point
/// leaves `CURRENT` naming the old complete generation or the new complete one; leftovers of
/// an interrupted write are removed by the next [`begin_generation`](Container::begin_generation).
///
/// One writer per directory at a time. A reader whose pinned generation is removed by a
/// writer's commit gets typed errors (missing key groups), never another generation's bytes.
#[derive(Debug, Clone)]
pub struct DirContainer {
    root: PathBuf,
    committed: Option<u64>,
    writing: Option<u64>,
}

impl DirContainer {
    /// Opens (creating if needed) the container directory `root` and pins its committed
    /// generation. Nothing is removed.
    ///
    /// # Errors
    /// [`Error::Io`] when the directory cannot be created or read; [`Error::CorruptContainer`]
    /// for a damaged `CURRENT`.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(|e| io_err(&root, e))?;
        Self::open_existing(root)
    }

    /// Opens an existing container directory without creating anything (for read-only
    /// tools).
    ///
    /// # Errors
    /// As [`open`](Self::open); [`Error::Io`] when `root` is not a directory.
    pub fn open_existing(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        if !fs::metadata(&root).map_err(|e| io_err(&root, e))?.is_dir() {
            return Err(io_err(
                &root,
                std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            ));
        }
        let mut c = DirContainer {
            root,
            committed: None,
            writing: None,
        };
        c.refresh()?;
        Ok(c)
    }

    /// Re-reads `CURRENT` and pins the generation it names (a generation being written by
    /// this handle stays the one its getters read).
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn refresh(&mut self) -> Result<()> {
        let path = self.root.join(CURRENT_FILE);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.committed = None;
                return Ok(());
            }
            Err(e) => return Err(io_err(&path, e)),
        };
        self.committed = Some(decode_current(&bytes).ok_or(Error::CorruptContainer {
            path,
            reason: "CURRENT is not a valid generation pointer",
        })?);
        Ok(())
    }

    /// The container directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The committed generation this handle pinned, if any.
    pub fn committed_generation(&self) -> Option<u64> {
        self.committed
    }

    /// The generation being written by this handle, if any.
    pub fn writing_generation(&self) -> Option<u64> {
        self.writing
    }

    /// The directory of the generation the getters read (`None`: nothing committed and
    /// nothing being written).
    pub fn generation_path(&self) -> Option<PathBuf> {
        self.writing
            .or(self.committed)
            .map(|g| self.generation_dir(g))
    }

    fn generation_dir(&self, generation: u64) -> PathBuf {
        self.root
            .join(format!("{GENERATION_PREFIX}{generation:010}"))
    }

    /// The file that holds `key_group` in the generation the getters read.
    pub fn key_group_path(&self, key_group: u32) -> PathBuf {
        self.generation_path()
            .unwrap_or_else(|| self.root.clone())
            .join(format!("{FILE_PREFIX}{key_group:05}{FILE_SUFFIX}"))
    }

    /// The manifest file of the generation the getters read.
    pub fn manifest_path(&self) -> PathBuf {
        self.generation_path()
            .unwrap_or_else(|| self.root.clone())
            .join(MANIFEST_FILE)
    }

    /// Starts generation `max(existing) + 1` after removing leftovers (generations other than
    /// the committed one, temporary files); with `copy_committed` it starts with hard links
    /// to (or copies of) the committed key-group files.
    fn start_generation(&mut self, copy_committed: bool) -> Result<u64> {
        let mut highest = self.committed.unwrap_or(0);
        for entry in fs::read_dir(&self.root).map_err(|e| io_err(&self.root, e))? {
            let entry = entry.map_err(|e| io_err(&self.root, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let path = entry.path();
            if name.starts_with(TEMP_PREFIX) {
                remove_any(&path)?;
            } else if let Some(g) = parse_generation(name) {
                if Some(g) == self.committed {
                    continue;
                }
                highest = highest.max(g);
                remove_any(&path)?;
            }
        }
        let generation = highest + 1;
        let dir = self.generation_dir(generation);
        fs::create_dir(&dir).map_err(|e| io_err(&dir, e))?;
        if copy_committed && let Some(committed) = self.committed {
            let from = self.generation_dir(committed);
            for key_group in list_key_groups(&from)? {
                let name = format!("{FILE_PREFIX}{key_group:05}{FILE_SUFFIX}");
                let (src, dst) = (from.join(&name), dir.join(&name));
                if fs::hard_link(&src, &dst).is_err() {
                    fs::copy(&src, &dst).map_err(|e| io_err(&dst, e))?;
                }
            }
        }
        self.writing = Some(generation);
        Ok(generation)
    }

    fn writing_dir(&mut self) -> Result<PathBuf> {
        let generation = match self.writing {
            Some(g) => g,
            None => self.start_generation(true)?,
        };
        Ok(self.generation_dir(generation))
    }

    /// Finds the state called `name` in `key_group`'s file and reads its bytes. Lengths are
    /// checked against the file's size before anything is allocated.
    fn read_state(&self, key_group: u32, name: &str) -> Result<Option<Vec<u8>>> {
        if self.generation_path().is_none() {
            return Ok(None);
        }
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
        let dir = self.writing_dir()?;
        let target = self.key_group_path(key_group);
        write_atomically(&dir, &target, |path| write_file(path, header, chunks))
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
        match self.generation_path() {
            Some(dir) => list_key_groups(&dir),
            None => Ok(Vec::new()),
        }
    }

    fn remove_key_group(&mut self, key_group: u32) -> Result<()> {
        self.writing_dir()?;
        let path = self.key_group_path(key_group);
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err(&path, e)),
        }
    }

    fn begin_generation(&mut self) -> Result<()> {
        self.writing = None;
        self.start_generation(false).map(|_| ())
    }

    fn commit_generation(&mut self, manifest: &[u8]) -> Result<()> {
        let generation = self.writing.ok_or(Error::NotWriting)?;
        let dir = self.generation_dir(generation);
        write_atomically(&dir, &dir.join(MANIFEST_FILE), |path| {
            write_synced(path, manifest)
        })?;
        sync_dir(&dir)?;
        let current = self.root.join(CURRENT_FILE);
        write_atomically(&self.root, &current, |path| {
            write_synced(path, &encode_current(generation))
        })?;
        sync_dir(&self.root)?;
        self.committed = Some(generation);
        self.writing = None;
        // Best effort: older generations are garbage now; the next begin removes what is left.
        if let Ok(entries) = fs::read_dir(&self.root) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                if name
                    .to_str()
                    .and_then(parse_generation)
                    .is_some_and(|g| g != generation)
                {
                    let _ = remove_any(&entry.path());
                }
            }
        }
        Ok(())
    }

    fn get_manifest(&self) -> Result<Option<Cow<'_, [u8]>>> {
        if self.generation_path().is_none() {
            return Ok(None);
        }
        let path = self.manifest_path();
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(&path, e)),
        };
        let size = file.metadata().map_err(|e| io_err(&path, e))?.len();
        if size > MAX_MANIFEST_FILE_LEN {
            return Err(Error::CorruptContainer {
                path,
                reason: "manifest file larger than any valid manifest",
            });
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        file.take(MAX_MANIFEST_FILE_LEN + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| io_err(&path, e))?;
        Ok(Some(Cow::Owned(bytes)))
    }
}

fn encode_current(generation: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    out.extend_from_slice(&CURRENT_MAGIC);
    out.extend_from_slice(&generation.to_be_bytes());
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

fn decode_current(bytes: &[u8]) -> Option<u64> {
    let (body, crc) = bytes.split_at_checked(12)?;
    let crc = u32::from_be_bytes(<[u8; 4]>::try_from(crc).ok()?);
    let (magic, generation) = body.split_at_checked(4)?;
    (magic == CURRENT_MAGIC && crc == crc32c::crc32c(body))
        .then(|| <[u8; 8]>::try_from(generation).ok().map(u64::from_be_bytes))
        .flatten()
}

fn parse_generation(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(GENERATION_PREFIX)?;
    (digits.len() == 10 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

fn list_key_groups(dir: &Path) -> Result<Vec<u32>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err(dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_err(dir, e))?;
        let name = entry.file_name();
        let key_group = name
            .to_str()
            .and_then(|n| n.strip_prefix(FILE_PREFIX))
            .and_then(|n| n.strip_suffix(FILE_SUFFIX))
            .filter(|n| n.len() == 5 && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<u32>().ok());
        out.extend(key_group);
    }
    out.sort_unstable();
    Ok(out)
}

/// Writes `target` through a temporary file in `dir` (written and synced by `write`), then
/// renames it over `target`. On error the temporary file is removed (best effort).
fn write_atomically(
    dir: &Path,
    target: &Path,
    write: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    let temp = dir.join(format!(
        "{TEMP_PREFIX}{}-{}",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result =
        write(&temp).and_then(|()| fs::rename(&temp, target).map_err(|e| io_err(target, e)));
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = File::create(path).map_err(|e| io_err(path, e))?;
    file.write_all(bytes).map_err(|e| io_err(path, e))?;
    file.sync_all().map_err(|e| io_err(path, e))
}

fn remove_any(path: &Path) -> Result<()> {
    let result = if path.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    match result {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(path, e)),
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
