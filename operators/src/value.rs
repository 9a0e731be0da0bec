//! SQL value semantics on [`Scalar`]s: Java arithmetic in the result type, SQL comparison
//! (`<`/`>`, as Flink's generated code compares), Java `==` equality of aggregate rows.

use std::cmp::Ordering;

use arrow_schema::DataType;
use state_api::Scalar;

/// `10^38`: DECIMAL(38, s) holds unscaled values of magnitude below this.
const DECIMAL_38_LIMIT: i128 = 100_000_000_000_000_000_000_000_000_000_000_000_000;

/// `a + b` in the values' type as Flink's generated code computes it: integers wrap (Java),
/// floats add (IEEE), decimals (same scale) give `NULL` beyond 38 digits
/// (`DecimalDataUtils.add` into DECIMAL(38, s)). `NULL` if either side is `NULL`.
pub(crate) fn plus(a: &Scalar, b: &Scalar) -> Scalar {
    match (a, b) {
        (Scalar::Int8(x), Scalar::Int8(y)) => Scalar::Int8(x.wrapping_add(*y)),
        (Scalar::Int16(x), Scalar::Int16(y)) => Scalar::Int16(x.wrapping_add(*y)),
        (Scalar::Int32(x), Scalar::Int32(y)) => Scalar::Int32(x.wrapping_add(*y)),
        (Scalar::Int64(x), Scalar::Int64(y)) => Scalar::Int64(x.wrapping_add(*y)),
        (Scalar::Float32(x), Scalar::Float32(y)) => Scalar::Float32(x + y),
        (Scalar::Float64(x), Scalar::Float64(y)) => Scalar::Float64(x + y),
        (Scalar::Decimal128(x), Scalar::Decimal128(y)) => decimal_38(x.checked_add(*y)),
        _ => Scalar::Null,
    }
}

/// `a - b`, as [`plus`].
pub(crate) fn minus(a: &Scalar, b: &Scalar) -> Scalar {
    match (a, b) {
        (Scalar::Int8(x), Scalar::Int8(y)) => Scalar::Int8(x.wrapping_sub(*y)),
        (Scalar::Int16(x), Scalar::Int16(y)) => Scalar::Int16(x.wrapping_sub(*y)),
        (Scalar::Int32(x), Scalar::Int32(y)) => Scalar::Int32(x.wrapping_sub(*y)),
        (Scalar::Int64(x), Scalar::Int64(y)) => Scalar::Int64(x.wrapping_sub(*y)),
        (Scalar::Float32(x), Scalar::Float32(y)) => Scalar::Float32(x - y),
        (Scalar::Float64(x), Scalar::Float64(y)) => Scalar::Float64(x - y),
        (Scalar::Decimal128(x), Scalar::Decimal128(y)) => decimal_38(x.checked_sub(*y)),
        _ => Scalar::Null,
    }
}

fn decimal_38(v: Option<i128>) -> Scalar {
    match v {
        Some(v) if v.unsigned_abs() < DECIMAL_38_LIMIT.unsigned_abs() => Scalar::Decimal128(v),
        _ => Scalar::Null,
    }
}

/// The zero of a numeric type (`$SUM0`'s initial value, the `0` of `0 - x`).
pub(crate) fn zero_of(data_type: &DataType) -> Scalar {
    match data_type {
        DataType::Int8 => Scalar::Int8(0),
        DataType::Int16 => Scalar::Int16(0),
        DataType::Int32 => Scalar::Int32(0),
        DataType::Int64 => Scalar::Int64(0),
        DataType::Float32 => Scalar::Float32(0.0),
        DataType::Float64 => Scalar::Float64(0.0),
        DataType::Decimal128(_, _) => Scalar::Decimal128(0),
        _ => Scalar::Null,
    }
}

/// Whether `data_type` is one SUM / AVG accept.
pub(crate) fn is_numeric(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Decimal128(_, _)
    )
}

