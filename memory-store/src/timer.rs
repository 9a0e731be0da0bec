//! The in-memory timer table: one ordered set per key group and an index of the groups'
//! earliest timestamps (Flink's `KeyGroupPartitionedPriorityQueue` shape).

use std::collections::BTreeSet;
use std::mem::size_of;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use keygroup::{KeyGroup, KeyGroupRange, MaxParallelism};
use state_api::{
    CanonicalTable, Error, MemoryReservation, Result, StoreConfig, TimeDomain, Timer, TimerTable,
    decode_timer_batch, encode_timer_batch, timer_canonical_schema,
};

/// Bookkeeping bytes charged per timer on top of its key and namespace bytes.
const TIMER_OVERHEAD: usize = 32;

type TimerKey = (i64, Box<[u8]>, Box<[u8]>);

fn timer_size(key: &[u8], namespace: &[u8]) -> usize {
    key.len() + namespace.len() + size_of::<TimerKey>() + TIMER_OVERHEAD
}

#[derive(Debug)]
struct Staged {
    groups: Vec<BTreeSet<TimerKey>>,
    reservation: MemoryReservation,
}

/// A timer table kept in memory: per key group a `BTreeSet` ordered by (timestamp, key,
/// namespace), plus a `BTreeSet` of `(earliest timestamp, group)` so the next timer across
/// all key groups is found in O(log n).
///
/// Every timer reserves `key + namespace + 40 + 32` bytes from the store's pool. There is
/// nothing to persist: [`commit`](TimerTable::commit) only marks the changes committed.
#[derive(Debug)]
pub struct MemoryTimerTable {
    name: String,
    domain: TimeDomain,
    key_groups: KeyGroupRange,
    max_parallelism: MaxParallelism,
    groups: Vec<BTreeSet<TimerKey>>,
    heads: BTreeSet<(i64, usize)>,
    len: usize,
    reservation: MemoryReservation,
    pending: u64,
    staged: Option<Staged>,
    schema: SchemaRef,
}

impl MemoryTimerTable {
    /// An empty timer table named `name` in a store with `config` (normally opened through
    /// [`MemoryStore`](crate::MemoryStore)).
    pub fn new(name: &str, domain: TimeDomain, config: &StoreConfig) -> Self {
        let key_groups = config.key_groups();
        Self {
            name: name.to_owned(),
            domain,
            key_groups,
            max_parallelism: config.max_parallelism(),
            groups: (0..key_groups.len()).map(|_| BTreeSet::new()).collect(),
            heads: BTreeSet::new(),
            len: 0,
            reservation: MemoryReservation::new(Arc::clone(config.memory_pool())),
            pending: 0,
            staged: None,
            schema: timer_canonical_schema(),
        }
    }

    fn group_index(&self, key_group: KeyGroup) -> Result<usize> {
        let out_of_range = || Error::KeyGroupOutOfRange {
            key_group: key_group.get(),
            range: self.key_groups,
        };
        if !self.key_groups.contains(key_group) {
            return Err(out_of_range());
        }
        usize::try_from(key_group.get() - self.key_groups.start()).map_err(|_| out_of_range())
    }

    fn key_group_of(&self, index: usize) -> Option<KeyGroup> {
        let offset = i32::try_from(index).ok()?;
        KeyGroup::new(self.key_groups.start().checked_add(offset)?).ok()
    }

    /// Re-indexes group `index` after its earliest timestamp changed from `old_head`.
    fn reindex(&mut self, index: usize, old_head: Option<i64>) {
        let new_head = self
            .groups
            .get(index)
            .and_then(BTreeSet::first)
            .map(|t| t.0);
        if old_head != new_head {
            if let Some(ts) = old_head {
                self.heads.remove(&(ts, index));
            }
            if let Some(ts) = new_head {
                self.heads.insert((ts, index));
            }
        }
    }

    fn check_committed(&self, operation: &'static str) -> Result<()> {
        if self.pending == 0 {
            Ok(())
        } else {
            Err(Error::BundleState {
                operation,
                requires_open: false,
            })
        }
    }

    fn head(&self, index: usize) -> Option<i64> {
        self.groups
            .get(index)
            .and_then(BTreeSet::first)
            .map(|t| t.0)
    }
}

impl TimerTable for MemoryTimerTable {
    fn name(&self) -> &str {
        &self.name
    }

    fn key_groups(&self) -> KeyGroupRange {
        self.key_groups
    }

    fn domain(&self) -> TimeDomain {
        self.domain
    }

