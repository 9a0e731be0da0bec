//! Value codecs: a table's values to Arrow columns and back, one pass per bundle.

use std::fmt::Debug;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, StringArray};
use arrow_schema::{DataType, Field, Fields};

use crate::error::{Error, Result};

/// Converts a table's values to Arrow columns and back.
///
/// A codec is used in batches: a backend hydrating a bundle decodes every fetched value with
/// one [`decode`](ValueCodec::decode) call, and a canonical snapshot encodes a key group's
/// values with one [`encode`](ValueCodec::encode) call.
///
/// Contract:
/// - [`fields`](ValueCodec::fields) is fixed for the codec's lifetime and non-empty; field
///   names must not be `key` or `last_access` (the canonical columns in front of them).
/// - `encode` returns one array per field, of the field's type and nullability, each with
///   exactly as many rows as values, in order.
/// - `decode` accepts exactly what `encode` produces; anything else (wrong column count, type,
///   length, a null in a non-nullable column) is an [`Error::Codec`], never a panic. On error
///   `out` may hold a prefix of the rows; callers discard it.
/// - `decode(encode(v)) == v` for every value sequence.
pub trait ValueCodec: Send + Sync + 'static {
    /// The decoded value type.
    type Value: Clone + Debug + PartialEq + Send + 'static;

    /// The value columns.
    fn fields(&self) -> Fields;

    /// Encodes `values` into one column per field. The iterator is `Clone` so that a codec
    /// with several columns can make one pass per column.
    ///
    /// # Errors
    /// [`Error::Codec`] when a value cannot be represented (e.g. an Arrow offset overflow).
    fn encode<'a, I>(&self, values: I) -> Result<Vec<ArrayRef>>
    where
        I: ExactSizeIterator<Item = &'a Self::Value> + Clone;

    /// Decodes `columns` (as produced by [`encode`](ValueCodec::encode)) and appends one value
    /// per row to `out`.
    ///
    /// # Errors
    /// [`Error::Codec`] for columns that do not match [`fields`](ValueCodec::fields).
    fn decode(&self, columns: &[ArrayRef], out: &mut Vec<Self::Value>) -> Result<()>;

    /// Heap bytes owned by `value` beyond `size_of::<Value>()`, for memory accounting.
    /// Defaults to 0 (right for plain scalars).
    fn heap_size(&self, value: &Self::Value) -> usize {
        let _ = value;
        0
    }

    /// Whether values keep data on the heap that an operation reads first thing (a row's
    /// cells): a backend then runs a second prefetch stage for the bundle's named keys,
    /// reading each key's (already prefetched) slot and calling
    /// [`prefetch_heap`](ValueCodec::prefetch_heap) on its value. `false` by default, and a
    /// backend then skips that stage at compile time.
    const PREFETCH_HEAP: bool = false;

    /// A hint: asks the CPU for the heap data of `value` that an operation reads first
    /// (never dereferences it). Does nothing by default.
    fn prefetch_heap(&self, value: &Self::Value) {
        let _ = value;
    }
}

fn codec_error(column: &str, reason: &'static str) -> Error {
    Error::Codec {
        column: column.to_owned(),
        reason,
    }
}

/// Checks the column count and returns column `index` downcast to `A`, rejecting nulls
/// unless `nullable`.
fn column<'c, A: Array + 'static>(
    columns: &'c [ArrayRef],
    expected_columns: usize,
    index: usize,
    name: &str,
    nullable: bool,
) -> Result<&'c A> {
    if columns.len() != expected_columns {
        return Err(codec_error(name, "wrong number of value columns"));
    }
    let array = columns
        .get(index)
        .ok_or_else(|| codec_error(name, "missing column"))?;
    if !nullable && array.null_count() > 0 {
        return Err(codec_error(name, "null in a non-nullable column"));
    }
    array
        .as_any()
        .downcast_ref::<A>()
        .ok_or_else(|| codec_error(name, "unexpected data type"))
}

/// A codec for `i64` values: one non-nullable `Int64` column named `value`.
///
/// ```
/// use state_api::{I64Codec, ValueCodec};
///
/// let values = [1_i64, -7, 42];
/// let columns = I64Codec.encode(values.iter())?;
/// let mut decoded = Vec::new();
/// I64Codec.decode(&columns, &mut decoded)?;
/// assert_eq!(decoded, values);
/// # Ok::<(), state_api::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct I64Codec;

impl ValueCodec for I64Codec {
    type Value = i64;

    fn fields(&self) -> Fields {
        Fields::from(vec![Field::new("value", DataType::Int64, false)])
    }

    fn encode<'a, I>(&self, values: I) -> Result<Vec<ArrayRef>>
    where
        I: ExactSizeIterator<Item = &'a i64> + Clone,
    {
        Ok(vec![Arc::new(Int64Array::from_iter_values(
            values.copied(),
        ))])
    }

    fn decode(&self, columns: &[ArrayRef], out: &mut Vec<i64>) -> Result<()> {
        let array = column::<Int64Array>(columns, 1, 0, "value", false)?;
        out.extend_from_slice(array.values());
        Ok(())
    }
}

/// A codec for `f64` values: one non-nullable `Float64` column named `value`. Values
/// round-trip bit for bit (NaN payloads and `-0.0` included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct F64Codec;

