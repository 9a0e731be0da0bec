//! Timers: per key group, ordered by (timestamp, key, namespace), persisted in the store and
//! part of canonical snapshots (Flink's `InternalTimerService` state).
//!
//! # Canonical section
//!
//! A timer table snapshots like any table: one section per key group, an Arrow IPC stream of
//! [`timer_canonical_schema`]:
//!
//! ```text
//! column       type     null  meaning
//! key          Binary   no    timer_sort_key: flip(timestamp) i64 BE ‖ key length u32 BE ‖ key ‖ namespace
//! last_access  Int64    no    always 0 (timers have no TTL)
//! timestamp    Int64    no    the timer's time, epoch ms
//! timer_key    Binary   no    the operator key bytes (e.g. Flink BinaryRow serializer bytes)
//! namespace    Binary   no    the namespace bytes (e.g. a serialized TimeWindow; empty for VoidNamespace)
//! ```
//!
//! `flip(t)` is Flink's `MathUtils.flipSignBit` (`t ^ i64::MIN`), so the bytes of the key
//! column sort like the timestamps; the key length makes the column unambiguous whatever the
//! key and namespace bytes are. A restore checks that the key column equals the encoding of
//! the three value columns.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BinaryArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Fields, SchemaRef};
use keygroup::{KeyGroup, KeyGroupRange};

use crate::error::{Error, Result};
use crate::snapshot::{CanonicalTable, canonical_schema};
use crate::table::KeyedStateStore;

/// Which clock a timer table's timers follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeDomain {
    /// Fired by watermarks (`InternalTimerService.registerEventTimeTimer`).
    EventTime,
    /// Fired by the host's processing-time clock.
    ProcessingTime,
}

/// One timer. Ordered by `(timestamp, key_group, key, namespace)`: the order in which a
/// [`TimerTable`] fires them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timer {
    /// When it fires (epoch ms; a watermark or processing time `>=` this fires it).
    pub timestamp: i64,
    /// The key group of `key`.
    pub key_group: KeyGroup,
    /// The operator key bytes.
    pub key: Vec<u8>,
    /// The namespace bytes.
    pub namespace: Vec<u8>,
}

/// Flink's `MathUtils.flipSignBit` as big-endian bytes: byte order equals timestamp order.
///
/// ```
/// assert_eq!(state_api::flip_timestamp(0), [0x80, 0, 0, 0, 0, 0, 0, 0]);
/// assert!(state_api::flip_timestamp(-1) < state_api::flip_timestamp(0));
/// ```
pub fn flip_timestamp(timestamp: i64) -> [u8; 8] {
    (timestamp ^ i64::MIN).to_be_bytes()
}

/// The inverse of [`flip_timestamp`].
pub fn unflip_timestamp(bytes: [u8; 8]) -> i64 {
    i64::from_be_bytes(bytes) ^ i64::MIN
}

/// The canonical key of a timer (see [`timer_canonical_schema`]), appended to `out`.
///
/// # Errors
/// [`Error::Codec`] when the key is longer than `u32::MAX` bytes.
pub fn timer_sort_key(
    timestamp: i64,
    key: &[u8],
    namespace: &[u8],
    out: &mut Vec<u8>,
) -> Result<()> {
    let len = u32::try_from(key.len()).map_err(|_| Error::Codec {
        column: "timer_key".to_owned(),
        reason: "timer key longer than u32::MAX bytes",
    })?;
    out.reserve(12 + key.len() + namespace.len());
    out.extend_from_slice(&flip_timestamp(timestamp));
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(namespace);
    Ok(())
}

/// The value columns of a timer table's canonical schema.
pub fn timer_fields() -> Fields {
    Fields::from(vec![
        Field::new("timestamp", DataType::Int64, false),
        Field::new("timer_key", DataType::Binary, false),
        Field::new("namespace", DataType::Binary, false),
    ])
}

/// The canonical schema of every timer table: one section per key group, an Arrow IPC
/// stream of
///
/// ```text
/// column       type     null  meaning
/// key          Binary   no    flip(timestamp) i64 BE ‖ key length u32 BE ‖ key ‖ namespace
/// last_access  Int64    no    always 0 (timers have no TTL)
/// timestamp    Int64    no    the timer's time, epoch ms
/// timer_key    Binary   no    the operator key bytes (e.g. Flink BinaryRow serializer bytes)
/// namespace    Binary   no    the namespace bytes (empty for VoidNamespace)
/// ```
///
/// `flip(t)` is Flink's `MathUtils.flipSignBit` (`t ^ i64::MIN`, see [`flip_timestamp`]), so
/// the key column sorts like the timestamps; the key length makes it unambiguous whatever the
/// key and namespace bytes are. A restore checks that the key column equals the encoding of
/// the three value columns ([`decode_timer_batch`]).
pub fn timer_canonical_schema() -> SchemaRef {
    canonical_schema(&timer_fields())
}

