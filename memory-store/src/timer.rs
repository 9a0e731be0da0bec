//! The in-memory timer table: the shared [`TimerQueue`] (one ordered set per key group and
//! an index of the groups' earliest timestamps) plus memory accounting.

use std::mem::size_of;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use keygroup::{KeyGroup, KeyGroupRange, MaxParallelism};
use state_api::{
    CanonicalTable, Error, MemoryReservation, Result, StoreConfig, TimeDomain, Timer, TimerQueue,
    TimerTable, decode_timer_batch, encode_timer_batch, timer_canonical_schema,
};

/// Bookkeeping bytes charged per timer on top of its key and namespace bytes.
const TIMER_OVERHEAD: usize = 32;

fn timer_size(key: &[u8], namespace: &[u8]) -> usize {
    key.len() + namespace.len() + size_of::<(i64, Box<[u8]>, Box<[u8]>)>() + TIMER_OVERHEAD
}

#[derive(Debug)]
struct Staged {
    timers: TimerQueue,
    reservation: MemoryReservation,
}

/// A timer table kept in memory: a [`TimerQueue`] (per key group a `BTreeSet` ordered by
/// (timestamp, key, namespace), plus the heads index, so the next timer across all key
/// groups is found in O(log n)).
///
/// Every timer reserves `key + namespace + 40 + 32` bytes from the store's pool. There is
/// nothing to persist: [`commit`](TimerTable::commit) only marks the changes committed.
#[derive(Debug)]
pub struct MemoryTimerTable {
    name: String,
    domain: TimeDomain,
    key_groups: KeyGroupRange,
    max_parallelism: MaxParallelism,
    timers: TimerQueue,
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
            timers: TimerQueue::new(key_groups),
            reservation: MemoryReservation::new(Arc::clone(config.memory_pool())),
            pending: 0,
            staged: None,
            schema: timer_canonical_schema(),
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
        if self.timers.contains(key_group, timestamp, key, namespace)? {
            return Ok(false);
        }
        self.reservation.try_grow(timer_size(key, namespace))?;
        self.timers.insert(key_group, timestamp, key, namespace)?;
        self.pending += 1;
        Ok(true)
    }

    fn delete(
        &mut self,
        key_group: KeyGroup,
        timestamp: i64,
        key: &[u8],
        namespace: &[u8],
    ) -> Result<bool> {
        let removed = self.timers.remove(key_group, timestamp, key, namespace)?;
        if removed {
            self.reservation.shrink(timer_size(key, namespace));
            self.pending += 1;
        }
        Ok(removed)
    }

    fn next_timestamp(&self) -> Option<i64> {
        self.timers.next_timestamp()
    }

    fn pop_due(&mut self, up_to: i64) -> Result<Option<Timer>> {
        let timer = self.timers.pop_due(up_to);
        if let Some(t) = &timer {
            self.reservation.shrink(timer_size(&t.key, &t.namespace));
            self.pending += 1;
        }
        Ok(timer)
    }

    fn len(&self) -> usize {
        self.timers.len()
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
        encode_timer_batch(self.timers.key_group_timers(key_group)?)
    }

    fn stage_restore(&mut self, batches: Vec<(KeyGroup, RecordBatch)>) -> Result<()> {
        self.check_committed("restore")?;
        self.staged = None;
        let mut staged = Staged {
            timers: TimerQueue::new(self.key_groups),
            reservation: MemoryReservation::new(Arc::clone(self.reservation.pool())),
        };
        for (key_group, batch) in &batches {
            for t in decode_timer_batch(*key_group, batch)? {
                staged
                    .reservation
                    .try_grow(timer_size(&t.key, &t.namespace))?;
                staged
                    .timers
                    .insert(*key_group, t.timestamp, &t.key, &t.namespace)?;
            }
        }
        self.staged = Some(staged);
        Ok(())
    }

    fn commit_restore(&mut self) {
        let staged = self.staged.take().unwrap_or_else(|| Staged {
            timers: TimerQueue::new(self.key_groups),
            reservation: MemoryReservation::new(Arc::clone(self.reservation.pool())),
        });
        self.timers = staged.timers;
        self.reservation = staged.reservation;
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
