//! The working map's key type: RocksDB key bytes stored inline up to 22 bytes (a Flink BIGINT
//! key row behind a one-byte key-group prefix is 17), on the heap beyond, so a resident or
//! dirty key costs no allocation.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash, Hasher};

use foldhash::fast::RandomState;
use hashbrown::HashTable;

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
}

#[cfg(test)]
impl Key {
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

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Key").field(&self.as_bytes()).finish()
    }
}

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
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn inline_and_heap_keys_behave_as_bytes() {
        let state = RandomState::default();
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
