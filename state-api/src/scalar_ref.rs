//! [`ScalarRef`]: a cell borrowed from its Arrow column, what [`Scalar`] owns.

use crate::row::Scalar;

/// One value of a row borrowed from where it lives: a [`Scalar`] whose string or bytes are
/// not copied. [`RowReader::cell`](crate::RowReader::cell) reads one straight from a column,
/// so a caller that only encodes the value (a state key, a join record) allocates nothing
/// per cell; `ScalarRef::from(&scalar)` borrows an owned one, so one encoder serves both.
///
/// No equality: floats would compare by value here and bitwise in [`Scalar`]; compare
/// [`to_scalar`](Self::to_scalar) results.
///
/// ```
/// use state_api::{Scalar, ScalarRef};
///
/// let owned = Scalar::Utf8("flink".to_owned());
/// let cell = ScalarRef::from(&owned);
/// assert!(matches!(cell, ScalarRef::Utf8("flink")));
/// assert!(!cell.is_null());
/// assert_eq!(cell.to_scalar(), owned);
/// ```
#[derive(Debug, Clone, Copy)]
pub enum ScalarRef<'a> {
    /// SQL `NULL`.
    Null,
    /// `Boolean`.
    Boolean(bool),
    /// `Int8` (`TINYINT`).
    Int8(i8),
    /// `Int16` (`SMALLINT`).
    Int16(i16),
    /// `Int32` (`INT`).
    Int32(i32),
    /// `Int64` (`BIGINT`).
    Int64(i64),
    /// `Float32` (`FLOAT`).
    Float32(f32),
    /// `Float64` (`DOUBLE`).
    Float64(f64),
    /// `Decimal128(p, s)`: the unscaled value (precision and scale belong to the field).
    Decimal128(i128),
    /// `Utf8` (`STRING`), borrowed.
    Utf8(&'a str),
    /// `Binary` (`BYTES`), borrowed.
    Binary(&'a [u8]),
    /// `Date32`: days since 1970-01-01.
    Date32(i32),
    /// `Timestamp(unit, tz)`: since the epoch in the field's unit.
    Timestamp(i64),
}

impl ScalarRef<'_> {
    /// Whether this is [`ScalarRef::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, ScalarRef::Null)
    }

    /// The owned value (strings and bytes copied).
    pub fn to_scalar(self) -> Scalar {
        match self {
            ScalarRef::Null => Scalar::Null,
            ScalarRef::Boolean(v) => Scalar::Boolean(v),
            ScalarRef::Int8(v) => Scalar::Int8(v),
            ScalarRef::Int16(v) => Scalar::Int16(v),
            ScalarRef::Int32(v) => Scalar::Int32(v),
            ScalarRef::Int64(v) => Scalar::Int64(v),
            ScalarRef::Float32(v) => Scalar::Float32(v),
            ScalarRef::Float64(v) => Scalar::Float64(v),
            ScalarRef::Decimal128(v) => Scalar::Decimal128(v),
            ScalarRef::Utf8(s) => Scalar::Utf8(s.to_owned()),
            ScalarRef::Binary(b) => Scalar::Binary(b.to_vec()),
            ScalarRef::Date32(v) => Scalar::Date32(v),
            ScalarRef::Timestamp(v) => Scalar::Timestamp(v),
        }
    }
}

impl<'a> From<&'a Scalar> for ScalarRef<'a> {
    fn from(value: &'a Scalar) -> Self {
        match value {
            Scalar::Null => ScalarRef::Null,
            Scalar::Boolean(v) => ScalarRef::Boolean(*v),
            Scalar::Int8(v) => ScalarRef::Int8(*v),
            Scalar::Int16(v) => ScalarRef::Int16(*v),
            Scalar::Int32(v) => ScalarRef::Int32(*v),
            Scalar::Int64(v) => ScalarRef::Int64(*v),
            Scalar::Float32(v) => ScalarRef::Float32(*v),
            Scalar::Float64(v) => ScalarRef::Float64(*v),
            Scalar::Decimal128(v) => ScalarRef::Decimal128(*v),
            Scalar::Utf8(s) => ScalarRef::Utf8(s),
            Scalar::Binary(b) => ScalarRef::Binary(b),
            Scalar::Date32(v) => ScalarRef::Date32(*v),
            Scalar::Timestamp(v) => ScalarRef::Timestamp(*v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_round_trips_through_the_borrow() {
        let values = [
            Scalar::Null,
            Scalar::Boolean(true),
            Scalar::Int8(-8),
            Scalar::Int16(-16),
            Scalar::Int32(-32),
            Scalar::Int64(i64::MIN),
            Scalar::Float32(-0.0),
            Scalar::Float64(f64::NAN),
            Scalar::Decimal128(-12_345),
            Scalar::Utf8("ü".to_owned()),
            Scalar::Binary(vec![0, 255]),
            Scalar::Date32(-1),
            Scalar::Timestamp(1_700_000_000_123),
        ];
        for value in &values {
            let cell = ScalarRef::from(value);
            assert_eq!(cell.is_null(), value.is_null());
            assert_eq!(&cell.to_scalar(), value);
        }
    }
}
