//! The key types of the backends' maps: key bytes inline when short.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

/// Key bytes kept inline up to this length (a Flink BIGINT key row is 16 bytes, 17 behind a
/// one-byte key-group prefix).
pub const INLINE_KEY_LEN: usize = 22;

/// Map-table entry keys (`prefix ‖ user key`) kept inline up to this length: a join's entry
/// key (a BIGINT join-key row of 20 bytes ‖ a record of three BIGINT columns, 32 bytes) is 52
/// bytes, 53 behind a one-byte key-group prefix. A B-tree search compares the query with up to
/// 11 keys per node; with boxed keys every comparison first loads the key from its own heap
/// block (a cache miss per comparison on a large table), inline keys sit in the node itself.
pub const INLINE_MAP_KEY_LEN: usize = 54;

#[derive(Clone)]
enum Repr<const N: usize> {
    /// `len` bytes at the front of `bytes`.
    Inline { len: u8, bytes: [u8; N] },
    /// A longer key.
    Heap(Box<[u8]>),
}

/// Key bytes stored inline up to `N` bytes (at most 255) and on the heap beyond, so a small
/// key costs no allocation and no pointer chase (`N + 2` bytes rounded up to 8 either way).
/// Hashes, compares and borrows exactly as `[u8]`, so maps keyed by it are looked up with a
/// plain `&[u8]`. Both backends key their hash maps with [`InlineKey`] and their ordered map
/// entries with [`InlineMapKey`].
///
/// ```
/// use state_api::{InlineKey, InlineMapKey};
///
/// let key = InlineKey::from(&b"user-1"[..]);
/// assert_eq!(key.as_bytes(), b"user-1");
/// assert!(key.is_inline());
/// assert_eq!(InlineKey::heap_bytes(6), 0);
/// assert_eq!(InlineKey::heap_bytes(40), 40);
/// assert!(InlineMapKey::from(&[7_u8; 40][..]).is_inline());
/// ```
#[derive(Clone)]
pub struct InlineBytes<const N: usize>(Repr<N>);

/// Hash-map keys: inline up to [`INLINE_KEY_LEN`] bytes (24 bytes in all).
pub type InlineKey = InlineBytes<INLINE_KEY_LEN>;

/// Ordered-map entry keys: inline up to [`INLINE_MAP_KEY_LEN`] bytes (56 bytes in all).
pub type InlineMapKey = InlineBytes<INLINE_MAP_KEY_LEN>;

impl<const N: usize> InlineBytes<N> {
    /// The key bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => bytes.get(..usize::from(*len)).unwrap_or_default(),
            Repr::Heap(bytes) => bytes,
        }
    }

    /// Whether the key's bytes equal `key`, compared a word at a time without a call to
    /// `memcmp` for keys up to 32 bytes (a hash map probe compares the key it looks for with
    /// the one in the slot it found: for a 16-byte BIGINT key row the library call was ~10 %
    /// of memory-store's W1 loop).
    #[inline]
    pub fn eq_bytes(&self, key: &[u8]) -> bool {
        let stored = self.as_bytes();
        stored.len() == key.len() && eq_same_len(stored, key)
    }

    /// The number of key bytes.
    pub fn len(&self) -> usize {
        self.as_bytes().len()
    }

    /// Whether the key has no bytes.
    pub fn is_empty(&self) -> bool {
        self.as_bytes().is_empty()
    }

    /// Whether the bytes are stored inline.
    pub fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline { .. })
    }

    /// Heap bytes a key of `len` bytes owns (0 when inline), for memory accounting.
    pub fn heap_bytes(len: usize) -> usize {
        if len <= N { 0 } else { len }
    }
}

