//! State keys: Flink `BinaryRowData` rows of selected columns, their key groups, and whole
//! records as `BinaryRowData` bytes (the join's record identity).
//!
//! # Byte format
//!
//! A state key is exactly what Flink's `RowDataSerializer` writes for the key selector's
//! `BinaryRowData` (`RowKind` `+I`, `NullEncoding::KeySelector`):
//!
//! ```text
//! i32 big-endian length n ‖ n bytes of BinaryRowData (header, null bits, 8-byte slots, var part)
//! ```
//!
//! so the key bytes of a keyed table equal Flink's RocksDB key between the key-group prefix
//! and the namespace, and no key is a proper prefix of another (map tables use it as the
//! prefix). The key group is `KeyGroupRangeAssignment.assignToKeyGroup(row, maxParallelism)`
//! of the row (`murmurHash(row.hashCode())`), as Flink's SQL key selector computes it.

use std::ops::Range;

use arrow_schema::{DataType, Fields, TimeUnit};
use keygroup::{
    BinaryRowWriter, KeyGroup, LogicalType, MaxParallelism, NullEncoding, RowDataSerializer,
    RowKind, StateSerializer, Timestamp, Value, decode_row,
};
use state_api::{RowReader, Scalar, ScalarRef};

use crate::error::{Error, Result};

/// The Flink key type of an Arrow column type.
///
/// # Errors
/// [`Error::Unsupported`] for types without a Flink key mapping here.
pub fn logical_type_of(data_type: &DataType) -> Result<LogicalType> {
    Ok(match data_type {
        DataType::Boolean => LogicalType::Boolean,
        DataType::Int8 => LogicalType::TinyInt,
        DataType::Int16 => LogicalType::SmallInt,
        DataType::Int32 => LogicalType::Int,
        DataType::Int64 => LogicalType::BigInt,
        DataType::Float32 => LogicalType::Float,
        DataType::Float64 => LogicalType::Double,
        DataType::Utf8 => LogicalType::VarChar {
            length: keygroup::MAX_LENGTH,
        },
        DataType::Binary => LogicalType::VarBinary {
            length: keygroup::MAX_LENGTH,
        },
        DataType::Decimal128(p, s) => LogicalType::Decimal {
            precision: *p,
            scale: u8::try_from(*s).map_err(|_| Error::unsupported("negative decimal scale"))?,
        },
        DataType::Date32 => LogicalType::Date,
        DataType::Timestamp(unit, tz) => {
            let precision = precision_of(*unit);
            if tz.is_some() {
                LogicalType::TimestampLtz { precision }
            } else {
                LogicalType::Timestamp { precision }
            }
        }
        other => return Err(Error::unsupported(format!("key column of type {other}"))),
    })
}

/// Fractional-second digits of an Arrow time unit.
pub(crate) fn precision_of(unit: TimeUnit) -> u8 {
    match unit {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 3,
        TimeUnit::Microsecond => 6,
        TimeUnit::Nanosecond => 9,
    }
}

/// Nanoseconds per unit.
fn nanos_per(unit: TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => 1_000_000,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    }
}

/// A timestamp in `unit` as Flink's `TimestampData` (millis floored, nanos of the milli).
pub(crate) fn to_timestamp(value: i64, unit: TimeUnit) -> Timestamp {
    let per = nanos_per(unit);
    let nanos = i128::from(value) * i128::from(per);
    let millis = nanos.div_euclid(1_000_000);
    let nano_of_milli = nanos.rem_euclid(1_000_000);
    Timestamp {
        millis: i64::try_from(millis).unwrap_or(i64::MAX),
        nano_of_milli: u32::try_from(nano_of_milli).unwrap_or(0),
    }
}

/// A `TimestampData` back in `unit` (sub-unit nanos dropped).
pub(crate) fn from_timestamp(ts: Timestamp, unit: TimeUnit) -> i64 {
    let nanos = i128::from(ts.millis) * 1_000_000 + i128::from(ts.nano_of_milli);
    i64::try_from(nanos.div_euclid(i128::from(nanos_per(unit)))).unwrap_or(i64::MAX)
}

