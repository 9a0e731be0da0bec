//! The physical plan of a GROUP BY, as Flink's planner derives it from the SQL aggregates.
//!
//! - When any `AVG` is present, Calcite's `AggregateReduceFunctionsRule` rewrites every
//!   `SUM(x)` into `CASE(COUNT(x) = 0, NULL, $SUM0(x))` and every `AVG(x)` into that over
//!   `COUNT(x)`; the stateful node then computes `$SUM0` and `COUNT` (shared, deduplicated)
//!   and a `Calc` projects. Equal-row suppression compares the node's fields, not the
//!   projection.
//! - On retracting input every function is its `*_RETRACT` version and a record counter is
//!   added: the `COUNT(*)` of the query, else a hidden `count1`.

use arrow_schema::{DataType, Field, Fields};

use crate::error::{Error, Result};
use crate::spec::{AggCall, AggFunction, GroupAggSpec};
use crate::value::is_numeric;

/// A function of the stateful node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum PhysKind {
    /// The hidden `count1` record counter (not an output field of the node).
    Count1,
    CountStar,
    Count,
    Sum,
    Sum0,
    /// `AvgAggFunction` (not rewritten): sum in the widened sum type, count.
    Avg,
    Min,
    Max,
    First,
    Last,
}

/// One aggregate of the stateful node.
#[derive(Debug, Clone)]
pub(crate) struct Phys {
    pub kind: PhysKind,
    pub arg: Option<usize>,
    /// The argument's type (`Int64` for the counts).
    pub arg_type: DataType,
    /// The node's output type of this aggregate.
    pub result_type: DataType,
    /// Whether it is the `*_RETRACT` version.
    pub retract: bool,
    /// The distinct set it belongs to.
    pub distinct: Option<usize>,
    /// First accumulator field.
    pub acc_offset: usize,
    /// Companion tag of a MIN/MAX with retraction (FIRST/LAST with retraction: this one and
    /// the next).
    pub tag: Option<u16>,
}

impl Phys {
    /// Accumulator width.
    pub(crate) fn acc_width(&self) -> usize {
        match self.kind {
            PhysKind::Avg => 2,
            PhysKind::Sum | PhysKind::Min | PhysKind::Max | PhysKind::First | PhysKind::Last
                if self.retract =>
            {
                2
            }
            _ => 1,
        }
    }

    /// Whether Flink's two-phase (local-global) plan can split it (`merge` exists).
    pub(crate) fn mergeable(&self) -> bool {
        !matches!(self.kind, PhysKind::First | PhysKind::Last)
    }
}

/// A DISTINCT argument: its value -> count companion and the aggregates that see it.
#[derive(Debug, Clone)]
pub(crate) struct DistinctSet {
    pub arg: usize,
    pub arg_type: DataType,
    pub tag: u16,
    pub inner: Vec<usize>,
}

/// How an output aggregate is computed from the node's fields.
#[derive(Debug, Clone)]
pub(crate) enum Projection {
    /// The node's field.
    Phys(usize),
    /// `CASE(count = 0, NULL, sum0)`.
    SumOrNull { sum: usize, count: usize },
    /// `CASE(count = 0, NULL, sum0) / count` in `result`.
    Avg {
        sum: usize,
        count: usize,
        result: DataType,
    },
}

/// The whole plan.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub phys: Vec<Phys>,
    pub distincts: Vec<DistinctSet>,
    pub projections: Vec<Projection>,
    pub acc_fields: Fields,
    /// The accumulator field of the record counter (retracting input only).
    pub counter: Option<usize>,
    /// Output fields (group keys, then the aggregates).
    pub output: Fields,
    /// Whether mini-batch runs local-global (every aggregate mergeable) or one-phase.
    pub two_phase: bool,
    /// Companion tags in use (MIN/MAX retract and DISTINCT).
    pub companion_tags: u16,
}

fn sum_type(arg: &DataType) -> DataType {
    match arg {
        DataType::Decimal128(_, s) => DataType::Decimal128(38, *s),
        other => other.clone(),
    }
}

/// `AvgAggFunction.getSumType()`: BIGINT for the integer types, DOUBLE for FLOAT and
/// DOUBLE, DECIMAL(38, s) for DECIMAL(p, s).
pub(crate) fn avg_sum_type(arg: &DataType) -> DataType {
    match arg {
        DataType::Float32 | DataType::Float64 => DataType::Float64,
        DataType::Decimal128(_, s) => DataType::Decimal128(38, *s),
        _ => DataType::Int64,
    }
}

