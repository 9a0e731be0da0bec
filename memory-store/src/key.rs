//! The table's key type: key bytes stored inline up to 22 bytes (a Flink BIGINT key row is
//! 16), on the heap beyond, so a small key costs no allocation and no pointer chase.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

/// Key bytes kept inline up to this length.
const INLINE: usize = 22;

/// Key bytes, inline when short. Hashes, compares and borrows exactly as `[u8]`, so maps keyed
/// by it are looked up with a plain `&[u8]`.
#[derive(Clone)]
pub(crate) enum Key {
    /// `len` bytes at the front of `bytes`.
    Inline { len: u8, bytes: [u8; INLINE] },
    /// A longer key.
    Heap(Box<[u8]>),
}

impl Key {
    /// The key bytes.
    #[inline]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            Key::Inline { len, bytes } => bytes.get(..usize::from(*len)).unwrap_or_default(),
            Key::Heap(bytes) => bytes,
        }
    }

    /// Heap bytes a key of `len` bytes owns (0 when inline).
    pub(crate) fn heap_bytes(len: usize) -> usize {
        if len <= INLINE { 0 } else { len }
    }
}

impl From<&[u8]> for Key {
    #[inline]
    fn from(key: &[u8]) -> Self {
        match u8::try_from(key.len()) {
            Ok(len) if key.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                if let Some(front) = bytes.get_mut(..key.len()) {
                    front.copy_from_slice(key);
                }
                Key::Inline { len, bytes }
            }
            _ => Key::Heap(key.into()),
        }
    }
}

impl Borrow<[u8]> for Key {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Hash for Key {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl PartialEq for Key {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Key {}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Key").field(&self.as_bytes()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn inline_and_heap_keys_behave_as_bytes() {
        let state = foldhash::fast::RandomState::default();
        for len in [0, 1, 16, INLINE, INLINE + 1, 100] {
            let bytes: Vec<u8> = (0..len).map(|i| u8::try_from(i % 251).unwrap()).collect();
            let key = Key::from(bytes.as_slice());
            assert_eq!(key.as_bytes(), bytes.as_slice());
            assert_eq!(matches!(key, Key::Inline { .. }), len <= INLINE);
            assert_eq!(state.hash_one(&key), state.hash_one(bytes.as_slice()));
            assert_eq!(Key::heap_bytes(len), if len <= INLINE { 0 } else { len });
        }
        assert_eq!(std::mem::size_of::<Key>(), 24);
    }
}
