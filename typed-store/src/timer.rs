//! The RocksDB timer table: Flink's timer key layout in its own column family, an in-memory
//! ordered set per key group and a heads index across key groups.

use std::collections::BTreeMap;
use std::mem::size_of;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use keygroup::{KeyGroup, KeyGroupRange};
use rocksdb::WriteBatch;
use state_api::{
    CanonicalTable, Error, MemoryReservation, Result, StoreConfig, TimeDomain, Timer, TimerQueue,
    TimerStateStore, TimerTable, decode_timer_batch, encode_timer_batch, flip_timestamp,
    key_group_offset, timer_canonical_schema, unflip_timestamp,
};

use crate::error::{Error as RocksError, rocks_api};
use crate::format::{push_key_group_prefix, timer_columns};
use crate::restore::load_staging;
use crate::store::{DbState, RocksStore, Shared};

/// Bytes a resident timer reserves from the pool beyond its key and namespace bytes.
const TIMER_OVERHEAD: usize = size_of::<(i64, Box<[u8]>, Box<[u8]>)>() + 32;

/// The RocksDB key of a timer (see the module docs), into `out` (cleared first).
fn timer_key(
    out: &mut Vec<u8>,
    key_group: KeyGroup,
    prefix_bytes: usize,
    timestamp: i64,
    key: &[u8],
    namespace: &[u8],
) {
    out.clear();
    out.reserve(prefix_bytes + 8 + key.len() + namespace.len());
    push_key_group_prefix(out, key_group, prefix_bytes);
    out.extend_from_slice(&flip_timestamp(timestamp));
    out.extend_from_slice(key);
    out.extend_from_slice(namespace);
}

/// The stored value of a timer: its key's length.
fn key_length(key: &[u8]) -> Result<u32> {
    u32::try_from(key.len()).map_err(|_| Error::Codec {
        column: "timer_key".to_owned(),
        reason: "timer key longer than u32::MAX bytes",
    })
}

/// Splits a stored timer entry back into (key group, timestamp, key, namespace).
fn parse_timer<'k>(
    key: &'k [u8],
    value: &[u8],
    prefix_bytes: usize,
) -> Option<(KeyGroup, i64, &'k [u8], &'k [u8])> {
    let (prefix, rest) = key.split_at_checked(prefix_bytes)?;
    let kg = match *prefix {
        [b] => i32::from(b),
        [hi, lo] => i32::from(u16::from_be_bytes([hi, lo])),
        _ => return None,
    };
    let (ts, rest) = rest.split_first_chunk::<8>()?;
    let len = usize::try_from(u32::from_be_bytes(<[u8; 4]>::try_from(value).ok()?)).ok()?;
    let (timer_key, namespace) = rest.split_at_checked(len)?;
    Some((
        KeyGroup::new(kg).ok()?,
        unflip_timestamp(*ts),
        timer_key,
        namespace,
    ))
}

/// The timers of one table in memory (the shared [`TimerQueue`]), and the changes not yet
/// committed.
#[derive(Debug)]
pub(crate) struct TimerState {
    prefix_bytes: usize,
    timers: TimerQueue,
    /// RocksDB key -> key length (a put) or `None` (a delete), changed since the last commit.
    pending: BTreeMap<Vec<u8>, Option<u32>>,
    reservation: MemoryReservation,
}

/// Bytes a resident timer reserves.
fn timer_cost(key: &[u8], namespace: &[u8]) -> usize {
    key.len() + namespace.len() + TIMER_OVERHEAD
}

impl TimerState {
    fn empty(
        key_groups: KeyGroupRange,
        prefix_bytes: usize,
        reservation: MemoryReservation,
    ) -> Self {
        Self {
            prefix_bytes,
            timers: TimerQueue::new(key_groups),
            pending: BTreeMap::new(),
            reservation,
        }
    }

    /// Inserts a timer (no pending change recorded); `false` when present.
    fn insert(
        &mut self,
        key_group: KeyGroup,
        timestamp: i64,
        key: &[u8],
        namespace: &[u8],
    ) -> Result<bool> {
        if self.timers.contains(key_group, timestamp, key, namespace)? {
            return Ok(false);
        }
        self.reservation.try_grow(timer_cost(key, namespace))?;
        self.timers.insert(key_group, timestamp, key, namespace)
    }

