//! The snapshot manifest: what a complete canonical snapshot holds, written last.
//!
//! A canonical snapshot is one envelope per key group with rows. Nothing in an envelope says
//! which key group it belongs to, and nothing in a set of envelopes says whether it is
//! complete. The manifest closes both gaps: it is written after every envelope (a container
//! publishes it atomically with the generation it describes, see
//! [`Container::commit_generation`](crate::Container::commit_generation)) and lists, for each
//! key group, the length and CRC32C of its header and of its payload. An envelope found under
//! key group `k` is used only when it matches `k`'s entry, so a deleted, extra, swapped or
//! duplicated key-group envelope is refused, naming the key group; and a header field the
//! payload CRC does not cover (the deadline) is covered by the entry's header CRC.
//!
//! The byte layout and the decode validation order are documented on [`Manifest`].

use crate::container::Container;
use crate::cursor::{Cursor, Short};
use crate::error::{Error, ManifestError, Result};
use crate::header::{
    FIXED_HEADER_LEN, FORMAT_VERSION, Header, MAX_OPERATOR_ID_LEN, MAX_PAYLOAD_LEN,
    SUPPORTED_VERSIONS,
};
use crate::section::{SECTION_FORMAT_VERSION, SUPPORTED_SECTION_VERSIONS};

/// The four magic bytes every manifest starts with.
pub const MANIFEST_MAGIC: [u8; 4] = *b"SFCM";
/// The manifest version this crate writes.
pub const MANIFEST_VERSION: u32 = 1;
/// Every manifest version this crate reads.
pub const SUPPORTED_MANIFEST_VERSIONS: &[u32] = &[MANIFEST_VERSION];
/// The largest max parallelism a manifest may record (Flink's upper bound, 2^15).
pub const MAX_MANIFEST_PARALLELISM: u32 = 32_768;
/// Bytes of one manifest entry.
pub const MANIFEST_ENTRY_LEN: usize = 20;
/// Bytes of a manifest besides the operator id and the entries.
const FIXED_MANIFEST_LEN: usize = 44;

/// What a manifest says about one key group's envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManifestEntry {
    /// The key group.
    pub key_group: u32,
    /// Length of the encoded header.
    pub header_len: u32,
    /// CRC32C of the encoded header.
    pub header_crc32c: u32,
    /// Length of the payload.
    pub payload_len: u32,
    /// CRC32C of the payload (equal to the header's checksum field).
    pub payload_crc32c: u32,
}

impl ManifestEntry {
    /// The entry describing `header` (as written for `key_group`).
    pub fn for_header(key_group: u32, header: &Header) -> Self {
        let bytes = header.encode();
        ManifestEntry {
            key_group,
            header_len: u32::try_from(bytes.len()).unwrap_or(u32::MAX),
            header_crc32c: crc32c::crc32c(&bytes),
            payload_len: u32::try_from(header.payload_len()).unwrap_or(u32::MAX),
            payload_crc32c: header.crc32c(),
        }
    }
}

