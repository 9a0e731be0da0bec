//! Accumulate, retract, merge and get-value of the node's aggregates, as Flink's built-in
//! functions compute them (`CountAggFunction`, `SumAggFunction`, `SumWithRetractAggFunction`,
//! `Sum0AggFunction`, `MinAggFunction`/`MaxAggFunction`, `MinWithRetractAggFunction`/
//! `MaxWithRetractAggFunction`, `FirstValueAggFunction`/`LastValueAggFunction`, and the
//! generated DISTINCT code of `DistinctAggCodeGen`).

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};

use arrow_schema::DataType;
use keygroup::KeyGroup;
use state_api::{I64Codec, MapTable, Row, Scalar, ScanDirection, UserKeyRange, prefix_successor};

use super::plan::{Phys, PhysKind, Plan};
use crate::companion_key;
use crate::error::{Error, Result};
use crate::value::{avg, count_of, java_equals, minus, plus, sql_gt, sql_lt, zero_of};

/// A group's value -> count companions (MIN/MAX with retraction, DISTINCT): in the state
/// (a map table prefix) or local to a mini-batch bundle.
pub(crate) trait Companion {
    /// The count of `user_key` (0 when absent).
    fn count(&mut self, user_key: &[u8]) -> Result<i64>;
    /// Sets the count (removes the entry at 0).
    fn set(&mut self, user_key: &[u8], count: i64) -> Result<()>;
    /// The smallest (`reverse = false`) or largest user key starting with `start`.
    fn edge(&mut self, start: &[u8], reverse: bool) -> Result<Option<Vec<u8>>>;
}

/// A group's companions in a map table (prefix = the group key).
pub(crate) struct StateCompanion<'a, M> {
    pub table: &'a mut M,
    pub key_group: KeyGroup,
    pub prefix: &'a [u8],
}

/// Runs `f` with the companion of the group `prefix` in `key_group`: its entries in the
/// companion table, or, for a plan without one, an empty local companion.
pub(crate) fn with_companion<M: MapTable<Codec = I64Codec>, R>(
    companions: &mut Option<M>,
    key_group: KeyGroup,
    prefix: &[u8],
    f: impl FnOnce(&mut dyn Companion) -> R,
) -> R {
    match companions.as_mut() {
        Some(table) => f(&mut StateCompanion {
            table,
            key_group,
            prefix,
        }),
        None => f(&mut LocalCompanion::default()),
    }
}

impl<M: MapTable<Codec = I64Codec>> Companion for StateCompanion<'_, M> {
    fn count(&mut self, user_key: &[u8]) -> Result<i64> {
        Ok(self
            .table
            .get(self.key_group, self.prefix, user_key)?
            .copied()
            .unwrap_or(0))
    }

    fn set(&mut self, user_key: &[u8], count: i64) -> Result<()> {
        if count == 0 {
            self.table.remove(self.key_group, self.prefix, user_key)?;
        } else {
            self.table
                .put(self.key_group, self.prefix, user_key, count)?;
        }
        Ok(())
    }

    fn edge(&mut self, start: &[u8], reverse: bool) -> Result<Option<Vec<u8>>> {
        let hi = prefix_successor(start);
        let range = UserKeyRange::new(
            Bound::Included(start),
            hi.as_ref()
                .map_or(Bound::Unbounded, |h| Bound::Excluded(h.as_slice())),
        );
        let direction = if reverse {
            ScanDirection::Reverse
        } else {
            ScanDirection::Forward
        };
        let mut found = None;
        self.table.scan(
            self.key_group,
            self.prefix,
            range,
            direction,
            &mut |k, _| {
                found = Some(k.to_vec());
                ControlFlow::Break(())
            },
        )?;
        Ok(found)
    }
}

/// A bundle-local companion (the mini-batch local aggregate's heap maps).
#[derive(Debug, Default, Clone)]
pub(crate) struct LocalCompanion {
    pub entries: BTreeMap<Vec<u8>, i64>,
}