/// Writes `value` of `data_type` into field `pos`. The fixed-width values of their own
/// logical type go straight to the writer's slot (what `write_value` writes for them); the
/// rest (nulls, decimals, timestamps, a value of another type) through `write_value`, whose
/// checks then apply.
#[expect(
    clippy::inline_always,
    reason = "measured: an out-of-line call passed each cell through memory (the join encodes a row a column at a time)"
)]
#[inline(always)]
fn write_cell(
    writer: &mut BinaryRowWriter,
    pos: usize,
    ty: LogicalType,
    data_type: &DataType,
    value: ScalarRef<'_>,
    nulls: NullEncoding,
) -> Result<()> {
    let v = match (value, ty) {
        (ScalarRef::Boolean(b), LogicalType::Boolean) => {
            writer.write_boolean(pos, b);
            return Ok(());
        }
        (ScalarRef::Int8(v), LogicalType::TinyInt) => {
            writer.write_byte(pos, v);
            return Ok(());
        }
        (ScalarRef::Int16(v), LogicalType::SmallInt) => {
            writer.write_short(pos, v);
            return Ok(());
        }
        (ScalarRef::Int32(v), LogicalType::Int) | (ScalarRef::Date32(v), LogicalType::Date) => {
            writer.write_int(pos, v);
            return Ok(());
        }
        (ScalarRef::Int64(v), LogicalType::BigInt) => {
            writer.write_long(pos, v);
            return Ok(());
        }
        (ScalarRef::Float32(v), LogicalType::Float) => {
            writer.write_float(pos, v);
            return Ok(());
        }
        (ScalarRef::Float64(v), LogicalType::Double) => {
            writer.write_double(pos, v);
            return Ok(());
        }
        (ScalarRef::Utf8(s), _) => {
            writer.write_string(pos, s)?;
            return Ok(());
        }
        (ScalarRef::Binary(b), _) => {
            writer.write_binary(pos, b)?;
            return Ok(());
        }
        (ScalarRef::Null, _) => Value::Null,
        (ScalarRef::Boolean(b), _) => Value::Boolean(b),
        (ScalarRef::Int8(v), _) => Value::TinyInt(v),
        (ScalarRef::Int16(v), _) => Value::SmallInt(v),
        (ScalarRef::Int32(v), _) => Value::Int(v),
        (ScalarRef::Int64(v), _) => Value::BigInt(v),
        (ScalarRef::Float32(v), _) => Value::Float(v),
        (ScalarRef::Float64(v), _) => Value::Double(v),
        (ScalarRef::Date32(v), _) => Value::Date(v),
        (ScalarRef::Decimal128(u), _) => match data_type {
            DataType::Decimal128(_, s) => Value::Decimal {
                unscaled: u,
                scale: u8::try_from(*s).unwrap_or(0),
            },
            _ => return Err(unsupported_value(value, data_type)),
        },
        (ScalarRef::Timestamp(t), _) => match data_type {
            DataType::Timestamp(unit, tz) => {
                let ts = to_timestamp(t, *unit);
                if tz.is_some() {
                    Value::TimestampLtz(ts)
                } else {
                    Value::Timestamp(ts)
                }
            }
            _ => return Err(unsupported_value(value, data_type)),
        },
    };
    writer.write_value(pos, ty, &v, nulls)?;
    Ok(())
}

/// Writes a `+I` row of `types` (Arrow `data_types`) from `cells`, one per field (`None`:
/// a cell outside the reader it was asked of), into `writer` (reset first).
#[inline]
fn write_row<'v>(
    writer: &mut BinaryRowWriter,
    types: &[LogicalType],
    data_types: &[DataType],
    cells: impl Iterator<Item = Option<ScalarRef<'v>>>,
    nulls: NullEncoding,
) -> Result<()> {
    writer.reset();
    writer.write_row_kind(RowKind::Insert);
    for (pos, ((ty, dt), cell)) in types.iter().zip(data_types).zip(cells).enumerate() {
        write_cell(
            writer,
            pos,
            *ty,
            dt,
            cell.ok_or_else(outside_reader)?,
            nulls,
        )?;
    }
    Ok(())
}

/// A cell asked of a row reader outside its rows or columns.
#[cold]
fn outside_reader() -> Error {
    Error::spec("a row or column outside the input's columns")
}