/// A decoded, validated snapshot manifest.
///
/// All integers are big-endian.
///
/// ```text
/// offset  width  field
/// 0       4      magic                          "SFCM" (53 46 43 4d)
/// 4       4      manifest version               u32, 1
/// 8       4      envelope format version        i32, the SFCS header version of the envelopes
/// 12      4      section framing version        u32, of the payloads
/// 16      4      payload format version         u32, set by the layer above (state-api: the
///                                               canonical table version)
/// 20      4      max parallelism                u32, 1..=32768, or 0 = not recorded
/// 24      4      first key group                u32 \ the key groups the snapshot covers
/// 28      4      key-group count                u32 / (empty ones included): first..first+count
/// 32      4      operator-id length n           u32, 0..=1024
/// 36      n      operator id                    UTF-8
/// 36+n    4      entry count e                  u32
/// 40+n    20·e   entries, key group strictly ascending, each inside the covered range:
///                  key group u32 | header length u32 | header CRC32C u32
///                  | payload length u32 | payload CRC32C u32
/// 40+n+20e 4     CRC32C of every byte before it
/// ```
///
/// Decode validation order ([`Manifest::decode`]), each step with its [`ManifestError`]:
/// 1. at least the magic, version and checksum are present — [`ManifestError::Truncated`];
/// 2. magic — [`ManifestError::BadMagic`]; 3. version — [`ManifestError::UnsupportedVersion`];
/// 4. the trailing CRC32C over every byte before it — [`ManifestError::ChecksumMismatch`];
/// 5. the fields in order, each present before it is read — [`ManifestError::Truncated`];
///    envelope and framing versions this crate reads — [`ManifestError::UnsupportedFormat`];
///    max parallelism 0 or 1..=32768 — [`ManifestError::MaxParallelism`]; the covered range
///    inside the max parallelism — [`ManifestError::KeyGroupRange`]; operator-id length
///    and UTF-8 — [`ManifestError::OperatorId`]; the expected operator —
///    [`ManifestError::OperatorMismatch`]; entry count against the bytes present (before
///    allocating) — [`ManifestError::EntryCount`]; each entry's key group ascending and
///    covered, its header length plausible and its payload length within the format —
///    [`ManifestError::Entry`]; no trailing bytes — [`ManifestError::TrailingBytes`].
///
/// Invariants (checked by [`Manifest::decode`] and [`Manifest::try_new`]): entries strictly
/// ascending by key group and inside the covered range; the covered range inside the max
/// parallelism when one is recorded; the operator id at most
/// [`MAX_OPERATOR_ID_LEN`] bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    envelope_version: i32,
    section_version: u32,
    payload_version: u32,
    max_parallelism: u32,
    first_key_group: u32,
    key_group_count: u32,
    operator_id: String,
    entries: Vec<ManifestEntry>,
}

impl Manifest {
    /// A manifest for the envelopes this crate writes (current envelope and framing
    /// versions).
    ///
    /// `max_parallelism` 0 means "not recorded" (a writer that does not know it); a reader
    /// that knows its own refuses such a manifest.
    ///
    /// # Errors
    /// The [`ManifestError`] [`Manifest::decode`] would return for the same fields.
    pub fn try_new(
        operator_id: &str,
        max_parallelism: u32,
        first_key_group: u32,
        key_group_count: u32,
        payload_version: u32,
        entries: Vec<ManifestEntry>,
    ) -> Result<Self, ManifestError> {
        let manifest = Manifest {
            envelope_version: FORMAT_VERSION,
            section_version: SECTION_FORMAT_VERSION,
            payload_version,
            max_parallelism,
            first_key_group,
            key_group_count,
            operator_id: operator_id.to_owned(),
            entries,
        };
        manifest.check_fields()?;
        if operator_id.len() > MAX_OPERATOR_ID_LEN {
            return Err(ManifestError::OperatorId {
                length: u32::try_from(operator_id.len()).unwrap_or(u32::MAX),
            });
        }
        for (index, entry) in manifest.entries.iter().enumerate() {
            manifest.check_entry(index, entry)?;
        }
        Ok(manifest)
    }

    /// The operator that wrote the snapshot.
    pub fn operator_id(&self) -> &str {
        &self.operator_id
    }

    /// The SFCS header version of the envelopes.
    pub fn envelope_version(&self) -> i32 {
        self.envelope_version
    }

    /// The section framing version of the payloads.
    pub fn section_version(&self) -> u32 {
        self.section_version
    }

    /// The payload format version the writer's layer recorded.
    pub fn payload_version(&self) -> u32 {
        self.payload_version
    }

    /// The writer's max parallelism, or `None` when it was not recorded.
    pub fn max_parallelism(&self) -> Option<u32> {
        (self.max_parallelism != 0).then_some(self.max_parallelism)
    }

    /// The key groups the snapshot covers (empty ones included), as `first..first + count`.
    pub fn covered(&self) -> std::ops::Range<u32> {
        self.first_key_group..self.first_key_group.saturating_add(self.key_group_count)
    }

    /// Whether the snapshot covers `key_group` (with or without an envelope for it).
    pub fn covers(&self, key_group: u32) -> bool {
        self.covered().contains(&key_group)
    }

    /// The entries, ascending by key group.
    pub fn entries(&self) -> &[ManifestEntry] {
        &self.entries
    }