impl Companion for LocalCompanion {
    fn count(&mut self, user_key: &[u8]) -> Result<i64> {
        Ok(self.entries.get(user_key).copied().unwrap_or(0))
    }

    fn set(&mut self, user_key: &[u8], count: i64) -> Result<()> {
        if count == 0 {
            self.entries.remove(user_key);
        } else {
            self.entries.insert(user_key.to_vec(), count);
        }
        Ok(())
    }

    fn edge(&mut self, start: &[u8], reverse: bool) -> Result<Option<Vec<u8>>> {
        let upper = prefix_successor(start).map_or(Bound::Unbounded, Bound::Excluded);
        let mut range = self.entries.range((Bound::Included(start.to_vec()), upper));
        let k = if reverse {
            range.next_back()
        } else {
            range.next()
        };
        Ok(k.map(|(k, _)| k.clone()))
    }
}

impl LocalCompanion {
    /// The entries of `tag`.
    fn tagged(&self, tag: u16) -> Vec<(Vec<u8>, i64)> {
        let lo = companion_key::tag_bytes(tag).to_vec();
        let upper = tag.checked_add(1).map_or(Bound::Unbounded, |t| {
            Bound::Excluded(companion_key::tag_bytes(t).to_vec())
        });
        self.entries
            .range((Bound::Included(lo), upper))
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }
}

/// An AVG operand in `AvgAggFunction`'s sum type (BIGINT / DOUBLE / the decimal itself).
fn widen(v: &Scalar) -> Scalar {
    match v {
        Scalar::Int8(x) => Scalar::Int64(i64::from(*x)),
        Scalar::Int16(x) => Scalar::Int64(i64::from(*x)),
        Scalar::Int32(x) => Scalar::Int64(i64::from(*x)),
        Scalar::Float32(x) => Scalar::Float64(f64::from(*x)),
        other => other.clone(),
    }
}

/// `CAST(sum / count AS <argument type>)` of `AvgAggFunction.getValueExpression`.
#[expect(
    clippy::cast_possible_truncation,
    reason = "Java's narrowing casts, as Flink's generated code"
)]
fn narrow(v: &Scalar, result: &DataType) -> Scalar {
    match (v, result) {
        (Scalar::Int64(x), DataType::Int8) => Scalar::Int8(*x as i8),
        (Scalar::Int64(x), DataType::Int16) => Scalar::Int16(*x as i16),
        (Scalar::Int64(x), DataType::Int32) => Scalar::Int32(*x as i32),
        (Scalar::Float64(x), DataType::Float32) => Scalar::Float32(*x as f32),
        (other, _) => other.clone(),
    }
}

fn acc_field(acc: &[Scalar], i: usize) -> &Scalar {
    acc.get(i).unwrap_or(&Scalar::Null)
}

fn set_field(acc: &mut [Scalar], i: usize, v: Scalar) {
    if let Some(slot) = acc.get_mut(i) {
        *slot = v;
    }
}

fn add_count(acc: &mut [Scalar], i: usize, delta: i64) {
    let c = count_of(acc_field(acc, i));
    set_field(acc, i, Scalar::Int64(c.wrapping_add(delta)));
}

/// Fresh accumulators (Flink's `createAccumulators`).
pub(crate) fn create(plan: &Plan) -> Row {
    let mut acc = Vec::with_capacity(plan.acc_fields.len());
    for p in &plan.phys {
        match p.kind {
            PhysKind::Count1 | PhysKind::CountStar | PhysKind::Count => acc.push(Scalar::Int64(0)),
            PhysKind::Sum0 => acc.push(zero_of(&p.result_type)),
            PhysKind::Avg => acc.push(zero_of(&super::plan::avg_sum_type(&p.arg_type))),
            _ => acc.push(Scalar::Null),
        }
        if p.acc_width() == 2 {
            acc.push(Scalar::Int64(0));
        }
    }
    acc
}

