//! A commit's writes: the dirty values encoded once, then written through in one
//! `WriteBatch` or handed to the write-behind buffer.

use rocksdb::WriteBatch;
use state_api::{Result, ValueCodec};

use crate::error::rocks_api;
use crate::write_behind::{WriteBehind, entry_cost};

use super::RocksKeyedTable;

impl<C: ValueCodec> RocksKeyedTable<C> {
    /// Encodes the values of the dirty keys (in `dirty` order) with one codec call into
    /// `encoded`; returns per dirty key its value's index in `encoded_ends`, or `None` for a
    /// delete.
    pub(super) fn encode_dirty(&mut self) -> Result<Vec<Option<usize>>> {
        let mut ops = Vec::with_capacity(self.dirty.len());
        let mut entries: Vec<(i64, &C::Value)> = Vec::with_capacity(self.dirty.len());
        for dirty in &self.dirty {
            match &dirty.write {
                Some((last_access, value)) => {
                    ops.push(Some(entries.len()));
                    entries.push((*last_access, value));
                }
                None => ops.push(None),
            }
        }
        let mut encoded = std::mem::take(&mut self.encoded);
        let mut ends = std::mem::take(&mut self.encoded_ends);
        encoded.clear();
        ends.clear();
        let result = self.encode_stored(&entries, |_, value| {
            encoded.extend_from_slice(value);
            ends.push(encoded.len());
        });
        self.encoded = encoded;
        self.encoded_ends = ends;
        result?;
        Ok(ops)
    }

    /// The encoded value number `i` of the last [`encode_dirty`](Self::encode_dirty).
    pub(super) fn encoded_value(&self, i: usize) -> &[u8] {
        let start = i
            .checked_sub(1)
            .map_or(0, |p| self.encoded_ends.get(p).copied().unwrap_or(0));
        let end = self.encoded_ends.get(i).copied().unwrap_or(start);
        self.encoded.get(start..end).unwrap_or_default()
    }

    /// Writes the dirty keys (`ops` from [`encode_dirty`](Self::encode_dirty)) to RocksDB in
    /// one `WriteBatch`, WAL off.
    pub(super) fn write_through(&self, ops: &[Option<usize>]) -> Result<()> {
        let st = self.shared.read();
        let cf = st.table_cf(&self.name)?;
        let mut batch = WriteBatch::default();
        for (dirty, op) in self.dirty.iter().zip(ops) {
            match op {
                Some(i) => batch.put_cf(&cf, dirty.key.as_bytes(), self.encoded_value(*i)),
                None => batch.delete_cf(&cf, dirty.key.as_bytes()),
            }
        }
        if !batch.is_empty() {
            st.db
                .write_opt(batch, &self.shared.write_options)
                .map_err(rocks_api("commit"))?;
        }
        Ok(())
    }

    /// Puts the dirty keys (`ops` from [`encode_dirty`](Self::encode_dirty)) into the
    /// write-behind buffer, flushing it first when the pool refuses their memory and after
    /// when it is over its limit or a bounded pool is more than half used. `false` when the pool refuses even with the buffer empty
    /// (the caller writes the bundle through).
    pub(super) fn stage_write_behind(&self, ops: &[Option<usize>]) -> Result<bool> {
        let bound: usize = self
            .dirty
            .iter()
            .zip(ops)
            .map(|(dirty, op)| {
                entry_cost(
                    dirty.key.as_bytes(),
                    op.map_or(0, |i| self.encoded_value(i).len()),
                )
            })
            .sum();
        let mut pending = WriteBehind::lock(&self.write_behind);
        if !pending.try_reserve(bound) {
            pending.flush(&self.shared, &self.name)?;
            if !pending.try_reserve(bound) {
                return Ok(false);
            }
        }
        for (dirty, op) in self.dirty.iter().zip(ops) {
            pending.stage(dirty.key.as_bytes(), op.map(|i| self.encoded_value(i)));
        }
        pending.settle();
        if pending.over(self.write_behind_limit) || pending.pool_pressed() {
            pending.flush(&self.shared, &self.name)?;
        }
        Ok(true)
    }
}
