//! The working map, keyed by `state_api::InlineKey` (RocksDB key bytes inline up to 22 bytes:
//! a Flink BIGINT key row behind a one-byte key-group prefix is 17), so a resident or dirty
//! key costs no allocation.

use state_api::FlatMap;

pub(crate) use state_api::InlineKey as Key;

/// The working map: entries by RocksDB key in a [`FlatMap`] (open addressing, foldhash, slots
/// prefetchable). Every operation hashes its key once ([`hash`](WorkingMap::hash)); the
/// `*_hashed` methods take that hash so that a lookup, a miss and the insert after it share
/// it, and [`prefetch`](WorkingMap::prefetch) brings a key's slot into the cache ahead of
/// its lookup.
pub(crate) struct WorkingMap<V> {
    map: FlatMap<V>,
}

impl<V> WorkingMap<V> {
    pub(crate) fn new() -> Self {
        Self {
            map: FlatMap::new(),
        }
    }

    /// The hash of `key` in this map.
    #[inline]
    pub(crate) fn hash(&self, key: &[u8]) -> u64 {
        self.map.hash(key)
    }

    /// Asks the CPU for the slot of the key with hash `hash` (a hint).
    #[inline]
    pub(crate) fn prefetch(&self, hash: u64) {
        self.map.prefetch(hash);
    }

    #[inline]
    pub(crate) fn get_hashed(&self, hash: u64, key: &[u8]) -> Option<&V> {
        self.map.get_hashed(hash, key)
    }

    #[inline]
    pub(crate) fn get_mut_hashed(&mut self, hash: u64, key: &[u8]) -> Option<&mut V> {
        self.map.get_mut_hashed(hash, key)
    }

    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<&V> {
        self.map.get(key)
    }

    /// The entry of `key`, inserted with `make` when absent (the key copied only then).
    #[inline]
    pub(crate) fn get_or_insert_hashed(
        &mut self,
        hash: u64,
        key: &[u8],
        make: impl FnOnce() -> V,
    ) -> &mut V {
        self.map.get_or_insert_with_hashed(hash, key, make)
    }

    /// Inserts `value` for `key`; returns the value it replaces.
    pub(crate) fn insert(&mut self, key: Key, value: V) -> Option<V> {
        self.map.insert(key, value)
    }

    /// Removes `key`; returns its value.
    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<V> {
        self.map.remove(key)
    }

    /// Keeps the entries for which `keep` is true.
    pub(crate) fn retain(&mut self, keep: impl FnMut(&Key, &mut V) -> bool) {
        self.map.retain(keep);
    }

    pub(crate) fn clear(&mut self) {
        self.map.clear();
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_map_operations() {
        let mut map: WorkingMap<u32> = WorkingMap::new();
        let long = [7_u8; 40];
        assert_eq!(map.insert(Key::from(&b"a"[..]), 1), None);
        assert_eq!(map.insert(Key::from(&b"a"[..]), 2), Some(1));
        let h = map.hash(&long);
        *map.get_or_insert_hashed(h, &long, || 5) += 1;
        assert_eq!(map.get(&long), Some(&6));
        assert_eq!(*map.get_or_insert_hashed(h, &long, || 0), 6);
        assert_eq!(map.len(), 2);
        assert_eq!(map.remove(b"a"), Some(2));
        assert_eq!(map.remove(b"a"), None);
        map.retain(|_, v| *v > 10);
        assert_eq!(map.len(), 0);
        for i in 0..1000_u32 {
            map.insert(Key::from(&i.to_be_bytes()[..]), i);
        }
        assert!((0..1000_u32).all(|i| map.get(&i.to_be_bytes()) == Some(&i)));
        map.clear();
        assert_eq!(map.get(&5_u32.to_be_bytes()), None);
    }
}