/// SQL comparison of two non-null values of one type as Flink's generated code does it
/// (`<`, `>`, `==` on primitives; `compareTo` on strings and decimals): `None` when the two
/// are unordered, i.e. a NaN is involved. `-0.0` and `0.0` compare equal.
pub(crate) fn sql_cmp(a: &Scalar, b: &Scalar) -> Option<Ordering> {
    match (a, b) {
        (Scalar::Float32(x), Scalar::Float32(y)) => x.partial_cmp(y),
        (Scalar::Float64(x), Scalar::Float64(y)) => x.partial_cmp(y),
        _ => Some(a.total_cmp_java(b)),
    }
}

/// Whether `a < b` as SQL's `<` (false for NaN).
pub(crate) fn sql_lt(a: &Scalar, b: &Scalar) -> bool {
    sql_cmp(a, b) == Some(Ordering::Less)
}

/// Whether `a > b` as SQL's `>` (false for NaN).
pub(crate) fn sql_gt(a: &Scalar, b: &Scalar) -> bool {
    sql_cmp(a, b) == Some(Ordering::Greater)
}

/// Equality of two fields of an aggregate row as Flink's generated `RecordEqualiser` compares
/// them: both null, or both non-null and equal with Java `==` for floats (`NaN != NaN`,
/// `-0.0 == 0.0`), bytes for strings, value for the rest.
pub(crate) fn field_eq(a: &Scalar, b: &Scalar) -> bool {
    match (a, b) {
        (Scalar::Null, Scalar::Null) => true,
        (Scalar::Null, _) | (_, Scalar::Null) => false,
        (Scalar::Float32(x), Scalar::Float32(y)) => x == y,
        (Scalar::Float64(x), Scalar::Float64(y)) => x == y,
        _ => a == b,
    }
}

/// `Object.equals` of two boxed values (a MIN/MAX map key against the current extreme):
/// floats by `doubleToLongBits` (all NaNs equal, `-0.0 != 0.0`), others by value.
pub(crate) fn java_equals(a: &Scalar, b: &Scalar) -> bool {
    match (a, b) {
        (Scalar::Float32(x), Scalar::Float32(y)) if x.is_nan() && y.is_nan() => true,
        (Scalar::Float64(x), Scalar::Float64(y)) if x.is_nan() && y.is_nan() => true,
        _ => a == b,
    }
}

/// An `i64` count as a [`Scalar`], and back (0 for anything else).
pub(crate) fn count_of(s: &Scalar) -> i64 {
    match s {
        Scalar::Int64(v) => *v,
        _ => 0,
    }
}

/// `AVG` as Flink's planner rewrites it: `sum / count` in the result type (integer types:
/// Java division truncated toward zero, then cast back to the argument type; floats: IEEE
/// division; DECIMAL: `CAST(sum AS DECIMAL(38, max(6, s))) / count` rounded half-up, where
/// `result` carries the output scale and `sum_type` the sum's). `NULL` when `count == 0` or
/// `sum` is `NULL`.
pub(crate) fn avg(sum: &Scalar, count: i64, sum_type: &DataType, result: &DataType) -> Scalar {
    if count == 0 {
        return Scalar::Null;
    }
    #[expect(
        clippy::cast_possible_truncation,
        reason = "Java's narrowing cast back to the argument type"
    )]
    #[expect(
        clippy::cast_precision_loss,
        reason = "Java's long-to-float conversion"
    )]
    match (sum, sum_type, result) {
        (Scalar::Int8(s), _, _) => Scalar::Int8(i64::from(*s).wrapping_div(count) as i8),
        (Scalar::Int16(s), _, _) => Scalar::Int16(i64::from(*s).wrapping_div(count) as i16),
        (Scalar::Int32(s), _, _) => Scalar::Int32(i64::from(*s).wrapping_div(count) as i32),
        (Scalar::Int64(s), _, _) => Scalar::Int64(s.wrapping_div(count)),
        (Scalar::Float32(s), _, _) => Scalar::Float32(s / count as f32),
        (Scalar::Float64(s), _, _) => Scalar::Float64(s / count as f64),
        (
            Scalar::Decimal128(s),
            DataType::Decimal128(_, sum_scale),
            DataType::Decimal128(_, out_scale),
        ) => decimal_avg_scaled(*s, *sum_scale, count, *out_scale),
        _ => Scalar::Null,
    }
}

