//! Section framing: a payload is an ordered list of named byte sections.
//!
//! What a section holds (an Arrow IPC stream of an operator's logical rows, say) is up to
//! the layer above; this module only frames. All integers are big-endian.
//!
//! ```text
//! offset  width  field
//! 0       4      framing version              u32 BE (1)
//! 4       4      section count c              u32 BE
//! then c times, in order:
//!         2      name length n                u16 BE, 1..=MAX_SECTION_NAME_LEN
//!         n      name                         UTF-8, unique within the payload
//!         4      data length d                u32 BE
//!         d      data
//! end            (no trailing bytes)
//! ```
//!
//! Worked example: sections `"rows"` = `[0xAA, 0xBB]` and `"meta"` = `[]` frame as
//!
//! ```text
//! 00 00 00 01   version 1
//! 00 00 00 02   2 sections
//! 00 04 72 6f 77 73   00 00 00 02   aa bb     "rows", 2 bytes
//! 00 04 6d 65 74 61   00 00 00 00             "meta", 0 bytes
//! ```
//!
//! ```
//! let mut w = sfcs_format::SectionWriter::new();
//! w.push("rows", &[0xAA, 0xBB])?;
//! w.push("meta", &[])?;
//! let bytes = w.finish();
//! assert_eq!(bytes, [
//!     0, 0, 0, 1, 0, 0, 0, 2,
//!     0, 4, b'r', b'o', b'w', b's', 0, 0, 0, 2, 0xAA, 0xBB,
//!     0, 4, b'm', b'e', b't', b'a', 0, 0, 0, 0,
//! ]);
//! let sections = sfcs_format::Sections::decode(&bytes)?;
//! assert_eq!(sections.get("rows"), Some(&[0xAA, 0xBB][..]));
//! # Ok::<(), sfcs_format::Error>(())
//! ```

use std::collections::HashSet;

use crate::cursor::{Cursor, Short};
use crate::error::{EncodeError, SectionError};

/// The section framing version this crate writes.
pub const SECTION_FORMAT_VERSION: u32 = 1;
/// Every section framing version this crate reads.
pub const SUPPORTED_SECTION_VERSIONS: &[u32] = &[SECTION_FORMAT_VERSION];
/// Longest section name in UTF-8 bytes.
pub const MAX_SECTION_NAME_LEN: usize = 1024;
/// Smallest possible encoded section: name length, a one-byte name, data length.
const MIN_SECTION_LEN: usize = 2 + 1 + 4;
/// Offset of the section count, patched by [`SectionWriter::finish`].
const COUNT_OFFSET: usize = 4;

/// Builds a section-framed payload, one section at a time.
#[derive(Debug, Clone)]
pub struct SectionWriter {
    buf: Vec<u8>,
    count: u32,
    names: HashSet<String>,
}

impl Default for SectionWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl SectionWriter {
    /// An empty payload (version, zero sections).
    pub fn new() -> Self {
        let mut buf = Vec::with_capacity(64);
        buf.extend_from_slice(&SECTION_FORMAT_VERSION.to_be_bytes());
        buf.extend_from_slice(&0_u32.to_be_bytes());
        SectionWriter {
            buf,
            count: 0,
            names: HashSet::new(),
        }
    }

    /// Appends a section.
    ///
    /// # Errors
    /// [`EncodeError::SectionNameLength`] for an empty or too long name,
    /// [`EncodeError::DuplicateSectionName`] for a repeated one, and
    /// [`EncodeError::PayloadTooLarge`] when the framed payload would exceed
    /// [`MAX_PAYLOAD_LEN`](crate::MAX_PAYLOAD_LEN). On error the writer is unchanged.
    pub fn push(&mut self, name: &str, data: &[u8]) -> Result<&mut Self, EncodeError> {
        let name_len = u16::try_from(name.len())
            .ok()
            .filter(|&n| n != 0 && usize::from(n) <= MAX_SECTION_NAME_LEN)
            .ok_or(EncodeError::SectionNameLength {
                length: name.len(),
                max: MAX_SECTION_NAME_LEN,
            })?;
        let new_len = self.buf.len() + 2 + name.len() + 4 + data.len();
        let data_len = u32::try_from(data.len())
            .ok()
            .filter(|_| new_len <= crate::MAX_PAYLOAD_LEN)
            .ok_or(EncodeError::PayloadTooLarge {
                length: new_len,
                max: crate::MAX_PAYLOAD_LEN,
            })?;
        if self.names.contains(name) {
            return Err(EncodeError::DuplicateSectionName {
                name: name.to_owned(),
            });
        }
        self.names.insert(name.to_owned());
        self.buf.reserve(new_len - self.buf.len());
        self.buf.extend_from_slice(&name_len.to_be_bytes());
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.extend_from_slice(&data_len.to_be_bytes());
        self.buf.extend_from_slice(data);
        self.count += 1;
        Ok(self)
    }