    fn remove(
        &mut self,
        key_group: KeyGroup,
        timestamp: i64,
        key: &[u8],
        namespace: &[u8],
    ) -> Result<bool> {
        let removed = self.timers.remove(key_group, timestamp, key, namespace)?;
        if removed {
            self.reservation.shrink(timer_cost(key, namespace));
        }
        Ok(removed)
    }

    /// Records the change of one timer for the next commit: a put when `present`.
    fn record(
        &mut self,
        key_group: KeyGroup,
        timestamp: i64,
        key: &[u8],
        namespace: &[u8],
        present: bool,
    ) -> Result<()> {
        let mut rocks_key = Vec::new();
        timer_key(
            &mut rocks_key,
            key_group,
            self.prefix_bytes,
            timestamp,
            key,
            namespace,
        );
        let op = if present {
            Some(key_length(key)?)
        } else {
            None
        };
        self.pending.insert(rocks_key, op);
        Ok(())
    }

    /// Whether changes are waiting for the next commit (a native snapshot refuses them).
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Loads every timer of column family `cf_name` of `st`.
    fn load(
        st: &DbState,
        cf_name: &str,
        table: &str,
        key_groups: KeyGroupRange,
        prefix_bytes: usize,
        reservation: MemoryReservation,
    ) -> Result<Self> {
        let mut state = Self::empty(key_groups, prefix_bytes, reservation);
        let cf = st.cf(cf_name)?;
        let mut iter = st.db.raw_iterator_cf(&cf);
        iter.seek_to_first();
        while let Some((key, value)) = iter.item() {
            let Some((kg, ts, timer_key, namespace)) = parse_timer(key, value, prefix_bytes) else {
                return Err(RocksError::CorruptValue {
                    table: table.to_owned(),
                    reason: "not a timer entry (key-group prefix, timestamp, key length)",
                }
                .into());
            };
            state.insert(kg, ts, timer_key, namespace)?;
            iter.next();
        }
        iter.status().map_err(rocks_api("load timers"))?;
        Ok(state)
    }

    /// Loads the timers of `table` from another database `st` (a native restore), with this
    /// state's range and pool.
    pub(crate) fn load_like(current: &Self, st: &DbState, table: &str) -> Result<Self> {
        let cf_name = st.table_cf_name(table)?;
        Self::load(
            st,
            &cf_name,
            table,
            current.timers.key_groups(),
            current.prefix_bytes,
            MemoryReservation::new(Arc::clone(current.reservation.pool())),
        )
    }
}

/// A timer table stored in its own RocksDB column family.
///
/// # Stored layout
///
/// One column family per timer table. Key (Flink's `RocksDBKeyedStateBackend` priority-queue
/// layout: key-group prefix, then `TimerSerializer`'s sign-flipped timestamp, key and
/// namespace):
///
/// ```text
/// +------------------+-----------------------------+-----------+-----------------+
/// | key-group prefix | timestamp ^ i64::MIN        | key bytes | namespace bytes |
/// | 1 B (mp <= 128)  | i64 big-endian, 8 bytes     |           |                 |
/// | else 2 B, BE     | (byte order = time order)   |           |                 |
/// +------------------+-----------------------------+-----------+-----------------+
/// ```
///
/// Value: the key's length, u32 big-endian (4 bytes), so that the key / namespace split is
/// recoverable whatever the bytes are (Flink stores an empty value; its serializers are
/// self-delimiting). Worked example: max parallelism 128, key group 5, timestamp 1000, key
/// `k`, namespace `w`: key `05 80 00 00 00 00 00 03 e8 6b 77`, value `00 00 00 01`.
///
/// Two timers whose key ‖ namespace bytes are equal but split differently (key `a`,
/// namespace `bc` and key `ab`, namespace `c`) at the same time and key group share one
/// RocksDB key; callers must use self-delimiting keys (as Flink's serializers are), exactly
/// as a map table's prefixes must be prefix-free.
///
/// # Behaviour
///
/// All timers are held in memory: one ordered set per key group plus a heads index (the
/// first timestamp of every non-empty key group), so [`next_timestamp`](TimerTable::next_timestamp)
/// is one lookup and [`pop_due`](TimerTable::pop_due) is `O(log n)`. The column family is
/// read once when the table opens (and again after a native restore); changes are written on
/// [`commit`](TimerTable::commit), one write per changed timer in one `WriteBatch` (WAL
/// off). Every timer reserves its key and namespace bytes plus a fixed overhead from the
/// store's pool.
pub struct RocksTimerTable {
    name: String,
    domain: TimeDomain,
    key_groups: KeyGroupRange,
    max_parallelism: keygroup::MaxParallelism,
    prefix_bytes: usize,
    shared: Arc<Shared>,
    state: Arc<Mutex<TimerState>>,
    /// The staging column family and the timers `stage_restore` prepared.
    staged: Option<(String, TimerState)>,
}