/// The node's output fields (`getValue`), hidden `count1` excluded.
pub(crate) fn values(plan: &Plan, acc: &[Scalar]) -> Vec<Scalar> {
    let mut out = Vec::with_capacity(plan.phys.len());
    values_into(plan, acc, &mut out);
    out
}

/// [`values`] into `out` (replacing
/// what it held; a buffer reused from key to key allocates once).
pub(crate) fn values_into(plan: &Plan, acc: &[Scalar], out: &mut Vec<Scalar>) {
    out.clear();
    out.extend(
        plan.phys
            .iter()
            .filter(|p| p.kind != PhysKind::Count1)
            .map(|p| value_of(p, acc)),
    );
}

/// One aggregate's value.
pub(crate) fn value_of(p: &Phys, acc: &[Scalar]) -> Scalar {
    let v = acc_field(acc, p.acc_offset).clone();
    match p.kind {
        PhysKind::Sum if p.retract => {
            if count_of(acc_field(acc, p.acc_offset + 1)) == 0 {
                Scalar::Null
            } else {
                v
            }
        }
        PhysKind::Min | PhysKind::Max if p.retract => {
            if count_of(acc_field(acc, p.acc_offset + 1)) > 0 {
                v
            } else {
                Scalar::Null
            }
        }
        PhysKind::Avg => {
            let count = count_of(acc_field(acc, p.acc_offset + 1));
            let sum_type = super::plan::avg_sum_type(&p.arg_type);
            narrow(&avg(&v, count, &sum_type, &p.result_type), &p.result_type)
        }
        _ => v,
    }
}

/// Runs `change` on the accumulator `acc` with its node values before the change in `prev`
/// and after it in `new`; returns whether the group's count is zero after it (the group
/// then retracts and leaves the state).
pub(crate) fn change_observed(
    plan: &Plan,
    acc: &mut Row,
    prev: &mut Vec<Scalar>,
    new: &mut Vec<Scalar>,
    change: impl FnOnce(&mut Row) -> Result<()>,
) -> Result<bool> {
    values_into(plan, acc, prev);
    change(acc)?;
    values_into(plan, acc, new);
    Ok(count_is_zero(plan, acc))
}

/// Whether the record counter is zero (Flink's `RetractionRecordCounter`); never for
/// insert-only input (`AccumulationRecordCounter`: the accumulator exists).
pub(crate) fn count_is_zero(plan: &Plan, acc: &[Scalar]) -> bool {
    plan.counter
        .is_some_and(|i| count_of(acc_field(acc, i)) == 0)
}

/// Accumulates (`+I`/`+U`) or retracts (`-U`/`-D`) one input row into `acc`.
pub(crate) fn apply_row(
    plan: &Plan,
    acc: &mut [Scalar],
    row: &[Scalar],
    accumulate: bool,
    companion: &mut dyn Companion,
    key_buf: &mut Vec<u8>,
) -> Result<()> {
    for p in &plan.phys {
        if p.distinct.is_some() {
            continue;
        }
        let v = p.arg.and_then(|a| row.get(a)).unwrap_or(&Scalar::Null);
        if accumulate {
            accumulate_one(p, acc, v, companion, key_buf)?;
        } else {
            retract_one(p, acc, v, companion, key_buf)?;
        }
    }
    for set in &plan.distincts {
        let v = row.get(set.arg).unwrap_or(&Scalar::Null);
        if !companion_key::encode(set.tag, v, &set.arg_type, key_buf)? {
            continue;
        }
        let key = key_buf.clone();
        let count = companion.count(&key)?;
        let (new, fire) = if accumulate {
            if plan.counter.is_none() {
                // Insert-only: a "seen" bit (`LongValueWithoutRetractionGenerator`).
                if count != 0 {
                    continue;
                }
                (1, true)
            } else {
                (count + 1, count + 1 == 1)
            }
        } else {
            (count - 1, count - 1 == 0)
        };
        companion.set(&key, new)?;
        if fire {
            for &i in &set.inner {
                if let Some(p) = plan.phys.get(i) {
                    if accumulate {
                        accumulate_one(p, acc, v, companion, key_buf)?;
                    } else {
                        retract_one(p, acc, v, companion, key_buf)?;
                    }
                }
            }
        }
    }
    Ok(())
}