/// `a == b` for slices of equal length: up to 32 bytes as (overlapping) 8- or 4-byte words,
/// longer ones through the slice comparison.
#[inline]
pub(crate) fn eq_same_len(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n > 32 {
        return a == b;
    }
    if n >= 8 {
        let mut at = 0;
        while at + 8 <= n {
            if word(a, at) != word(b, at) {
                return false;
            }
            at += 8;
        }
        // The last word overlaps the ones compared when `n` is not a multiple of 8.
        return at == n || word(a, n - 8) == word(b, n - 8);
    }
    if n >= 4 {
        return half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4);
    }
    a.iter().zip(b).all(|(x, y)| x == y)
}

/// The 8 bytes of `bytes` at `at` (0 outside, which the callers' bounds never are).
#[inline]
fn word(bytes: &[u8], at: usize) -> u64 {
    bytes
        .get(at..at + 8)
        .and_then(|w| <[u8; 8]>::try_from(w).ok())
        .map_or(0, u64::from_ne_bytes)
}

/// The 4 bytes of `bytes` at `at` (0 outside, which the callers' bounds never are).
#[inline]
fn half(bytes: &[u8], at: usize) -> u32 {
    bytes
        .get(at..at + 4)
        .and_then(|w| <[u8; 4]>::try_from(w).ok())
        .map_or(0, u32::from_ne_bytes)
}

impl<const N: usize> From<&[u8]> for InlineBytes<N> {
    #[inline]
    fn from(key: &[u8]) -> Self {
        match u8::try_from(key.len()) {
            Ok(len) if key.len() <= N => {
                let mut bytes = [0; N];
                if let Some(front) = bytes.get_mut(..key.len()) {
                    front.copy_from_slice(key);
                }
                InlineBytes(Repr::Inline { len, bytes })
            }
            _ => InlineBytes(Repr::Heap(key.into())),
        }
    }
}

impl<const N: usize> Borrow<[u8]> for InlineBytes<N> {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl<const N: usize> Hash for InlineBytes<N> {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl<const N: usize> PartialEq for InlineBytes<N> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl<const N: usize> Eq for InlineBytes<N> {}

impl<const N: usize> PartialOrd for InlineBytes<N> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Lexicographic byte order (as `[u8]`'s), 8 bytes at a time as big-endian words, inline:
/// a B-tree search compares its query with several keys per node, and map-table keys of one
/// key group share their leading bytes (a length, a row header), where a `memcmp` call per
/// comparison was the largest single cost of a join's state access. A map searched with a
/// `&[u8]` compares with `[u8]`'s order instead (the same order, through `memcmp`);
/// [`ByteKeyedMap`](crate::ByteKeyedMap) searches with byte keys in this one.
impl<const N: usize> Ord for InlineBytes<N> {
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        cmp_bytes(self.as_bytes(), other.as_bytes())
    }
}

/// `a.cmp(b)` for byte slices, a big-endian word at a time, then the tail bytes, then the
/// lengths (a proper prefix sorts first).
#[inline]
pub(crate) fn cmp_bytes(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let common = a.len().min(b.len());
    let mut at = 0;
    while at + 8 <= common {
        let (wa, wb) = (word(a, at), word(b, at));
        if wa != wb {
            return u64::from_be(wa).cmp(&u64::from_be(wb));
        }
        at += 8;
    }
    let tail_a = a.get(at..common).unwrap_or_default();
    let tail_b = b.get(at..common).unwrap_or_default();
    for (byte_a, byte_b) in tail_a.iter().zip(tail_b) {
        if byte_a != byte_b {
            return byte_a.cmp(byte_b);
        }
    }
    a.len().cmp(&b.len())
}

impl<const N: usize> std::fmt::Debug for InlineBytes<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("InlineKey").field(&self.as_bytes()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, RandomState};

    use super::*;

    #[test]
    fn inline_and_heap_keys_behave_as_bytes() {
        let state = RandomState::new();
        for len in [0, 1, 16, INLINE_KEY_LEN, INLINE_KEY_LEN + 1, 100] {
            let bytes: Vec<u8> = (0..len).map(|i| u8::try_from(i % 251).unwrap()).collect();
            let key = InlineKey::from(bytes.as_slice());
            assert_eq!(key.as_bytes(), bytes.as_slice());
            assert_eq!(key.is_inline(), len <= INLINE_KEY_LEN);
            assert_eq!(state.hash_one(&key), state.hash_one(bytes.as_slice()));
            assert_eq!(
                InlineKey::heap_bytes(len),
                if len <= INLINE_KEY_LEN { 0 } else { len }
            );
        }
        assert_eq!(std::mem::size_of::<InlineKey>(), 24);
    }

