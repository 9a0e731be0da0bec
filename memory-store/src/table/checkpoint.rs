//! Native snapshots of the in-memory keyed table.

use keygroup::KeyGroupRange;
use state_api::{Error, NativeSnapshot, Result, ValueCodec};

use super::MemoryKeyedTable;

/// A native snapshot of a [`MemoryKeyedTable`]: a copy of its live committed entries
/// (expired ones included, as they are stored), valid only for a table of the same
/// key-group range.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryTableSnapshot<V> {
    key_groups: KeyGroupRange,
    rows: Vec<(usize, Box<[u8]>, i64, V)>,
}

impl<V> MemoryTableSnapshot<V> {
    /// Entries in the snapshot.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the snapshot holds no entry.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

impl<C: ValueCodec> NativeSnapshot for MemoryKeyedTable<C> {
    type Snapshot = MemoryTableSnapshot<C::Value>;

    fn native_snapshot(&mut self) -> Result<Self::Snapshot> {
        self.check_bundle("native_snapshot", false)?;
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
        Ok(MemoryTableSnapshot {
            key_groups: self.key_groups,
            rows,
        })
    }

    fn restore_native(&mut self, snapshot: &Self::Snapshot) -> Result<()> {
        self.check_staging()?;
        if snapshot.key_groups != self.key_groups {
            return Err(Error::Unsupported {
                operation: "native restore onto another key-group range",
            });
        }
        let staged = self.stage_rows(
            snapshot
                .rows
                .iter()
                .map(|(i, k, ts, v)| (*i, k.clone(), *ts, v.clone())),
        )?;
        self.apply_staged(Some(staged));
        Ok(())
    }
}
