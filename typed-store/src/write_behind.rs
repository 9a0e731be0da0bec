//! The write-behind buffer of a keyed table: committed values not yet written to RocksDB.
//!
//! A commit puts each dirty key's stored bytes (the layout of `format.rs`: 8-byte timestamp ‖
//! arrow-row value) or a delete here instead of into a `WriteBatch`; a key committed again
//! replaces its entry in place. The buffer reaches RocksDB in one `WriteBatch`, keys in
//! ascending order, when
//!
//! - it holds more than its limit (`RocksSlot::with_write_behind`) or the memory pool refuses
//!   its growth,
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
//! Memory: each entry reserves `key length + ENTRY_OVERHEAD + value capacity` from the
//! store's memory pool. The buffer is shared by the table and its store (by table name), so
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
pub(crate) const ENTRY_OVERHEAD: usize = size_of::<Key>() + size_of::<Option<Vec<u8>>>() + 8;

/// One table's committed, unwritten entries: RocksDB key → stored bytes, or `None` for a
/// delete.
pub(crate) struct WriteBehind {
    entries: WorkingMap<Option<Vec<u8>>>,
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
        self.entries.get(key).map(|entry| match entry {
            Some(stored) => Pending::Put(stored),
            None => Pending::Delete,
        })
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

    /// Reserves `upper_bound` bytes (see [`entry_bound`]) for a commit's entries before they
    /// are staged; `false` when the pool refuses (the caller flushes the buffer, which frees
    /// its bytes, and asks again).
    pub(crate) fn try_reserve(&mut self, upper_bound: usize) -> bool {
        self.reservation.try_grow(upper_bound).is_ok()
    }

    /// Puts (`Some`) or deletes (`None`) `key`. An entry never costs more after this than
    /// before plus [`entry_bound`] of it (a value that does not fit the old buffer gets an
    /// exactly sized new one), so a [`try_reserve`](Self::try_reserve) of the bounds covers
    /// a commit; [`settle`](Self::settle) returns the unused part.
    pub(crate) fn stage(&mut self, key: &[u8], value: Option<&[u8]>) {
        let hash = self.entries.hash(key);
        let mut fresh = false;
        let entry = self.entries.get_or_insert_hashed(hash, key, || {
            fresh = true;
            None
        });
        let before = if fresh {
            0
        } else {
            entry_cost(key, entry.as_ref().map_or(0, Vec::capacity))
        };
        match (value, entry.as_mut()) {
            (Some(bytes), Some(buffer)) if buffer.capacity() >= bytes.len() => {
                buffer.clear();
                buffer.extend_from_slice(bytes);
            }
            (Some(bytes), _) => *entry = Some(bytes.to_vec()),
            (None, _) => *entry = None,
        }
        let after = entry_cost(key, entry.as_ref().map_or(0, Vec::capacity));
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

    /// Whether the entries cost more than `limit` bytes.
    pub(crate) fn over(&self, limit: usize) -> bool {
        self.bytes > limit
    }

    /// Writes every pending entry of `table` to RocksDB (keys ascending, one `WriteBatch`,
    /// WAL off) and empties the buffer. On error the entries stay pending.
    pub(crate) fn flush(&mut self, shared: &Shared, table: &str) -> Result<()> {
        if self.entries.is_empty() {
            return Ok(());
        }
        let mut ordered: Vec<(&Key, &Option<Vec<u8>>)> = self.entries.iter().collect();
        ordered.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let count = ordered.len() as u64;
        {
            let st = shared.read();
            let cf = st.table_cf(table)?;
            let mut batch = WriteBatch::default();
            for (key, value) in ordered {
                match value {
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

/// What an entry of `key` with a value buffer of `capacity` bytes costs.
fn entry_cost(key: &[u8], capacity: usize) -> usize {
    key.len() + ENTRY_OVERHEAD + capacity
}

/// The most that staging `key` with a value of `value_len` bytes can add to the buffer's cost.
pub(crate) fn entry_bound(key: &[u8], value_len: usize) -> usize {
    entry_cost(key, value_len)
}
