//! Searches of an ordered map keyed by [`InlineBytes`] with plain byte keys.
//!
//! A `BTreeMap<InlineBytes<N>, V>` can be searched with a `&[u8]` (the key borrows as one),
//! but then every comparison goes through `[u8]`'s order: a `memcmp` call per key compared.
//! Searched with an `InlineBytes` it compares in the key's own order, a big-endian word at a
//! time inline (the same order). [`ByteKeyedMap`] does that conversion in one place: a key
//! that fits inline (at most `N` bytes, a copy on the stack) is searched as an
//! `InlineBytes`, a longer one as `&[u8]` (converting it would allocate).

use std::collections::BTreeMap;
use std::collections::btree_map::{Range, RangeMut};
use std::ops::Bound;

use crate::inline_key::InlineBytes;

/// Searches of a `BTreeMap<InlineBytes<N>, V>` by byte keys, in the keys' word-wise order
/// (see the module docs). [`PrefixMap`](crate::PrefixMap) searches its B-trees (a large
/// prefix's entries, restored entries waiting for their prefix) through it.
///
/// ```
/// use std::collections::BTreeMap;
/// use std::ops::Bound;
/// use state_api::{ByteKeyedMap, InlineMapKey};
///
/// let mut map = BTreeMap::new();
/// map.insert(InlineMapKey::from(&b"ab"[..]), 1);
/// map.insert(InlineMapKey::from(&[7_u8; 60][..]), 2);
/// assert_eq!(map.get_bytes(b"ab"), Some(&1));
/// assert_eq!(map.get_bytes(&[7; 60]), Some(&2));
/// let from_a: Vec<i32> = map
///     .range_bytes((Bound::Included(&b"a"[..]), Bound::Unbounded))
///     .map(|(_, v)| *v)
///     .collect();
/// assert_eq!(from_a, [1]);
/// ```
pub trait ByteKeyedMap<K, V> {
    /// The value of `key`.
    fn get_bytes(&self, key: &[u8]) -> Option<&V>;
    /// The value of `key`, mutable.
    fn get_bytes_mut(&mut self, key: &[u8]) -> Option<&mut V>;
    /// The stored key and value of `key`.
    fn get_bytes_key_value(&self, key: &[u8]) -> Option<(&K, &V)>;
    /// Whether `key` is present.
    fn contains_bytes(&self, key: &[u8]) -> bool;
    /// Removes `key`, returning its value.
    fn remove_bytes(&mut self, key: &[u8]) -> Option<V>;
    /// The entries within `bounds`, in key order.
    fn range_bytes(&self, bounds: (Bound<&[u8]>, Bound<&[u8]>)) -> Range<'_, K, V>;
    /// The entries within `bounds`, mutable, in key order.
    fn range_bytes_mut(&mut self, bounds: (Bound<&[u8]>, Bound<&[u8]>)) -> RangeMut<'_, K, V>;
}

/// `key` as an inline query, or `None` when it is too long to be stored inline.
#[inline]
fn inline<const N: usize>(key: &[u8]) -> Option<InlineBytes<N>> {
    (key.len() <= N).then(|| InlineBytes::from(key))
}

/// Both bounds as inline queries, or `None` when either is too long.
fn inline_bounds<const N: usize>(
    (lower, upper): (Bound<&[u8]>, Bound<&[u8]>),
) -> Option<(Bound<InlineBytes<N>>, Bound<InlineBytes<N>>)> {
    let convert = |bound: Bound<&[u8]>| -> Option<Bound<InlineBytes<N>>> {
        Some(match bound {
            Bound::Included(key) => Bound::Included(inline(key)?),
            Bound::Excluded(key) => Bound::Excluded(inline(key)?),
            Bound::Unbounded => Bound::Unbounded,
        })
    };
    Some((convert(lower)?, convert(upper)?))
}