    #[test]
    fn eq_bytes_is_slice_equality_at_every_length_and_position() {
        for len in 0..=40_usize {
            let bytes: Vec<u8> = (0..len)
                .map(|i| u8::try_from(i * 7 % 251).unwrap())
                .collect();
            let key = InlineKey::from(bytes.as_slice());
            assert!(key.eq_bytes(&bytes), "len {len}");
            // One byte off anywhere, and one byte more or less, are different keys.
            for at in 0..len {
                let mut other = bytes.clone();
                other[at] ^= 0x80;
                assert!(!key.eq_bytes(&other), "len {len}, byte {at}");
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert!(!key.eq_bytes(&longer), "len {len} + 1");
            if len > 0 {
                assert!(!key.eq_bytes(&bytes[..len - 1]), "len {len} - 1");
            }
        }
    }

    #[test]
    fn map_keys_order_as_bytes_inline_or_not() {
        let short = InlineMapKey::from(&b"abc"[..]);
        let edge = InlineMapKey::from(&[7_u8; INLINE_MAP_KEY_LEN][..]);
        let long = InlineMapKey::from(&[7_u8; INLINE_MAP_KEY_LEN + 1][..]);
        assert!(short.is_inline() && edge.is_inline() && !long.is_inline());
        assert!(edge < long, "a proper prefix sorts first");
        assert_eq!(InlineMapKey::heap_bytes(INLINE_MAP_KEY_LEN), 0);
        assert_eq!(InlineMapKey::heap_bytes(60), 60);
        assert!(InlineMapKey::from(&b""[..]).is_empty());
        let mut map = std::collections::BTreeMap::new();
        for k in [&b"b"[..], b"a", &[7; 60], b"ab"] {
            map.insert(InlineMapKey::from(k), k.len());
        }
        let order: Vec<&[u8]> = map.keys().map(InlineMapKey::as_bytes).collect();
        assert_eq!(order, [&[7; 60][..], b"a", b"ab", b"b"]);
        assert_eq!(map.get(&b"ab"[..]), Some(&2));
        assert_eq!(map.get(&[7_u8; 60][..]), Some(&60));
        assert_eq!(std::mem::size_of::<InlineMapKey>(), 56);
    }

    /// The word-wise order is `[u8]`'s for every pair of lengths up to 40 and a difference
    /// at every position (both ways), equal keys included.
    #[test]
    fn word_order_is_byte_order() {
        let base: Vec<u8> = (0..40_u8).map(|i| i.wrapping_mul(37)).collect();
        for la in 0..=40 {
            for lb in 0..=40 {
                let (a, b) = (&base[..la], &base[..lb]);
                assert_eq!(cmp_bytes(a, b), a.cmp(b), "lengths {la} {lb}");
                for at in 0..la.min(lb) {
                    for delta in [1_u8, 0x80] {
                        let mut c = b.to_vec();
                        c[at] = c[at].wrapping_add(delta);
                        assert_eq!(cmp_bytes(a, &c), a.cmp(&c[..]), "{la} {lb} at {at}");
                        assert_eq!(cmp_bytes(&c, a), c[..].cmp(a), "{la} {lb} at {at}");
                    }
                }
            }
        }
        let (x, y) = (
            InlineMapKey::from(&base[..30]),
            InlineMapKey::from(&base[..31]),
        );
        assert_eq!(x.cmp(&y), std::cmp::Ordering::Less);
        assert_eq!(y.cmp(&x), std::cmp::Ordering::Greater);
        assert_eq!(x.cmp(&x.clone()), std::cmp::Ordering::Equal);
    }
}