fn accumulate_one(
    p: &Phys,
    acc: &mut [Scalar],
    v: &Scalar,
    companion: &mut dyn Companion,
    key_buf: &mut Vec<u8>,
) -> Result<()> {
    let o = p.acc_offset;
    match p.kind {
        PhysKind::Count1 | PhysKind::CountStar => add_count(acc, o, 1),
        PhysKind::Count => {
            if !v.is_null() {
                add_count(acc, o, 1);
            }
        }
        PhysKind::Sum => {
            if !v.is_null() {
                let sum = acc_field(acc, o);
                let new = if sum.is_null() {
                    v.clone()
                } else {
                    plus(sum, v)
                };
                set_field(acc, o, new);
                if p.retract {
                    add_count(acc, o + 1, 1);
                }
            }
        }
        PhysKind::Sum0 => {
            if !v.is_null() {
                let new = plus(acc_field(acc, o), v);
                set_field(acc, o, new);
            }
        }
        PhysKind::Avg => {
            if !v.is_null() {
                let new = plus(acc_field(acc, o), &widen(v));
                set_field(acc, o, new);
                add_count(acc, o + 1, 1);
            }
        }
        PhysKind::Min | PhysKind::Max if p.retract => {
            extreme_accumulate(p, acc, v, companion, key_buf)?;
        }
        PhysKind::Min | PhysKind::Max => {
            if !v.is_null() {
                let cur = acc_field(acc, o);
                let better = if p.kind == PhysKind::Min {
                    sql_lt(v, cur)
                } else {
                    sql_gt(v, cur)
                };
                if cur.is_null() || better {
                    set_field(acc, o, v.clone());
                }
            }
        }
        PhysKind::First | PhysKind::Last if p.retract => {
            order_accumulate(p, acc, v, companion, key_buf)?;
        }
        PhysKind::First => {
            if !v.is_null() && acc_field(acc, o).is_null() {
                set_field(acc, o, v.clone());
            }
        }
        PhysKind::Last => {
            if !v.is_null() {
                set_field(acc, o, v.clone());
            }
        }
    }
    Ok(())
}

fn retract_one(
    p: &Phys,
    acc: &mut [Scalar],
    v: &Scalar,
    companion: &mut dyn Companion,
    key_buf: &mut Vec<u8>,
) -> Result<()> {
    let o = p.acc_offset;
    match p.kind {
        PhysKind::Count1 | PhysKind::CountStar => add_count(acc, o, -1),
        PhysKind::Count => {
            if !v.is_null() {
                add_count(acc, o, -1);
            }
        }
        PhysKind::Sum => {
            if !v.is_null() {
                let sum = acc_field(acc, o);
                let new = if sum.is_null() {
                    minus(&zero_of(&p.result_type), v)
                } else {
                    minus(sum, v)
                };
                set_field(acc, o, new);
                add_count(acc, o + 1, -1);
            }
        }
        PhysKind::Sum0 => {
            if !v.is_null() {
                let new = minus(acc_field(acc, o), v);
                set_field(acc, o, new);
            }
        }
        PhysKind::Avg => {
            if !v.is_null() {
                let new = minus(acc_field(acc, o), &widen(v));
                set_field(acc, o, new);
                add_count(acc, o + 1, -1);
            }
        }
        PhysKind::Min | PhysKind::Max => extreme_retract(p, acc, v, companion, key_buf)?,
        PhysKind::First | PhysKind::Last if p.retract => {
            order_retract(p, acc, v, companion, key_buf)?;
        }
        PhysKind::First | PhysKind::Last => {
            return Err(Error::unsupported(
                "retraction of FIRST_VALUE / LAST_VALUE planned for insert-only input",
            ));
        }
    }
    Ok(())
}