    fn register(
        &mut self,
        key_group: KeyGroup,
        timestamp: i64,
        key: &[u8],
        namespace: &[u8],
    ) -> Result<bool> {
        let index = self.group_index(key_group)?;
        let timer: TimerKey = (timestamp, key.into(), namespace.into());
        let old_head = self.head(index);
        let Some(group) = self.groups.get_mut(index) else {
            return Ok(false);
        };
        if group.contains(&timer) {
            return Ok(false);
        }
        self.reservation.try_grow(timer_size(key, namespace))?;
        group.insert(timer);
        self.len += 1;
        self.pending += 1;
        self.reindex(index, old_head);
        Ok(true)
    }

    fn delete(
        &mut self,
        key_group: KeyGroup,
        timestamp: i64,
        key: &[u8],
        namespace: &[u8],
    ) -> Result<bool> {
        let index = self.group_index(key_group)?;
        let timer: TimerKey = (timestamp, key.into(), namespace.into());
        let old_head = self.head(index);
        let removed = self
            .groups
            .get_mut(index)
            .is_some_and(|group| group.remove(&timer));
        if removed {
            self.reservation.shrink(timer_size(key, namespace));
            self.len -= 1;
            self.pending += 1;
            self.reindex(index, old_head);
        }
        Ok(removed)
    }

    fn next_timestamp(&self) -> Option<i64> {
        self.heads.first().map(|h| h.0)
    }

    fn pop_due(&mut self, up_to: i64) -> Result<Option<Timer>> {
        let Some(&(ts, index)) = self.heads.first() else {
            return Ok(None);
        };
        if ts > up_to {
            return Ok(None);
        }
        let Some(key_group) = self.key_group_of(index) else {
            return Ok(None);
        };
        let Some((timestamp, key, namespace)) =
            self.groups.get_mut(index).and_then(BTreeSet::pop_first)
        else {
            return Ok(None);
        };
        self.reservation.shrink(timer_size(&key, &namespace));
        self.len -= 1;
        self.pending += 1;
        self.reindex(index, Some(ts));
        Ok(Some(Timer {
            timestamp,
            key_group,
            key: key.into_vec(),
            namespace: namespace.into_vec(),
        }))
    }

    fn len(&self) -> usize {
        self.len
    }

    fn commit(&mut self) -> Result<()> {
        self.pending = 0;
        Ok(())
    }
}

impl CanonicalTable for MemoryTimerTable {
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
        self.check_committed("export_key_group")?;
        let index = self.group_index(key_group)?;
        let Some(group) = self.groups.get(index) else {
            return Ok(None);
        };
        encode_timer_batch(group.iter().map(|(ts, k, n)| (*ts, &**k, &**n)))
    }

    fn stage_restore(&mut self, batches: Vec<(KeyGroup, RecordBatch)>) -> Result<()> {
        self.check_committed("restore")?;
        self.staged = None;
        let mut staged = Staged {
            groups: (0..self.key_groups.len())
                .map(|_| BTreeSet::new())
                .collect(),
            reservation: MemoryReservation::new(Arc::clone(self.reservation.pool())),
        };
        for (key_group, batch) in &batches {
            let index = self.group_index(*key_group)?;
            let timers = decode_timer_batch(*key_group, batch)?;
            let Some(group) = staged.groups.get_mut(index) else {
                continue;
            };
            for t in timers {
                staged
                    .reservation
                    .try_grow(timer_size(&t.key, &t.namespace))?;
                group.insert((t.timestamp, t.key.into(), t.namespace.into()));
            }
        }
        self.staged = Some(staged);
        Ok(())
    }

    fn commit_restore(&mut self) {
        let staged = self.staged.take().unwrap_or_else(|| Staged {
            groups: (0..self.key_groups.len())
                .map(|_| BTreeSet::new())
                .collect(),
            reservation: MemoryReservation::new(Arc::clone(self.reservation.pool())),
        });
        self.groups = staged.groups;
        self.reservation = staged.reservation;
        self.len = self.groups.iter().map(BTreeSet::len).sum();
        self.heads = self
            .groups
            .iter()
            .enumerate()
            .filter_map(|(i, g)| g.first().map(|t| (t.0, i)))
            .collect();
        self.pending = 0;
    }

    fn abort_restore(&mut self) {
        self.staged = None;
    }

    fn table_max_parallelism(&self) -> MaxParallelism {
        self.max_parallelism
    }

    fn table_has_ttl(&self) -> bool {
        false
    }
}
