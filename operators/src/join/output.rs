//! The join's output under construction: one Arrow builder per output column, filled
//! straight from the two records' `BinaryRowData` bytes (no row of values per output row),
//! handed to the sink every `chunk_rows` rows.
//!
//! A joined row is the left record's fields, then the right record's. Each output column
//! reads its field from its side's record:
//!
//! * BOOLEAN, TINYINT, SMALLINT, INT, DATE, BIGINT, FLOAT, DOUBLE, compact DECIMAL
//!   (precision ≤ 18) and compact TIMESTAMP (precision ≤ 3) from the field's 8-byte slot;
//! * STRING and BYTES from the slot (≤ 7 bytes inline) or the variable part it points to,
//!   without a copy before the builder's;
//! * wide DECIMAL and TIMESTAMP through [`BinaryRowReader::read_field`].
//!
//! Record bytes come from the bundle's own encoding or from the state (which a restore may
//! have filled with anything): every offset is checked, a bad record is
//! [`Error::CorruptState`], never a panic.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, BooleanBuilder, PrimitiveBuilder, StringBuilder};
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, SchemaRef, TimeUnit};
use keygroup::{BinaryRowReader, LogicalType, RowKind, Timestamp, Value, bit_set_width_in_bytes};

use crate::changelog::ChangelogBatch;
use crate::error::{Error, Result};
use crate::key::from_timestamp;

/// How a column's field is read from a record.
#[derive(Debug, Clone, Copy)]
enum Read {
    Boolean,
    Int8,
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    /// DECIMAL of precision ≤ 18: the unscaled value in the slot.
    CompactDecimal,
    /// TIMESTAMP of precision ≤ 3: millis in the slot, converted to the column's unit.
    CompactTimestamp(TimeUnit),
    Utf8,
    Binary,
    /// Wide DECIMAL / TIMESTAMP: through the checked reader.
    Wide(TimeUnit),
}

/// The values of one column.
#[derive(Debug)]
enum Values {
    Boolean(BooleanBuilder),
    Int8(PrimitiveBuilder<Int8Type>),
    Int16(PrimitiveBuilder<Int16Type>),
    Int32(PrimitiveBuilder<Int32Type>),
    Int64(PrimitiveBuilder<Int64Type>),
    Float32(PrimitiveBuilder<Float32Type>),
    Float64(PrimitiveBuilder<Float64Type>),
    Decimal(PrimitiveBuilder<Decimal128Type>),
    Utf8(StringBuilder),
    Binary(BinaryBuilder),
}

impl Values {
    /// An empty builder of the same type with room for `rows` values (a chunk's builders
    /// are allocated once at their final size, never grown by copying).
    fn fresh(&self, rows: usize) -> Self {
        match self {
            Values::Boolean(_) => Values::Boolean(BooleanBuilder::with_capacity(rows)),
            Values::Int8(_) => Values::Int8(PrimitiveBuilder::with_capacity(rows)),
            Values::Int16(_) => Values::Int16(PrimitiveBuilder::with_capacity(rows)),
            Values::Int32(_) => Values::Int32(PrimitiveBuilder::with_capacity(rows)),
            Values::Int64(_) => Values::Int64(PrimitiveBuilder::with_capacity(rows)),
            Values::Float32(_) => Values::Float32(PrimitiveBuilder::with_capacity(rows)),
            Values::Float64(_) => Values::Float64(PrimitiveBuilder::with_capacity(rows)),
            Values::Decimal(_) => Values::Decimal(PrimitiveBuilder::with_capacity(rows)),
            Values::Utf8(_) => Values::Utf8(StringBuilder::with_capacity(rows, rows * 8)),
            Values::Binary(_) => Values::Binary(BinaryBuilder::with_capacity(rows, rows * 8)),
        }
    }
}

/// Rows an output chunk's builders are sized for up front (a bundle's whole output, with no
/// chunk bound, grows past it).
const PRESIZED_ROWS: usize = 8192;

/// One output column: which side's record, which field, how.
#[derive(Debug)]
struct Column {
    left: bool,
    pos: usize,
    /// The byte of the field's null bit in a record of its side, and the bit's mask.
    null_at: usize,
    null_mask: u8,
    /// Where the field's 8-byte slot starts in a record of its side.
    slot_at: usize,
    read: Read,
    data_type: DataType,
    values: Values,
    /// Rows each chunk's builder is allocated for.
    capacity: usize,
}

/// The low 4 bytes of a slot (a 4-byte field).
fn low4(slot: [u8; 8]) -> [u8; 4] {
    let [b0, b1, b2, b3, ..] = slot;
    [b0, b1, b2, b3]
}

