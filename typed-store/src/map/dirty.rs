//! The keys a bundle of a complete map table changed, so that its commit visits them alone:
//! a complete table's working set holds every entry, and walking it all at each commit was
//! most of a join bundle's commit (`tests/it/map_complete.rs`, the bench README's W3 notes).
//!
//! An entry is dirty while it carries the current bundle's epoch (`Entry::dirty_in`), so
//! clearing the list makes every entry clean at once: the commit no longer looks each
//! committed key up again to reset a flag (one search of the working set per written entry).

/// A full key as the working set splits it: the key and the length of its full prefix
/// (key-group prefix ‖ prefix; the user key follows).
pub(super) type SplitKey<'a> = (&'a [u8], usize);

/// Full keys back to back (`ends` ends each, `splits` gives each one's full-prefix length).
#[derive(Debug, Default)]
pub(super) struct KeyList {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    splits: Vec<usize>,
}

impl KeyList {
    /// Appends the full key `prefix ‖ user_key`.
    pub(super) fn push(&mut self, prefix: &[u8], user_key: &[u8]) {
        self.bytes.extend_from_slice(prefix);
        self.bytes.extend_from_slice(user_key);
        self.ends.push(self.bytes.len());
        self.splits.push(prefix.len());
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.splits.clear();
    }

    /// The keys, in the order they were pushed.
    pub(super) fn iter(&self) -> impl Iterator<Item = SplitKey<'_>> {
        let mut start = 0;
        self.ends
            .iter()
            .zip(&self.splits)
            .map(move |(&end, &split)| {
                let key = self.bytes.get(start..end).unwrap_or_default();
                start = end;
                (key, split)
            })
    }
}

/// `key` as (full prefix, user key).
pub(super) fn split_key((key, split): SplitKey<'_>) -> (&[u8], &[u8]) {
    key.split_at_checked(split).unwrap_or((key, &[]))
}

/// The dirty entries' keys, each listed once per bundle: when its entry turns dirty.
#[derive(Debug)]
pub(super) struct DirtyKeys {
    keys: KeyList,
    /// The epoch entries dirtied since the last [`clear`](Self::clear) carry (never 0, the
    /// epoch of an entry no bundle dirtied).
    epoch: u64,
}

impl Default for DirtyKeys {
    fn default() -> Self {
        Self {
            keys: KeyList::default(),
            epoch: 1,
        }
    }
}

impl DirtyKeys {
    /// Empties the list; every entry is clean from then on.
    pub(super) fn clear(&mut self) {
        self.keys.clear();
        self.epoch += 1;
    }

    /// The epoch an entry dirtied now carries.
    pub(super) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Whether `entry` was dirtied since the last [`clear`](Self::clear) (commit writes it:
    /// a put when live, else a delete).
    pub(super) fn is_dirty<V>(&self, entry: &super::Entry<V>) -> bool {
        entry.dirty_in == self.epoch
    }

    /// Marks `entry` (of `prefix ‖ user_key`) dirty, listing its key if it was not.
    pub(super) fn mark<V>(&mut self, entry: &mut super::Entry<V>, prefix: &[u8], user_key: &[u8]) {
        if entry.dirty_in != self.epoch {
            entry.dirty_in = self.epoch;
            self.keys.push(prefix, user_key);
        }
    }

    /// The listed keys in ascending order.
    pub(super) fn sorted(&self) -> Vec<SplitKey<'_>> {
        let mut keys: Vec<SplitKey<'_>> = self.keys.iter().collect();
        keys.sort_unstable_by(|a, b| a.0.cmp(b.0));
        keys.dedup_by(|a, b| a.0 == b.0);
        keys
    }
}