/// Writes the value entry prefix `tag + 1 ‖ sort key of v` of a FIRST/LAST with retraction
/// into `key_buf` and returns the order entries' tag; `None` for a null (ignored).
fn order_value_key(p: &Phys, v: &Scalar, key_buf: &mut Vec<u8>) -> Result<Option<u16>> {
    let tag = p.tag.unwrap_or(0);
    let value_tag = tag
        .checked_add(1)
        .ok_or_else(|| Error::unsupported("companion tags"))?;
    Ok(companion_key::encode(value_tag, v, &p.arg_type, key_buf)?.then_some(tag))
}

/// `FirstValueWithRetractAggFunction.accumulate` / `LastValueWithRetractAggFunction`'s.
///
/// Flink takes each accumulated value's order from `System.currentTimeMillis()`; values of one
/// millisecond share an order and keep arrival order inside its list, FIRST keeps the earlier
/// (`prevOrder > order` replaces), LAST takes the later (`prevOrder <= order`). So on a clock
/// that never goes back, Flink's result is that of a strictly increasing arrival sequence;
/// the clock only adds nondeterminism (a clock stepped back reorders). Here the order is the
/// group's arrival sequence (accumulator field `o + 1`), so results are deterministic and
/// equal Flink's whenever its clock is monotonic. Entries: `tag ‖ seq ‖ value` (the order
/// map, ordered by arrival) and `tag + 1 ‖ value ‖ seq` (per value its orders, oldest first);
/// see `companion_key`.
fn order_accumulate(
    p: &Phys,
    acc: &mut [Scalar],
    v: &Scalar,
    companion: &mut dyn Companion,
    key_buf: &mut Vec<u8>,
) -> Result<()> {
    let o = p.acc_offset;
    let Some(tag) = order_value_key(p, v, key_buf)? else {
        return Ok(());
    };
    let seq = count_of(acc_field(acc, o + 1)).cast_unsigned();
    set_field(acc, o + 1, Scalar::Int64(seq.wrapping_add(1).cast_signed()));
    companion.set(&companion_key::order_entry(tag, seq, key_buf), 1)?;
    key_buf.extend_from_slice(&seq.to_be_bytes());
    companion.set(key_buf, 1)?;
    if p.kind == PhysKind::Last || acc_field(acc, o).is_null() {
        set_field(acc, o, v.clone());
    }
    Ok(())
}

/// `FirstValueWithRetractAggFunction.retract` / `LastValueWithRetractAggFunction`'s: the
/// value's oldest order is removed (one seek over the value's entries); nothing happens for a
/// value not in the map. When the value equals the current result, the new result is the
/// first (FIRST) or last (LAST) order entry left: one ordered seek, where Flink iterates
/// every key of its `orderToValueMap`. (Flink looks for the smallest order `>= firstOrder` /
/// largest `<= lastOrder`; with increasing orders no entry lies beyond, so that is the
/// first / last entry.)
fn order_retract(
    p: &Phys,
    acc: &mut [Scalar],
    v: &Scalar,
    companion: &mut dyn Companion,
    key_buf: &mut Vec<u8>,
) -> Result<()> {
    let o = p.acc_offset;
    let Some(tag) = order_value_key(p, v, key_buf)? else {
        return Ok(());
    };
    let Some(oldest) = companion.edge(key_buf, false)? else {
        return Ok(());
    };
    let seq = companion_key::trailing_seq(&oldest)?;
    companion.set(&oldest, 0)?;
    companion.set(&companion_key::order_entry(tag, seq, key_buf), 0)?;
    if java_equals(v, acc_field(acc, o)) {
        let next = companion.edge(&companion_key::tag_bytes(tag), p.kind == PhysKind::Last)?;
        let value = match next {
            Some(k) => companion_key::decode_order_entry(&k, &p.arg_type)?,
            None => Scalar::Null,
        };
        set_field(acc, o, value);
    }
    Ok(())
}