/// `CAST(sum AS DECIMAL(38, out_scale)) / count`, rounded half-up to `out_scale`, for a sum
/// of scale `sum_scale`; `NULL` on overflow.
pub(crate) fn decimal_avg_scaled(sum: i128, sum_scale: i8, count: i64, out_scale: i8) -> Scalar {
    let shift = i32::from(out_scale) - i32::from(sum_scale);
    let Ok(shift) = u32::try_from(shift) else {
        return Scalar::Null;
    };
    let Some(scaled) = 10_i128.checked_pow(shift).and_then(|f| sum.checked_mul(f)) else {
        return Scalar::Null;
    };
    let divisor = i128::from(count);
    if divisor == 0 {
        return Scalar::Null;
    }
    let quotient = scaled / divisor;
    let remainder = scaled % divisor;
    // Half-up: away from zero when |remainder| * 2 >= |divisor|.
    let away = remainder != 0 && remainder.unsigned_abs() * 2 >= divisor.unsigned_abs();
    let negative = (scaled < 0) != (divisor < 0);
    let value = match (away, negative) {
        (true, true) => quotient - 1,
        (true, false) => quotient + 1,
        (false, _) => quotient,
    };
    decimal_38(Some(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_sums_wrap_and_decimals_overflow_to_null() {
        assert_eq!(
            plus(&Scalar::Int64(i64::MAX), &Scalar::Int64(1)),
            Scalar::Int64(i64::MIN)
        );
        assert_eq!(
            plus(&Scalar::Int8(127), &Scalar::Int8(1)),
            Scalar::Int8(-128)
        );
        assert_eq!(
            plus(
                &Scalar::Decimal128(DECIMAL_38_LIMIT - 1),
                &Scalar::Decimal128(1)
            ),
            Scalar::Null
        );
        assert_eq!(plus(&Scalar::Null, &Scalar::Int32(1)), Scalar::Null);
    }

    #[test]
    fn avg_truncates_and_rounds_half_up() {
        assert_eq!(
            avg(&Scalar::Int64(-7), 2, &DataType::Int64, &DataType::Int64),
            Scalar::Int64(-3)
        );
        assert_eq!(
            avg(&Scalar::Int32(7), 2, &DataType::Int32, &DataType::Int32),
            Scalar::Int32(3)
        );
        // 1.00 / 3 = 0.333333; 2.00 / 3 = 0.666667; -2.00 / 3 = -0.666667
        assert_eq!(
            decimal_avg_scaled(100, 2, 3, 6),
            Scalar::Decimal128(333_333)
        );
        assert_eq!(
            decimal_avg_scaled(200, 2, 3, 6),
            Scalar::Decimal128(666_667)
        );
        assert_eq!(
            decimal_avg_scaled(-200, 2, 3, 6),
            Scalar::Decimal128(-666_667)
        );
        assert_eq!(decimal_avg_scaled(1, 6, 2, 6), Scalar::Decimal128(1));
        assert_eq!(
            avg(&Scalar::Int64(1), 0, &DataType::Int64, &DataType::Int64),
            Scalar::Null
        );
    }

    #[test]
    fn comparisons_follow_sql_and_java() {
        assert!(!sql_lt(&Scalar::Float64(f64::NAN), &Scalar::Float64(1.0)));
        assert!(!sql_gt(&Scalar::Float64(f64::NAN), &Scalar::Float64(1.0)));
        assert!(!sql_lt(&Scalar::Float64(-0.0), &Scalar::Float64(0.0)));
        assert!(field_eq(&Scalar::Float64(-0.0), &Scalar::Float64(0.0)));
        assert!(!field_eq(
            &Scalar::Float64(f64::NAN),
            &Scalar::Float64(f64::NAN)
        ));
        assert!(java_equals(
            &Scalar::Float64(f64::NAN),
            &Scalar::Float64(-f64::NAN)
        ));
        assert!(!java_equals(&Scalar::Float64(-0.0), &Scalar::Float64(0.0)));
    }
}
