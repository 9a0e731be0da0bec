//! The non-equi part of a join condition: a conjunction of comparisons over the two sides'
//! columns and literals, as SQL text.
//!
//! Grammar (whitespace-separated tokens, case-insensitive `AND`):
//!
//! ```text
//! condition  := comparison ( AND comparison )*
//! comparison := operand ( = | <> | != | < | <= | > | >= ) operand
//! operand    := side . column | column | integer | decimal | 'string'
//! side       := `left` | left | `right` | right        column := `name` | name
//! ```
//!
//! An unqualified column must name a column of exactly one input.
//!
//! A comparison with a `NULL` operand is not true (SQL three-valued logic in a WHERE), and
//! a NaN compares unordered (every comparison but `<>` is false), as Java's primitive
//! comparisons in Flink's generated code.

use std::cmp::Ordering;

use arrow_schema::{DataType, Fields};
use state_api::Scalar;

use crate::error::{Error, Result};

/// Which join input a column belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinSide {
    /// The left input.
    Left,
    /// The right input.
    Right,
}

#[derive(Debug, Clone, PartialEq)]
enum Operand {
    Column(JoinSide, usize, DataType),
    Integer(i128),
    Float(f64),
    Text(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A parsed non-equi join condition.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinCondition {
    comparisons: Vec<(Operand, Op, Operand)>,
}

fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '\'' {
            chars.next();
            let mut s = String::from("'");
            while let Some(c) = chars.next() {
                if c == '\'' {
                    if chars.peek() == Some(&'\'') {
                        chars.next();
                        s.push('\'');
                        continue;
                    }
                    break;
                }
                s.push(c);
            }
            out.push(s);
        } else if "<>=!".contains(c) {
            let mut s = String::new();
            while let Some(&c) = chars.peek() {
                if "<>=!".contains(c) {
                    s.push(c);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(s);
        } else if c == '.' {
            chars.next();
            out.push(".".to_owned());
        } else {
            let mut s = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || "<>=!.'".contains(c) && !(c == '.' && is_number(&s)) {
                    break;
                }
                s.push(c);
                chars.next();
            }
            out.push(s);
        }
    }
    out
}

fn is_number(s: &str) -> bool {
    !s.is_empty()
        && s.trim_start_matches('-')
            .chars()
            .all(|c| c.is_ascii_digit())
}

fn unquote(s: &str) -> &str {
    s.strip_prefix('`')
        .and_then(|s| s.strip_suffix('`'))
        .unwrap_or(s)
}

impl JoinCondition {
    /// Parses `text` against the two inputs' fields.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for text outside the grammar or an unknown column.
    pub fn parse(text: &str, left: &Fields, right: &Fields) -> Result<Self> {
        let unsupported = || Error::unsupported(format!("non-equi join condition `{text}`"));
        let toks = tokens(text);
        let mut pos = 0;
        let mut comparisons = Vec::new();
        let operand = |pos: &mut usize| -> Result<Operand> {
            let t = toks.get(*pos).ok_or_else(unsupported)?;
            if let Some(s) = t.strip_prefix('\'') {
                *pos += 1;
                return Ok(Operand::Text(s.to_owned()));
            }
            if toks.get(*pos + 1).map(String::as_str) == Some(".") {
                let side = match unquote(t).to_ascii_lowercase().as_str() {
                    "left" => JoinSide::Left,
                    "right" => JoinSide::Right,
                    _ => return Err(unsupported()),
                };
                let name = unquote(toks.get(*pos + 2).ok_or_else(unsupported)?);
                let fields = if side == JoinSide::Left { left } else { right };
                let (index, field) = fields.find(name).ok_or_else(unsupported)?;
                *pos += 3;
                return Ok(Operand::Column(side, index, field.data_type().clone()));
            }
            *pos += 1;
            // An unqualified column: its name must be unique over both inputs.
            let name = unquote(t);
            match (left.find(name), right.find(name)) {
                (Some((i, f)), None) => {
                    return Ok(Operand::Column(JoinSide::Left, i, f.data_type().clone()));
                }
                (None, Some((i, f))) => {
                    return Ok(Operand::Column(JoinSide::Right, i, f.data_type().clone()));
                }
                (Some(_), Some(_)) => return Err(unsupported()),
                (None, None) => {}
            }
            if let Ok(i) = t.parse::<i128>() {
                return Ok(Operand::Integer(i));
            }
            t.parse::<f64>()
                .map(Operand::Float)
                .map_err(|_| unsupported())
        };
        loop {
            let a = operand(&mut pos)?;
            let op = match toks.get(pos).map(String::as_str) {
                Some("=") => Op::Eq,
                Some("<>" | "!=") => Op::Ne,
                Some("<") => Op::Lt,
                Some("<=") => Op::Le,
                Some(">") => Op::Gt,
                Some(">=") => Op::Ge,
                _ => return Err(unsupported()),
            };
            pos += 1;
            let b = operand(&mut pos)?;
            comparisons.push((a, op, b));
            match toks.get(pos) {
                None => break,
                Some(t) if t.eq_ignore_ascii_case("and") => pos += 1,
                Some(_) => return Err(unsupported()),
            }
        }
        Ok(Self { comparisons })
    }