/// `compareTo`-better: `v` beats `cur` for MIN when `cur.compareTo(v) > 0`.
fn java_better(p: &Phys, cur: &Scalar, v: &Scalar) -> bool {
    let ord = cur.total_cmp_java(v);
    if p.kind == PhysKind::Min {
        ord.is_gt()
    } else {
        ord.is_lt()
    }
}

/// `MinWithRetractAggFunction.accumulate` (and the MAX mirror).
fn extreme_accumulate(
    p: &Phys,
    acc: &mut [Scalar],
    v: &Scalar,
    companion: &mut dyn Companion,
    key_buf: &mut Vec<u8>,
) -> Result<()> {
    let (o, tag) = (p.acc_offset, p.tag.unwrap_or(0));
    if !companion_key::encode(tag, v, &p.arg_type, key_buf)? {
        return Ok(());
    }
    let map_size = count_of(acc_field(acc, o + 1));
    let cur = acc_field(acc, o);
    if map_size == 0 || cur.is_null() || java_better(p, cur, v) {
        set_field(acc, o, v.clone());
    }
    let count = companion.count(key_buf)? + 1;
    companion.set(key_buf, count)?;
    if count == 1 {
        add_count(acc, o + 1, 1);
    }
    Ok(())
}

/// `MinWithRetractAggFunction.retract` (and the MAX mirror): the new extreme after the
/// current one leaves is one ordered seek over **all** remaining entries (negative counts
/// included), where Flink iterates the whole map.
fn extreme_retract(
    p: &Phys,
    acc: &mut [Scalar],
    v: &Scalar,
    companion: &mut dyn Companion,
    key_buf: &mut Vec<u8>,
) -> Result<()> {
    let (o, tag) = (p.acc_offset, p.tag.unwrap_or(0));
    if !companion_key::encode(tag, v, &p.arg_type, key_buf)? {
        return Ok(());
    }
    let count = companion.count(key_buf)? - 1;
    companion.set(key_buf, count)?;
    if count != 0 {
        return Ok(());
    }
    add_count(acc, o + 1, -1);
    if count_of(acc_field(acc, o + 1)) == 0 {
        set_field(acc, o, Scalar::Null);
        return Ok(());
    }
    if java_equals(v, acc_field(acc, o)) {
        update_extreme(p, acc, companion)?;
    }
    Ok(())
}

/// `updateMin` / `updateMax`: the extreme over every entry of the companion.
fn update_extreme(p: &Phys, acc: &mut [Scalar], companion: &mut dyn Companion) -> Result<()> {
    let (o, tag) = (p.acc_offset, p.tag.unwrap_or(0));
    if let Some(k) = companion.edge(&companion_key::tag_bytes(tag), p.kind == PhysKind::Max)? {
        let v = decode_value(&k, &p.arg_type)?;
        set_field(acc, o, v);
    } else {
        set_field(acc, o, Scalar::Null);
        set_field(acc, o + 1, Scalar::Int64(0));
    }
    Ok(())
}

fn decode_value(user_key: &[u8], data_type: &DataType) -> Result<Scalar> {
    companion_key::decode(user_key, data_type)
}

