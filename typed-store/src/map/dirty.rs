//! The keys a bundle of a complete map table changed, so that its commit visits them alone:
//! a complete table's working set holds every entry, and walking it all at each commit was
//! most of a join bundle's commit (`tests/it/map_complete.rs`, the bench README's W3 notes).

/// Full keys back to back (`ends` ends each), each listed once per bundle: when its entry
/// turns dirty.
#[derive(Debug, Default)]
pub(super) struct DirtyKeys {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl DirtyKeys {
    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// Marks `entry` dirty, listing `key` if it was not.
    pub(super) fn mark<V>(&mut self, entry: &mut super::Entry<V>, key: &[u8]) {
        if !entry.dirty {
            entry.dirty = true;
            self.bytes.extend_from_slice(key);
            self.ends.push(self.bytes.len());
        }
    }

    /// The listed keys, in the order they were listed (each once: a key is listed when its
    /// entry turns dirty).
    pub(super) fn iter(&self) -> impl Iterator<Item = &[u8]> {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let key = self.bytes.get(start..end).unwrap_or_default();
            start = end;
            key
        })
    }

    /// The listed keys in ascending order.
    pub(super) fn sorted(&self) -> Vec<&[u8]> {
        let mut keys: Vec<&[u8]> = self.iter().collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }
}
