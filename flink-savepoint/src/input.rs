//! Bounded big-endian reads from a window of a file (`java.io.DataInput` primitives).
//!
//! Every read checks the bytes left in the window first, so a length field can never make
//! the reader allocate or seek beyond the input.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::mutf8;

/// Buffer size of the underlying reader.
const BUFFER: usize = 64 * 1024;

/// A window `[base, base + len)` of a file, read sequentially with bounds checks. Positions
/// are relative to `base`.
pub(crate) struct Input {
    reader: BufReader<File>,
    path: PathBuf,
    base: u64,
    len: u64,
    pos: u64,
}

impl Input {
    /// The whole file at `path`.
    pub(crate) fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| io_err(path, e))?;
        let len = file.metadata().map_err(|e| io_err(path, e))?.len();
        Ok(Input {
            reader: BufReader::with_capacity(BUFFER, file),
            path: path.to_path_buf(),
            base: 0,
            len,
            pos: 0,
        })
    }

    /// The window `[base, base + len)` of the file at `path`; it must lie inside the file.
    pub(crate) fn open_window(path: &Path, base: u64, len: u64) -> Result<Self> {
        let mut input = Input::open(path)?;
        let file_len = input.len;
        if base.checked_add(len).is_none_or(|end| end > file_len) {
            return Err(Error::Truncated {
                what: "stream window",
                path: path.to_path_buf(),
                offset: base,
                needed: len,
                available: file_len.saturating_sub(base),
            });
        }
        input.base = base;
        input.len = len;
        input
            .reader
            .seek(SeekFrom::Start(base))
            .map_err(|e| io_err(path, e))?;
        Ok(input)
    }

    /// The current position, relative to the window start.
    pub(crate) fn position(&self) -> u64 {
        self.pos
    }

    /// Absolute file offset of the current position.
    pub(crate) fn file_offset(&self) -> u64 {
        self.base + self.pos
    }

    /// The window length.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Bytes left in the window.
    pub(crate) fn remaining(&self) -> u64 {
        self.len - self.pos
    }

    /// Moves to `pos` (at most the window length).
    pub(crate) fn seek(&mut self, pos: u64) -> Result<()> {
        if pos > self.len {
            return Err(self.truncated("seek target", pos.saturating_sub(self.pos)));
        }
        let delta = i64::try_from(i128::from(pos) - i128::from(self.pos)).ok();
        let result = match delta {
            // Within the buffer when close: BufReader keeps it on a relative seek.
            Some(d) if d.unsigned_abs() <= BUFFER as u64 => self.reader.seek_relative(d),
            _ => self
                .reader
                .seek(SeekFrom::Start(self.base + pos))
                .map(|_| ()),
        };
        result.map_err(|e| io_err(&self.path, e))?;
        self.pos = pos;
        Ok(())
    }

    /// Skips `n` bytes.
    pub(crate) fn skip(&mut self, n: u64, what: &'static str) -> Result<()> {
        if n > self.remaining() {
            return Err(self.truncated(what, n));
        }
        self.seek(self.pos + n)
    }

    /// The error for a field of `needed` bytes at the current position.
    pub(crate) fn truncated(&self, what: &'static str, needed: u64) -> Error {
        Error::Truncated {
            what,
            path: self.path.clone(),
            offset: self.pos,
            needed,
            available: self.remaining(),
        }
    }

    /// Fills `buf`.
    pub(crate) fn read_into(&mut self, buf: &mut [u8], what: &'static str) -> Result<()> {
        let n = buf.len() as u64;
        if n > self.remaining() {
            return Err(self.truncated(what, n));
        }
        self.reader.read_exact(buf).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                // The file shrank under us.
                self.truncated(what, n)
            } else {
                io_err(&self.path, e)
            }
        })?;
        self.pos += n;
        Ok(())
    }

    /// Reads `N` bytes.
    pub(crate) fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let mut buf = [0_u8; N];
        self.read_into(&mut buf, what)?;
        Ok(buf)
    }

    /// Reads `n` bytes into a new vector (`n` checked against the window first).
    pub(crate) fn vec(&mut self, n: u64, what: &'static str) -> Result<Vec<u8>> {
        if n > self.remaining() {
            return Err(self.truncated(what, n));
        }
        let len = usize::try_from(n).map_err(|_| self.truncated(what, n))?;
        let mut buf = vec![0_u8; len];
        self.read_into(&mut buf, what)?;
        Ok(buf)
    }

    /// `u8`.
    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    /// `DataInput.readBoolean` strictly: `00` or `01`.
    pub(crate) fn bool(&mut self, what: &'static str) -> Result<bool> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            found => Err(Error::BadBoolean { what, found }),
        }
    }

    /// Big-endian `u16`.
    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }

    /// Big-endian `i16`.
    pub(crate) fn i16(&mut self, what: &'static str) -> Result<i16> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }

    /// Big-endian `i32`.
    pub(crate) fn i32(&mut self, what: &'static str) -> Result<i32> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    /// Big-endian `u32`.
    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }

    /// Big-endian `i64`.
    pub(crate) fn i64(&mut self, what: &'static str) -> Result<i64> {
        Ok(i64::from_be_bytes(self.array(what)?))
    }

    /// A non-negative big-endian `i32` count or length.
    pub(crate) fn len32(&mut self, what: &'static str) -> Result<u32> {
        let v = self.i32(what)?;
        u32::try_from(v).map_err(|_| Error::NegativeLength {
            what,
            value: i64::from(v),
        })
    }

    /// A count of items of at least `min_item_bytes` each: non-negative and fitting in the
    /// remaining bytes, so a loop over it (or a vector sized by it) is bounded by the input.
    pub(crate) fn count(&mut self, what: &'static str, min_item_bytes: u64) -> Result<u32> {
        let n = self.len32(what)?;
        if u64::from(n) * min_item_bytes > self.remaining() {
            return Err(self.truncated(what, u64::from(n) * min_item_bytes));
        }
        Ok(n)
    }

    /// `DataInput.readUTF`: `u16` length and modified UTF-8.
    pub(crate) fn utf(&mut self, what: &'static str) -> Result<String> {
        let n = self.u16(what)?;
        let bytes = self.vec(u64::from(n), what)?;
        mutf8::decode(&bytes, what)
    }
}

pub(crate) fn io_err(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}
