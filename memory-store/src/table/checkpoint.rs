//! The keyed table's share of the store's native snapshot (`native.rs`).

use state_api::{Result, ValueCodec};

use super::{KeyedCore, is_live};
use crate::native::{NativePart, NativeTable, RowsPart};

/// The kind name of a keyed table in a native snapshot.
const KIND: &str = "keyed";

impl<C: ValueCodec> NativeTable for KeyedCore<C> {
    fn native_part(&self) -> Box<dyn NativePart> {
        let rows = self
            .groups
            .iter()
            .enumerate()
            .flat_map(|(index, group)| {
                group
                    .iter_with_word()
                    .filter(|(_, w, _)| is_live(*w))
                    .map(move |(k, _, e)| {
                        (
                            index,
                            Box::from(k.as_bytes()),
                            e.last_access,
                            e.value.clone(),
                        )
                    })
            })
            .collect();
        RowsPart::boxed(KIND, &self.schema, rows)
    }

    fn stage_native(&mut self, table: &str, part: Option<&dyn NativePart>) -> Result<()> {
        self.check_staging()?;
        self.staged = None;
        let staged = match part {
            None => self.stage_rows(std::iter::empty())?,
            Some(part) => {
                let part = RowsPart::<C::Value>::of(table, part, KIND, &self.schema)?;
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
