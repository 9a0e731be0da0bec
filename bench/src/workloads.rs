//! The benchmark's operators over one value table each (W1 group aggregate, W4 append Top-1),
//! their value codec, a plain-`HashMap` reference model, and the expected checksums of issue 8.
//!
//! W2 (mini-batch) and W3 (join) run on the `operators` crate ([`crate::operator_runs`]).

use std::collections::HashMap;
use std::sync::Arc;

use state_api::arrow_array::{Array, ArrayRef, Int64Array};
use state_api::arrow_schema::{DataType, Field, Fields};
use state_api::keygroup::KeyGroup;
use state_api::{Error, KeyedTable, Result, ValueCodec};

use crate::workload::{Changelog, FinalTable, Kind, key, value};

/// A codec for a fixed number of `i64` columns (non-nullable `Int64`, named by the codec).
#[derive(Debug, Clone, Copy)]
pub struct I64Columns<const N: usize> {
    names: [&'static str; N],
}

impl<const N: usize> I64Columns<N> {
    /// A codec whose columns are named `names`.
    pub const fn new(names: [&'static str; N]) -> Self {
        Self { names }
    }
}

impl<const N: usize> ValueCodec for I64Columns<N> {
    type Value = [i64; N];

    fn fields(&self) -> Fields {
        self.names
            .iter()
            .map(|n| Field::new(*n, DataType::Int64, false))
            .collect()
    }

    fn encode<'a, I>(&self, values: I) -> Result<Vec<ArrayRef>>
    where
        I: ExactSizeIterator<Item = &'a [i64; N]> + Clone,
    {
        Ok((0..N)
            .map(|c| {
                let column: ArrayRef = Arc::new(Int64Array::from_iter_values(
                    values
                        .clone()
                        .map(|v| v.get(c).copied().unwrap_or_default()),
                ));
                column
            })
            .collect())
    }

    fn decode(&self, columns: &[ArrayRef], out: &mut Vec<[i64; N]>) -> Result<()> {
        let bad = |reason| Error::Codec {
            column: String::new(),
            reason,
        };
        if columns.len() != N {
            return Err(bad("wrong number of value columns"));
        }
        let mut arrays = Vec::with_capacity(N);
        for column in columns {
            let array = column
                .as_any()
                .downcast_ref::<Int64Array>()
                .ok_or(bad("unexpected data type"))?;
            if array.null_count() > 0 {
                return Err(bad("null in a non-nullable column"));
            }
            arrays.push(array.values());
        }
        let rows = arrays.first().map_or(0, |a| a.len());
        if arrays.iter().any(|a| a.len() != rows) {
            return Err(bad("columns differ in length"));
        }
        out.reserve(rows);
        for r in 0..rows {
            let mut row = [0_i64; N];
            for (cell, array) in row.iter_mut().zip(&arrays) {
                *cell = array.get(r).copied().unwrap_or_default();
            }
            out.push(row);
        }
        Ok(())
    }
}

/// Which workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadId {
    /// Group aggregate `COUNT(*), SUM(value), MAX(value)` per key, mini-batch off.
    W1,
    /// W1 with mini-batch on (`operators::GroupAggregate`, bundles of 5,000 events).
    W2,
    /// Inner join on `key % (K / 10)` of the even and the odd events, N / 10 events
    /// (`operators::InnerJoin`).
    W3,
    /// Append Top-1: per key the row with the largest value, ties keep the earlier row.
    W4,
}

impl WorkloadId {
    /// The workload's name (`w1` .. `w4`).
    pub fn name(self) -> &'static str {
        match self {
            WorkloadId::W1 => "w1",
            WorkloadId::W2 => "w2",
            WorkloadId::W3 => "w3",
            WorkloadId::W4 => "w4",
        }
    }

    /// Parses `w1` .. `w4`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "w1" => Some(WorkloadId::W1),
            "w2" => Some(WorkloadId::W2),
            "w3" => Some(WorkloadId::W3),
            "w4" => Some(WorkloadId::W4),
            _ => None,
        }
    }
}

/// Expected results of one workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected {
    /// Output rows of all kinds (`None` where the issue does not say).
    pub rows: Option<u64>,
    /// `chk_changelog` (`None` where the issue does not say).
    pub changelog: Option<u64>,
    /// `chk_final`.
    pub final_checksum: u64,
}

/// The issue's defaults.
pub const DEFAULT_EVENTS: u64 = 2_000_000;
/// The issue's defaults.
pub const DEFAULT_KEYS: u64 = 100_000;

