//! The write-behind buffer of a keyed table: committed values not yet written to RocksDB.
//!
//! A commit puts each dirty key's stored bytes (the layout of `format.rs`: 8-byte timestamp ‖
//! arrow-row value) or a delete here instead of into a `WriteBatch`; a key committed again
//! replaces its entry in place. The buffer reaches RocksDB in one `WriteBatch`, keys in
//! ascending order, when
//!
//! - it holds more than its limit (`RocksSlot::with_write_behind`), the memory pool refuses
//!   its growth, or a commit leaves a bounded pool more than half used (so that buffers never
//!   starve restores, snapshots and caches of the stores sharing the pool),
//! - anything reads RocksDB as a whole: a native checkpoint (every table of the store), a
//!   canonical export, a TTL sweep, `RocksStore::flush_table` / `compact_table`,
//! - the store closes (the last handle of the database is dropped).
//!
//! Reads of keys the working map does not hold look here before RocksDB, so the buffer is
//! invisible to every reader: the state is the one a write-through commit would have left.
//! A canonical restore of the table (`commit_restore`) and a native restore of the store
//! replace the state, and with it the buffer's entries. With the WAL off, what a crash loses
//! is the same either way: a crashed store is discarded and state comes back from the last
//! checkpoint.
//!
//! Memory: each entry reserves `key length + ENTRY_OVERHEAD + heap bytes` from the store's
//! memory pool (a stored value of up to 46 bytes lives inside its entry: no heap bytes). The buffer is shared by the table and its store (by table name), so
//! that the store's flush points (checkpoint, close) reach it whichever handle is used.

use std::mem::size_of;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rocksdb::WriteBatch;
use state_api::{MemoryPool, MemoryReservation, Result};

use crate::cache::{Key, WorkingMap};
use crate::error::rocks_api;
use crate::store::Shared;

/// Bytes an entry costs besides its key and value bytes (the inline key, the `Option<Vec>`
/// and the hash table's control byte, rounded up).
pub(crate) const ENTRY_OVERHEAD: usize = size_of::<Key>() + size_of::<Entry>() + 8;

/// Stored values up to this many bytes live inside their entry (a W1 accumulator of three
/// BIGINTs is 35 bytes): staging one touches the entry only, not a second heap block.
const INLINE_VALUE: usize = 46;

/// A pending write: a delete, or the stored bytes inline or on the heap.
enum Entry {
    Delete,
    Inline(u8, [u8; INLINE_VALUE]),
    Heap(Vec<u8>),
}

impl Entry {
    fn bytes(&self) -> Option<&[u8]> {
        match self {
            Self::Delete => None,
            Self::Inline(len, bytes) => bytes.get(..usize::from(*len)),
            Self::Heap(bytes) => Some(bytes),
        }
    }

    /// Heap bytes the entry holds besides itself.
    fn heap_capacity(&self) -> usize {
        match self {
            Self::Heap(bytes) => bytes.capacity(),
            _ => 0,
        }
    }

    /// Sets the entry to `value` (`None`: a delete), reusing a heap buffer that fits.
    fn set(&mut self, value: Option<&[u8]>) {
        match value {
            None => *self = Self::Delete,
            Some(bytes) if bytes.len() <= INLINE_VALUE => {
                let mut inline = [0; INLINE_VALUE];
                if let Some(head) = inline.get_mut(..bytes.len()) {
                    head.copy_from_slice(bytes);
                }
                // `bytes.len() <= INLINE_VALUE < 256`.
                *self = Self::Inline(u8::try_from(bytes.len()).unwrap_or(u8::MAX), inline);
            }
            Some(bytes) => match self {
                Self::Heap(buffer) if buffer.capacity() >= bytes.len() => {
                    buffer.clear();
                    buffer.extend_from_slice(bytes);
                }
                _ => *self = Self::Heap(bytes.to_vec()),
            },
        }
    }
}