fn corrupt() -> Error {
    Error::CorruptState {
        table: "join records",
        reason: "record bytes do not decode as a BinaryRow of the input",
    }
}

/// One record's bytes with its side's arity (for the null bits).
#[derive(Debug, Clone, Copy)]
pub(super) struct RecordRef<'a> {
    bytes: &'a [u8],
    types: &'a [LogicalType],
    null_bits: usize,
}

impl<'a> RecordRef<'a> {
    /// `bytes` as a record of `types`, whose null-bit width is `null_bits`.
    pub(super) fn new(bytes: &'a [u8], types: &'a [LogicalType], null_bits: usize) -> Self {
        Self {
            bytes,
            types,
            null_bits,
        }
    }

    /// The 8-byte slot of field `pos` as a little-endian word (one load: a `[u8; 8]` built
    /// from a checked sub-slice compiles to byte-wise loads and shifts).
    #[inline]
    fn word(&self, pos: usize) -> Result<u64> {
        self.bytes
            .get(self.null_bits + 8 * pos..)
            .and_then(<[u8]>::first_chunk::<8>)
            .map(|slot| u64::from_le_bytes(*slot))
            .ok_or_else(corrupt)
    }

    fn slot(&self, pos: usize) -> Result<[u8; 8]> {
        self.word(pos).map(u64::to_le_bytes)
    }

    /// The bytes of a string / binary field (`BinarySegmentUtils.readBinary`).
    fn var_bytes(&self, pos: usize) -> Result<&'a [u8]> {
        let slot = self.slot(pos)?;
        let mark = slot[7];
        if mark & 0x80 != 0 {
            let len = usize::from(mark & 0x7f);
            let start = self.null_bits + 8 * pos;
            return if len <= 7 {
                self.bytes.get(start..start + len).ok_or_else(corrupt)
            } else {
                Err(corrupt())
            };
        }
        let word = u64::from_le_bytes(slot);
        let offset = usize::try_from(word >> 32).map_err(|_| corrupt())?;
        let len = usize::try_from(word & 0xffff_ffff).map_err(|_| corrupt())?;
        if offset < self.null_bits + 8 * self.types.len() {
            return Err(corrupt());
        }
        offset
            .checked_add(len)
            .and_then(|end| self.bytes.get(offset..end))
            .ok_or_else(corrupt)
    }

    fn read_wide(&self, pos: usize) -> Result<Value> {
        BinaryRowReader::new(self.types, self.bytes)
            .and_then(|r| r.read_field(pos))
            .map_err(|_| corrupt())
    }
}

impl Column {
    fn try_new(
        field: &Field,
        (left, pos, side_null_bits): (bool, usize, usize),
        ty: LogicalType,
        capacity: usize,
    ) -> Result<Self> {
        let dt = field.data_type().clone();
        let (read, values) = match (&dt, ty) {
            (DataType::Boolean, _) => (Read::Boolean, Values::Boolean(BooleanBuilder::new())),
            (DataType::Int8, _) => (Read::Int8, Values::Int8(PrimitiveBuilder::new())),
            (DataType::Int16, _) => (Read::Int16, Values::Int16(PrimitiveBuilder::new())),
            (DataType::Int32 | DataType::Date32, _) => {
                (Read::Int32, Values::Int32(PrimitiveBuilder::new()))
            }
            (DataType::Int64, _) => (Read::Int64, Values::Int64(PrimitiveBuilder::new())),
            (DataType::Float32, _) => (Read::Float32, Values::Float32(PrimitiveBuilder::new())),
            (DataType::Float64, _) => (Read::Float64, Values::Float64(PrimitiveBuilder::new())),
            (DataType::Decimal128(p, _), _) => (
                if *p <= 18 {
                    Read::CompactDecimal
                } else {
                    Read::Wide(TimeUnit::Second)
                },
                Values::Decimal(PrimitiveBuilder::new()),
            ),
            (
                DataType::Timestamp(unit, _),
                LogicalType::Timestamp { precision } | LogicalType::TimestampLtz { precision },
            ) => (
                if precision <= 3 {
                    Read::CompactTimestamp(*unit)
                } else {
                    Read::Wide(*unit)
                },
                Values::Int64(PrimitiveBuilder::new()),
            ),
            (DataType::Utf8, _) => (Read::Utf8, Values::Utf8(StringBuilder::new())),
            (DataType::Binary, _) => (Read::Binary, Values::Binary(BinaryBuilder::new())),
            (other, _) => {
                return Err(Error::unsupported(format!("join column of type {other}")));
            }
        };
        let bit = pos + 8;
        Ok(Self {
            left,
            pos,
            null_at: bit / 8,
            null_mask: 1 << (bit % 8),
            slot_at: side_null_bits + 8 * pos,
            read,
            data_type: dt,
            values: values.fresh(capacity),
            capacity,
        })
    }

