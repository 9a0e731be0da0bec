//! The working map, keyed by `state_api::InlineKey` (RocksDB key bytes inline up to 22 bytes:
//! a Flink BIGINT key row behind a one-byte key-group prefix is 17), so a resident or dirty
//! key costs no allocation.

pub(crate) use state_api::InlineKey as Key;

/// The working map: entries by RocksDB key in a [`state_api::FlatMap`] (open addressing,
/// foldhash, slots prefetchable). Every operation hashes its key once (`hash`); the
/// `*_hashed` methods take that hash so that a lookup, a miss and the insert after it share
/// it, and `prefetch` brings a key's slot into the cache ahead of its lookup.
pub(crate) type WorkingMap<V> = state_api::FlatMap<V>;

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
        *map.get_or_insert_with_hashed(h, &long, || 5) += 1;
        assert_eq!(map.get(&long), Some(&6));
        assert_eq!(*map.get_or_insert_with_hashed(h, &long, || 0), 6);
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