/// One table's committed, unwritten entries: RocksDB key → stored bytes, or a delete.
pub(crate) struct WriteBehind {
    entries: WorkingMap<Entry>,
    reservation: MemoryReservation,
    /// What the entries cost ([`entry_cost`]); the reservation is at least this.
    bytes: usize,
    /// Keys written to RocksDB by flushes.
    flushed_keys: u64,
    /// Flushes that wrote at least one key.
    flushes: u64,
}

/// A buffered write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pending<'a> {
    /// The key's stored bytes.
    Put(&'a [u8]),
    /// The key is removed.
    Delete,
}

/// A shared handle: the table and the store both reach the buffer.
pub(crate) type SharedWriteBehind = Arc<Mutex<WriteBehind>>;

impl WriteBehind {
    pub(crate) fn new(pool: Arc<dyn MemoryPool>) -> Self {
        Self {
            entries: WorkingMap::new(),
            reservation: MemoryReservation::new(pool),
            bytes: 0,
            flushed_keys: 0,
            flushes: 0,
        }
    }

    /// Locks a shared buffer (a panic elsewhere leaves the entries usable: each entry is
    /// replaced whole).
    pub(crate) fn lock(shared: &SharedWriteBehind) -> MutexGuard<'_, Self> {
        shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The pending write of `key`, `None` when the buffer does not hold it.
    pub(crate) fn get(&self, key: &[u8]) -> Option<Pending<'_>> {
        self.entries
            .get(key)
            .map(|entry| entry.bytes().map_or(Pending::Delete, Pending::Put))
    }

    /// Whether nothing is pending.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes reserved for the pending entries.
    pub(crate) fn reserved_bytes(&self) -> usize {
        self.reservation.size()
    }

    /// `(flushes, keys flushed)` so far.
    pub(crate) fn flush_counts(&self) -> (u64, u64) {
        (self.flushes, self.flushed_keys)
    }

    /// Reserves `upper_bound` bytes (see [`entry_cost`]) for a commit's entries before they
    /// are staged; `false` when the pool refuses (the caller flushes the buffer, which frees
    /// its bytes, and asks again).
    pub(crate) fn try_reserve(&mut self, upper_bound: usize) -> bool {
        self.reservation.try_grow(upper_bound).is_ok()
    }

    /// Puts (`Some`) or deletes (`None`) `key`. An entry never costs more after this than
    /// before plus [`entry_cost`] of it (a value that does not fit the old buffer gets an
    /// exactly sized new one), so a [`try_reserve`](Self::try_reserve) of the bounds covers
    /// a commit; [`settle`](Self::settle) returns the unused part.
    pub(crate) fn stage(&mut self, key: &[u8], value: Option<&[u8]>) {
        let hash = self.entries.hash(key);
        let mut fresh = false;
        let entry = self.entries.get_or_insert_hashed(hash, key, || {
            fresh = true;
            Entry::Delete
        });
        let before = if fresh {
            0
        } else {
            entry_cost(key, entry.heap_capacity())
        };
        entry.set(value);
        let after = entry_cost(key, entry.heap_capacity());
        self.bytes = (self.bytes + after).saturating_sub(before);
    }

    /// Shrinks the reservation to what the entries cost (after a commit's
    /// [`stage`](Self::stage) calls).
    pub(crate) fn settle(&mut self) {
        let reserved = self.reservation.size();
        if reserved > self.bytes {
            self.reservation.shrink(reserved - self.bytes);
        }
    }

    /// Whether a bounded pool is more than half used: the buffer then writes itself out
    /// rather than hold memory that restores, snapshots and caches (of every store sharing
    /// the pool) may need.
    pub(crate) fn pool_pressed(&self) -> bool {
        let pool = self.reservation.pool();
        pool.capacity()
            .is_some_and(|capacity| pool.used() > capacity / 2)
    }

    /// Whether the entries cost more than `limit` bytes.
    pub(crate) fn over(&self, limit: usize) -> bool {
        self.bytes > limit
    }

    /// Writes every pending entry of `table` to RocksDB (keys ascending, one `WriteBatch`,
    /// WAL off) and empties the buffer. On error the entries stay pending.
    pub(crate) fn flush(&mut self, shared: &Shared, table: &str) -> Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        let mut ordered: Vec<(&Key, &Entry)> = self.entries.iter().collect();
        ordered.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let count = ordered.len() as u64;
        {
            let st = shared.read();
            let cf = st.table_cf(table)?;
            let mut batch = WriteBatch::default();
            for (key, entry) in ordered {
                match entry.bytes() {
                    Some(bytes) => batch.put_cf(&cf, key.as_bytes(), bytes),
                    None => batch.delete_cf(&cf, key.as_bytes()),
                }
            }
            st.db
                .write_opt(batch, &shared.write_options)
                .map_err(rocks_api("write-behind flush"))?;
        }
        self.flushes += 1;
        self.flushed_keys += count;
        self.discard();
        Ok(())
    }

    /// Drops every pending entry (the table's state was replaced by a restore).
    pub(crate) fn discard(&mut self) {
        self.entries.clear();
        self.bytes = 0;
        self.reservation.free();
    }
}