    /// Appends the field of `record`.
    #[inline]
    fn append(&mut self, record: &RecordRef<'_>) -> Result<()> {
        let null_byte = record.bytes.get(self.null_at).ok_or_else(corrupt)?;
        let is_null = null_byte & self.null_mask != 0;
        // The common cell first: a non-null 8-byte integer, one checked load from the slot.
        if let (false, Read::Int64, Values::Int64(b)) = (is_null, self.read, &mut self.values) {
            let slot = record
                .bytes
                .get(self.slot_at..)
                .and_then(<[u8]>::first_chunk::<8>)
                .ok_or_else(corrupt)?;
            b.append_value(i64::from_le_bytes(*slot));
            return Ok(());
        }
        let pos = self.pos;
        if is_null {
            match &mut self.values {
                Values::Boolean(b) => b.append_null(),
                Values::Int8(b) => b.append_null(),
                Values::Int16(b) => b.append_null(),
                Values::Int32(b) => b.append_null(),
                Values::Int64(b) => b.append_null(),
                Values::Float32(b) => b.append_null(),
                Values::Float64(b) => b.append_null(),
                Values::Decimal(b) => b.append_null(),
                Values::Utf8(b) => b.append_null(),
                Values::Binary(b) => b.append_null(),
            }
            return Ok(());
        }
        match (self.read, &mut self.values) {
            (Read::Boolean, Values::Boolean(b)) => b.append_value((record.word(pos)? & 0xff) != 0),
            (Read::Int8, Values::Int8(b)) => b.append_value(record.slot(pos)?[0].cast_signed()),
            (Read::Int16, Values::Int16(b)) => {
                let [lo, hi, ..] = record.slot(pos)?;
                b.append_value(i16::from_le_bytes([lo, hi]));
            }
            (Read::Int32, Values::Int32(b)) => {
                b.append_value(i32::from_le_bytes(low4(record.slot(pos)?)));
            }
            (Read::Int64, Values::Int64(b)) => {
                b.append_value(record.word(pos)?.cast_signed());
            }
            (Read::Float32, Values::Float32(b)) => {
                b.append_value(f32::from_bits(u32::from_le_bytes(low4(record.slot(pos)?))));
            }
            (Read::Float64, Values::Float64(b)) => {
                b.append_value(f64::from_bits(record.word(pos)?));
            }
            (Read::CompactDecimal, Values::Decimal(b)) => {
                let unscaled = record.word(pos)?.cast_signed();
                let DataType::Decimal128(p, _) = self.data_type else {
                    return Err(corrupt());
                };
                // Within the precision, as the checked reader requires.
                if unscaled.unsigned_abs() >= 10_u64.pow(u32::from(p)) {
                    return Err(corrupt());
                }
                b.append_value(i128::from(unscaled));
            }
            (Read::CompactTimestamp(unit), Values::Int64(b)) => {
                let millis = record.word(pos)?.cast_signed();
                let ts = Timestamp {
                    millis,
                    nano_of_milli: 0,
                };
                b.append_value(from_timestamp(ts, unit));
            }
            (Read::Utf8, Values::Utf8(b)) => {
                let text = std::str::from_utf8(record.var_bytes(pos)?).map_err(|_| corrupt())?;
                b.append_value(text);
            }
            (Read::Binary, Values::Binary(b)) => b.append_value(record.var_bytes(pos)?),
            (Read::Wide(_), Values::Decimal(b)) => match record.read_wide(pos)? {
                Value::Decimal { unscaled, .. } => b.append_value(unscaled),
                _ => return Err(corrupt()),
            },
            (Read::Wide(unit), Values::Int64(b)) => match record.read_wide(pos)? {
                Value::Timestamp(ts) | Value::TimestampLtz(ts) => {
                    b.append_value(from_timestamp(ts, unit));
                }
                _ => return Err(corrupt()),
            },
            _ => return Err(corrupt()),
        }
        Ok(())
    }