    /// The entry of `key_group`, if the snapshot has an envelope for it.
    pub fn entry(&self, key_group: u32) -> Option<&ManifestEntry> {
        self.entries
            .binary_search_by_key(&key_group, |e| e.key_group)
            .ok()
            .and_then(|i| self.entries.get(i))
    }

    /// Encodes the manifest.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            FIXED_MANIFEST_LEN + self.operator_id.len() + MANIFEST_ENTRY_LEN * self.entries.len(),
        );
        out.extend_from_slice(&MANIFEST_MAGIC);
        out.extend_from_slice(&MANIFEST_VERSION.to_be_bytes());
        out.extend_from_slice(&self.envelope_version.to_be_bytes());
        out.extend_from_slice(&self.section_version.to_be_bytes());
        out.extend_from_slice(&self.payload_version.to_be_bytes());
        out.extend_from_slice(&self.max_parallelism.to_be_bytes());
        out.extend_from_slice(&self.first_key_group.to_be_bytes());
        out.extend_from_slice(&self.key_group_count.to_be_bytes());
        let id_len = u32::try_from(self.operator_id.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&id_len.to_be_bytes());
        out.extend_from_slice(self.operator_id.as_bytes());
        let count = u32::try_from(self.entries.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&count.to_be_bytes());
        for e in &self.entries {
            for v in [
                e.key_group,
                e.header_len,
                e.header_crc32c,
                e.payload_len,
                e.payload_crc32c,
            ] {
                out.extend_from_slice(&v.to_be_bytes());
            }
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    /// Decodes and validates a manifest written for `expected_operator_id` (`None` accepts
    /// any operator, for tools that inspect a snapshot).
    ///
    /// # Errors
    /// The [`ManifestError`] of the first failing check, in the
    /// [documented order](Manifest).
    pub fn decode(bytes: &[u8], expected_operator_id: Option<&str>) -> Result<Self, ManifestError> {
        if bytes.len() < 12 {
            return Err(ManifestError::Truncated {
                field: "magic, version and checksum",
                offset: 0,
                needed: 12,
                available: bytes.len(),
            });
        }
        let mut r = Cursor::new(bytes);
        let magic: [u8; 4] = r.array().map_err(truncated("magic"))?;
        if magic != MANIFEST_MAGIC {
            return Err(ManifestError::BadMagic { found: magic });
        }
        let version = u32::from_be_bytes(r.array().map_err(truncated("manifest version"))?);
        if !SUPPORTED_MANIFEST_VERSIONS.contains(&version) {
            return Err(ManifestError::UnsupportedVersion {
                found: version,
                supported: SUPPORTED_MANIFEST_VERSIONS,
            });
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        let stored = u32::from_be_bytes(<[u8; 4]>::try_from(crc).unwrap_or_default());
        let computed = crc32c::crc32c(body);
        if stored != computed {
            return Err(ManifestError::ChecksumMismatch {
                expected: stored,
                computed,
            });
        }
        let mut r = Cursor::new(body);
        r.take(8).map_err(truncated("magic and version"))?;
        let u32_field = |r: &mut Cursor<'_>, field| {
            r.array::<4>()
                .map(u32::from_be_bytes)
                .map_err(truncated(field))
        };
        let envelope_version = u32_field(&mut r, "envelope version")?.cast_signed();
        let section_version = u32_field(&mut r, "section version")?;
        let payload_version = u32_field(&mut r, "payload version")?;
        let max_parallelism = u32_field(&mut r, "max parallelism")?;
        let first_key_group = u32_field(&mut r, "first key group")?;
        let key_group_count = u32_field(&mut r, "key-group count")?;
        let mut manifest = Manifest {
            envelope_version,
            section_version,
            payload_version,
            max_parallelism,
            first_key_group,
            key_group_count,
            operator_id: String::new(),
            entries: Vec::new(),
        };
        manifest.check_fields()?;
        let id_len = u32_field(&mut r, "operator-id length")?;
        let id = usize::try_from(id_len)
            .ok()
            .filter(|&n| n <= MAX_OPERATOR_ID_LEN)
            .and_then(|n| r.take(n).ok())
            .and_then(|b| std::str::from_utf8(b).ok())
            .ok_or(ManifestError::OperatorId { length: id_len })?;
        if let Some(expected) = expected_operator_id
            && id != expected
        {
            return Err(ManifestError::OperatorMismatch {
                expected: expected.to_owned(),
                found: id.to_owned(),
            });
        }
        id.clone_into(&mut manifest.operator_id);
        let count = u32_field(&mut r, "entry count")?;
        let available = r.remaining();
        let count_usize = usize::try_from(count).unwrap_or(usize::MAX);
        if count_usize > available / MANIFEST_ENTRY_LEN {
            return Err(ManifestError::EntryCount { count, available });
        }
        manifest.read_entries(&mut r, count_usize)?;
        if r.remaining() != 0 {
            return Err(ManifestError::TrailingBytes {
                extra: r.remaining(),
            });
        }
        Ok(manifest)
    }

    /// Reads `count` entries (already checked against the bytes left), each validated.
    fn read_entries(&mut self, r: &mut Cursor<'_>, count: usize) -> Result<(), ManifestError> {
        self.entries.reserve_exact(count);
        for index in 0..count {
            let mut v = [0_u32; 5];
            for slot in &mut v {
                *slot = r
                    .array::<4>()
                    .map(u32::from_be_bytes)
                    .map_err(truncated("entry"))?;
            }
            let [
                key_group,
                header_len,
                header_crc32c,
                payload_len,
                payload_crc32c,
            ] = v;
            let entry = ManifestEntry {
                key_group,
                header_len,
                header_crc32c,
                payload_len,
                payload_crc32c,
            };
            self.check_entry(index, &entry)?;
            self.entries.push(entry);
        }
        Ok(())
    }

    fn check_fields(&self) -> Result<(), ManifestError> {
        if !SUPPORTED_VERSIONS.contains(&self.envelope_version)
            || !SUPPORTED_SECTION_VERSIONS.contains(&self.section_version)
        {
            return Err(ManifestError::UnsupportedFormat {
                envelope_version: self.envelope_version,
                section_version: self.section_version,
            });
        }
        if self.max_parallelism > MAX_MANIFEST_PARALLELISM {
            return Err(ManifestError::MaxParallelism {
                found: self.max_parallelism,
            });
        }
        let end = u64::from(self.first_key_group) + u64::from(self.key_group_count);
        let limit = match self.max_parallelism {
            0 => u64::from(MAX_MANIFEST_PARALLELISM),
            mp => u64::from(mp),
        };
        if end > limit {
            return Err(ManifestError::KeyGroupRange {
                first: self.first_key_group,
                count: self.key_group_count,
                max_parallelism: self.max_parallelism,
            });
        }
        Ok(())
    }

    fn check_entry(&self, index: usize, entry: &ManifestEntry) -> Result<(), ManifestError> {
        let previous = index
            .checked_sub(1)
            .and_then(|i| self.entries.get(i))
            .map(|e| e.key_group);
        let reason = if previous.is_some_and(|p| p >= entry.key_group) {
            Some("key groups not strictly ascending")
        } else if !self.covers(entry.key_group) {
            Some("key group outside the covered range")
        } else if (entry.header_len as usize) < FIXED_HEADER_LEN
            || entry.header_len as usize > FIXED_HEADER_LEN + MAX_OPERATOR_ID_LEN
        {
            Some("header length out of bounds")
        } else if entry.payload_len as usize > MAX_PAYLOAD_LEN {
            Some("payload length out of bounds")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(ManifestError::Entry {
                index: u32::try_from(index).unwrap_or(u32::MAX),
                key_group: entry.key_group,
                reason,
            }),
            None => Ok(()),
        }
    }

    /// Checks that `container` lists exactly the key groups this manifest has entries for.
    ///
    /// # Errors
    /// [`Error::KeyGroupMissing`] for the first listed key group without an envelope,
    /// [`Error::KeyGroupUnlisted`] for the first envelope the manifest does not list, or the
    /// container's storage error.
    pub fn check_listing<C: Container + ?Sized>(&self, container: &C) -> Result<()> {
        let stored = container.key_groups()?;
        let listed: Vec<u32> = self.entries.iter().map(|e| e.key_group).collect();
        if let Some(&key_group) = listed.iter().find(|k| stored.binary_search(k).is_err()) {
            return Err(Error::KeyGroupMissing { key_group });
        }
        if let Some(&key_group) = stored.iter().find(|k| listed.binary_search(k).is_err()) {
            return Err(Error::KeyGroupUnlisted { key_group });
        }
        Ok(())
    }

    /// A copy whose entries describe the envelopes `container` holds now (operator id,
    /// versions, max parallelism and covered range kept). A test and tooling aid: it re-seals
    /// a snapshot after its envelopes were changed, as a buggy or hostile writer would.
    /// Key groups whose header does not decode are left out.
    ///
    /// # Errors
    /// The container's storage error, or a [`ManifestError`] when an envelope lies outside
    /// the covered range.
    pub fn rebuilt_from<C: Container + ?Sized>(&self, container: &C) -> Result<Self> {
        let mut entries = Vec::new();
        for key_group in container.key_groups()? {
            let Some(bytes) = container.get_header(key_group)? else {
                continue;
            };
            let Ok(header) = Header::decode(&bytes, &self.operator_id) else {
                continue;
            };
            let mut entry = ManifestEntry::for_header(key_group, &header);
            entry.header_len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
            entry.header_crc32c = crc32c::crc32c(&bytes);
            entries.push(entry);
        }
        let mut manifest = self.clone();
        manifest.entries.clear();
        for (index, entry) in entries.iter().enumerate() {
            manifest.check_entry(index, entry)?;
            manifest.entries.push(*entry);
        }
        Ok(manifest)
    }
}

