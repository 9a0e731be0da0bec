//! The key type of the backends' hash maps: key bytes inline when short.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

/// Key bytes kept inline up to this length (a Flink BIGINT key row is 16 bytes, 17 behind a
/// one-byte key-group prefix).
pub const INLINE_KEY_LEN: usize = 22;

#[derive(Clone)]
enum Repr {
    /// `len` bytes at the front of `bytes`.
    Inline {
        len: u8,
        bytes: [u8; INLINE_KEY_LEN],
    },
    /// A longer key.
    Heap(Box<[u8]>),
}

/// Key bytes stored inline up to [`INLINE_KEY_LEN`] bytes and on the heap beyond, so a small
/// key costs no allocation and no pointer chase (24 bytes either way). Hashes, compares and
/// borrows exactly as `[u8]`, so maps keyed by it are looked up with a plain `&[u8]`; both
/// backends key their working maps with it.
///
/// ```
/// use state_api::InlineKey;
///
/// let key = InlineKey::from(&b"user-1"[..]);
/// assert_eq!(key.as_bytes(), b"user-1");
/// assert!(key.is_inline());
/// assert_eq!(InlineKey::heap_bytes(6), 0);
/// assert_eq!(InlineKey::heap_bytes(40), 40);
/// ```
#[derive(Clone)]
pub struct InlineKey(Repr);

impl InlineKey {
    /// The key bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => bytes.get(..usize::from(*len)).unwrap_or_default(),
            Repr::Heap(bytes) => bytes,
        }
    }

    /// Whether the bytes are stored inline.
    pub fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline { .. })
    }

    /// Heap bytes a key of `len` bytes owns (0 when inline), for memory accounting.
    pub fn heap_bytes(len: usize) -> usize {
        if len <= INLINE_KEY_LEN { 0 } else { len }
    }
}

impl From<&[u8]> for InlineKey {
    #[inline]
    fn from(key: &[u8]) -> Self {
        match u8::try_from(key.len()) {
            Ok(len) if key.len() <= INLINE_KEY_LEN => {
                let mut bytes = [0; INLINE_KEY_LEN];
                if let Some(front) = bytes.get_mut(..key.len()) {
                    front.copy_from_slice(key);
                }
                InlineKey(Repr::Inline { len, bytes })
            }
            _ => InlineKey(Repr::Heap(key.into())),
        }
    }
}

impl Borrow<[u8]> for InlineKey {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Hash for InlineKey {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl PartialEq for InlineKey {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for InlineKey {}

impl PartialOrd for InlineKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for InlineKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl std::fmt::Debug for InlineKey {
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
}