    /// The column's values so far as an array of its type (the builder starts over).
    fn finish(&mut self) -> Result<ArrayRef> {
        let dt = &self.data_type;
        let fresh = self.values.fresh(self.capacity);
        let mut values = std::mem::replace(&mut self.values, fresh);
        Ok(match &mut values {
            Values::Boolean(b) => Arc::new(b.finish()),
            Values::Int8(b) => Arc::new(b.finish()),
            Values::Int16(b) => Arc::new(b.finish()),
            Values::Int32(b) => {
                let a = b.finish();
                if *dt == DataType::Date32 {
                    Arc::new(a.reinterpret_cast::<Date32Type>())
                } else {
                    Arc::new(a)
                }
            }
            Values::Int64(b) => {
                let a = b.finish();
                match dt {
                    DataType::Timestamp(unit, tz) => {
                        let tz = tz.clone();
                        match unit {
                            TimeUnit::Second => Arc::new(
                                a.reinterpret_cast::<TimestampSecondType>()
                                    .with_timezone_opt(tz),
                            ),
                            TimeUnit::Millisecond => Arc::new(
                                a.reinterpret_cast::<TimestampMillisecondType>()
                                    .with_timezone_opt(tz),
                            ),
                            TimeUnit::Microsecond => Arc::new(
                                a.reinterpret_cast::<TimestampMicrosecondType>()
                                    .with_timezone_opt(tz),
                            ),
                            TimeUnit::Nanosecond => Arc::new(
                                a.reinterpret_cast::<TimestampNanosecondType>()
                                    .with_timezone_opt(tz),
                            ),
                        }
                    }
                    _ => Arc::new(a),
                }
            }
            Values::Float32(b) => Arc::new(b.finish()),
            Values::Float64(b) => Arc::new(b.finish()),
            Values::Decimal(b) => {
                let DataType::Decimal128(p, s) = dt else {
                    return Err(corrupt());
                };
                Arc::new(b.finish().with_precision_and_scale(*p, *s)?)
            }
            Values::Utf8(b) => Arc::new(b.finish()),
            Values::Binary(b) => Arc::new(b.finish()),
        })
    }
}

/// The output of a bundle under construction, handed to the sink every `chunk_rows` rows.
pub(super) struct Emitter<'a> {
    columns: Vec<Column>,
    kinds: Vec<RowKind>,
    chunk_rows: usize,
    schema: SchemaRef,
    sink: &'a mut dyn FnMut(ChangelogBatch) -> Result<()>,
}

/// The null-bit width of records of `types`.
pub(super) fn null_bits(types: &[LogicalType]) -> usize {
    bit_set_width_in_bytes(types.len())
}

impl<'a> Emitter<'a> {
    /// An emitter of `schema` (the left fields of types `left`, then the right fields of types
    /// `right`).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a column type without a record mapping.
    pub(super) fn try_new(
        schema: &SchemaRef,
        left: &[LogicalType],
        right: &[LogicalType],
        chunk_rows: usize,
        sink: &'a mut dyn FnMut(ChangelogBatch) -> Result<()>,
    ) -> Result<Self> {
        let (left_nulls, right_nulls) = (null_bits(left), null_bits(right));
        let sides = left
            .iter()
            .enumerate()
            .map(|(pos, ty)| ((true, pos, left_nulls), *ty))
            .chain(
                right
                    .iter()
                    .enumerate()
                    .map(|(pos, ty)| ((false, pos, right_nulls), *ty)),
            );
        let columns = schema
            .fields()
            .iter()
            .zip(sides)
            .map(|(field, (at, ty))| {
                Column::try_new(field, at, ty, chunk_rows.clamp(1, PRESIZED_ROWS))
            })
            .collect::<Result<Vec<_>>>()?;
        if columns.len() != schema.fields().len() {
            return Err(Error::spec("join output schema differs from its inputs"));
        }
        Ok(Self {
            columns,
            kinds: Vec::with_capacity(chunk_rows.clamp(1, PRESIZED_ROWS)),
            chunk_rows: chunk_rows.max(1),
            schema: Arc::clone(schema),
            sink,
        })
    }