    /// The framed payload.
    pub fn finish(mut self) -> Vec<u8> {
        if let Some(slot) = self.buf.get_mut(COUNT_OFFSET..COUNT_OFFSET + 4) {
            slot.copy_from_slice(&self.count.to_be_bytes());
        }
        self.buf
    }
}

/// One section of a decoded payload, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section<'a> {
    /// The section's name.
    pub name: &'a str,
    /// The section's bytes.
    pub data: &'a [u8],
}

/// The validated sections of a payload, in their stored order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sections<'a> {
    sections: Vec<Section<'a>>,
}

impl<'a> Sections<'a> {
    /// Validates and splits a section-framed payload. Checks, in order: version, section
    /// count against the bytes present (before allocating), then per section the name length,
    /// UTF-8, uniqueness and data length; finally that no bytes trail.
    ///
    /// # Errors
    /// The [`SectionError`] of the first failing check.
    pub fn decode(payload: &'a [u8]) -> Result<Self, SectionError> {
        let mut r = Cursor::new(payload);
        let version = u32::from_be_bytes(r.array().map_err(truncated("framing version"))?);
        if !SUPPORTED_SECTION_VERSIONS.contains(&version) {
            return Err(SectionError::UnsupportedVersion {
                found: version,
                supported: SUPPORTED_SECTION_VERSIONS,
            });
        }
        let count = u32::from_be_bytes(r.array().map_err(truncated("section count"))?);
        let available = r.remaining();
        if count as usize > available / MIN_SECTION_LEN {
            return Err(SectionError::CountOutOfBounds { count, available });
        }
        let mut sections = Vec::with_capacity(count as usize);
        let mut names = HashSet::with_capacity(count as usize);
        for index in 0..count {
            let name_len = usize::from(u16::from_be_bytes(
                r.array().map_err(truncated("section name length"))?,
            ));
            if name_len == 0 || name_len > MAX_SECTION_NAME_LEN {
                return Err(SectionError::NameLength {
                    index,
                    length: name_len,
                    max: MAX_SECTION_NAME_LEN,
                });
            }
            let name = std::str::from_utf8(r.take(name_len).map_err(truncated("section name"))?)
                .map_err(|_| SectionError::NameNotUtf8 { index })?;
            if !names.insert(name) {
                return Err(SectionError::DuplicateName {
                    index,
                    name: name.to_owned(),
                });
            }
            let data_len = u32::from_be_bytes(r.array().map_err(truncated("section data length"))?);
            let available = r.remaining();
            let data = usize::try_from(data_len)
                .ok()
                .filter(|&n| n <= available)
                .and_then(|n| r.take(n).ok())
                .ok_or(SectionError::DataLength {
                    index,
                    length: u64::from(data_len),
                    available,
                })?;
            sections.push(Section { name, data });
        }
        if r.remaining() != 0 {
            return Err(SectionError::TrailingBytes {
                extra: r.remaining(),
            });
        }
        Ok(Sections { sections })
    }

    /// The data of the section called `name`.
    pub fn get(&self, name: &str) -> Option<&'a [u8]> {
        self.sections
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.data)
    }

    /// The sections in stored order.
    pub fn iter(&self) -> std::slice::Iter<'_, Section<'a>> {
        self.sections.iter()
    }

    /// Number of sections.
    pub fn len(&self) -> usize {
        self.sections.len()
    }

    /// Whether there are no sections.
    pub fn is_empty(&self) -> bool {
        self.sections.is_empty()
    }
}