/// The checksums issue 8 states for `workload` at the default size, `None` at any other size.
pub fn issue_expected(workload: WorkloadId, events: u64, keys: u64) -> Option<Expected> {
    if (events, keys) != (DEFAULT_EVENTS, DEFAULT_KEYS) {
        return None;
    }
    Some(match workload {
        WorkloadId::W1 => Expected {
            rows: Some(2_000_000),
            changelog: Some(0x4b07_beee_8763_1433),
            final_checksum: 0xc324_95ab_5064_1420,
        },
        // The issue: "chk_final as W1" (the changelog depends on the bundles).
        WorkloadId::W2 => Expected {
            rows: None,
            changelog: None,
            final_checksum: 0xc324_95ab_5064_1420,
        },
        // Insert-only output: the changelog is the final table.
        WorkloadId::W3 => Expected {
            rows: Some(998_209),
            changelog: Some(0x897a_f72b_abc8_bb74),
            final_checksum: 0x897a_f72b_abc8_bb74,
        },
        WorkloadId::W4 => Expected {
            rows: Some(355_987),
            changelog: Some(0x2f35_79fd_80de_597e),
            final_checksum: 0xe7dc_b4cc_c1e7_1130,
        },
    })
}

/// A single-table keyed operator: what it does with one event given the key's state.
pub trait Operator: Send + Sync + 'static {
    /// The state's value codec.
    type Codec: ValueCodec<Value = Self::State> + Copy;
    /// The state of one key.
    type State: Copy + Clone + std::fmt::Debug + PartialEq + Send + 'static;

    /// The workload.
    const ID: WorkloadId;

    /// The codec of the state table.
    fn codec() -> Self::Codec;

    /// Processes event `(i, key, value)` on the key's `state`; emits output rows into `out`
    /// and returns the new state to write, or `None` when the state stays as it is.
    fn on_event(
        i: u64,
        key: u64,
        value: u64,
        state: Option<&Self::State>,
        out: &mut Changelog,
    ) -> Option<Self::State>;

    /// Applies event `(i, key, value)` to its key (`row` of `key_group`) in `table` and
    /// emits its output rows into `out`. The default is Flink's access pattern: a get, then
    /// [`on_event`](Operator::on_event), then a put of what it returns (no write when the
    /// state stays); an operator that writes on every event overrides it with one
    /// [`KeyedTable::upsert`].
    ///
    /// # Errors
    /// The table's error.
    #[inline]
    fn apply<T: KeyedTable<Codec = Self::Codec>>(
        table: &mut T,
        key_group: KeyGroup,
        row: &[u8],
        (i, key, value): (u64, u64, u64),
        out: &mut Changelog,
    ) -> Result<()> {
        let state = table.get(key_group, row)?.copied();
        if let Some(next) = Self::on_event(i, key, value, state.as_ref(), out) {
            table.put(key_group, row, next)?;
        }
        Ok(())
    }

    /// Adds the key's row of the final table (derived from its state) to `out`.
    fn final_row(key: u64, state: &Self::State, out: &mut FinalTable);
}

/// `i64` to the `u64` column of a row hash (two's complement, as Java's `long`).
fn col(v: i64) -> u64 {
    v.cast_unsigned()
}

/// An event field (below 2^63 by construction) as the `i64` a Flink `BIGINT` holds.
fn long(v: u64) -> i64 {
    v.cast_signed()
}

/// W1: `SELECT key, COUNT(*), SUM(value), MAX(value) GROUP BY key`, mini-batch off: `+I` for a
/// key's first row, `+U` after (no `−U`). State `[count, sum, max]`.
#[derive(Debug, Clone, Copy)]
pub struct GroupAggregate;

impl Operator for GroupAggregate {
    type Codec = I64Columns<3>;
    type State = [i64; 3];
    const ID: WorkloadId = WorkloadId::W1;

    fn codec() -> Self::Codec {
        I64Columns::new(["count", "sum", "max"])
    }

    #[inline]
    fn on_event(
        _i: u64,
        key: u64,
        value: u64,
        state: Option<&[i64; 3]>,
        out: &mut Changelog,
    ) -> Option<[i64; 3]> {
        let v = long(value);
        let (kind, next) = match state {
            None => (Kind::Insert, [1, v, v]),
            Some(state) => (Kind::UpdateAfter, accumulate(state, v)),
        };
        out.emit(kind, &[key, col(next[0]), col(next[1]), col(next[2])]);
        Some(next)
    }

    /// Every event writes its key: one upsert (one search of the key) instead of a get and
    /// a put.
    #[inline]
    fn apply<T: KeyedTable<Codec = Self::Codec>>(
        table: &mut T,
        key_group: KeyGroup,
        row: &[u8],
        (_, key, value): (u64, u64, u64),
        out: &mut Changelog,
    ) -> Result<()> {
        let v = long(value);
        let mut next = [1, v, v];
        let updated = table.upsert(
            key_group,
            row,
            || [1, v, v],
            |state| {
                *state = accumulate(state, v);
                next = *state;
            },
        )?;
        let kind = if updated {
            Kind::UpdateAfter
        } else {
            Kind::Insert
        };
        out.emit(kind, &[key, col(next[0]), col(next[1]), col(next[2])]);
        Ok(())
    }