/// Builds the canonical batch of one key group's timers, given in any order (they are sorted
/// here by their canonical key).
///
/// # Errors
/// [`Error::Codec`] when a key is too long or a column cannot be built.
pub fn encode_timer_batch<'a>(
    timers: impl Iterator<Item = (i64, &'a [u8], &'a [u8])>,
) -> Result<Option<RecordBatch>> {
    type Row<'r> = (Vec<u8>, i64, &'r [u8], &'r [u8]);
    let mut rows: Vec<Row<'a>> = Vec::new();
    for (ts, key, ns) in timers {
        let mut sort_key = Vec::new();
        timer_sort_key(ts, key, ns, &mut sort_key)?;
        rows.push((sort_key, ts, key, ns));
    }
    if rows.is_empty() {
        return Ok(None);
    }
    rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    rows.dedup_by(|a, b| a.0 == b.0);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(BinaryArray::from_iter_values(
            rows.iter().map(|r| r.0.as_slice()),
        )),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|_| 0))),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
        Arc::new(BinaryArray::from_iter_values(rows.iter().map(|r| r.2))),
        Arc::new(BinaryArray::from_iter_values(rows.iter().map(|r| r.3))),
    ];
    RecordBatch::try_new(timer_canonical_schema(), columns)
        .map(Some)
        .map_err(|_| Error::Codec {
            column: String::new(),
            reason: "timer columns do not match the timer schema",
        })
}

/// Decodes a validated canonical timer batch of `key_group` into timers, checking that every
/// row's key column is the canonical key of its value columns.
///
/// # Errors
/// [`Error::Codec`] for a batch that is not a timer batch or whose key column disagrees.
pub fn decode_timer_batch(key_group: KeyGroup, batch: &RecordBatch) -> Result<Vec<Timer>> {
    let bad = |reason: &'static str| Error::Codec {
        column: "key".to_owned(),
        reason,
    };
    let col = |i: usize| batch.columns().get(i).ok_or(bad("not a timer batch"));
    let keys = col(0)?
        .as_any()
        .downcast_ref::<BinaryArray>()
        .ok_or(bad("not a timer batch"))?;
    let ts = col(2)?
        .as_any()
        .downcast_ref::<Int64Array>()
        .ok_or(bad("not a timer batch"))?;
    let tk = col(3)?
        .as_any()
        .downcast_ref::<BinaryArray>()
        .ok_or(bad("not a timer batch"))?;
    let ns = col(4)?
        .as_any()
        .downcast_ref::<BinaryArray>()
        .ok_or(bad("not a timer batch"))?;
    if [
        keys.null_count(),
        ts.null_count(),
        tk.null_count(),
        ns.null_count(),
    ] != [0; 4]
    {
        return Err(bad("null in a timer column"));
    }
    let mut out = Vec::with_capacity(batch.num_rows());
    let mut expected = Vec::new();
    for i in 0..batch.num_rows() {
        let (t, k, n) = (ts.value(i), tk.value(i), ns.value(i));
        expected.clear();
        timer_sort_key(t, k, n, &mut expected)?;
        if keys.value(i) != expected.as_slice() {
            return Err(bad(
                "timer key column differs from its timestamp, key and namespace",
            ));
        }
        out.push(Timer {
            timestamp: t,
            key_group,
            key: k.to_vec(),
            namespace: n.to_vec(),
        });
    }
    Ok(out)
}

/// The timers of one operator in one [`TimeDomain`], partitioned by key group (Flink's
/// `KeyGroupPartitionedPriorityQueue` of `TimerHeapInternalTimer`s).
///
/// # Contract
///
/// - A timer is identified by `(key group, timestamp, key, namespace)`; registering an
///   existing timer is a no-op returning `false` (Flink deduplicates the same way).
/// - [`pop_due`](TimerTable::pop_due) removes and returns the smallest timer (by
///   [`Timer`]'s order: timestamp, then key group, key, namespace) whose timestamp is
///   `<= up_to`, or `None`. Calling it in a loop while registering new timers fires the new
///   ones in the same advance when they are due, exactly as Flink's
///   `InternalTimerServiceImpl.advanceWatermark` polls its queue.
/// - [`next_timestamp`](TimerTable::next_timestamp) is the smallest timestamp over all owned
///   key groups.
/// - Changes are visible at once. [`commit`](TimerTable::commit) makes them durable in a
///   persistent backend (one write per changed timer); canonical snapshots and restores need
///   no uncommitted changes ([`Error::BundleState`] otherwise).
/// - A key group outside [`key_groups`](TimerTable::key_groups) is
///   [`Error::KeyGroupOutOfRange`] and changes nothing.
pub trait TimerTable {
    /// The table (and canonical section) name.
    fn name(&self) -> &str;

