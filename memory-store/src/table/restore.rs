//! Canonical export and restore staging of the in-memory keyed table.

use std::mem::size_of;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use keygroup::{KeyGroup, KeyGroupRange};
use state_api::{
    CanonicalTable, Error, MemoryReservation, Result, ValueCodec, decode_canonical_batch,
    encode_canonical_batch, ttl_exported,
};

use state_api::InlineKey as Key;

use super::{Entry, KeyedCore, LIVE, Staged, empty_groups, entry_size, is_live};

impl<C: ValueCodec> KeyedCore<C> {
    pub(super) fn check_staging(&self) -> Result<()> {
        self.check_bundle("restore", false)
    }

    /// Builds fully reserved groups from `(group index, key, last_access, value)` rows.
    pub(super) fn stage_rows(
        &self,
        rows: impl Iterator<Item = (usize, Box<[u8]>, i64, C::Value)>,
    ) -> Result<Staged<C::Value>> {
        let mut staged = Staged {
            groups: empty_groups(&self.hasher, self.key_groups.len()),
            reservation: MemoryReservation::new(Arc::clone(self.reservation.pool())),
        };
        for (index, key, last_access, value) in rows {
            staged.reservation.try_grow(entry_size::<C::Value>(
                key.len(),
                self.codec.heap_size(&value),
            ))?;
            let Some(group) = staged.groups.get_mut(index) else {
                return Err(Error::KeyGroupOutOfRange {
                    key_group: self
                        .key_groups
                        .start()
                        .saturating_add(i32::try_from(index).unwrap_or(i32::MAX)),
                    range: self.key_groups,
                });
            };
            group.insert_with_word(Key::from(&*key), LIVE, Entry { value, last_access });
        }
        Ok(staged)
    }

    pub(super) fn apply_staged(&mut self, staged: Option<Staged<C::Value>>) {
        let staged = staged.unwrap_or_else(|| Staged {
            groups: empty_groups(&self.hasher, self.key_groups.len()),
            reservation: MemoryReservation::new(Arc::clone(self.reservation.pool())),
        });
        self.groups = staged.groups;
        self.reservation = staged.reservation;
        self.tombstones = vec![0; self.key_groups.len()];
        self.tombstone_groups.clear();
        self.listed = vec![false; self.key_groups.len()];
        self.sweep_cursor = 0;
    }
}

impl<C: ValueCodec> CanonicalTable for KeyedCore<C> {
    fn table_name(&self) -> &str {
        &self.name
    }

    fn table_key_groups(&self) -> KeyGroupRange {
        self.key_groups
    }

    fn canonical_schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn export_key_group(&self, key_group: KeyGroup) -> Result<Option<RecordBatch>> {
        self.check_bundle("export_key_group", false)?;
        let index = self.group_index(key_group)?;
        let Some(group) = self.groups.get(index) else {
            return Ok(None);
        };
        if group.is_empty() {
            return Ok(None);
        }
        let now = self.ttl.map(|_| self.clock.now_millis());
        let mut scratch = MemoryReservation::new(Arc::clone(self.reservation.pool()));
        scratch.try_grow(group.len() * size_of::<(&[u8], i64, &C::Value)>())?;
        let mut rows: Vec<(&[u8], i64, &C::Value)> = group
            .iter_with_word()
            .filter(|(_, w, e)| {
                is_live(*w)
                    && now.is_none_or(|now| ttl_exported(self.ttl.as_ref(), e.last_access, now))
            })
            .map(|(k, _, e)| (k.as_bytes(), e.last_access, &e.value))
            .collect();
        if rows.is_empty() {
            return Ok(None);
        }
        rows.sort_unstable_by(|a, b| a.0.cmp(b.0));
        encode_canonical_batch(&self.schema, &self.codec, &rows).map(Some)
    }

    fn stage_restore(&mut self, batches: Vec<(KeyGroup, RecordBatch)>) -> Result<()> {
        self.check_staging()?;
        self.staged = None;
        let mut rows = Vec::new();
        for (key_group, batch) in &batches {
            let index = self.group_index(*key_group)?;
            let decoded = decode_canonical_batch(&self.codec, batch)?;
            for ((key, ts), value) in decoded
                .keys
                .iter()
                .zip(decoded.last_access.iter())
                .zip(decoded.values)
            {
                rows.push((
                    index,
                    Box::<[u8]>::from(key.unwrap_or_default()),
                    *ts,
                    value,
                ));
            }
        }
        self.staged = Some(self.stage_rows(rows.into_iter())?);
        Ok(())
    }

    fn commit_restore(&mut self) {
        let staged = self.staged.take();
        self.apply_staged(staged);
    }

    fn abort_restore(&mut self) {
        self.staged = None;
    }

    fn table_max_parallelism(&self) -> keygroup::MaxParallelism {
        self.max_parallelism
    }

    fn table_has_ttl(&self) -> bool {
        self.ttl.is_some()
    }
}