    fn final_row(key: u64, state: &[i64; 3], out: &mut FinalTable) {
        out.add(&[key, col(state[0]), col(state[1]), col(state[2])]);
    }
}

/// W1's state after one more event of value `v`: count + 1, sum + v, max of max and v.
#[inline]
fn accumulate(&[count, sum, max]: &[i64; 3], v: i64) -> [i64; 3] {
    [count.wrapping_add(1), sum.wrapping_add(v), max.max(v)]
}

/// W4: append Top-1 per key by largest value (ties keep the earlier row); output
/// `(i, key, value, 1)`, `+I` first, `+U` on a new winner. State `[i, value]` of the winner.
#[derive(Debug, Clone, Copy)]
pub struct TopOne;

impl Operator for TopOne {
    type Codec = I64Columns<2>;
    type State = [i64; 2];
    const ID: WorkloadId = WorkloadId::W4;

    fn codec() -> Self::Codec {
        I64Columns::new(["i", "value"])
    }

    #[inline]
    fn on_event(
        i: u64,
        key: u64,
        value: u64,
        state: Option<&[i64; 2]>,
        out: &mut Changelog,
    ) -> Option<[i64; 2]> {
        let kind = match state {
            None => Kind::Insert,
            Some(&[_, best]) if long(value) > best => Kind::UpdateAfter,
            Some(_) => return None,
        };
        out.emit(kind, &[i, key, value, 1]);
        Some([long(i), long(value)])
    }

    fn final_row(key: u64, state: &[i64; 2], out: &mut FinalTable) {
        out.add(&[col(state[0]), key, col(state[1]), 1]);
    }
}

/// Runs `O` over `events` events and `keys` keys on a plain `HashMap`: the reference every
/// backend's result is compared with. The final table is built from the output rows (last
/// `+I`/`+U` row per key), independently of the operator's state.
pub fn reference<O: Operator>(events: u64, keys: u64) -> (Changelog, FinalTable) {
    let mut state: HashMap<u64, O::State> = HashMap::new();
    let mut last_row: HashMap<u64, u64> = HashMap::new();
    let mut out = Changelog::default();
    for i in 0..events {
        let (k, v) = (key(i, keys), value(i));
        let before = out.checksum;
        if let Some(next) = O::on_event(i, k, v, state.get(&k), &mut out) {
            state.insert(k, next);
            // One +I/+U row per write: its row hash is the checksum's increase.
            last_row.insert(k, out.checksum.wrapping_sub(before));
        }
    }
    let mut table = FinalTable::default();
    for h in last_row.values() {
        table.rows += 1;
        table.checksum = table.checksum.wrapping_add(*h);
    }
    (out, table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_matches_the_issue_at_the_default_size() {
        for (id, (out, table)) in [
            (
                WorkloadId::W1,
                reference::<GroupAggregate>(DEFAULT_EVENTS, DEFAULT_KEYS),
            ),
            (
                WorkloadId::W4,
                reference::<TopOne>(DEFAULT_EVENTS, DEFAULT_KEYS),
            ),
        ] {
            let want = issue_expected(id, DEFAULT_EVENTS, DEFAULT_KEYS).unwrap();
            assert_eq!(Some(out.total()), want.rows, "{id:?}");
            assert_eq!(Some(out.checksum), want.changelog, "{id:?}");
            assert_eq!(table.checksum, want.final_checksum, "{id:?}");
        }
        let (w1, _) = reference::<GroupAggregate>(DEFAULT_EVENTS, DEFAULT_KEYS);
        assert_eq!(w1.rows, [100_000, 0, 1_900_000, 0]);
    }

    #[test]
    fn final_rows_from_state_match_the_reference() {
        let mut state: HashMap<u64, [i64; 2]> = HashMap::new();
        let mut out = Changelog::default();
        for i in 0..5_000 {
            let (k, v) = (key(i, 300), value(i));
            if let Some(s) = TopOne::on_event(i, k, v, state.get(&k), &mut out) {
                state.insert(k, s);
            }
        }
        let mut table = FinalTable::default();
        for (k, s) in &state {
            TopOne::final_row(*k, s, &mut table);
        }
        assert_eq!(table, reference::<TopOne>(5_000, 300).1);
    }

    #[test]
    fn codec_round_trips() {
        let codec = GroupAggregate::codec();
        let rows = [[1, -2, 3], [i64::MIN, 0, i64::MAX]];
        let columns = codec.encode(rows.iter()).unwrap();
        let mut out = Vec::new();
        codec.decode(&columns, &mut out).unwrap();
        assert_eq!(out, rows);
        assert!(codec.decode(&columns[..2], &mut Vec::new()).is_err());
    }
}