    /// Whether the condition holds for `left` ‖ `right`.
    pub fn eval(&self, left: &[Scalar], right: &[Scalar]) -> bool {
        self.comparisons.iter().all(|(a, op, b)| {
            let (Some(x), Some(y)) = (value(a, left, right), value(b, left, right)) else {
                return false;
            };
            match compare(&x, &y) {
                None => *op == Op::Ne,
                Some(o) => match op {
                    Op::Eq => o == Ordering::Equal,
                    Op::Ne => o != Ordering::Equal,
                    Op::Lt => o == Ordering::Less,
                    Op::Le => o != Ordering::Greater,
                    Op::Gt => o == Ordering::Greater,
                    Op::Ge => o != Ordering::Less,
                },
            }
        })
    }
}

/// A comparable form of an operand's value (`None` for NULL).
#[derive(Debug, Clone)]
enum Num {
    /// An exact number: unscaled value and scale.
    Exact(i128, i8),
    Float(f64),
    Text(String),
    Other(Scalar),
}

fn value(o: &Operand, left: &[Scalar], right: &[Scalar]) -> Option<Num> {
    Some(match o {
        Operand::Integer(i) => Num::Exact(*i, 0),
        Operand::Float(f) => Num::Float(*f),
        Operand::Text(s) => Num::Text(s.clone()),
        Operand::Column(side, i, dt) => {
            let row = if *side == JoinSide::Left { left } else { right };
            match (row.get(*i)?, dt) {
                (Scalar::Null, _) => return None,
                (Scalar::Int8(v), _) => Num::Exact(i128::from(*v), 0),
                (Scalar::Int16(v), _) => Num::Exact(i128::from(*v), 0),
                (Scalar::Int32(v), _) => Num::Exact(i128::from(*v), 0),
                (Scalar::Int64(v), _) => Num::Exact(i128::from(*v), 0),
                (Scalar::Decimal128(v), DataType::Decimal128(_, s)) => Num::Exact(*v, *s),
                (Scalar::Float32(v), _) => Num::Float(f64::from(*v)),
                (Scalar::Float64(v), _) => Num::Float(*v),
                (Scalar::Utf8(s), _) => Num::Text(s.clone()),
                (other, _) => Num::Other(other.clone()),
            }
        }
    })
}

#[expect(
    clippy::cast_precision_loss,
    reason = "SQL promotes exact numbers to DOUBLE"
)]
fn to_f64(v: i128, scale: i8) -> f64 {
    v as f64 / 10_f64.powi(i32::from(scale))
}

fn compare(lhs: &Num, rhs: &Num) -> Option<Ordering> {
    match (lhs, rhs) {
        (Num::Exact(x, sx), Num::Exact(y, sy)) => {
            let s = (*sx).max(*sy);
            let scale = |v: i128, from: i8| {
                10_i128
                    .checked_pow(u32::try_from(s - from).ok()?)
                    .and_then(|f| v.checked_mul(f))
            };
            Some(scale(*x, *sx)?.cmp(&scale(*y, *sy)?))
        }
        (Num::Float(x), Num::Float(y)) => x.partial_cmp(y),
        (Num::Float(x), Num::Exact(y, scale)) => x.partial_cmp(&to_f64(*y, *scale)),
        (Num::Exact(x, scale), Num::Float(y)) => to_f64(*x, *scale).partial_cmp(y),
        (Num::Text(x), Num::Text(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (Num::Other(x), Num::Other(y)) => Some(x.total_cmp_java(y)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use arrow_schema::Field;

    use super::*;

    #[test]
    fn parses_and_evaluates_conjunctions() {
        let left = Fields::from(vec![
            Field::new("lk", DataType::Int32, false),
            Field::new("lx", DataType::Int32, true),
        ]);
        let right = Fields::from(vec![
            Field::new("rk", DataType::Int32, false),
            Field::new("rx", DataType::Int64, true),
        ]);
        let c = JoinCondition::parse("`left`.lx <= `right`.rx", &left, &right).unwrap();
        let l = |x: Option<i32>| vec![Scalar::Int32(1), x.map_or(Scalar::Null, Scalar::Int32)];
        let r = |x: i64| vec![Scalar::Int32(1), Scalar::Int64(x)];
        assert!(c.eval(&l(Some(3)), &r(3)));
        assert!(!c.eval(&l(Some(4)), &r(3)));
        assert!(!c.eval(&l(None), &r(3)));
        let c = JoinCondition::parse("left.lx > 2 AND `right`.`rx` <> -1", &left, &right).unwrap();
        assert!(c.eval(&l(Some(3)), &r(0)));
        assert!(!c.eval(&l(Some(3)), &r(-1)));
        assert!(JoinCondition::parse("lx + 1 < rx", &left, &right).is_err());
        let c = JoinCondition::parse("lx < rx", &left, &right).unwrap();
        assert!(c.eval(&l(Some(2)), &r(3)));
        assert!(JoinCondition::parse("`left`.nope < 1", &left, &right).is_err());
    }
}