fn unsupported_value(value: ScalarRef<'_>, data_type: &DataType) -> Error {
    Error::unsupported(format!("value {value:?} for {data_type}"))
}

/// A value read from a `BinaryRowData` as a [`Scalar`] of `data_type`.
fn scalar_of(value: Value, data_type: &DataType) -> Scalar {
    match (value, data_type) {
        (Value::Boolean(b), _) => Scalar::Boolean(b),
        (Value::TinyInt(v), _) => Scalar::Int8(v),
        (Value::SmallInt(v), _) => Scalar::Int16(v),
        (Value::Int(v), _) => Scalar::Int32(v),
        (Value::BigInt(v), _) => Scalar::Int64(v),
        (Value::Float(v), _) => Scalar::Float32(v),
        (Value::Double(v), _) => Scalar::Float64(v),
        (Value::String(s), _) => Scalar::Utf8(s),
        (Value::Binary(b), _) => Scalar::Binary(b),
        (Value::Decimal { unscaled, .. }, _) => Scalar::Decimal128(unscaled),
        (Value::Date(v), _) => Scalar::Date32(v),
        (Value::Timestamp(ts) | Value::TimestampLtz(ts), DataType::Timestamp(unit, _)) => {
            Scalar::Timestamp(from_timestamp(ts, *unit))
        }
        _ => Scalar::Null,
    }
}

/// Encodes selected columns of rows as Flink SQL state keys (see the module docs).
#[derive(Debug)]
pub struct KeyEncoder {
    columns: Vec<usize>,
    types: Vec<LogicalType>,
    data_types: Vec<DataType>,
    writer: BinaryRowWriter,
    max_parallelism: MaxParallelism,
}

impl KeyEncoder {
    /// An encoder of `columns` of rows of `fields`.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] for a column outside `fields`; [`Error::Unsupported`] for a
    /// column type without a key mapping.
    pub fn try_new(
        fields: &Fields,
        columns: &[usize],
        max_parallelism: MaxParallelism,
    ) -> Result<Self> {
        let mut types = Vec::with_capacity(columns.len());
        let mut data_types = Vec::with_capacity(columns.len());
        for &c in columns {
            let field = fields
                .get(c)
                .ok_or_else(|| Error::spec(format!("key column {c} outside the input")))?;
            types.push(logical_type_of(field.data_type())?);
            data_types.push(field.data_type().clone());
        }
        Ok(Self {
            columns: columns.to_vec(),
            types,
            data_types,
            writer: BinaryRowWriter::new(columns.len()),
            max_parallelism,
        })
    }

    /// The key columns.
    pub fn columns(&self) -> &[usize] {
        &self.columns
    }

    /// The key of `row`: its key group and serialized bytes (appended to `out`, cleared
    /// first).
    ///
    /// # Errors
    /// A BinaryRow writer error (e.g. a decimal beyond its precision).
    pub fn encode(&mut self, row: &[Scalar], out: &mut Vec<u8>) -> Result<KeyGroup> {
        self.encode_with(
            |c| Some(row.get(c).map_or(ScalarRef::Null, ScalarRef::from)),
            out,
        )
    }

    /// The key of row `row` of `reader` (the input's columns), read cell by cell without a
    /// row of [`Scalar`]s: the same bytes and key group as [`encode`](Self::encode) of that
    /// row.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] for a row or key column outside the reader; a BinaryRow writer
    /// error.
    pub fn encode_cells(
        &mut self,
        reader: &RowReader<'_>,
        row: usize,
        out: &mut Vec<u8>,
    ) -> Result<KeyGroup> {
        self.encode_with(|c| reader.cell(c, row), out)
    }

