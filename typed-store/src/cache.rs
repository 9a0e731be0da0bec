//! The working map, keyed by `state_api::InlineKey` (RocksDB key bytes inline up to 22 bytes:
//! a Flink BIGINT key row behind a one-byte key-group prefix is 17), so a resident or dirty
//! key costs no allocation.

use std::hash::BuildHasher;

use foldhash::fast::RandomState;
use hashbrown::HashTable;

pub(crate) use state_api::InlineKey as Key;

/// The working map: entries by RocksDB key in a hashbrown table with foldhash. Every
/// operation hashes its key once ([`hash`](WorkingMap::hash)); the `*_hashed` methods take that
/// hash so that a lookup, a miss and the insert after it share it.
pub(crate) struct WorkingMap<V> {
    table: HashTable<(Key, V)>,
    hasher: RandomState,
}

impl<V> WorkingMap<V> {
    pub(crate) fn new() -> Self {
        Self {
            table: HashTable::new(),
            hasher: RandomState::default(),
        }
    }

    /// The hash of `key` in this map.
    #[inline]
    pub(crate) fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    #[inline]
    pub(crate) fn get_hashed(&self, hash: u64, key: &[u8]) -> Option<&V> {
        self.table
            .find(hash, |(k, _)| k.as_bytes() == key)
            .map(|(_, v)| v)
    }

    #[inline]
    pub(crate) fn get_mut_hashed(&mut self, hash: u64, key: &[u8]) -> Option<&mut V> {
        self.table
            .find_mut(hash, |(k, _)| k.as_bytes() == key)
            .map(|(_, v)| v)
    }

    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<&V> {
        self.get_hashed(self.hash(key), key)
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        self.get_mut_hashed(self.hash(key), key)
    }

    /// The entry of `key`, inserted with `make` when absent (the key copied only then).
    #[inline]
    pub(crate) fn get_or_insert_hashed(
        &mut self,
        hash: u64,
        key: &[u8],
        make: impl FnOnce() -> V,
    ) -> &mut V {
        let hasher = &self.hasher;
        let entry = self
            .table
            .entry(
                hash,
                |(k, _)| k.as_bytes() == key,
                |(k, _)| hasher.hash_one(k.as_bytes()),
            )
            .or_insert_with(|| (Key::from(key), make()));
        &mut entry.into_mut().1
    }

    /// Inserts `value` for `key`; returns the value it replaces.
    pub(crate) fn insert(&mut self, key: Key, value: V) -> Option<V> {
        let hash = self.hash(key.as_bytes());
        let hasher = &self.hasher;
        match self.table.entry(
            hash,
            |(k, _)| k == &key,
            |(k, _)| hasher.hash_one(k.as_bytes()),
        ) {
            hashbrown::hash_table::Entry::Occupied(mut occupied) => {
                Some(std::mem::replace(&mut occupied.get_mut().1, value))
            }
            hashbrown::hash_table::Entry::Vacant(vacant) => {
                vacant.insert((key, value));
                None
            }
        }
    }

    /// Removes `key`; returns its value.
    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<V> {
        let hash = self.hash(key);
        self.table
            .find_entry(hash, |(k, _)| k.as_bytes() == key)
            .ok()
            .map(|entry| entry.remove().0.1)
    }

    /// Keeps the entries for which `keep` is true.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&Key, &mut V) -> bool) {
        self.table.retain(|(k, v)| keep(k, v));
    }

    pub(crate) fn clear(&mut self) {
        self.table.clear();
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.table.len()
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
        assert_eq!(map.get_mut(&5_u32.to_be_bytes()), None);
    }
}