    /// The key groups this table may hold.
    fn key_groups(&self) -> KeyGroupRange;

    /// The domain the timers follow.
    fn domain(&self) -> TimeDomain;

    /// Registers a timer; `false` when it was already registered.
    ///
    /// # Errors
    /// [`Error::KeyGroupOutOfRange`]; [`Error::MemoryExhausted`]; a backend failure.
    fn register(
        &mut self,
        key_group: KeyGroup,
        timestamp: i64,
        key: &[u8],
        namespace: &[u8],
    ) -> Result<bool>;

    /// Deletes a timer; `false` when there was none.
    ///
    /// # Errors
    /// [`Error::KeyGroupOutOfRange`]; a backend failure.
    fn delete(
        &mut self,
        key_group: KeyGroup,
        timestamp: i64,
        key: &[u8],
        namespace: &[u8],
    ) -> Result<bool>;

    /// The earliest timestamp of any timer, or `None` when there are none.
    fn next_timestamp(&self) -> Option<i64>;

    /// Removes and returns the first timer due at `up_to` (timestamp `<= up_to`).
    ///
    /// # Errors
    /// A backend failure.
    fn pop_due(&mut self, up_to: i64) -> Result<Option<Timer>>;

    /// The number of timers.
    fn len(&self) -> usize;

    /// Whether there are no timers.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Makes every change since the last commit durable.
    ///
    /// # Errors
    /// A backend write failure (changes stay pending; retry).
    fn commit(&mut self) -> Result<()>;
}

/// A store that opens [`TimerTable`]s next to its other tables (one name registry).
pub trait TimerStateStore: KeyedStateStore {
    /// The backend's timer table type.
    type TimerTable: TimerTable + CanonicalTable;

    /// Opens (creates) the timer table `name` for `domain`.
    ///
    /// # Errors
    /// [`Error::TableExists`] when `name` is open in this store; a backend failure.
    fn open_timer_table(&mut self, name: &str, domain: TimeDomain) -> Result<Self::TimerTable>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kg(v: i32) -> KeyGroup {
        KeyGroup::new(v).unwrap()
    }

    #[test]
    fn sort_key_orders_by_timestamp_then_key() {
        let enc = |t, k: &[u8], n: &[u8]| {
            let mut v = Vec::new();
            timer_sort_key(t, k, n, &mut v).unwrap();
            v
        };
        assert!(enc(i64::MIN, b"z", b"") < enc(-1, b"a", b""));
        assert!(enc(-1, b"z", b"") < enc(0, b"a", b""));
        assert!(enc(5, b"a", b"z") < enc(5, b"b", b""));
        // Unambiguous although key ‖ namespace is equal.
        assert_ne!(enc(5, b"a", b"bc"), enc(5, b"ab", b"c"));
        assert_eq!(unflip_timestamp(flip_timestamp(-42)), -42);
    }

    #[test]
    fn batch_round_trip_and_mismatch_refused() {
        let timers = [
            (7_i64, &b"k2"[..], &b""[..]),
            (3, b"k1", b"w"),
            (7, b"k1", b""),
        ];
        let batch = encode_timer_batch(timers.iter().copied()).unwrap().unwrap();
        let decoded = decode_timer_batch(kg(3), &batch).unwrap();
        let got: Vec<(i64, &[u8], &[u8])> = decoded
            .iter()
            .map(|t| (t.timestamp, t.key.as_slice(), t.namespace.as_slice()))
            .collect();
        assert_eq!(
            got,
            [(3, &b"k1"[..], &b"w"[..]), (7, b"k1", b""), (7, b"k2", b"")]
        );

        let mut cols = batch.columns().to_vec();
        cols[2] = Arc::new(Int64Array::from(vec![3, 7, 8]));
        let bad = RecordBatch::try_new(timer_canonical_schema(), cols).unwrap();
        let err = decode_timer_batch(kg(3), &bad).unwrap_err();
        assert!(matches!(err, Error::Codec { .. }), "{err}");
        assert!(encode_timer_batch(std::iter::empty()).unwrap().is_none());
    }
}
