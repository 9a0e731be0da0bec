//! The in-memory timer table: the shared [`TimerQueue`] (one ordered set per key group and
//! an index of the groups' earliest timestamps) plus memory accounting, and its share of the
//! store's native snapshot.

use std::any::Any;
use std::mem::size_of;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use keygroup::{KeyGroup, KeyGroupRange, MaxParallelism};
use state_api::{
    CanonicalTable, Error, MemoryReservation, Result, StoreConfig, TimeDomain, Timer, TimerQueue,
    TimerTable, decode_timer_batch, encode_timer_batch, timer_canonical_schema,
};

use crate::checkout::{Checkout, lost};
use crate::native::{NativePart, NativeTable, part_as};

/// Bookkeeping bytes charged per timer on top of its key and namespace bytes.
const TIMER_OVERHEAD: usize = 32;

fn timer_size(key: &[u8], namespace: &[u8]) -> usize {
    key.len() + namespace.len() + size_of::<(i64, Box<[u8]>, Box<[u8]>)>() + TIMER_OVERHEAD
}

/// The kind name of a timer table of `domain` in a native snapshot.
fn kind(domain: TimeDomain) -> &'static str {
    match domain {
        TimeDomain::EventTime => "event-time timer",
        TimeDomain::ProcessingTime => "processing-time timer",
    }
}

#[derive(Debug)]
struct Staged {
    timers: TimerQueue,
    reservation: MemoryReservation,
}

/// The state of a [`MemoryTimerTable`].
#[derive(Debug)]
pub(crate) struct TimerCore {
    domain: TimeDomain,
    key_groups: KeyGroupRange,
    timers: TimerQueue,
    reservation: MemoryReservation,
    pending: u64,
    staged: Option<Staged>,
}

impl TimerCore {
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

    fn empty_staged(&self) -> Staged {
        Staged {
            timers: TimerQueue::new(self.key_groups),
            reservation: MemoryReservation::new(Arc::clone(self.reservation.pool())),
        }
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

    fn pop_due(&mut self, up_to: i64) -> Option<Timer> {
        let timer = self.timers.pop_due(up_to);
        if let Some(t) = &timer {
            self.reservation.shrink(timer_size(&t.key, &t.namespace));
            self.pending += 1;
        }
        timer
    }

    fn stage(&mut self, timers: impl Iterator<Item = Timer>) -> Result<()> {
        self.staged = None;
        let mut staged = self.empty_staged();
        for t in timers {
            staged
                .reservation
                .try_grow(timer_size(&t.key, &t.namespace))?;
            staged
                .timers
                .insert(t.key_group, t.timestamp, &t.key, &t.namespace)?;
        }
        self.staged = Some(staged);
        Ok(())
    }

    fn apply_staged(&mut self) {
        let staged = self.staged.take().unwrap_or_else(|| self.empty_staged());
        self.timers = staged.timers;
        self.reservation = staged.reservation;
        self.pending = 0;
    }
}

/// A timer table kept in memory: a [`TimerQueue`] (per key group a `BTreeSet` ordered by
/// (timestamp, key, namespace), plus the heads index, so the next timer across all key
/// groups is found in O(log n)).
///
/// Every timer reserves `key + namespace + 40 + 32` bytes from the store's pool. There is
/// nothing to persist: [`commit`](TimerTable::commit) only marks the changes committed.
/// Uncommitted changes take the timers out of the store's reach (as an open bundle does a
/// keyed table's), so the store's native snapshot and restore refuse them.
#[derive(Debug)]
pub struct MemoryTimerTable {
    name: String,
    domain: TimeDomain,
    key_groups: KeyGroupRange,
    max_parallelism: MaxParallelism,
    schema: SchemaRef,
    cell: Checkout<TimerCore>,
}

impl MemoryTimerTable {
    /// An empty timer table named `name` in a store with `config`. Opened through
    /// [`MemoryStore`](crate::MemoryStore) it is part of the store's native snapshot; made
    /// with `new` it belongs to no store.
    pub fn new(name: &str, domain: TimeDomain, config: &StoreConfig) -> Self {
        let key_groups = config.key_groups();
        Self {
            name: name.to_owned(),
            domain,
            key_groups,
            max_parallelism: config.max_parallelism(),
            schema: timer_canonical_schema(),
            cell: Checkout::new(TimerCore {
                domain,
                key_groups,
                timers: TimerQueue::new(key_groups),
                reservation: MemoryReservation::new(Arc::clone(config.memory_pool())),
                pending: 0,
                staged: None,
            }),
        }
    }