    /// Appends the joined row `left ‖ right` with `kind` `count` times (none for a count
    /// below 1).
    ///
    /// # Errors
    /// [`Error::CorruptState`] for a record that does not decode; the sink's error.
    pub(super) fn push(
        &mut self,
        kind: RowKind,
        left: &RecordRef<'_>,
        right: &RecordRef<'_>,
        count: i64,
    ) -> Result<()> {
        for _ in 0..count {
            for c in &mut self.columns {
                c.append(if c.left { left } else { right })?;
            }
            self.kinds.push(kind);
            if self.kinds.len() >= self.chunk_rows {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Hands the pending rows (if any) to the sink.
    ///
    /// # Errors
    /// An Arrow error building the batch; the sink's error.
    pub(super) fn flush(&mut self) -> Result<()> {
        if self.kinds.is_empty() {
            return Ok(());
        }
        let columns = self
            .columns
            .iter_mut()
            .map(Column::finish)
            .collect::<Result<Vec<_>>>()?;
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns)?;
        let capacity = self.kinds.capacity().min(PRESIZED_ROWS);
        let kinds = std::mem::replace(&mut self.kinds, Vec::with_capacity(capacity));
        (self.sink)(ChangelogBatch::try_new(batch, kinds)?)
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{Array, Int64Array, StringArray};
    use arrow_schema::Schema;
    use keygroup::BinaryRowWriter;

    use super::*;

    const LEFT: [LogicalType; 2] = [
        LogicalType::BigInt,
        LogicalType::VarChar {
            length: u32::MAX >> 1,
        },
    ];
    const RIGHT: [LogicalType; 1] = [LogicalType::Double];

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("d", DataType::Float64, true),
        ]))
    }

    fn left(a: Option<i64>, s: &str) -> Vec<u8> {
        let mut w = BinaryRowWriter::new(2);
        match a {
            Some(a) => w.write_long(0, a),
            None => w.set_null_at(0),
        }
        w.write_string(1, s).unwrap();
        w.row().to_vec()
    }

    fn right(d: f64) -> Vec<u8> {
        let mut w = BinaryRowWriter::new(1);
        w.write_double(0, d);
        w.row().to_vec()
    }

    /// Pushes `l ‖ r` once and flushes; the batch, or the push's error.
    fn emit(l: &[u8], r: &[u8]) -> Result<Vec<ChangelogBatch>> {
        let schema = schema();
        let mut out = Vec::new();
        let mut sink = |b: ChangelogBatch| {
            out.push(b);
            Ok(())
        };
        let mut emitter = Emitter::try_new(&schema, &LEFT, &RIGHT, 16, &mut sink)?;
        let (lb, rb) = (null_bits(&LEFT), null_bits(&RIGHT));
        emitter.push(
            RowKind::Insert,
            &RecordRef::new(l, &LEFT, lb),
            &RecordRef::new(r, &RIGHT, rb),
            2,
        )?;
        emitter.flush()?;
        drop(emitter);
        Ok(out)
    }

    #[test]
    fn fields_are_read_from_both_records_slots_and_variable_parts() {
        let long_text = "longer than seven bytes";
        let out = emit(&left(Some(-7), long_text), &right(2.5)).unwrap();
        let batch = out.first().unwrap().batch();
        assert_eq!(batch.num_rows(), 2);
        let a = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        let s = batch
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert_eq!((a.value(0), a.value(1)), (-7, -7));
        assert_eq!(s.value(1), long_text);
        let out = emit(&left(None, "short"), &right(0.0)).unwrap();
        let batch = out.first().unwrap().batch();
        assert!(batch.column(0).is_null(0));
        let s = batch
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert_eq!(s.value(0), "short");
    }

    #[test]
    fn a_truncated_or_misdirected_record_is_corrupt_state_not_a_panic() {
        let text = "a string of some length";
        let good = left(Some(1), text);
        let r = right(1.0);
        // The fixed part and the string's bytes (the row pads its variable part to 8 bytes).
        let used = null_bits(&LEFT) + 16 + text.len();
        assert!(good.len() >= used);
        for cut in 0..used {
            let err = emit(good.get(..cut).unwrap(), &r).unwrap_err();
            assert!(
                matches!(err, Error::CorruptState { .. }),
                "cut at {cut}: {err:?}"
            );
        }
        for cut in 0..r.len() {
            let err = emit(&good, r.get(..cut).unwrap()).unwrap_err();
            assert!(
                matches!(err, Error::CorruptState { .. }),
                "cut at {cut}: {err:?}"
            );
        }
        // The string's slot pointing into the fixed part, or past the end.
        let mut bad = good.clone();
        let slot = null_bits(&LEFT) + 8;
        bad[slot..slot + 8].copy_from_slice(&((8_u64 << 32) | 4).to_le_bytes());
        assert!(matches!(emit(&bad, &r), Err(Error::CorruptState { .. })));
        bad[slot..slot + 8].copy_from_slice(&((32_u64 << 32) | 0x190).to_le_bytes());
        assert!(matches!(emit(&bad, &r), Err(Error::CorruptState { .. })));
    }
}