impl ValueCodec for F64Codec {
    type Value = f64;

    fn fields(&self) -> Fields {
        Fields::from(vec![Field::new("value", DataType::Float64, false)])
    }

    fn encode<'a, I>(&self, values: I) -> Result<Vec<ArrayRef>>
    where
        I: ExactSizeIterator<Item = &'a f64> + Clone,
    {
        Ok(vec![Arc::new(Float64Array::from_iter_values(
            values.copied(),
        ))])
    }

    fn decode(&self, columns: &[ArrayRef], out: &mut Vec<f64>) -> Result<()> {
        let array = column::<Float64Array>(columns, 1, 0, "value", false)?;
        out.extend_from_slice(array.values());
        Ok(())
    }
}

/// A codec for a three-field row `(i64, f64, Option<String>)` — e.g. a count, a sum and the
/// last seen label — as the columns `i64` (`Int64`), `f64` (`Float64`) and `str` (nullable
/// `Utf8`).
///
/// ```
/// use state_api::{I64F64StrCodec, ValueCodec};
///
/// let rows = [(1_i64, 2.5_f64, Some("a".to_owned())), (3, -1.0, None)];
/// let columns = I64F64StrCodec.encode(rows.iter())?;
/// assert_eq!(columns.len(), 3);
/// let mut decoded = Vec::new();
/// I64F64StrCodec.decode(&columns, &mut decoded)?;
/// assert_eq!(decoded, rows);
/// # Ok::<(), state_api::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct I64F64StrCodec;

impl ValueCodec for I64F64StrCodec {
    type Value = (i64, f64, Option<String>);

    fn fields(&self) -> Fields {
        Fields::from(vec![
            Field::new("i64", DataType::Int64, false),
            Field::new("f64", DataType::Float64, false),
            Field::new("str", DataType::Utf8, true),
        ])
    }

    fn encode<'a, I>(&self, values: I) -> Result<Vec<ArrayRef>>
    where
        I: ExactSizeIterator<Item = &'a Self::Value> + Clone,
    {
        let total: usize = values
            .clone()
            .map(|v| v.2.as_ref().map_or(0, String::len))
            .sum();
        if i32::try_from(total).is_err() {
            return Err(codec_error("str", "string data exceeds i32 offsets"));
        }
        let ints = Int64Array::from_iter_values(values.clone().map(|v| v.0));
        let floats = Float64Array::from_iter_values(values.clone().map(|v| v.1));
        let strings: StringArray = values.map(|v| v.2.as_deref()).collect();
        Ok(vec![Arc::new(ints), Arc::new(floats), Arc::new(strings)])
    }

    fn decode(&self, columns: &[ArrayRef], out: &mut Vec<Self::Value>) -> Result<()> {
        let ints = column::<Int64Array>(columns, 3, 0, "i64", false)?;
        let floats = column::<Float64Array>(columns, 3, 1, "f64", false)?;
        let strings = column::<StringArray>(columns, 3, 2, "str", true)?;
        if floats.len() != ints.len() || strings.len() != ints.len() {
            return Err(codec_error("str", "columns differ in length"));
        }
        out.reserve(ints.len());
        for ((i, f), s) in ints.values().iter().zip(floats.values()).zip(strings) {
            out.push((*i, *f, s.map(str::to_owned)));
        }
        Ok(())
    }

    fn heap_size(&self, value: &Self::Value) -> usize {
        value.2.as_ref().map_or(0, String::capacity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f64_round_trips_bits() {
        let values = [f64::NAN, -0.0, f64::INFINITY, 1.5];
        let columns = F64Codec.encode(values.iter()).unwrap();
        let mut out = Vec::new();
        F64Codec.decode(&columns, &mut out).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&out), bits(&values));
    }

    #[test]
    fn decode_rejects_wrong_type_count_and_nulls() {
        let floats = F64Codec.encode([1.0].iter()).unwrap();
        let err = I64Codec.decode(&floats, &mut Vec::new()).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Codec {
                    reason: "unexpected data type",
                    ..
                }
            ),
            "{err}"
        );
        let err = I64Codec.decode(&[], &mut Vec::new()).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Codec {
                    reason: "wrong number of value columns",
                    ..
                }
            ),
            "{err}"
        );
        let with_null: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None]));
        let err = I64Codec.decode(&[with_null], &mut Vec::new()).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Codec {
                    reason: "null in a non-nullable column",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn row_codec_rejects_ragged_columns() {
        let mut columns = I64F64StrCodec
            .encode([(1, 1.0, None), (2, 2.0, Some("x".to_owned()))].iter())
            .unwrap();
        columns[1] = Arc::new(Float64Array::from(vec![1.0]));
        let err = I64F64StrCodec
            .decode(&columns, &mut Vec::new())
            .unwrap_err();
        assert!(matches!(err, Error::Codec { .. }), "{err}");
    }

    #[test]
    fn row_codec_heap_size_counts_string() {
        let v = (0, 0.0, Some(String::with_capacity(40)));
        assert_eq!(I64F64StrCodec.heap_size(&v), 40);
        assert_eq!(I64F64StrCodec.heap_size(&(0, 0.0, None)), 0);
    }
}
