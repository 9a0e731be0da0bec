//! A join bundle's input, validated and encoded before any state changes: every row's join
//! key and record bytes in one byte arena, the distinct join keys interned once.
//!
//! Per input row the join needs its key group, its join key (the map tables' prefix, see
//! [`KeyEncoder`](crate::KeyEncoder)) and its record (`BinaryRowData` bytes, the user key):
//! both are appended to [`BundleInput::bytes`] and named by ranges, so a bundle allocates a
//! handful of growing buffers instead of a row, a key and a record per input row. A join key
//! is stored once per bundle (its first row's bytes); later rows with equal key bytes get the
//! same [`KeyId`], which indexes the probe cache and makes the hydration list distinct.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;

use keygroup::{KeyGroup, RowKind};
use state_api::{MapHydration, RowReader};

use crate::changelog::{ChangelogBatch, input_columns, validate};
use crate::condition::JoinSide;
use crate::error::Result;

use super::Side;

/// Arena bytes a join keeps between bundles (the input's, the probe cache's).
pub(super) const RETAINED_BYTES: usize = 1 << 20;

/// Index of a distinct join key of a bundle (into [`BundleInput::keys`]).
pub(super) type KeyId = usize;

/// One input row, encoded.
#[derive(Debug, Clone)]
pub(super) struct InputRow {
    pub(super) side: JoinSide,
    pub(super) kind: RowKind,
    pub(super) key: KeyId,
    /// The record's bytes in [`BundleInput::bytes`].
    pub(super) record: Range<usize>,
    /// Whether a join key column is null (the row never matches).
    pub(super) null_key: bool,
    /// Whether a later row of the same side probes the same join key in this bundle (only
    /// then is what this row's probe reads worth caching).
    pub(super) probed_again: bool,
}

/// A distinct join key of the bundle.
#[derive(Debug, Clone)]
pub(super) struct InternedKey {
    pub(super) key_group: KeyGroup,
    /// The key's bytes in [`BundleInput::bytes`].
    pub(super) bytes: Range<usize>,
    /// The next key with the same hash (`usize::MAX`: none).
    next: usize,
}

/// The encoded input of one bundle (see the module docs).
#[derive(Debug, Default)]
pub(super) struct BundleInput {
    pub(super) bytes: Vec<u8>,
    pub(super) rows: Vec<InputRow>,
    pub(super) keys: Vec<InternedKey>,
    /// Key hash → the last key interned with that hash (chained through `next`).
    heads: HashMap<u64, KeyId, BuildHasherDefault<IdentityHasher>>,
}

impl BundleInput {
    /// Validates every segment (nothing is encoded when one is refused), then encodes every
    /// row of every segment in arrival order.
    ///
    /// # Errors
    /// An input error of a segment; a key or record encoding error.
    pub(super) fn encode<M>(
        &mut self,
        segments: &[(JoinSide, &ChangelogBatch)],
        left: &mut Side<M>,
        right: &mut Side<M>,
    ) -> Result<()> {
        self.clear();
        let mut rows = 0;
        for (side, batch) in segments {
            let s = if *side == JoinSide::Left {
                &*left
            } else {
                &*right
            };
            validate(&s.fields, batch)?;
            rows += batch.num_rows();
        }
        let input = self;
        input.rows.reserve(rows);
        let mut key = Vec::new();
        for (side, batch) in segments {
            let s = if *side == JoinSide::Left {
                &mut *left
            } else {
                &mut *right
            };
            let reader = RowReader::try_new(input_columns(&s.fields, batch))?;
            for (row, kind) in batch.kinds().iter().enumerate() {
                // Cells straight from the columns into the key and record bytes.
                let key_group = s.keys.encode_cells(&reader, row, &mut key)?;
                let start = input.bytes.len();
                s.records
                    .encode_cells_into(&reader, row, &mut input.bytes)?;
                let record = start..input.bytes.len();
                let id = input.intern(key_group, &key);
                input.rows.push(InputRow {
                    side: *side,
                    kind: *kind,
                    key: id,
                    record,
                    null_key: s.keys.has_null_cells(&reader, row),
                    probed_again: false,
                });
            }
        }
        input.mark_repeated_probes();
        Ok(())
    }

    /// Sets each row's [`InputRow::probed_again`], from the last row back.
    fn mark_repeated_probes(&mut self) {
        let mut later = [vec![false; self.keys.len()], vec![false; self.keys.len()]];
        for row in self.rows.iter_mut().rev() {
            if row.null_key {
                continue;
            }
            let side = usize::from(row.side != JoinSide::Left);
            if let Some(seen) = later.get_mut(side).and_then(|s| s.get_mut(row.key)) {
                row.probed_again = *seen;
                *seen = true;
            }
        }
    }