/// Merges a bundle's local accumulators (`other`, with its local companions) into `acc`
/// (Flink's `merge` of the global aggregate, `MiniBatchGlobalGroupAggFunction`).
pub(crate) fn merge(
    plan: &Plan,
    acc: &mut [Scalar],
    other: &[Scalar],
    other_companion: &LocalCompanion,
    companion: &mut dyn Companion,
    key_buf: &mut Vec<u8>,
) -> Result<()> {
    for p in &plan.phys {
        if p.distinct.is_some() {
            continue;
        }
        let o = p.acc_offset;
        let theirs = acc_field(other, o).clone();
        match p.kind {
            PhysKind::Count1 | PhysKind::CountStar | PhysKind::Count => {
                add_count(acc, o, count_of(&theirs));
            }
            PhysKind::Sum => {
                if !theirs.is_null() {
                    let mine = acc_field(acc, o);
                    let new = if mine.is_null() {
                        theirs
                    } else {
                        plus(mine, &theirs)
                    };
                    set_field(acc, o, new);
                }
                if p.retract {
                    add_count(acc, o + 1, count_of(acc_field(other, o + 1)));
                }
            }
            PhysKind::Sum0 => {
                if !theirs.is_null() {
                    let new = plus(acc_field(acc, o), &theirs);
                    set_field(acc, o, new);
                }
            }
            PhysKind::Avg => {
                let new = plus(acc_field(acc, o), &theirs);
                set_field(acc, o, new);
                add_count(acc, o + 1, count_of(acc_field(other, o + 1)));
            }
            PhysKind::Min | PhysKind::Max if p.retract => {
                merge_extreme(p, acc, other, other_companion, companion)?;
            }
            PhysKind::Min | PhysKind::Max => {
                accumulate_one(p, acc, &theirs, companion, key_buf)?;
            }
            PhysKind::First | PhysKind::Last => {
                return Err(Error::unsupported("merge of FIRST_VALUE / LAST_VALUE"));
            }
        }
    }
    for set in &plan.distincts {
        for (key, theirs) in other_companion.tagged(set.tag) {
            let mine = companion.count(&key)?;
            let value = decode_value(&key, &set.arg_type)?;
            let (merged, action) = if plan.counter.is_none() {
                // Insert-only bit sets: accumulate when new here and present there.
                (1, (mine == 0 && theirs != 0).then_some(true))
            } else {
                let merged = mine + theirs;
                let action = if merged <= 0 {
                    (mine > 0).then_some(false)
                } else {
                    (mine <= 0).then_some(true)
                };
                (merged, action)
            };
            companion.set(&key, merged)?;
            if let Some(accumulate) = action {
                for &i in &set.inner {
                    if let Some(p) = plan.phys.get(i) {
                        if accumulate {
                            accumulate_one(p, acc, &value, companion, key_buf)?;
                        } else {
                            retract_one(p, acc, &value, companion, key_buf)?;
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// `MinWithRetractAggFunction.merge`.
fn merge_extreme(
    p: &Phys,
    acc: &mut [Scalar],
    other: &[Scalar],
    other_companion: &LocalCompanion,
    companion: &mut dyn Companion,
) -> Result<()> {
    let (o, tag) = (p.acc_offset, p.tag.unwrap_or(0));
    let their_size = count_of(acc_field(other, o + 1));
    let their_min = acc_field(other, o).clone();
    let my_size = count_of(acc_field(acc, o + 1));
    if my_size == 0
        || (their_size > 0
            && !their_min.is_null()
            && (acc_field(acc, o).is_null() || java_better(p, acc_field(acc, o), &their_min)))
    {
        set_field(acc, o, their_min);
    }
    let mut need_update = false;
    for (key, theirs) in other_companion.tagged(tag) {
        let mine = companion.count(&key)?;
        let merged = mine + theirs;
        companion.set(&key, merged)?;
        if merged <= 0 {
            if mine > 0 {
                add_count(acc, o + 1, -1);
                let value = decode_value(&key, &p.arg_type)?;
                if java_equals(&value, acc_field(acc, o)) {
                    need_update = true;
                }
            }
        } else if mine <= 0 {
            add_count(acc, o + 1, 1);
        }
    }
    if need_update {
        update_extreme(p, acc, companion)?;
    }
    Ok(())
}