    #[inline]
    fn encode_with<'v>(
        &mut self,
        cell: impl Fn(usize) -> Option<ScalarRef<'v>>,
        out: &mut Vec<u8>,
    ) -> Result<KeyGroup> {
        out.clear();
        self.append_with(cell, out)
    }

    /// [`encode_with`](Self::encode_with) appending the key to `out` instead of replacing
    /// it.
    fn append_with<'v>(
        &mut self,
        cell: impl Fn(usize) -> Option<ScalarRef<'v>>,
        out: &mut Vec<u8>,
    ) -> Result<KeyGroup> {
        let cells = self.columns.iter().map(|&c| cell(c));
        write_row(
            &mut self.writer,
            &self.types,
            &self.data_types,
            cells,
            NullEncoding::KeySelector,
        )?;
        RowDataSerializer.serialize(self.writer.row(), out)?;
        Ok(self.writer.key_group(self.max_parallelism))
    }

    /// The key column values of key bytes made by [`encode`](Self::encode) (the window
    /// aggregate's output of a fired timer's key).
    ///
    /// # Errors
    /// [`Error::CorruptState`] when the bytes do not decode.
    pub(crate) fn decode(&self, key: &[u8]) -> Result<Vec<Scalar>> {
        let bad = || Error::CorruptState {
            table: "window keys",
            reason: "key bytes do not decode as a BinaryRow of the key columns",
        };
        let row = key.get(4..).ok_or_else(bad)?;
        let values = decode_row(&self.types, row).map_err(|_| bad())?;
        Ok(values
            .into_iter()
            .zip(&self.data_types)
            .map(|(v, dt)| scalar_of(v, dt))
            .collect())
    }

    /// The keys of every row of `rows` (the input's columns), back to back in one arena: no
    /// vector per row.
    ///
    /// # Errors
    /// As [`encode_cells`](Self::encode_cells).
    pub(crate) fn encode_batch(&mut self, rows: &RowReader<'_>) -> Result<BatchKeys> {
        let mut keys = BatchKeys {
            arena: Vec::new(),
            spans: Vec::with_capacity(rows.len()),
        };
        for row in 0..rows.len() {
            let start = keys.arena.len();
            let kg = self.append_with(|c| rows.cell(c, row), &mut keys.arena)?;
            keys.spans.push((kg, start..keys.arena.len()));
        }
        Ok(keys)
    }

    /// Whether any key column of `row` is null (a join key that never matches).
    pub fn has_null(&self, row: &[Scalar]) -> bool {
        self.columns
            .iter()
            .any(|&c| row.get(c).is_none_or(Scalar::is_null))
    }

    /// Whether any key column of row `row` of `reader` is null (a cell outside the reader
    /// counts as null, as a missing column does in [`has_null`](Self::has_null)).
    pub fn has_null_cells(&self, reader: &RowReader<'_>, row: usize) -> bool {
        self.columns
            .iter()
            .any(|&c| reader.cell(c, row).is_none_or(|v| v.is_null()))
    }
}

/// A batch's keys made by [`KeyEncoder::encode_batch`]: their bytes in one arena.
#[derive(Debug)]
pub(crate) struct BatchKeys {
    arena: Vec<u8>,
    spans: Vec<(KeyGroup, Range<usize>)>,
}

impl BatchKeys {
    /// Each row's key group and key bytes, in row order.
    pub(crate) fn keys(&self) -> Vec<(KeyGroup, &[u8])> {
        self.spans
            .iter()
            .map(|(kg, span)| (*kg, self.arena.get(span.clone()).unwrap_or_default()))
            .collect()
    }
}

/// Encodes whole records as `BinaryRowData` bytes (`RowKind` `+I`,
/// `NullEncoding::RowDataSerializer`): the identity of a record in the join's state, where
/// `-0.0` and `0.0` differ as in Flink.
#[derive(Debug)]
pub struct RecordEncoder {
    types: Vec<LogicalType>,
    data_types: Vec<DataType>,
    writer: BinaryRowWriter,
}

