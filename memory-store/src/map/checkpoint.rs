//! The map table's share of the store's native snapshot (`native.rs`).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use arrow_schema::SchemaRef;
use state_api::{CanonicalTable, MemoryReservation, Result, ValueCodec};

use super::{Entry, MapCore, Staged, entry_size};
use crate::native::{NativePart, NativeSnapshotError, NativeTable, invalid, part_as};

/// The kind name of a map table in a native snapshot.
const KIND: &str = "map";

/// A map table's committed live entries (expired ones included, as they are stored), in key
/// order per key group: `(key-group offset, full entry key, last access, value)`.
#[derive(Clone)]
pub(crate) struct MapPart<V> {
    schema: SchemaRef,
    rows: Vec<(usize, Box<[u8]>, i64, V)>,
}

impl<V> fmt::Debug for MapPart<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MapPart")
            .field("rows", &self.rows.len())
            .finish_non_exhaustive()
    }
}

impl<V: Clone + Send + 'static> NativePart for MapPart<V> {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn clone_part(&self) -> Box<dyn NativePart> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl<C: ValueCodec> NativeTable for MapCore<C> {
    fn native_part(&self) -> Box<dyn NativePart> {
        let rows = self
            .groups
            .iter()
            .enumerate()
            .flat_map(|(index, group)| {
                group
                    .iter()
                    .filter(|(_, e)| e.live)
                    .map(move |(k, e)| (index, k.clone(), e.last_access, e.value.clone()))
            })
            .collect();
        Box::new(MapPart {
            schema: Arc::clone(&self.schema),
            rows,
        })
    }

    fn stage_native(&mut self, table: &str, part: Option<&dyn NativePart>) -> Result<()> {
        self.check_bundle("restore_native", false)?;
        self.staged = None;
        let mut staged = Staged {
            groups: self.empty_groups(),
            reservation: MemoryReservation::new(Arc::clone(self.reservation.pool())),
        };
        if let Some(part) = part {
            let part = part_as::<MapPart<C::Value>>(table, part, KIND)?;
            if part.schema != self.schema {
                return Err(invalid(NativeSnapshotError::TableSchema {
                    table: table.to_owned(),
                }));
            }
            for (index, key, last_access, value) in &part.rows {
                staged.reservation.try_grow(entry_size::<C::Value>(
                    key.len(),
                    self.codec.heap_size(value),
                ))?;
                if let Some(group) = staged.groups.get_mut(*index) {
                    group.insert(
                        key.clone(),
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