fn avg_type(arg: &DataType) -> DataType {
    match arg {
        DataType::Decimal128(_, s) => DataType::Decimal128(38, (*s).max(6)),
        other => other.clone(),
    }
}

struct Builder<'a> {
    spec: &'a GroupAggSpec,
    retract: bool,
    phys: Vec<Phys>,
    distincts: Vec<DistinctSet>,
    tags: u16,
}

impl Builder<'_> {
    fn arg_type(&self, call: &AggCall) -> Result<(Option<usize>, DataType)> {
        match call.args.as_slice() {
            [] => Ok((None, DataType::Int64)),
            [a] => {
                let field = self.spec.input.get(*a).ok_or_else(|| {
                    Error::spec(format!("aggregate argument {a} outside the input"))
                })?;
                Ok((Some(*a), field.data_type().clone()))
            }
            _ => Err(Error::unsupported("aggregate with more than one argument")),
        }
    }

    fn next_tag(&mut self) -> Result<u16> {
        let t = self.tags;
        self.tags = t
            .checked_add(1)
            .ok_or_else(|| Error::unsupported("more than 65535 companions"))?;
        Ok(t)
    }

    /// The index of the node aggregate `kind(arg)` (deduplicated), creating it.
    fn phys(
        &mut self,
        kind: PhysKind,
        arg: Option<usize>,
        arg_type: &DataType,
        distinct: bool,
    ) -> Result<usize> {
        let distinct_set = match (distinct, arg) {
            (true, Some(a)) => Some(self.distinct_set(a, arg_type)?),
            (true, None) => return Err(Error::unsupported("COUNT(DISTINCT *)")),
            (false, _) => None,
        };
        if let Some(i) = self
            .phys
            .iter()
            .position(|p| p.kind == kind && p.arg == arg && p.distinct == distinct_set)
        {
            return Ok(i);
        }
        let result_type = match kind {
            PhysKind::Count1 | PhysKind::CountStar | PhysKind::Count => DataType::Int64,
            PhysKind::Avg => {
                if !is_numeric(arg_type) {
                    return Err(Error::spec(format!("AVG over {arg_type}")));
                }
                avg_type(arg_type)
            }
            PhysKind::Sum | PhysKind::Sum0 => {
                if !is_numeric(arg_type) {
                    return Err(Error::spec(format!("SUM over {arg_type}")));
                }
                sum_type(arg_type)
            }
            _ => arg_type.clone(),
        };
        // Inside a distinct set, MIN/MAX see each value once; their companion is still needed
        // for retraction. FIRST/LAST with retraction take two tags: `tag` for the order
        // entries (`orderToValueMap`), `tag + 1` for the value entries (`valueToOrderMap`).
        let tag = match kind {
            PhysKind::Min | PhysKind::Max if self.retract => Some(self.next_tag()?),
            PhysKind::First | PhysKind::Last if self.retract => {
                let t = self.next_tag()?;
                self.next_tag()?;
                Some(t)
            }
            _ => None,
        };
        let index = self.phys.len();
        self.phys.push(Phys {
            kind,
            arg,
            arg_type: arg_type.clone(),
            result_type,
            retract: self.retract,
            distinct: distinct_set,
            acc_offset: 0,
            tag,
        });
        if let Some(d) = distinct_set
            && let Some(set) = self.distincts.get_mut(d)
        {
            set.inner.push(index);
        }
        Ok(index)
    }

    fn distinct_set(&mut self, arg: usize, arg_type: &DataType) -> Result<usize> {
        if let Some(i) = self.distincts.iter().position(|d| d.arg == arg) {
            return Ok(i);
        }
        let tag = self.next_tag()?;
        self.distincts.push(DistinctSet {
            arg,
            arg_type: arg_type.clone(),
            tag,
            inner: Vec::new(),
        });
        Ok(self.distincts.len() - 1)
    }
}

