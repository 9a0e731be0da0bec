//! The keyed table's share of the store's native snapshot (`native.rs`).

use std::any::Any;
use std::fmt;

use arrow_schema::SchemaRef;
use state_api::{Result, ValueCodec};

use super::KeyedCore;
use crate::native::{NativePart, NativeTable, part_as};

/// The kind name of a keyed table in a native snapshot.
const KIND: &str = "keyed";

/// A keyed table's committed live entries (expired ones included, as they are stored):
/// `(key-group offset, key, last access, value)`.
#[derive(Clone)]
pub(crate) struct KeyedPart<V> {
    schema: SchemaRef,
    rows: Vec<(usize, Box<[u8]>, i64, V)>,
}

impl<V> fmt::Debug for KeyedPart<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedPart")
            .field("rows", &self.rows.len())
            .finish_non_exhaustive()
    }
}

impl<V: Clone + Send + 'static> NativePart for KeyedPart<V> {
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

impl<C: ValueCodec> NativeTable for KeyedCore<C> {
    fn native_part(&self) -> Box<dyn NativePart> {
        let rows = self
            .groups
            .iter()
            .enumerate()
            .flat_map(|(index, group)| {
                group.iter().filter(|(_, e)| e.live).map(move |(k, e)| {
                    (
                        index,
                        Box::from(k.as_bytes()),
                        e.last_access,
                        e.value.clone(),
                    )
                })
            })
            .collect();
        Box::new(KeyedPart {
            schema: self.schema.clone(),
            rows,
        })
    }

    fn stage_native(&mut self, table: &str, part: Option<&dyn NativePart>) -> Result<()> {
        self.check_staging()?;
        self.staged = None;
        let staged = match part {
            None => self.stage_rows(std::iter::empty())?,
            Some(part) => {
                let part = part_as::<KeyedPart<C::Value>>(table, part, KIND)?;
                if part.schema != self.schema {
                    return Err(crate::native::invalid(
                        crate::native::NativeSnapshotError::TableSchema {
                            table: table.to_owned(),
                        },
                    ));
                }
                self.stage_rows(
                    part.rows
                        .iter()
                        .map(|(i, k, ts, v)| (*i, k.clone(), *ts, v.clone())),
                )?
            }
        };
        self.staged = Some(staged);
        Ok(())
    }

    fn commit_native(&mut self) {
        let staged = self.staged.take();
        self.apply_staged(staged);
    }

    fn abort_native(&mut self) {
        self.staged = None;
    }
}