    pub(crate) fn cell(&mut self) -> &mut Checkout<TimerCore> {
        &mut self.cell
    }

    /// Runs a change on the core, held by the table while changes are uncommitted.
    fn change<T>(
        &mut self,
        operation: &'static str,
        f: impl FnOnce(&mut TimerCore) -> Result<T>,
    ) -> Result<T> {
        self.cell.check_out();
        let Some(core) = self.cell.held() else {
            return Err(lost(operation));
        };
        let out = f(core);
        if core.pending == 0 {
            self.cell.check_in();
        }
        out
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
        self.change("register", |core| {
            core.register(key_group, timestamp, key, namespace)
        })
    }

    fn delete(
        &mut self,
        key_group: KeyGroup,
        timestamp: i64,
        key: &[u8],
        namespace: &[u8],
    ) -> Result<bool> {
        self.change("delete", |core| {
            core.delete(key_group, timestamp, key, namespace)
        })
    }

    fn next_timestamp(&self) -> Option<i64> {
        self.cell
            .with(|core| core.timers.next_timestamp())
            .flatten()
    }

    fn pop_due(&mut self, up_to: i64) -> Result<Option<Timer>> {
        self.change("pop_due", |core| Ok(core.pop_due(up_to)))
    }

    fn len(&self) -> usize {
        self.cell.with(|core| core.timers.len()).unwrap_or(0)
    }

    fn commit(&mut self) -> Result<()> {
        if let Some(core) = self.cell.held() {
            core.pending = 0;
        }
        self.cell.check_in();
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
        self.cell
            .with(|core| {
                core.check_committed("export_key_group")?;
                encode_timer_batch(core.timers.key_group_timers(key_group)?)
            })
            .unwrap_or_else(|| Err(lost("export_key_group")))
    }

    fn stage_restore(&mut self, batches: Vec<(KeyGroup, RecordBatch)>) -> Result<()> {
        self.cell
            .with_mut(|core| {
                core.check_committed("restore")?;
                let mut timers = Vec::new();
                for (key_group, batch) in &batches {
                    timers.extend(decode_timer_batch(*key_group, batch)?);
                }
                core.stage(timers.into_iter())
            })
            .unwrap_or_else(|| Err(lost("restore")))
    }

    fn commit_restore(&mut self) {
        self.cell.with_mut(TimerCore::apply_staged);
        self.cell.check_in();
    }

    fn abort_restore(&mut self) {
        self.cell.with_mut(|core| core.staged = None);
    }

    fn table_max_parallelism(&self) -> MaxParallelism {
        self.max_parallelism
    }

    fn table_has_ttl(&self) -> bool {
        false
    }
}

/// A timer table's timers.
#[derive(Debug, Clone)]
pub(crate) struct TimerPart {
    domain: TimeDomain,
    timers: TimerQueue,
}

impl NativePart for TimerPart {
    fn kind(&self) -> &'static str {
        kind(self.domain)
    }

    fn clone_part(&self) -> Box<dyn NativePart> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl NativeTable for TimerCore {
    fn native_part(&self) -> Box<dyn NativePart> {
        Box::new(TimerPart {
            domain: self.domain,
            timers: self.timers.clone(),
        })
    }

    fn stage_native(&mut self, table: &str, part: Option<&dyn NativePart>) -> Result<()> {
        self.check_committed("restore_native")?;
        let Some(part) = part else {
            return self.stage(std::iter::empty());
        };
        let part = part_as::<TimerPart>(table, part, kind(self.domain))?;
        let timers: Vec<Timer> = part
            .timers
            .iter()
            .map(|(key_group, timestamp, key, namespace)| Timer {
                timestamp,
                key_group,
                key: key.to_vec(),
                namespace: namespace.to_vec(),
            })
            .collect();
        self.stage(timers.into_iter())
    }

    fn commit_native(&mut self) {
        self.apply_staged();
    }

    fn abort_native(&mut self) {
        self.staged = None;
    }
}