impl std::fmt::Debug for RocksTimerTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksTimerTable")
            .field("name", &self.name)
            .field("domain", &self.domain)
            .field("key_groups", &self.key_groups)
            .finish_non_exhaustive()
    }
}

impl RocksTimerTable {
    fn lock(&self) -> MutexGuard<'_, TimerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Timer changes not yet committed.
    pub fn pending_changes(&self) -> usize {
        self.lock().pending.len()
    }

    fn check_committed(&self, operation: &'static str) -> Result<()> {
        if self.lock().pending.is_empty() {
            Ok(())
        } else {
            Err(Error::BundleState {
                operation,
                requires_open: false,
            })
        }
    }
}

impl TimerTable for RocksTimerTable {
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
        let mut state = self.lock();
        key_length(key)?;
        let inserted = state.insert(key_group, timestamp, key, namespace)?;
        if inserted {
            state.record(key_group, timestamp, key, namespace, true)?;
        }
        Ok(inserted)
    }

    fn delete(
        &mut self,
        key_group: KeyGroup,
        timestamp: i64,
        key: &[u8],
        namespace: &[u8],
    ) -> Result<bool> {
        let mut state = self.lock();
        if !state.remove(key_group, timestamp, key, namespace)? {
            return Ok(false);
        }
        state.record(key_group, timestamp, key, namespace, false)?;
        Ok(true)
    }

    fn next_timestamp(&self) -> Option<i64> {
        self.lock().timers.next_timestamp()
    }

    fn pop_due(&mut self, up_to: i64) -> Result<Option<Timer>> {
        let mut state = self.lock();
        let Some(timer) = state.timers.pop_due(up_to) else {
            return Ok(None);
        };
        state
            .reservation
            .shrink(timer_cost(&timer.key, &timer.namespace));
        state.record(
            timer.key_group,
            timer.timestamp,
            &timer.key,
            &timer.namespace,
            false,
        )?;
        Ok(Some(timer))
    }

    fn len(&self) -> usize {
        self.lock().timers.len()
    }

    fn commit(&mut self) -> Result<()> {
        let mut state = self.lock();
        if state.pending.is_empty() {
            return Ok(());
        }
        {
            let st = self.shared.read();
            let cf = st.table_cf(&self.name)?;
            let mut batch = WriteBatch::default();
            for (key, op) in &state.pending {
                match op {
                    Some(len) => batch.put_cf(&cf, key, len.to_be_bytes()),
                    None => batch.delete_cf(&cf, key),
                }
            }
            st.db
                .write_opt(batch, &self.shared.write_options)
                .map_err(rocks_api("timer commit"))?;
        }
        state.pending.clear();
        Ok(())
    }
}

impl CanonicalTable for RocksTimerTable {
    fn table_name(&self) -> &str {
        &self.name
    }

    fn table_key_groups(&self) -> KeyGroupRange {
        self.key_groups
    }

    fn canonical_schema(&self) -> SchemaRef {
        timer_canonical_schema()
    }

    /// The key group's timers from memory (equal to the committed state: uncommitted changes
    /// are [`Error::BundleState`]).
    fn export_key_group(&self, key_group: KeyGroup) -> Result<Option<RecordBatch>> {
        self.check_committed("export_key_group")?;
        let state = self.lock();
        let mut scratch = MemoryReservation::new(Arc::clone(state.reservation.pool()));
        let bytes: usize = state
            .timers
            .key_group_timers(key_group)?
            .map(|(_, k, n)| timer_cost(k, n))
            .sum();
        scratch.try_grow(bytes)?;
        encode_timer_batch(state.timers.key_group_timers(key_group)?)
    }