impl RecordEncoder {
    /// An encoder of rows of `fields`.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a column type without a mapping.
    pub fn try_new(fields: &Fields) -> Result<Self> {
        let types = fields
            .iter()
            .map(|f| logical_type_of(f.data_type()))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            types,
            data_types: fields.iter().map(|f| f.data_type().clone()).collect(),
            writer: BinaryRowWriter::new(fields.len()),
        })
    }

    /// The bytes of `row`.
    ///
    /// # Errors
    /// A BinaryRow writer error.
    pub fn encode(&mut self, row: &[Scalar]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.encode_into(row, &mut out)?;
        Ok(out)
    }

    /// Appends the bytes of `row` to `out` (what [`encode`](Self::encode) returns); on error
    /// `out` is unchanged.
    ///
    /// # Errors
    /// A BinaryRow writer error.
    pub fn encode_into(&mut self, row: &[Scalar], out: &mut Vec<u8>) -> Result<()> {
        self.encode_with(
            |pos| Some(row.get(pos).map_or(ScalarRef::Null, ScalarRef::from)),
            out,
        )
    }

    /// Appends the bytes of row `row` of `reader` (the input's columns) to `out`, read cell
    /// by cell without a row of [`Scalar`]s: what [`encode_into`](Self::encode_into) appends
    /// for that row. On error `out` is unchanged.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] for a row or column outside the reader; a BinaryRow writer
    /// error.
    pub fn encode_cells_into(
        &mut self,
        reader: &RowReader<'_>,
        row: usize,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        self.encode_with(|pos| reader.cell(pos, row), out)
    }

    #[inline]
    fn encode_with<'v>(
        &mut self,
        cell: impl Fn(usize) -> Option<ScalarRef<'v>>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let cells = (0..self.types.len()).map(cell);
        write_row(
            &mut self.writer,
            &self.types,
            &self.data_types,
            cells,
            NullEncoding::RowDataSerializer,
        )?;
        out.extend_from_slice(self.writer.row());
        Ok(())
    }

    /// The field types of the records.
    pub(crate) fn types(&self) -> &[LogicalType] {
        &self.types
    }

    /// The row of bytes made by [`encode`](Self::encode).
    ///
    /// # Errors
    /// [`Error::CorruptState`] when the bytes do not decode.
    pub fn decode(&self, bytes: &[u8]) -> Result<Vec<Scalar>> {
        let values = decode_row(&self.types, bytes).map_err(|_| Error::CorruptState {
            table: "join records",
            reason: "record bytes do not decode as a BinaryRow of the input",
        })?;
        Ok(values
            .into_iter()
            .zip(&self.data_types)
            .map(|(v, dt)| scalar_of(v, dt))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use arrow_schema::Field;

    use super::*;

    #[test]
    fn key_bytes_are_flink_binary_rows_with_length() {
        let fields = Fields::from(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("s", DataType::Utf8, true),
        ]);
        let mp = MaxParallelism::new(128).unwrap();
        let mut enc = KeyEncoder::try_new(&fields, &[0, 1], mp).unwrap();
        let mut out = Vec::new();
        let kg = enc
            .encode(&[Scalar::Int32(7), Scalar::Utf8("ab".into())], &mut out)
            .unwrap();
        let row = keygroup::BinaryRow::from_values(
            &[
                LogicalType::Int,
                LogicalType::VarChar {
                    length: keygroup::MAX_LENGTH,
                },
            ],
            &[Value::Int(7), Value::String("ab".into())],
        )
        .unwrap();
        assert_eq!(&out[4..], row.as_bytes());
        assert_eq!(
            &out[..4],
            &u32::try_from(row.as_bytes().len()).unwrap().to_be_bytes()
        );
        assert_eq!(kg, row.key_group(mp));
    }

    #[test]
    fn records_round_trip_and_keep_negative_zero() {
        let fields = Fields::from(vec![
            Field::new("d", DataType::Float64, true),
            Field::new("t", DataType::Timestamp(TimeUnit::Microsecond, None), true),
            Field::new("m", DataType::Decimal128(20, 2), true),
        ]);
        let mut enc = RecordEncoder::try_new(&fields).unwrap();
        let row = vec![
            Scalar::Float64(-0.0),
            Scalar::Timestamp(-1),
            Scalar::Decimal128(-5),
        ];
        let bytes = enc.encode(&row).unwrap();
        assert_eq!(enc.decode(&bytes).unwrap(), row);
        let zero = enc
            .encode(&[
                Scalar::Float64(0.0),
                Scalar::Timestamp(-1),
                Scalar::Decimal128(-5),
            ])
            .unwrap();
        assert_ne!(bytes, zero);
        let nulls = vec![Scalar::Null, Scalar::Null, Scalar::Null];
        let bytes = enc.encode(&nulls).unwrap();
        assert_eq!(enc.decode(&bytes).unwrap(), nulls);
    }
}