impl<'s, 'a> IntoIterator for &'s Sections<'a> {
    type Item = &'s Section<'a>;
    type IntoIter = std::slice::Iter<'s, Section<'a>>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The error for a field cut short.
fn truncated(field: &'static str) -> impl Fn(Short) -> SectionError {
    move |short| SectionError::Truncated {
        field,
        offset: short.offset,
        needed: short.needed,
        available: short.available,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(sections: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = SectionWriter::new();
        for (name, data) in sections {
            w.push(name, data).unwrap();
        }
        w.finish()
    }

    #[test]
    fn empty_payload_has_no_sections() {
        let bytes = SectionWriter::new().finish();
        assert_eq!(bytes, [0, 0, 0, 1, 0, 0, 0, 0]);
        assert!(Sections::decode(&bytes).unwrap().is_empty());
    }

    #[test]
    fn round_trip_keeps_order() {
        let bytes = framed(&[("b", b"1"), ("a", b""), ("c", &[0; 300])]);
        let s = Sections::decode(&bytes).unwrap();
        let names: Vec<_> = s.iter().map(|s| s.name).collect();
        assert_eq!(names, ["b", "a", "c"]);
        assert_eq!(s.get("c").map(<[u8]>::len), Some(300));
        assert_eq!(s.get("zz"), None);
    }

    #[test]
    fn writer_rejects_bad_names_and_stays_unchanged() {
        let mut w = SectionWriter::new();
        w.push("a", b"x").unwrap();
        let before = w.clone().finish();
        assert!(matches!(
            w.push("", b""),
            Err(EncodeError::SectionNameLength { length: 0, .. })
        ));
        assert!(matches!(
            w.push(&"n".repeat(MAX_SECTION_NAME_LEN + 1), b""),
            Err(EncodeError::SectionNameLength { .. })
        ));
        assert!(matches!(
            w.push("a", b"y"),
            Err(EncodeError::DuplicateSectionName { .. })
        ));
        assert_eq!(w.finish(), before);
    }

    #[test]
    fn truncated() {
        let bytes = framed(&[("a", b"xyz")]);
        for cut in 0..bytes.len() {
            assert!(Sections::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        assert!(matches!(
            Sections::decode(&bytes[..3]),
            Err(SectionError::Truncated {
                field: "framing version",
                ..
            })
        ));
    }

    #[test]
    fn unsupported_version() {
        let mut bytes = framed(&[]);
        bytes[3] = 9;
        assert!(matches!(
            Sections::decode(&bytes),
            Err(SectionError::UnsupportedVersion { found: 9, .. })
        ));
    }

    #[test]
    fn count_out_of_bounds_is_checked_before_allocating() {
        let bytes = [0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff];
        assert!(matches!(
            Sections::decode(&bytes),
            Err(SectionError::CountOutOfBounds {
                count: u32::MAX,
                available: 0
            })
        ));
    }

    #[test]
    fn zero_name_length() {
        let bytes = [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
        assert!(matches!(
            Sections::decode(&bytes),
            Err(SectionError::NameLength {
                index: 0,
                length: 0,
                ..
            })
        ));
    }

    #[test]
    fn name_not_utf8() {
        let mut bytes = framed(&[("ab", b"")]);
        bytes[10] = 0xff;
        assert!(matches!(
            Sections::decode(&bytes),
            Err(SectionError::NameNotUtf8 { index: 0 })
        ));
    }

    #[test]
    fn duplicate_name() {
        let mut bytes = framed(&[("ab", b""), ("ac", b"")]);
        // Rename the second section "ac" -> "ab".
        let pos = bytes.len() - 5;
        bytes[pos] = b'b';
        assert!(matches!(
            Sections::decode(&bytes),
            Err(SectionError::DuplicateName { index: 1, .. })
        ));
    }

    #[test]
    fn data_length_past_end() {
        let mut bytes = framed(&[("a", b"xyz")]);
        let len_at = bytes.len() - 3 - 4;
        bytes[len_at + 3] = 4;
        assert!(matches!(
            Sections::decode(&bytes),
            Err(SectionError::DataLength {
                index: 0,
                length: 4,
                available: 3
            })
        ));
    }

    #[test]
    fn trailing_bytes() {
        let mut bytes = framed(&[("a", b"xyz")]);
        bytes.push(0);
        assert!(matches!(
            Sections::decode(&bytes),
            Err(SectionError::TrailingBytes { extra: 1 })
        ));
    }
}