/// Derives the plan of `spec`.
///
/// Calcite's `AggregateReduceFunctionsRule` (which fires when an AVG is present and rewrites
/// every SUM and AVG into `$SUM0` + COUNT) runs in Flink's cost-based logical phase, so its
/// result is only kept when it is cheaper: when the rewritten node has fewer aggregate calls
/// than the query (shared `$SUM0`/COUNT calls; the Calc on top costs less than one call).
/// Otherwise AVG stays `AvgAggFunction` (sum in BIGINT / DOUBLE / DECIMAL(38, s)).
///
/// # Errors
/// [`Error::InvalidSpec`] / [`Error::Unsupported`].
pub(crate) fn plan(spec: &GroupAggSpec) -> Result<Plan> {
    let has_avg = spec
        .aggregates
        .iter()
        .any(|c| c.function == AggFunction::Avg);
    if has_avg {
        let reduced = plan_with(spec, true)?;
        let mut original: Vec<&AggCall> = Vec::new();
        for call in &spec.aggregates {
            if !original.contains(&call) {
                original.push(call);
            }
        }
        let calls = reduced
            .phys
            .iter()
            .filter(|p| p.kind != PhysKind::Count1)
            .count();
        if calls < original.len() {
            return Ok(reduced);
        }
    }
    plan_with(spec, false)
}