/// The direct writes of [`write_cell`] against `write_value` of the equal [`Value`] (the one
/// path every cell took before): same bytes, same refusals, for every supported type, nulls
/// and both null encodings; and the cell readers against the row-of-scalars encoders.
#[cfg(test)]
mod cell_tests {
    use std::sync::Arc;

    use arrow_schema::Field;
    use proptest::prelude::*;
    use state_api::arrays_from_rows;

    use super::*;

    fn types() -> Vec<DataType> {
        vec![
            DataType::Boolean,
            DataType::Int8,
            DataType::Int16,
            DataType::Int32,
            DataType::Int64,
            DataType::Float32,
            DataType::Float64,
            DataType::Utf8,
            DataType::Binary,
            DataType::Decimal128(10, 2),
            DataType::Decimal128(30, 4),
            DataType::Date32,
            DataType::Timestamp(TimeUnit::Millisecond, None),
            DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC"))),
        ]
    }

    fn scalar(t: &DataType) -> BoxedStrategy<Scalar> {
        let value = match t {
            DataType::Boolean => any::<bool>().prop_map(Scalar::Boolean).boxed(),
            DataType::Int8 => any::<i8>().prop_map(Scalar::Int8).boxed(),
            DataType::Int16 => any::<i16>().prop_map(Scalar::Int16).boxed(),
            DataType::Int32 => any::<i32>().prop_map(Scalar::Int32).boxed(),
            DataType::Int64 => any::<i64>().prop_map(Scalar::Int64).boxed(),
            DataType::Float32 => any::<u32>()
                .prop_map(|b| Scalar::Float32(f32::from_bits(b)))
                .boxed(),
            DataType::Float64 => any::<u64>()
                .prop_map(|b| Scalar::Float64(f64::from_bits(b)))
                .boxed(),
            DataType::Utf8 => ".{0,12}".prop_map(Scalar::Utf8).boxed(),
            DataType::Binary => prop::collection::vec(any::<u8>(), 0..12)
                .prop_map(Scalar::Binary)
                .boxed(),
            DataType::Decimal128(p, _) => {
                let max = 10_i128.pow(u32::from(*p)) - 1;
                (-max..=max).prop_map(Scalar::Decimal128).boxed()
            }
            DataType::Date32 => any::<i32>().prop_map(Scalar::Date32).boxed(),
            _ => (-(1_i64 << 50)..(1_i64 << 50))
                .prop_map(Scalar::Timestamp)
                .boxed(),
        };
        prop_oneof![1 => Just(Scalar::Null), 4 => value].boxed()
    }

    /// The value every cell became before the direct writes.
    fn value_of(v: &Scalar, dt: &DataType) -> Value {
        match (v, dt) {
            (Scalar::Null, _) => Value::Null,
            (Scalar::Boolean(b), _) => Value::Boolean(*b),
            (Scalar::Int8(v), _) => Value::TinyInt(*v),
            (Scalar::Int16(v), _) => Value::SmallInt(*v),
            (Scalar::Int32(v), _) => Value::Int(*v),
            (Scalar::Int64(v), _) => Value::BigInt(*v),
            (Scalar::Float32(v), _) => Value::Float(*v),
            (Scalar::Float64(v), _) => Value::Double(*v),
            (Scalar::Date32(v), _) => Value::Date(*v),
            (Scalar::Utf8(s), _) => Value::String(s.clone()),
            (Scalar::Binary(b), _) => Value::Binary(b.clone()),
            (Scalar::Decimal128(u), DataType::Decimal128(_, s)) => Value::Decimal {
                unscaled: *u,
                scale: u8::try_from(*s).unwrap(),
            },
            (Scalar::Timestamp(t), DataType::Timestamp(unit, tz)) => {
                let ts = to_timestamp(*t, *unit);
                if tz.is_some() {
                    Value::TimestampLtz(ts)
                } else {
                    Value::Timestamp(ts)
                }
            }
            other => panic!("no value for {other:?}"),
        }
    }