    /// Decodes and checks every batch into a new timer set and writes the timers into a fresh
    /// staging column family; visible state is untouched until `commit_restore`.
    fn stage_restore(&mut self, batches: Vec<(KeyGroup, RecordBatch)>) -> Result<()> {
        self.check_committed("restore")?;
        self.abort_restore();
        let pool = Arc::clone(self.lock().reservation.pool());
        let mut staged = TimerState::empty(
            self.key_groups,
            self.prefix_bytes,
            MemoryReservation::new(pool),
        );
        for (key_group, batch) in &batches {
            key_group_offset(self.key_groups, *key_group)?;
            for timer in decode_timer_batch(*key_group, batch)? {
                staged.insert(
                    timer.key_group,
                    timer.timestamp,
                    &timer.key,
                    &timer.namespace,
                )?;
            }
        }
        let cf_name = self.shared.create_table_cf(&self.name)?;
        let prefix_bytes = self.prefix_bytes;
        let loaded = load_staging(&self.shared, &cf_name, staged.timers.len(), false, |sink| {
            let mut key = Vec::new();
            for (kg, ts, user_key, namespace) in staged.timers.iter() {
                timer_key(&mut key, kg, prefix_bytes, ts, user_key, namespace);
                sink(&key, &key_length(user_key)?.to_be_bytes())?;
            }
            Ok(())
        });
        if let Err(e) = loaded {
            self.shared.drop_cf(&cf_name);
            return Err(e);
        }
        self.staged = Some((cf_name, staged));
        Ok(())
    }

    fn commit_restore(&mut self) {
        let (cf, staged) = if let Some(staged) = self.staged.take() {
            staged
        } else {
            // Nothing staged: the table becomes empty.
            let Ok(cf) = self.shared.create_table_cf(&self.name) else {
                return;
            };
            let pool = Arc::clone(self.lock().reservation.pool());
            let empty = TimerState::empty(
                self.key_groups,
                self.prefix_bytes,
                MemoryReservation::new(pool),
            );
            (cf, empty)
        };
        self.shared.swap_table_cf(&self.name, &cf);
        *self.lock() = staged;
    }

    fn abort_restore(&mut self) {
        if let Some((cf, _)) = self.staged.take() {
            self.shared.drop_cf(&cf);
        }
    }

    fn table_max_parallelism(&self) -> keygroup::MaxParallelism {
        self.max_parallelism
    }

    fn table_has_ttl(&self) -> bool {
        false
    }
}

impl Drop for RocksTimerTable {
    fn drop(&mut self) {
        if let Some((cf, _)) = self.staged.take() {
            self.shared.drop_cf(&cf);
        }
        self.shared
            .timer_tables
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.name);
    }
}

impl TimerStateStore for RocksStore {
    type TimerTable = RocksTimerTable;

    /// Opens the timer table `name` in its own column family and loads its timers.
    fn open_timer_table(&mut self, name: &str, domain: TimeDomain) -> Result<RocksTimerTable> {
        self.names.check_free(name)?;
        self.register_table(name, &timer_columns(domain), None)?;
        let config: &StoreConfig = &self.config;
        let prefix_bytes = config.max_parallelism().key_group_prefix_bytes();
        let state = {
            let st = self.shared.read();
            let cf = st.table_cf_name(name)?;
            TimerState::load(
                &st,
                &cf,
                name,
                config.key_groups(),
                prefix_bytes,
                MemoryReservation::new(Arc::clone(config.memory_pool())),
            )?
        };
        let state = Arc::new(Mutex::new(state));
        self.shared
            .timer_tables
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), Arc::downgrade(&state));
        self.names.register(name)?;
        Ok(RocksTimerTable {
            name: name.to_owned(),
            domain,
            key_groups: config.key_groups(),
            max_parallelism: config.max_parallelism(),
            prefix_bytes,
            shared: Arc::clone(&self.shared),
            state,
            staged: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_key_is_flink_layout_and_parses_back() {
        let mut key = Vec::new();
        let kg = KeyGroup::new(5).unwrap();
        timer_key(&mut key, kg, 1, 1000, b"k", b"w");
        assert_eq!(key, [5, 0x80, 0, 0, 0, 0, 0, 0x03, 0xe8, b'k', b'w']);
        let parsed = parse_timer(&key, &1_u32.to_be_bytes(), 1).unwrap();
        assert_eq!(parsed, (kg, 1000, &b"k"[..], &b"w"[..]));
        timer_key(&mut key, KeyGroup::new(0x1234).unwrap(), 2, -1, b"", b"");
        assert_eq!(key[..3], [0x12, 0x34, 0x7f]);
        assert!(
            parse_timer(&key, &1_u32.to_be_bytes(), 2).is_none(),
            "length past the end"
        );
        assert!(parse_timer(&key, &[0, 0], 2).is_none(), "value not 4 bytes");
    }
}