    /// Empties the input, keeping its buffers for the next bundle (at most
    /// [`RETAINED_BYTES`] of arena).
    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.bytes.shrink_to(RETAINED_BYTES);
        self.rows.clear();
        self.keys.clear();
        self.heads.clear();
    }

    /// The id of `key` (of `key_group`), stored on its first occurrence.
    fn intern(&mut self, key_group: KeyGroup, key: &[u8]) -> KeyId {
        let hash = hash_bytes(key);
        let mut at = self.heads.get(&hash).copied().unwrap_or(usize::MAX);
        while let Some(k) = self.keys.get(at) {
            if self.bytes.get(k.bytes.clone()) == Some(key) {
                return at;
            }
            at = k.next;
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(key);
        let id = self.keys.len();
        let next = self.heads.insert(hash, id).unwrap_or(usize::MAX);
        self.keys.push(InternedKey {
            key_group,
            bytes: start..self.bytes.len(),
            next,
        });
        id
    }

    /// The bytes of `range` of the arena (empty for a range outside it, which the arena's
    /// own ranges never are).
    pub(super) fn slice(&self, range: &Range<usize>) -> &[u8] {
        self.bytes.get(range.clone()).unwrap_or_default()
    }

    /// What the bundle reads of `side`'s table: the join keys the other side's rows probe
    /// (non-null keys; every record of each, once per key) and the single records `side`'s
    /// own rows update.
    pub(super) fn reads(&self, side: JoinSide) -> Reads<'_> {
        let mut probed = vec![false; self.keys.len()];
        let mut reads = Reads::default();
        for row in &self.rows {
            let Some(key) = self.keys.get(row.key) else {
                continue;
            };
            let prefix = self.slice(&key.bytes);
            if row.side == side {
                reads
                    .entries
                    .push((key.key_group, prefix, self.slice(&row.record)));
            } else if !row.null_key
                && let Some(seen) = probed.get_mut(row.key)
                && !*seen
            {
                *seen = true;
                reads.prefixes.push((key.key_group, prefix));
            }
        }
        reads
    }
}

/// The hydration list of one side's table for a bundle.
#[derive(Debug, Default)]
pub(super) struct Reads<'a> {
    prefixes: Vec<(KeyGroup, &'a [u8])>,
    entries: Vec<(KeyGroup, &'a [u8], &'a [u8])>,
}

impl Reads<'_> {
    /// The list as a [`MapHydration`].
    pub(super) fn hydration(&self) -> MapHydration<'_> {
        MapHydration {
            prefixes: &self.prefixes,
            entries: &self.entries,
        }
    }
}

/// A multiplicative hash of `bytes` 8 bytes at a time, finished with a 64-bit mix (the
/// interning table hashes this value no further).
fn hash_bytes(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    let mut w = [0u8; 8];
    let rest = chunks.remainder();
    if let Some(dst) = w.get_mut(..rest.len()) {
        dst.copy_from_slice(rest);
    }
    h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^ (h >> 33)
}

/// A hasher for keys that are hashes already.
#[derive(Debug, Default)]
struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_finds_equal_keys_and_separates_colliding_hashes() {
        let mut input = BundleInput::default();
        let kg = KeyGroup::new(3).unwrap();
        let a = input.intern(kg, b"key a");
        let b = input.intern(kg, b"key b, longer than eight");
        assert_eq!(input.intern(kg, b"key a"), a);
        assert_eq!(input.intern(kg, b"key b, longer than eight"), b);
        assert_ne!(a, b);
        // Two keys forced onto one hash chain stay apart.
        let c = input.keys.len();
        input.heads.insert(hash_bytes(b"other"), a);
        let other = input.intern(kg, b"other");
        assert_eq!(other, c);
        assert_eq!(input.intern(kg, b"other"), other);
        assert_eq!(input.keys.len(), 3);
        assert_ne!(hash_bytes(b""), hash_bytes(&[0]));
    }

    #[test]
    fn a_row_is_probed_again_only_by_a_later_row_of_its_side_and_key() {
        let mut input = BundleInput::default();
        let kg = KeyGroup::new(0).unwrap();
        let (a, b) = (input.intern(kg, b"a"), input.intern(kg, b"b"));
        let row = |side, key, null_key| InputRow {
            side,
            kind: RowKind::Insert,
            key,
            record: 0..0,
            null_key,
            probed_again: false,
        };
        let (l, r) = (JoinSide::Left, JoinSide::Right);
        input.rows = vec![
            row(l, a, false), // a later left row probes `a`
            row(r, a, false), // no later right row probes `a`
            row(l, b, false), // the later left row of `b` has a null key: it probes nothing
            row(l, a, false), // the last left row of `a`
            row(l, b, true),
        ];
        input.mark_repeated_probes();
        let again: Vec<bool> = input.rows.iter().map(|r| r.probed_again).collect();
        assert_eq!(again, [true, false, false, false, false]);
    }
}