impl<const N: usize, V> ByteKeyedMap<InlineBytes<N>, V> for BTreeMap<InlineBytes<N>, V> {
    #[inline]
    fn get_bytes(&self, key: &[u8]) -> Option<&V> {
        match inline::<N>(key) {
            Some(query) => self.get(&query),
            None => self.get(key),
        }
    }

    #[inline]
    fn get_bytes_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        match inline::<N>(key) {
            Some(query) => self.get_mut(&query),
            None => self.get_mut(key),
        }
    }

    #[inline]
    fn get_bytes_key_value(&self, key: &[u8]) -> Option<(&InlineBytes<N>, &V)> {
        match inline::<N>(key) {
            Some(query) => self.get_key_value(&query),
            None => self.get_key_value(key),
        }
    }

    #[inline]
    fn contains_bytes(&self, key: &[u8]) -> bool {
        self.get_bytes(key).is_some()
    }

    #[inline]
    fn remove_bytes(&mut self, key: &[u8]) -> Option<V> {
        match inline::<N>(key) {
            Some(query) => self.remove(&query),
            None => self.remove(key),
        }
    }

    #[inline]
    fn range_bytes(&self, bounds: (Bound<&[u8]>, Bound<&[u8]>)) -> Range<'_, InlineBytes<N>, V> {
        match inline_bounds::<N>(bounds) {
            Some(query) => self.range::<InlineBytes<N>, _>(query),
            None => self.range::<[u8], _>(bounds),
        }
    }

    #[inline]
    fn range_bytes_mut(
        &mut self,
        bounds: (Bound<&[u8]>, Bound<&[u8]>),
    ) -> RangeMut<'_, InlineBytes<N>, V> {
        match inline_bounds::<N>(bounds) {
            Some(query) => self.range_mut::<InlineBytes<N>, _>(query),
            None => self.range_mut::<[u8], _>(bounds),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inline_key::InlineMapKey;

    /// Short and long keys and bounds (inline queries and the `[u8]` fallback) find the same
    /// entries as the map's own `[u8]` searches.
    #[test]
    fn byte_searches_match_slice_searches() {
        let keys: Vec<Vec<u8>> = (0..40_u8)
            .map(|i| {
                let len = usize::from(i) * 2;
                (0..len).map(|j| u8::try_from(j).unwrap() ^ i).collect()
            })
            .collect();
        let mut map: BTreeMap<InlineMapKey, usize> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (InlineMapKey::from(k.as_slice()), i))
            .collect();
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(map.get_bytes(k), Some(&i), "key {i}");
            assert_eq!(map.get_bytes_key_value(k).map(|(_, v)| *v), Some(i));
            assert!(map.contains_bytes(k));
            for other in [&keys[(i + 7) % keys.len()], &keys[(i + 20) % keys.len()]] {
                let (lower, upper) = if k <= other { (k, other) } else { (other, k) };
                for bounds in [
                    (Bound::Included(&lower[..]), Bound::Excluded(&upper[..])),
                    (Bound::Excluded(&lower[..]), Bound::Unbounded),
                ] {
                    let want: Vec<usize> = map.range::<[u8], _>(bounds).map(|(_, v)| *v).collect();
                    let got: Vec<usize> = map.range_bytes(bounds).map(|(_, v)| *v).collect();
                    assert_eq!(got, want, "range from key {i}");
                    let got_mut: Vec<usize> =
                        map.range_bytes_mut(bounds).map(|(_, v)| *v).collect();
                    assert_eq!(got_mut, want, "range_mut from key {i}");
                }
            }
        }
        if let Some(v) = map.get_bytes_mut(&keys[39]) {
            *v = 100;
        }
        assert_eq!(
            map.remove_bytes(&keys[39]),
            Some(100),
            "a long key (78 bytes)"
        );
        assert_eq!(map.remove_bytes(&keys[3]), Some(3), "a short key");
        assert!(!map.contains_bytes(&keys[39]) && !map.contains_bytes(&keys[3]));
        assert_eq!(map.get_bytes(b"absent"), None);
    }
}