/// Reads `key_group`'s envelope as [`read_envelope`](crate::read_envelope) does, and first
/// checks it against the manifest's entry: the header bytes' length and CRC32C before the
/// header is decoded, then the payload length and checksum the header announces. So an
/// envelope stored under the wrong key group (swapped or copied) is refused before any of its
/// payload is read.
///
/// # Errors
/// [`Error::KeyGroupMissing`] when the manifest lists the key group and the container has no
/// header for it; [`Error::KeyGroupUnlisted`] when the manifest has no entry for it;
/// [`Error::NotVouched`] for an envelope that differs from its entry; then the errors of
/// [`read_envelope`](crate::read_envelope).
pub fn read_vouched_envelope<C: Container + ?Sized>(
    container: &C,
    manifest: &Manifest,
    key_group: u32,
) -> Result<(Header, Vec<u8>)> {
    let entry = manifest
        .entry(key_group)
        .ok_or(Error::KeyGroupUnlisted { key_group })?;
    let header_bytes = container
        .get_header(key_group)?
        .ok_or(Error::KeyGroupMissing { key_group })?;
    let not_vouched = |field, expected: u32, found: u32| Error::NotVouched {
        key_group,
        field,
        expected,
        found,
    };
    let header_len = u32::try_from(header_bytes.len()).unwrap_or(u32::MAX);
    if header_len != entry.header_len {
        return Err(not_vouched("header length", entry.header_len, header_len));
    }
    let header_crc = crc32c::crc32c(&header_bytes);
    if header_crc != entry.header_crc32c {
        return Err(not_vouched(
            "header CRC32C",
            entry.header_crc32c,
            header_crc,
        ));
    }
    let header = Header::decode(&header_bytes, &manifest.operator_id)
        .map_err(|source| Error::Envelope { key_group, source })?;
    let payload_len = u32::try_from(header.payload_len()).unwrap_or(u32::MAX);
    if payload_len != entry.payload_len {
        return Err(not_vouched(
            "payload length",
            entry.payload_len,
            payload_len,
        ));
    }
    if header.crc32c() != entry.payload_crc32c {
        return Err(not_vouched(
            "payload CRC32C",
            entry.payload_crc32c,
            header.crc32c(),
        ));
    }
    drop(header_bytes);
    crate::container::read_payload(container, key_group, header)
}

