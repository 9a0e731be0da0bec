//! The map table's entry key: the full key `prefix ‖ user key`, inline up to
//! [`INLINE_MAP_KEY_LEN`] bytes.
//!
//! A B-tree search compares the query with up to 11 keys per node; with boxed keys every
//! comparison first loads the key from its own heap block (a cache miss per comparison on a
//! large table). Inline keys sit in the node itself. A join's entry key (a BIGINT join-key
//! row of 20 bytes ‖ a record of three BIGINT columns, 32 bytes) is 52 bytes; the type is 56
//! bytes either way, the size of the heap block a boxed 52-byte key takes anyway.

use std::borrow::Borrow;
use std::cmp::Ordering;

/// Keys up to this many bytes are stored inline.
pub(crate) const INLINE_MAP_KEY_LEN: usize = 54;

/// Entry key bytes, inline when short (see the module docs). Compares, and borrows, exactly
/// as `[u8]`, so the map is searched with a plain `&[u8]`.
#[derive(Clone)]
pub(crate) enum MapKey {
    /// `len` bytes at the front of `bytes`.
    Inline {
        len: u8,
        bytes: [u8; INLINE_MAP_KEY_LEN],
    },
    /// A longer key.
    Heap(Box<[u8]>),
}

impl MapKey {
    /// The key bytes.
    #[inline]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Inline { len, bytes } => bytes.get(..usize::from(*len)).unwrap_or_default(),
            Self::Heap(bytes) => bytes,
        }
    }

    /// The number of key bytes.
    pub(crate) fn len(&self) -> usize {
        self.as_bytes().len()
    }

    /// Heap bytes a key of `len` bytes owns beside the key itself (0 when inline).
    pub(crate) fn heap_bytes(len: usize) -> usize {
        if len <= INLINE_MAP_KEY_LEN { 0 } else { len }
    }
}

impl From<&[u8]> for MapKey {
    #[inline]
    fn from(key: &[u8]) -> Self {
        match u8::try_from(key.len()) {
            Ok(len) if key.len() <= INLINE_MAP_KEY_LEN => {
                let mut bytes = [0; INLINE_MAP_KEY_LEN];
                if let Some(dst) = bytes.get_mut(..key.len()) {
                    dst.copy_from_slice(key);
                }
                Self::Inline { len, bytes }
            }
            _ => Self::Heap(key.into()),
        }
    }
}

impl Borrow<[u8]> for MapKey {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for MapKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for MapKey {}

impl PartialOrd for MapKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for MapKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl std::fmt::Debug for MapKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("MapKey").field(&self.as_bytes()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn keys_compare_and_borrow_as_bytes_inline_or_not() {
        let short = MapKey::from(&b"abc"[..]);
        let edge = MapKey::from(&[7_u8; INLINE_MAP_KEY_LEN][..]);
        let long = MapKey::from(&[7_u8; INLINE_MAP_KEY_LEN + 1][..]);
        assert!(matches!(short, MapKey::Inline { .. }));
        assert!(matches!(edge, MapKey::Inline { .. }));
        assert!(matches!(long, MapKey::Heap(_)));
        assert_eq!(short.as_bytes(), b"abc");
        assert!(edge < long, "a proper prefix sorts first");
        assert_eq!(MapKey::heap_bytes(INLINE_MAP_KEY_LEN), 0);
        assert_eq!(MapKey::heap_bytes(60), 60);
        assert_eq!(MapKey::from(&b""[..]).as_bytes(), b"");
        let mut map = BTreeMap::new();
        for k in [&b"b"[..], b"a", &[7; 60], b"ab"] {
            map.insert(MapKey::from(k), k.len());
        }
        let order: Vec<&[u8]> = map.keys().map(MapKey::as_bytes).collect();
        assert_eq!(order, [&[7; 60][..], b"a", b"ab", b"b"]);
        assert_eq!(map.get(&b"ab"[..]), Some(&2));
        assert_eq!(map.get(&[7_u8; 60][..]), Some(&60));
        assert_eq!(size_of::<MapKey>(), 56);
    }
}
