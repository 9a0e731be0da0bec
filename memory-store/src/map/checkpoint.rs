//! The map table's share of the store's native snapshot (`native.rs`).

use std::sync::Arc;

use state_api::{CanonicalTable, MemoryReservation, Result, ValueCodec};

use super::{Entry, MapCore, MapKey, Staged, restored_entry_charge};
use crate::native::{NativePart, NativeTable, RowsPart};

/// The kind name of a map table in a native snapshot.
const KIND: &str = "map";

impl<C: ValueCodec> NativeTable for MapCore<C> {
    fn native_part(&self) -> Box<dyn NativePart> {
        let mut rows = Vec::new();
        for (index, group) in self.groups.iter().enumerate() {
            group.for_each_ordered(|head, tail, e| {
                if e.live {
                    let key: Box<[u8]> = [head, tail].concat().into();
                    rows.push((index, key, e.last_access, e.value.clone()));
                }
            });
        }
        RowsPart::boxed(KIND, &self.schema, rows)
    }

    fn stage_native(&mut self, table: &str, part: Option<&dyn NativePart>) -> Result<()> {
        self.check_bundle("restore_native", false)?;
        self.staged = None;
        let mut staged = Staged {
            groups: self.empty_groups(),
            reservation: MemoryReservation::new(Arc::clone(self.reservation.pool())),
        };
        if let Some(part) = part {
            let part = RowsPart::<C::Value>::of(table, part, KIND, &self.schema)?;
            for (index, key, last_access, value) in &part.rows {
                staged
                    .reservation
                    .try_grow(restored_entry_charge::<C::Value>(
                        key.len(),
                        self.codec.heap_size(value),
                    ))?;
                if let Some(group) = staged.groups.get_mut(*index) {
                    group.insert_unsplit(
                        MapKey::from(&key[..]),
                        Entry {
                            value: value.clone(),
                            last_access: *last_access,
                            live: true,
                            dirty_epoch: 0,
                        },
                    );
                }
            }
        }
        self.staged = Some(staged);
        Ok(())
    }

    fn commit_native(&mut self) {
        self.commit_restore();
    }

    fn abort_native(&mut self) {
        self.staged = None;
    }
}
