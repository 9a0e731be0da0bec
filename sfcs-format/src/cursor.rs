//! A bounds-checked cursor over untrusted bytes, shared by the header and section decoders.

/// Where a read ran past the end: what each decoder turns into its own "truncated" error.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Short {
    /// Offset of the read.
    pub(crate) offset: usize,
    /// Bytes the read needed.
    pub(crate) needed: usize,
    /// Bytes left at `offset`.
    pub(crate) available: usize,
}

/// Reads fields front to back; every read is checked against the bytes present.
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, offset: 0 }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.offset
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], Short> {
        let short = Short {
            offset: self.offset,
            needed: n,
            available: self.remaining(),
        };
        let slice = self
            .offset
            .checked_add(n)
            .and_then(|end| self.bytes.get(self.offset..end))
            .ok_or(short)?;
        self.offset += n;
        Ok(slice)
    }

    /// The next `N` bytes as an array (for `from_be_bytes`).
    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], Short> {
        let bytes = self.take(N)?;
        // `take` returned exactly N bytes.
        Ok(<[u8; N]>::try_from(bytes).unwrap_or([0; N]))
    }
}