#[expect(
    clippy::too_many_lines,
    reason = "one pass mirroring the planner rule by rule"
)]
fn plan_with(spec: &GroupAggSpec, reduce: bool) -> Result<Plan> {
    let mut b = Builder {
        spec,
        retract: !spec.input_insert_only,
        phys: Vec::new(),
        distincts: Vec::new(),
        tags: 0,
    };
    let mut projections = Vec::with_capacity(spec.aggregates.len());
    let mut output_types = Vec::with_capacity(spec.aggregates.len());
    for call in &spec.aggregates {
        let (arg, arg_type) = b.arg_type(call)?;
        if arg.is_none() && call.function != AggFunction::CountStar {
            return Err(Error::spec(format!(
                "{:?} without an argument",
                call.function
            )));
        }
        let d = call.distinct;
        let (projection, out_type) = match call.function {
            AggFunction::CountStar => (
                Projection::Phys(b.phys(PhysKind::CountStar, None, &DataType::Int64, d)?),
                DataType::Int64,
            ),
            AggFunction::Count => (
                Projection::Phys(b.phys(PhysKind::Count, arg, &arg_type, d)?),
                DataType::Int64,
            ),
            AggFunction::Sum if reduce => {
                let sum = b.phys(PhysKind::Sum0, arg, &arg_type, d)?;
                let count = b.phys(PhysKind::Count, arg, &arg_type, d)?;
                (Projection::SumOrNull { sum, count }, sum_type(&arg_type))
            }
            AggFunction::Sum => (
                Projection::Phys(b.phys(PhysKind::Sum, arg, &arg_type, d)?),
                sum_type(&arg_type),
            ),
            AggFunction::Sum0 => (
                Projection::Phys(b.phys(PhysKind::Sum0, arg, &arg_type, d)?),
                sum_type(&arg_type),
            ),
            AggFunction::Avg if !reduce => {
                let avg = b.phys(PhysKind::Avg, arg, &arg_type, d)?;
                (Projection::Phys(avg), avg_type(&arg_type))
            }
            AggFunction::Avg => {
                if !is_numeric(&arg_type) {
                    return Err(Error::spec(format!("AVG over {arg_type}")));
                }
                let sum = b.phys(PhysKind::Sum0, arg, &arg_type, d)?;
                let count = b.phys(PhysKind::Count, arg, &arg_type, d)?;
                let result = avg_type(&arg_type);
                (
                    Projection::Avg {
                        sum,
                        count,
                        result: result.clone(),
                    },
                    result,
                )
            }
            AggFunction::Min => (
                Projection::Phys(b.phys(PhysKind::Min, arg, &arg_type, d)?),
                arg_type.clone(),
            ),
            AggFunction::Max => (
                Projection::Phys(b.phys(PhysKind::Max, arg, &arg_type, d)?),
                arg_type.clone(),
            ),
            AggFunction::FirstValue => (
                Projection::Phys(b.phys(PhysKind::First, arg, &arg_type, d)?),
                arg_type.clone(),
            ),
            AggFunction::LastValue => (
                Projection::Phys(b.phys(PhysKind::Last, arg, &arg_type, d)?),
                arg_type.clone(),
            ),
        };
        projections.push(projection);
        output_types.push(out_type);
    }
    // The record counter of a retracting input: COUNT(*) (not distinct), else a hidden count1.
    let counter_phys = if b.retract {
        let existing = b
            .phys
            .iter()
            .position(|p| p.kind == PhysKind::CountStar && p.distinct.is_none());
        Some(match existing {
            Some(i) => i,
            None => b.phys(PhysKind::Count1, None, &DataType::Int64, false)?,
        })
    } else {
        None
    };
    let mut phys = b.phys;
    let mut acc_fields = Vec::new();
    for (i, p) in phys.iter_mut().enumerate() {
        p.acc_offset = acc_fields.len();
        let (value_type, value_nullable) = match p.kind {
            PhysKind::Count1 | PhysKind::CountStar | PhysKind::Count => (DataType::Int64, false),
            PhysKind::Avg => (avg_sum_type(&p.arg_type), true),
            _ => (p.result_type.clone(), true),
        };
        acc_fields.push(Field::new(format!("a{i}"), value_type, value_nullable));
        if p.acc_width() == 2 {
            acc_fields.push(Field::new(format!("a{i}_count"), DataType::Int64, false));
        }
    }
    let counter = counter_phys.and_then(|i| phys.get(i)).map(|p| p.acc_offset);
    let mut output: Vec<Field> = Vec::new();
    for &g in &spec.group_by {
        let field = spec
            .input
            .get(g)
            .ok_or_else(|| Error::spec(format!("group key {g} outside the input")))?;
        output.push(field.as_ref().clone());
    }
    for (i, ty) in output_types.into_iter().enumerate() {
        let name = spec
            .output_names
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("agg{i}"));
        let nullable = ty != DataType::Int64
            || !matches!(
                spec.aggregates.get(i).map(|c| c.function),
                Some(AggFunction::Count | AggFunction::CountStar)
            );
        output.push(Field::new(name, ty, nullable));
    }
    let two_phase = phys.iter().all(Phys::mergeable);
    Ok(Plan {
        phys,
        distincts: b.distincts,
        projections,
        acc_fields: Fields::from(acc_fields),
        counter,
        output: Fields::from(output),
        two_phase,
        companion_tags: b.tags,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> Fields {
        Fields::from(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("b", DataType::Int64, true),
            Field::new("m", DataType::Decimal128(10, 2), true),
        ])
    }

    #[test]
    fn avg_reduces_sums_and_shares_counts() {
        let spec = GroupAggSpec::new(
            input(),
            vec![0],
            vec![
                AggCall::new(AggFunction::CountStar, vec![]),
                AggCall::new(AggFunction::Count, vec![1]),
                AggCall::new(AggFunction::Sum, vec![1]),
                AggCall::new(AggFunction::Avg, vec![1]),
                AggCall::new(AggFunction::Avg, vec![2]),
                AggCall::new(AggFunction::Sum, vec![2]),
            ],
            true,
        );
        // 6 calls in the query, 5 after the rewrite: rewritten.
        let p = plan(&spec).unwrap();
        let kinds: Vec<_> = p.phys.iter().map(|p| (p.kind, p.arg)).collect();
        assert_eq!(
            kinds,
            [
                (PhysKind::CountStar, None),
                (PhysKind::Count, Some(1)),
                (PhysKind::Sum0, Some(1)),
                (PhysKind::Sum0, Some(2)),
                (PhysKind::Count, Some(2)),
            ]
        );
        assert_eq!(p.output[5].data_type(), &DataType::Decimal128(38, 6));
        assert!(p.counter.is_none());
        // SUM(b), AVG(b): 2 calls either way, so Flink keeps AvgAggFunction.
        let spec = GroupAggSpec::new(
            input(),
            vec![0],
            vec![
                AggCall::new(AggFunction::Sum, vec![1]),
                AggCall::new(AggFunction::Avg, vec![1]),
            ],
            true,
        );
        let kinds: Vec<_> = plan(&spec).unwrap().phys.iter().map(|p| p.kind).collect();
        assert_eq!(kinds, [PhysKind::Sum, PhysKind::Avg]);
    }

    #[test]
    fn retracting_input_gets_a_counter() {
        let spec = GroupAggSpec::new(
            input(),
            vec![0],
            vec![
                AggCall::new(AggFunction::Min, vec![1]),
                AggCall::new(AggFunction::Count, vec![1]).distinct(),
            ],
            false,
        );
        let p = plan(&spec).unwrap();
        assert_eq!(p.phys.last().unwrap().kind, PhysKind::Count1);
        assert_eq!(p.counter, Some(3));
        assert_eq!(p.companion_tags, 2);
        let spec = GroupAggSpec::new(
            input(),
            vec![0],
            vec![AggCall::new(AggFunction::FirstValue, vec![1])],
            false,
        );
        // FIRST_VALUE with retraction: value + sequence, two companion tags, one phase.
        let p = plan(&spec).unwrap();
        assert_eq!(p.phys[0].acc_width(), 2);
        assert_eq!(p.phys[0].tag, Some(0));
        assert_eq!(p.companion_tags, 2);
        assert!(!p.two_phase);
    }
}