    fn schema_and_rows() -> impl Strategy<Value = (Vec<DataType>, Vec<Vec<Scalar>>)> {
        prop::collection::vec(prop::sample::select(types()), 1..6).prop_flat_map(|types| {
            let row = types.iter().map(scalar).collect::<Vec<_>>();
            (Just(types), prop::collection::vec(row, 1..8))
        })
    }

    #[test]
    fn a_value_of_another_type_goes_through_write_value_and_is_refused() {
        let mut w = BinaryRowWriter::new(1);
        let err = write_cell(
            &mut w,
            0,
            LogicalType::BigInt,
            &DataType::Int64,
            ScalarRef::Int32(1),
            NullEncoding::RowDataSerializer,
        );
        assert!(err.is_err());
        let err = write_cell(
            &mut w,
            0,
            LogicalType::Int,
            &DataType::Int32,
            ScalarRef::Decimal128(1),
            NullEncoding::RowDataSerializer,
        );
        assert!(matches!(err, Err(Error::Unsupported { .. })), "{err:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn direct_writes_equal_write_value((types, rows) in schema_and_rows()) {
            let logical: Vec<LogicalType> =
                types.iter().map(|t| logical_type_of(t).unwrap()).collect();
            for nulls in [NullEncoding::KeySelector, NullEncoding::RowDataSerializer] {
                for row in &rows {
                    let (mut direct, mut reference) =
                        (BinaryRowWriter::new(types.len()), BinaryRowWriter::new(types.len()));
                    for (pos, ((v, dt), ty)) in row.iter().zip(&types).zip(&logical).enumerate() {
                        write_cell(&mut direct, pos, *ty, dt, ScalarRef::from(v), nulls).unwrap();
                        reference.write_value(pos, *ty, &value_of(v, dt), nulls).unwrap();
                    }
                    prop_assert_eq!(direct.row(), reference.row());
                }
            }
        }

        #[test]
        fn cell_encoders_equal_the_row_encoders(
            (types, rows) in schema_and_rows(),
            key_columns in prop::collection::vec(0_usize..6, 1..3),
        ) {
            let fields = Fields::from(
                types
                    .iter()
                    .enumerate()
                    .map(|(i, t)| Field::new(format!("c{i}"), t.clone(), true))
                    .collect::<Vec<_>>(),
            );
            let key_columns: Vec<usize> =
                key_columns.into_iter().map(|c| c % types.len()).collect();
            let columns = arrays_from_rows(&fields, rows.iter()).unwrap();
            let reader = RowReader::try_new(&columns).unwrap();
            let mp = MaxParallelism::new(128).unwrap();
            let mut keys = KeyEncoder::try_new(&fields, &key_columns, mp).unwrap();
            let mut records = RecordEncoder::try_new(&fields).unwrap();
            let (mut by_row, mut by_cell) = (Vec::new(), Vec::new());
            for (r, row) in rows.iter().enumerate() {
                let kg = keys.encode(row, &mut by_row).unwrap();
                prop_assert_eq!(keys.encode_cells(&reader, r, &mut by_cell).unwrap(), kg);
                prop_assert_eq!(&by_cell, &by_row);
                prop_assert_eq!(keys.has_null_cells(&reader, r), keys.has_null(row));
                let record = records.encode(row).unwrap();
                let mut appended = vec![9];
                records.encode_cells_into(&reader, r, &mut appended).unwrap();
                prop_assert_eq!(&appended[1..], &record[..]);
            }
            // The batch's keys in one arena are the rows' keys, in order.
            let batch = keys.encode_batch(&reader).unwrap();
            let in_arena = batch.keys();
            prop_assert_eq!(in_arena.len(), rows.len());
            for (row, (kg, bytes)) in rows.iter().zip(in_arena) {
                prop_assert_eq!(keys.encode(row, &mut by_row).unwrap(), kg);
                prop_assert_eq!(bytes, by_row.as_slice());
            }
            // A row outside the reader is refused and appends nothing.
            let mut out = vec![1, 2];
            prop_assert!(records.encode_cells_into(&reader, rows.len(), &mut out).is_err());
            prop_assert_eq!(out, vec![1, 2]);
            prop_assert!(keys.encode_cells(&reader, rows.len(), &mut by_cell).is_err());
            prop_assert!(keys.has_null_cells(&reader, rows.len()));
        }
    }
}