/// The error for a field cut short.
fn truncated(field: &'static str) -> impl Fn(Short) -> ManifestError {
    move |short| ManifestError::Truncated {
        field,
        offset: short.offset,
        needed: short.needed,
        available: short.available,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use crate::{MemoryContainer, write_envelope};

    fn sample() -> Manifest {
        let h = Header::try_new("op", Some(5), 3, 0xabcd).unwrap();
        Manifest::try_new(
            "op",
            128,
            0,
            64,
            1,
            vec![
                ManifestEntry::for_header(3, &h),
                ManifestEntry::for_header(9, &h),
            ],
        )
        .unwrap()
    }

    #[test]
    fn round_trip_and_length() {
        let m = sample();
        let bytes = m.encode();
        assert_eq!(bytes.len(), FIXED_MANIFEST_LEN + 2 + 2 * MANIFEST_ENTRY_LEN);
        assert_eq!(Manifest::decode(&bytes, Some("op")).unwrap(), m);
        assert_eq!(Manifest::decode(&bytes, None).unwrap(), m);
        assert_eq!(m.max_parallelism(), Some(128));
        assert!(m.covers(63) && !m.covers(64));
    }

    #[test]
    fn every_byte_flip_and_cut_is_refused() {
        let bytes = sample().encode();
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[i] ^= 1 << bit;
                assert!(
                    Manifest::decode(&b, Some("op")).is_err(),
                    "byte {i} bit {bit}"
                );
            }
        }
        for cut in 0..bytes.len() {
            assert!(
                Manifest::decode(&bytes[..cut], Some("op")).is_err(),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn typed_errors() {
        let bytes = sample().encode();
        assert!(matches!(
            Manifest::decode(&bytes, Some("other")),
            Err(ManifestError::OperatorMismatch { .. })
        ));
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert!(matches!(
            Manifest::decode(&bad, None),
            Err(ManifestError::BadMagic { .. })
        ));
        let mut bad = bytes.clone();
        bad[10] ^= 1;
        assert!(matches!(
            Manifest::decode(&bad, None),
            Err(ManifestError::ChecksumMismatch { .. })
        ));
        let h = Header::try_new("op", None, 0, 0).unwrap();
        let unsorted = vec![
            ManifestEntry::for_header(9, &h),
            ManifestEntry::for_header(3, &h),
        ];
        assert!(matches!(
            Manifest::try_new("op", 128, 0, 64, 1, unsorted),
            Err(ManifestError::Entry { index: 1, .. })
        ));
        assert!(matches!(
            Manifest::try_new("op", 128, 100, 64, 1, Vec::new()),
            Err(ManifestError::KeyGroupRange { .. })
        ));
        assert!(matches!(
            Manifest::try_new("op", 40_000, 0, 1, 1, Vec::new()),
            Err(ManifestError::MaxParallelism { found: 40_000 })
        ));
    }

    #[test]
    fn vouched_envelopes_are_bound_to_their_key_group() {
        let mut c = MemoryContainer::new();
        let a = write_envelope(&mut c, 1, "op", None, b"aaa").unwrap();
        let b = write_envelope(&mut c, 2, "op", Some(7), b"bbbb").unwrap();
        let m = Manifest::try_new(
            "op",
            8,
            0,
            8,
            1,
            vec![
                ManifestEntry::for_header(1, &a),
                ManifestEntry::for_header(2, &b),
            ],
        )
        .unwrap();
        m.check_listing(&c).unwrap();
        assert_eq!(read_vouched_envelope(&c, &m, 2).unwrap().1, b"bbbb");
        // Swap the two key groups: each is refused, naming its key group.
        let mut swapped = MemoryContainer::new();
        write_envelope(&mut swapped, 1, "op", Some(7), b"bbbb").unwrap();
        write_envelope(&mut swapped, 2, "op", None, b"aaa").unwrap();
        let err = read_vouched_envelope(&swapped, &m, 1).unwrap_err();
        assert!(
            matches!(err, Error::NotVouched { key_group: 1, .. }),
            "{err}"
        );
        // Deleted and extra key groups.
        let mut missing = c.clone();
        missing.remove_key_group(2).unwrap();
        assert!(matches!(
            m.check_listing(&missing),
            Err(Error::KeyGroupMissing { key_group: 2 })
        ));
        let mut extra = c.clone();
        write_envelope(&mut extra, 5, "op", None, b"x").unwrap();
        assert!(matches!(
            m.check_listing(&extra),
            Err(Error::KeyGroupUnlisted { key_group: 5 })
        ));
        // Re-sealing describes what is stored now.
        assert_eq!(m.rebuilt_from(&c).unwrap(), m);
    }
}