/// What an entry of `key` with `heap` bytes of value buffer costs; with the value's length,
/// the most that staging the key can add to the buffer's cost.
pub(crate) fn entry_cost(key: &[u8], heap: usize) -> usize {
    key.len() + ENTRY_OVERHEAD + heap
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_move_between_inline_heap_and_delete() {
        let mut entry = Entry::Delete;
        assert_eq!(entry.bytes(), None);
        entry.set(Some(&[7; INLINE_VALUE]));
        assert_eq!(entry.bytes(), Some(&[7; INLINE_VALUE][..]));
        assert_eq!(entry.heap_capacity(), 0, "inline up to the limit");
        entry.set(Some(&[8; INLINE_VALUE + 1]));
        assert_eq!(entry.bytes(), Some(&[8; INLINE_VALUE + 1][..]));
        assert_eq!(entry.heap_capacity(), INLINE_VALUE + 1);
        entry.set(Some(&[9; INLINE_VALUE + 1]));
        assert_eq!(
            entry.heap_capacity(),
            INLINE_VALUE + 1,
            "a fitting buffer is reused"
        );
        entry.set(Some(b"abc"));
        assert_eq!(
            (entry.bytes(), entry.heap_capacity()),
            (Some(&b"abc"[..]), 0)
        );
        entry.set(None);
        assert_eq!(entry.bytes(), None);
        entry.set(Some(b""));
        assert_eq!(
            entry.bytes(),
            Some(&b""[..]),
            "an empty value is a put, not a delete"
        );
    }

    #[test]
    fn costs_follow_the_entries() {
        let pool: Arc<dyn MemoryPool> = Arc::new(state_api::UnboundedMemoryPool::new());
        let mut wb = WriteBehind::new(pool);
        let key = b"key";
        assert!(wb.try_reserve(entry_cost(key, 100)));
        wb.stage(key, Some(&[1; 100]));
        wb.settle();
        assert_eq!(wb.bytes, entry_cost(key, 100));
        assert!(wb.try_reserve(entry_cost(key, 10)));
        wb.stage(key, Some(&[2; 10]));
        wb.settle();
        assert_eq!(wb.bytes, entry_cost(key, 0), "now inline");
        assert_eq!(wb.get(key), Some(Pending::Put(&[2; 10])));
        wb.stage(key, None);
        assert_eq!(wb.get(key), Some(Pending::Delete));
        assert!(wb.over(0) && !wb.over(entry_cost(key, 0)));
        wb.discard();
        assert!(wb.is_empty());
        assert_eq!((wb.bytes, wb.reserved_bytes()), (0, 0));
    }
}
