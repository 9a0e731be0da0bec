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

use arrow_schema::{DataType, Fields, TimeUnit};
use keygroup::{
    BinaryRowWriter, KeyGroup, LogicalType, MaxParallelism, NullEncoding, RowDataSerializer,
    RowKind, StateSerializer, Timestamp, Value, decode_row,
};
use state_api::Scalar;

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

/// Writes `value` of `data_type` into field `pos`.
fn write_scalar(
    writer: &mut BinaryRowWriter,
    pos: usize,
    ty: LogicalType,
    data_type: &DataType,
    value: &Scalar,
    nulls: NullEncoding,
) -> Result<()> {
    let v = match (value, data_type) {
        (Scalar::Null, _) => Value::Null,
        (Scalar::Boolean(b), _) => Value::Boolean(*b),
        (Scalar::Int8(v), _) => Value::TinyInt(*v),
        (Scalar::Int16(v), _) => Value::SmallInt(*v),
        (Scalar::Int32(v), _) => Value::Int(*v),
        (Scalar::Int64(v), _) => Value::BigInt(*v),
        (Scalar::Float32(v), _) => Value::Float(*v),
        (Scalar::Float64(v), _) => Value::Double(*v),
        (Scalar::Date32(v), _) => Value::Date(*v),
        (Scalar::Utf8(s), _) => {
            writer.write_string(pos, s)?;
            return Ok(());
        }
        (Scalar::Binary(b), _) => {
            writer.write_binary(pos, b)?;
            return Ok(());
        }
        (Scalar::Decimal128(u), DataType::Decimal128(_, s)) => Value::Decimal {
            unscaled: *u,
            scale: u8::try_from(*s).unwrap_or(0),
        },
        (Scalar::Timestamp(t), DataType::Timestamp(unit, tz)) => {
            let ts = to_timestamp(*t, *unit);
            if tz.is_some() {
                Value::TimestampLtz(ts)
            } else {
                Value::Timestamp(ts)
            }
        }
        _ => {
            return Err(Error::unsupported(format!(
                "value {value:?} for {data_type}"
            )));
        }
    };
    writer.write_value(pos, ty, &v, nulls)?;
    Ok(())
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
        self.writer.reset();
        self.writer.write_row_kind(RowKind::Insert);
        for (pos, ((&c, ty), dt)) in self
            .columns
            .iter()
            .zip(&self.types)
            .zip(&self.data_types)
            .enumerate()
        {
            let value = row.get(c).unwrap_or(&Scalar::Null);
            write_scalar(
                &mut self.writer,
                pos,
                *ty,
                dt,
                value,
                NullEncoding::KeySelector,
            )?;
        }
        out.clear();
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

    /// Whether any key column of `row` is null (a join key that never matches).
    pub fn has_null(&self, row: &[Scalar]) -> bool {
        self.columns
            .iter()
            .any(|&c| row.get(c).is_none_or(Scalar::is_null))
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
        self.writer.reset();
        self.writer.write_row_kind(RowKind::Insert);
        for (pos, (ty, dt)) in self.types.iter().zip(&self.data_types).enumerate() {
            let value = row.get(pos).unwrap_or(&Scalar::Null);
            write_scalar(
                &mut self.writer,
                pos,
                *ty,
                dt,
                value,
                NullEncoding::RowDataSerializer,
            )?;
        }
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
