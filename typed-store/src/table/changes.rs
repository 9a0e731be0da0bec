//! What a bundle's changes leave to write: the dirty list of a write-through commit, or the
//! pending keys of the write-behind state, with the committed writes a flush during the
//! bundle needs.
//!
//! Every change of a slot is bracketed: [`Changes::before`] (the slot as committed) and
//! [`Changes::after`] (the slot as changed). Write-through: `after` lists the key once per
//! bundle with a copy of its write, so the commit encodes the list in order without looking
//! a key up again. Write-behind: `after` marks the slot pending (listed once until written),
//! and `before` keeps the committed write of a slot that was already pending when the bundle
//! first changes it, so that a flush while the bundle is open (the pool refused memory, the
//! handle was dropped) writes committed state only.

use std::mem::size_of;

use crate::cache::Key;

use super::Slot;

/// A key dirtied in the open bundle and what its write-through commit writes:
/// `(last access, value)`, or `None` for a delete.
#[derive(Debug)]
pub(super) struct Dirty<V> {
    pub(super) key: Key,
    pub(super) write: Option<(i64, V)>,
}

/// The change tracking of one table.
#[derive(Debug)]
pub(super) struct Changes<V> {
    /// Write-through (a write-behind limit of 0): the dirty list is kept, nothing pending.
    pub(super) write_through: bool,
    /// Write-through: keys dirtied in the open bundle, each once, with their writes.
    pub(super) dirty: Vec<Dirty<V>>,
    /// Keys dirtied in the open bundle (each once), for the stats.
    pub(super) dirty_count: u64,
    /// Write-behind: keys of the pending slots, each once, with their hash.
    pub(super) pending: Vec<(Key, u64)>,
    /// What the pending slots count against the write-behind limit: key and slot bytes each.
    pub(super) pending_bytes: usize,
    /// Write-behind: the committed writes of keys that were pending when the open bundle
    /// first changed them.
    pub(super) undo: Vec<(Key, Option<(i64, V)>)>,
}

/// What a pending key of `key_len` bytes counts against the write-behind limit.
pub(super) fn pending_cost<V>(key_len: usize) -> usize {
    key_len + size_of::<Slot<V>>()
}

/// The write a slot stands for: its value and last access while live, a delete otherwise.
pub(super) fn write_of<V: Clone>(slot: &Slot<V>) -> Option<(i64, V)> {
    match (&slot.value, slot.live) {
        (Some(value), true) => Some((slot.last_access, value.clone())),
        _ => None,
    }
}

impl<V: Clone> Changes<V> {
    pub(super) fn new(write_through: bool) -> Self {
        Self {
            write_through,
            dirty: Vec::new(),
            dirty_count: 0,
            pending: Vec::new(),
            pending_bytes: 0,
            undo: Vec::new(),
        }
    }

    /// Before a change of `slot` (of `key`) in `bundle`.
    #[inline]
    pub(super) fn before(&mut self, slot: &Slot<V>, key: &[u8], bundle: u64) {
        if !self.write_through && slot.pending && slot.dirty_in != bundle {
            self.undo.push((Key::from(key), write_of(slot)));
        }
    }

    /// After a change of `slot` (of `key`, `hash` in the working map) in `bundle`.
    #[inline]
    pub(super) fn after(&mut self, slot: &mut Slot<V>, key: &[u8], hash: u64, bundle: u64) {
        let first = slot.dirty_in != bundle;
        if first {
            self.dirty_count += 1;
        }
        if self.write_through {
            let write = write_of(slot);
            if !first && let Some(listed) = self.dirty.get_mut(slot.dirty_at) {
                listed.write = write;
                return;
            }
            slot.dirty_in = bundle;
            slot.dirty_at = self.dirty.len();
            self.dirty.push(Dirty {
                key: Key::from(key),
                write,
            });
            return;
        }
        slot.dirty_in = bundle;
        if !slot.pending {
            slot.pending = true;
            self.pending.push((Key::from(key), hash));
            self.pending_bytes += pending_cost::<V>(key.len());
        }
    }

    /// A new bundle begins.
    pub(super) fn begin(&mut self) {
        self.dirty.clear();
        self.undo.clear();
        self.dirty_count = 0;
    }

    /// Forgets every pending write (the state was replaced).
    pub(super) fn discard_pending(&mut self) {
        self.pending.clear();
        self.pending_bytes = 0;
        self.undo.clear();
    }
}
