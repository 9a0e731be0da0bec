//! `BinaryRowWriter`: builds `BinaryRowData` bytes, reusable without per-row allocation.

use crate::assignment::{KeyGroup, MaxParallelism, compute_key_group_for_key_hash};
use crate::error::{Error, Result};
use crate::hash::murmur_hash_bytes;
use crate::row::{
    BinaryRow, HEADER_SIZE_IN_BITS, MAX_COMPACT_DECIMAL_PRECISION, MAX_COMPACT_TIMESTAMP_PRECISION,
    MAX_FIX_PART_DATA_SIZE, bit_set_width_in_bytes, fixed_part_size,
};
use crate::types::{LogicalType, check_decimal, check_time_precision};
use crate::value::{RowKind, Timestamp, Value, check_nano_of_milli};

/// Largest row Flink can address: offsets and sizes are Java `int`s.
const MAX_ROW_SIZE: usize = i32::MAX.cast_unsigned() as usize;

/// How a null non-compact DECIMAL (precision > 18) or TIMESTAMP / `TIMESTAMP_LTZ`
/// (precision > 3) is written. Every other null is the null bit plus a zero slot on both paths.
///
/// The two give different bytes, hash codes and key groups for the same logical row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NullEncoding {
    /// Reserve the variable-part space anyway (16 zero bytes for DECIMAL, 8 for TIMESTAMP) and
    /// set the slot to `offset << 32`: `BinaryRowWriter.writeDecimal(pos, null, p)` /
    /// `writeTimestamp(pos, null, p)`, which Flink SQL's generated key selectors and
    /// projections call. **These are the bytes Flink SQL uses as state keys**; the default.
    #[default]
    KeySelector,
    /// Only set the null bit and zero the slot: `RowDataSerializer.toBinaryRow(GenericRowData)`
    /// (`setNullAt` for every null).
    RowDataSerializer,
}

/// Writes rows in Flink's `BinaryRowData` format (Flink's `BinaryRowWriter`) into an internal
/// buffer that is reused from row to row.
///
/// Per row: [`reset`](Self::reset), optionally [`write_row_kind`](Self::write_row_kind), one
/// `write_*` or [`set_null_at`](Self::set_null_at) per field, then read the result with
/// [`row`](Self::row), [`hash_code`](Self::hash_code), [`key_group`](Self::key_group). Once
/// the buffer has grown to the largest row, writing allocates nothing.
///
/// Unlike Flink's writer, `reset` zeroes every slot, so a field's slot never keeps bytes of an
/// earlier row; the bytes are those of a fresh Flink writer. Write each field once per row: as
/// in Flink, a value written after `set_null_at` does not clear the null bit, and a second
/// variable-length write leaves the first one's bytes in the variable part.
///
/// ```
/// use keygroup::{BinaryRowWriter, MaxParallelism};
///
/// let mp = MaxParallelism::new(128)?;
/// let mut writer = BinaryRowWriter::new(2);
/// for (id, name) in [(1_i64, "first key 01"), (2, "second key 2")] {
///     writer.reset();
///     writer.write_long(0, id);
///     writer.write_string(1, name)?;
///     let kg = writer.key_group(mp);
///     assert_eq!(writer.row().len(), 40);
///     assert!(kg.get() < 128);
/// }
/// # Ok::<(), keygroup::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct BinaryRowWriter {
    /// The row is `buf[..cursor]`. Bytes past the cursor are left from earlier rows: the
    /// buffer only grows, so writing a row never changes its length.
    buf: Vec<u8>,
    /// End of the row written so far (Flink's `cursor`).
    cursor: usize,
    arity: usize,
    null_bits_size: usize,
    fixed_size: usize,
    /// Largest row size allowed ([`MAX_ROW_SIZE`]; lowered in unit tests).
    max_size: usize,
}

impl BinaryRowWriter {
    /// A writer for rows of `arity` fields, ready for the first row (as after
    /// [`reset`](Self::reset)).
    ///
    /// # Panics
    /// If the fixed-length part of such a row would exceed `i32::MAX` bytes (an arity above
    /// about 260 million); [`try_new`](Self::try_new) returns an error instead.
    #[must_use]
    pub fn new(arity: usize) -> Self {
        match Self::try_new(arity) {
            Ok(writer) => writer,
            Err(err) => panic!("BinaryRowWriter::new({arity}): {err}"),
        }
    }

    /// A writer for rows of `arity` fields.
    ///
    /// # Errors
    /// [`Error::LengthOverflow`] if the fixed-length part would exceed `i32::MAX` bytes.
    pub fn try_new(arity: usize) -> Result<Self> {
        let fixed_size = fixed_part_size(arity);
        check_size(fixed_size, MAX_ROW_SIZE)?;
        let mut writer = Self {
            buf: vec![0; fixed_size],
            cursor: fixed_size,
            arity,
            null_bits_size: bit_set_width_in_bytes(arity),
            fixed_size,
            max_size: MAX_ROW_SIZE,
        };
        writer.reset();
        Ok(writer)
    }

    /// The number of fields.
    pub fn arity(&self) -> usize {
        self.arity
    }

    /// `reset()`: starts a new row: kind `INSERT`, no nulls, all slots zero, empty variable
    /// part.
    #[inline]
    #[expect(
        clippy::indexing_slicing,
        reason = "buf is never shorter than the fixed part"
    )]
    pub fn reset(&mut self) {
        zero_words(&mut self.buf[..self.fixed_size]);
        self.cursor = self.fixed_size;
    }

    /// `writeRowKind(kind)`: sets the header byte.
    pub fn write_row_kind(&mut self, kind: RowKind) {
        if let Some(header) = self.buf.first_mut() {
            *header = kind.to_byte();
        }
    }

    /// Byte offset of field `pos`'s slot (`getFieldOffset`).
    ///
    /// # Panics
    /// If `pos >= arity`.
    #[inline]
    fn field_offset(&self, pos: usize) -> usize {
        assert!(
            pos < self.arity,
            "field position {pos} out of bounds for arity {}",
            self.arity
        );
        self.null_bits_size + 8 * pos
    }

    /// Overwrites field `pos`'s whole slot.
    #[expect(
        clippy::indexing_slicing,
        reason = "field_offset asserts pos < arity, and buf always holds the fixed part"
    )]
    #[inline]
    fn put_slot(&mut self, pos: usize, slot: [u8; 8]) {
        let offset = self.field_offset(pos);
        self.buf[offset..offset + 8].copy_from_slice(&slot);
    }

    /// Sets field `pos`'s slot to `(offset << 32) | size` (`setOffsetAndSize`).
    #[inline]
    fn put_offset_and_size(&mut self, pos: usize, offset: usize, size: u32) {
        // offset <= max_size <= i32::MAX was checked when the variable part grew.
        let offset = u64::try_from(offset).unwrap_or_default();
        self.put_slot(pos, ((offset << 32) | u64::from(size)).to_le_bytes());
    }

    /// Sets field `pos`'s null bit only (`setNullBit`).
    #[expect(
        clippy::indexing_slicing,
        reason = "field_offset asserts pos < arity, so the bit lies inside the bit set"
    )]
    fn set_null_bit(&mut self, pos: usize) {
        let _ = self.field_offset(pos);
        let bit = pos + HEADER_SIZE_IN_BITS;
        self.buf[bit / 8] |= 1 << (bit % 8);
    }

    /// `setNullAt(pos)`: sets field `pos`'s null bit and zeroes its slot.
    ///
    /// # Panics
    /// If `pos >= arity` (as every `write_*` method).
    pub fn set_null_at(&mut self, pos: usize) {
        self.set_null_bit(pos);
        self.put_slot(pos, [0; 8]);
    }

    /// `writeBoolean(pos, value)`: 1 or 0 in the slot's first byte.
    ///
    /// # Panics
    /// If `pos >= arity`.
    pub fn write_boolean(&mut self, pos: usize, value: bool) {
        self.put_slot(pos, u64::from(value).to_le_bytes());
    }

    /// `writeByte(pos, value)`: TINYINT.
    ///
    /// # Panics
    /// If `pos >= arity`.
    pub fn write_byte(&mut self, pos: usize, value: i8) {
        self.put_slot(pos, u64::from(value.cast_unsigned()).to_le_bytes());
    }

    /// `writeShort(pos, value)`: SMALLINT.
    ///
    /// # Panics
    /// If `pos >= arity`.
    pub fn write_short(&mut self, pos: usize, value: i16) {
        self.put_slot(pos, u64::from(value.cast_unsigned()).to_le_bytes());
    }

    /// `writeInt(pos, value)`: INT, DATE (days since epoch), TIME (millis of day).
    ///
    /// # Panics
    /// If `pos >= arity`.
    #[inline]
    pub fn write_int(&mut self, pos: usize, value: i32) {
        self.put_slot(pos, u64::from(value.cast_unsigned()).to_le_bytes());
    }

    /// `writeLong(pos, value)`: BIGINT (and compact DECIMAL / TIMESTAMP).
    ///
    /// # Panics
    /// If `pos >= arity`.
    #[inline]
    pub fn write_long(&mut self, pos: usize, value: i64) {
        self.put_slot(pos, value.to_le_bytes());
    }

    /// `writeFloat(pos, value)`: the raw bits (`-0.0` and NaN payloads are kept).
    ///
    /// # Panics
    /// If `pos >= arity`.
    pub fn write_float(&mut self, pos: usize, value: f32) {
        self.put_slot(pos, u64::from(value.to_bits()).to_le_bytes());
    }

    /// `writeDouble(pos, value)`: the raw bits.
    ///
    /// # Panics
    /// If `pos >= arity`.
    pub fn write_double(&mut self, pos: usize, value: f64) {
        self.put_slot(pos, value.to_bits().to_le_bytes());
    }

    /// `writeString(pos, value)`: CHAR / VARCHAR / STRING as UTF-8; see
    /// [`write_binary`](Self::write_binary) for the layout. Declared lengths are not checked
    /// and CHAR values are not padded, as in Flink.
    ///
    /// # Errors
    /// [`Error::LengthOverflow`] if the row would exceed `i32::MAX` bytes.
    ///
    /// # Panics
    /// If `pos >= arity`.
    #[inline]
    pub fn write_string(&mut self, pos: usize, value: &str) -> Result<()> {
        self.write_binary(pos, value.as_bytes())
    }

    /// `writeBinary(pos, bytes)`: up to 7 bytes inline in the slot (last slot byte
    /// `0x80 | len`), longer ones in the variable part, zero-padded to 8 bytes, with the slot
    /// holding `(offset << 32) | len`.
    ///
    /// # Errors
    /// [`Error::LengthOverflow`] if the row would exceed `i32::MAX` bytes.
    ///
    /// # Panics
    /// If `pos >= arity`.
    #[inline]
    pub fn write_binary(&mut self, pos: usize, bytes: &[u8]) -> Result<()> {
        if bytes.len() <= MAX_FIX_PART_DATA_SIZE {
            let mut slot = [0_u8; 8];
            for (dst, src) in slot.iter_mut().zip(bytes) {
                *dst = *src;
            }
            // len <= 7: the mark byte is 0x80 | len.
            slot[MAX_FIX_PART_DATA_SIZE] = 0x80 | u8::try_from(bytes.len()).unwrap_or_default();
            self.put_slot(pos, slot);
            return Ok(());
        }
        let offset = self.append(bytes, round_to_word(bytes.len()))?;
        // append checked the row (and so the length) against i32::MAX.
        self.put_offset_and_size(pos, offset, u32::try_from(bytes.len()).unwrap_or_default());
        Ok(())
    }

    /// Appends `reserved` bytes (a multiple of 8, at least `bytes.len()`) to the variable
    /// part: `bytes`, then zeros. Returns their offset, the old cursor.
    #[inline]
    #[expect(
        clippy::indexing_slicing,
        reason = "buf is grown to the new cursor first, and bytes.len() <= reserved"
    )]
    fn append(&mut self, bytes: &[u8], reserved: usize) -> Result<usize> {
        let offset = self.cursor;
        let end = offset.saturating_add(reserved);
        check_size(end, self.max_size)?;
        if self.buf.len() < end {
            self.buf.resize(end, 0);
        }
        copy_words_zero_padded(&mut self.buf[offset..end], bytes);
        self.cursor = end;
        Ok(offset)
    }

    /// `writeDecimal(pos, value, precision)` for an unscaled value (`None` = SQL NULL).
    ///
    /// * precision <= 18: the unscaled value as `i64` in the slot; `None` is
    ///   [`set_null_at`](Self::set_null_at) (what Flink's generated code does for a compact
    ///   null, since `writeDecimal` cannot take one).
    /// * precision >= 19: 16 zeroed bytes reserved in the variable part; `Some` writes
    ///   `BigInteger.toByteArray()` of the unscaled value there and sets the slot to
    ///   `(offset << 32) | byte_len`; `None` sets the null bit and the slot to `offset << 32`.
    ///
    /// # Errors
    /// [`Error::InvalidTypeParameter`] unless `1 <= precision <= 38`;
    /// [`Error::DecimalOutOfRange`] if `|unscaled| >= 10^precision`;
    /// [`Error::LengthOverflow`] if the row would exceed `i32::MAX` bytes.
    ///
    /// # Panics
    /// If `pos >= arity`.
    pub fn write_decimal(
        &mut self,
        pos: usize,
        unscaled: Option<i128>,
        precision: u8,
    ) -> Result<()> {
        check_decimal(precision, 0)?;
        if let Some(unscaled) = unscaled {
            check_decimal_range(unscaled, precision)?;
        }
        if precision <= MAX_COMPACT_DECIMAL_PRECISION {
            match unscaled.map(i64::try_from) {
                // In range for precision <= 18, so the conversion cannot fail.
                Some(value) => self.write_long(pos, value.unwrap_or_default()),
                None => self.set_null_at(pos),
            }
            return Ok(());
        }
        // BigInteger.toByteArray() is 1..=16 bytes; a null keeps length 0.
        let bytes = unscaled.map(i128::to_be_bytes);
        let minimal = bytes.as_ref().map_or(&[][..], minimal_twos_complement);
        let offset = self.append(minimal, 16)?;
        if unscaled.is_none() {
            self.set_null_bit(pos);
        }
        self.put_offset_and_size(
            pos,
            offset,
            u32::try_from(minimal.len()).unwrap_or_default(),
        );
        Ok(())
    }

    /// `writeTimestamp(pos, value, precision)` for TIMESTAMP and `TIMESTAMP_LTZ` (`None` = SQL
    /// NULL).
    ///
    /// * precision <= 3: epoch millis in the slot (the nanos are dropped); `None` is
    ///   [`set_null_at`](Self::set_null_at).
    /// * precision >= 4: the millis as `i64` in 8 bytes of the variable part, the slot
    ///   `(offset << 32) | nano_of_milli`; `None` reserves 8 zero bytes, sets the null bit and
    ///   the slot to `offset << 32`.
    ///
    /// The nanos are not truncated to the precision, as in Flink.
    ///
    /// # Errors
    /// [`Error::InvalidTypeParameter`] unless `precision <= 9`;
    /// [`Error::InvalidNanoOfMilli`] unless `nano_of_milli <= 999_999`;
    /// [`Error::LengthOverflow`] if the row would exceed `i32::MAX` bytes.
    ///
    /// # Panics
    /// If `pos >= arity`.
    pub fn write_timestamp(
        &mut self,
        pos: usize,
        value: Option<Timestamp>,
        precision: u8,
    ) -> Result<()> {
        check_time_precision("TIMESTAMP", precision)?;
        if let Some(ts) = value {
            check_nano_of_milli(ts.nano_of_milli.into())?;
        }
        if precision <= MAX_COMPACT_TIMESTAMP_PRECISION {
            match value {
                Some(ts) => self.write_long(pos, ts.millis),
                None => self.set_null_at(pos),
            }
            return Ok(());
        }
        // A null keeps the 8 zero bytes and nanos 0.
        let ts = value.unwrap_or_default();
        let offset = self.append(&ts.millis.to_le_bytes(), 8)?;
        if value.is_none() {
            self.set_null_bit(pos);
        }
        self.put_offset_and_size(pos, offset, ts.nano_of_milli);
        Ok(())
    }

    /// Writes one typed value into field `pos` of type `ty` (`BinaryWriter.write` for the
    /// value's type), with `nulls` deciding how a null non-compact DECIMAL / TIMESTAMP is
    /// written.
    ///
    /// # Errors
    /// [`Error::InvalidTypeParameter`] for a type outside Flink's parameter ranges;
    /// [`Error::TypeMismatch`] if the value's kind does not fit `ty`;
    /// [`Error::DecimalScaleMismatch`], [`Error::DecimalOutOfRange`],
    /// [`Error::InvalidNanoOfMilli`], [`Error::LengthOverflow`] as the `write_*` methods.
    ///
    /// # Panics
    /// If `pos >= arity`.
    pub fn write_value(
        &mut self,
        pos: usize,
        ty: LogicalType,
        value: &Value,
        nulls: NullEncoding,
    ) -> Result<()> {
        ty.validate()?;
        let reserve = nulls == NullEncoding::KeySelector;
        match (ty, value) {
            (LogicalType::Decimal { precision, .. }, Value::Null) if reserve => {
                self.write_decimal(pos, None, precision)?;
            }
            (
                LogicalType::Timestamp { precision } | LogicalType::TimestampLtz { precision },
                Value::Null,
            ) if reserve => self.write_timestamp(pos, None, precision)?,
            (_, Value::Null) => self.set_null_at(pos),
            (LogicalType::Boolean, Value::Boolean(v)) => self.write_boolean(pos, *v),
            (LogicalType::TinyInt, Value::TinyInt(v)) => self.write_byte(pos, *v),
            (LogicalType::SmallInt, Value::SmallInt(v)) => self.write_short(pos, *v),
            (LogicalType::Int, Value::Int(v))
            | (LogicalType::Date, Value::Date(v))
            | (LogicalType::Time { .. }, Value::Time(v)) => self.write_int(pos, *v),
            (LogicalType::BigInt, Value::BigInt(v)) => self.write_long(pos, *v),
            (LogicalType::Float, Value::Float(v)) => self.write_float(pos, *v),
            (LogicalType::Double, Value::Double(v)) => self.write_double(pos, *v),
            (LogicalType::Char { .. } | LogicalType::VarChar { .. }, Value::String(v)) => {
                self.write_string(pos, v)?;
            }
            (LogicalType::Binary { .. } | LogicalType::VarBinary { .. }, Value::Binary(v)) => {
                self.write_binary(pos, v)?;
            }
            (
                LogicalType::Decimal { precision, scale },
                Value::Decimal {
                    unscaled,
                    scale: actual,
                },
            ) => {
                if *actual != scale {
                    return Err(Error::DecimalScaleMismatch {
                        position: pos,
                        expected: scale,
                        actual: *actual,
                    });
                }
                self.write_decimal(pos, Some(*unscaled), precision)?;
            }
            (LogicalType::Timestamp { precision }, Value::Timestamp(ts))
            | (LogicalType::TimestampLtz { precision }, Value::TimestampLtz(ts)) => {
                self.write_timestamp(pos, Some(*ts), precision)?;
            }
            _ => {
                return Err(Error::TypeMismatch {
                    position: pos,
                    expected: ty,
                    actual: value.kind_name(),
                });
            }
        }
        Ok(())
    }

    /// Writes a whole row: [`reset`](Self::reset), the kind, then
    /// [`write_value`](Self::write_value) for every field.
    ///
    /// For a Flink SQL state key use `RowKind::Insert` and [`NullEncoding::KeySelector`] (the
    /// key selector writes kind `INSERT` whatever the input row's kind); for
    /// `RowDataSerializer.toBinaryRow(GenericRowData.ofKind(kind, values))` use that kind and
    /// [`NullEncoding::RowDataSerializer`].
    ///
    /// # Errors
    /// [`Error::ArityMismatch`] unless `values` has one value per type and `types` one type
    /// per field of the writer;
    /// otherwise the first error of [`write_value`](Self::write_value). After an error the
    /// row is incomplete; call `reset` before reusing the writer.
    pub fn write_row(
        &mut self,
        kind: RowKind,
        types: &[LogicalType],
        values: &[Value],
        nulls: NullEncoding,
    ) -> Result<()> {
        check_arity(types.len(), values.len())?;
        check_arity(self.arity, types.len())?;
        self.reset();
        self.write_row_kind(kind);
        for (pos, (ty, value)) in types.iter().zip(values).enumerate() {
            self.write_value(pos, *ty, value, nulls)?;
        }
        Ok(())
    }

    /// The row written so far (`complete()` + the row's bytes).
    #[inline]
    #[expect(
        clippy::indexing_slicing,
        reason = "the cursor never passes the buffer's end"
    )]
    pub fn row(&self) -> &[u8] {
        &self.buf[..self.cursor]
    }

    /// `getSizeInBytes()` of the row written so far.
    pub fn size_in_bytes(&self) -> usize {
        self.cursor
    }

    /// `BinaryRowData.hashCode()` of the row written so far.
    #[inline]
    pub fn hash_code(&self) -> i32 {
        murmur_hash_bytes(self.row())
    }

    /// `KeyGroupRangeAssignment.assignToKeyGroup(row, maxParallelism)` of the row written so
    /// far.
    #[inline]
    pub fn key_group(&self, max_parallelism: MaxParallelism) -> KeyGroup {
        compute_key_group_for_key_hash(self.hash_code(), max_parallelism)
    }

    /// A copy of the row written so far.
    pub fn to_binary_row(&self) -> BinaryRow {
        BinaryRow::from_written(self.row().to_vec(), self.arity)
    }
}

fn check_arity(expected: usize, actual: usize) -> Result<()> {
    if expected == actual {
        Ok(())
    } else {
        Err(Error::ArityMismatch { expected, actual })
    }
}

/// Zeroes `words` (a whole number of 8-byte words) with plain 8-byte stores.
///
/// Not `fill(0)`: that becomes a `memset` call, and glibc's AVX-512 `memset` writes short
/// lengths with masked vector stores, which the CPU cannot forward to the loads of the
/// `hashCode()` that follows; every row then waits for the stores to reach the cache (this
/// halved the rows per second of the `binary_row` benches).
#[inline]
fn zero_words(words: &mut [u8]) {
    // An opaque zero keeps the optimizer from turning the loop back into a `memset`.
    let zero = std::hint::black_box(0_u64).to_le_bytes();
    for word in words.chunks_exact_mut(8) {
        word.copy_from_slice(&zero);
    }
}

/// Copies `src` to the start of `dst` (a whole number of 8-byte words, at least as long) and
/// zeroes the rest, one 8-byte store per word (see [`zero_words`] for why not `memcpy`).
#[inline]
fn copy_words_zero_padded(dst: &mut [u8], src: &[u8]) {
    for (k, word) in dst.chunks_exact_mut(8).enumerate() {
        let rest = src.get(8 * k..).unwrap_or_default();
        let value = match rest.first_chunk::<8>() {
            Some(full) => *full,
            // The last, partial word (or a padding word): the bytes, then zeros.
            None => rest
                .iter()
                .rev()
                .fold(0_u64, |acc, byte| (acc << 8) | u64::from(*byte))
                .to_le_bytes(),
        };
        word.copy_from_slice(&value);
    }
}

/// `roundNumberOfBytesToNearestWord`: up to a multiple of 8.
#[inline]
fn round_to_word(len: usize) -> usize {
    len.saturating_add(7) & !7
}

#[inline]
fn check_size(size: usize, max_size: usize) -> Result<()> {
    if size <= max_size {
        Ok(())
    } else {
        Err(Error::LengthOverflow {
            length: u64::try_from(size).unwrap_or(u64::MAX),
            limit: u64::try_from(max_size).unwrap_or(u64::MAX),
        })
    }
}

/// `10^precision` for `precision <= 38` (fits `i128`).
pub(crate) fn ten_pow(precision: u8) -> i128 {
    10_i128.pow(u32::from(precision))
}

/// `DecimalData.fromBigDecimal`'s precision check: `|unscaled| < 10^precision`.
pub(crate) fn check_decimal_range(unscaled: i128, precision: u8) -> Result<()> {
    let bound = ten_pow(precision);
    if unscaled > -bound && unscaled < bound {
        Ok(())
    } else {
        Err(Error::DecimalOutOfRange {
            unscaled,
            precision,
        })
    }
}

/// `BigInteger.toByteArray()` of a 16-byte big-endian two's complement value: drops leading
/// bytes that only repeat the sign, keeping at least one.
fn minimal_twos_complement(bytes: &[u8; 16]) -> &[u8] {
    let mut start = 0;
    while let [first, second, ..] = bytes.get(start..).unwrap_or_default() {
        let redundant =
            (*first == 0x00 && second & 0x80 == 0) || (*first == 0xff && second & 0x80 != 0);
        if !redundant {
            break;
        }
        start += 1;
    }
    bytes.get(start..).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().fold(String::new(), |mut out, b| {
            use std::fmt::Write as _;
            let _ = write!(out, "{b:02x}");
            out
        })
    }

    #[test]
    fn big_integer_bytes() {
        let cases: [(i128, &str); 8] = [
            (0, "00"),
            (-1, "ff"),
            (127, "7f"),
            (128, "0080"),
            (-128, "80"),
            (-129, "ff7f"),
            (i128::MAX, "7fffffffffffffffffffffffffffffff"),
            (i128::MIN, "80000000000000000000000000000000"),
        ];
        for (value, expected) in cases {
            assert_eq!(
                hex(minimal_twos_complement(&value.to_be_bytes())),
                expected,
                "{value}"
            );
        }
    }

    #[test]
    fn inline_and_variable_strings() {
        let mut w = BinaryRowWriter::new(2);
        w.write_string(0, "").unwrap();
        w.write_string(1, "abcdefg").unwrap();
        assert_eq!(
            hex(w.row()),
            "0000000000000000000000000000008061626364656667".to_owned() + "87"
        );
        w.reset();
        w.write_string(0, "abcdefgh").unwrap();
        w.write_binary(1, &[1; 9]).unwrap();
        assert_eq!(w.size_in_bytes(), 24 + 8 + 16);
        assert_eq!(hex(w.row().get(8..16).unwrap()), "0800000018000000");
        assert_eq!(hex(w.row().get(16..24).unwrap()), "0900000020000000");
    }

    #[test]
    fn word_copies_pad_with_zeros() {
        let mut dst = [0xaa_u8; 24];
        copy_words_zero_padded(&mut dst, b"0123456789");
        assert_eq!(&dst[..10], b"0123456789");
        assert_eq!(dst[10..], [0; 14]);
        let mut dst = [0xaa_u8; 16];
        copy_words_zero_padded(&mut dst, &[]);
        assert_eq!(dst, [0; 16]);
        zero_words(&mut [0xaa_u8; 0]);
    }

    #[test]
    fn a_shorter_row_after_a_longer_one() {
        let mut w = BinaryRowWriter::new(1);
        w.write_string(0, "a string of 26 bytes......").unwrap();
        assert_eq!(w.size_in_bytes(), 16 + 32);
        w.reset();
        w.write_string(0, "eight b.").unwrap();
        assert_eq!(
            hex(w.row()),
            "0000000000000000080000001000000065696768742062 2e".replace(' ', "")
        );
        w.reset();
        assert_eq!(w.row(), [0; 16]);
    }

    #[test]
    fn reset_clears_previous_row() {
        let mut w = BinaryRowWriter::new(1);
        w.write_row_kind(RowKind::Delete);
        w.write_long(0, -1);
        w.set_null_at(0);
        w.reset();
        w.write_boolean(0, true);
        assert_eq!(hex(w.row()), "00000000000000000100000000000000");
    }

    #[test]
    #[should_panic(expected = "field position 1 out of bounds for arity 1")]
    fn position_out_of_bounds_panics() {
        BinaryRowWriter::new(1).write_int(1, 0);
    }

    #[test]
    fn length_overflow() {
        let mut w = BinaryRowWriter::new(1);
        w.max_size = 24;
        assert!(w.write_string(0, "12345678").is_ok());
        w.reset();
        let err = w.write_string(0, "123456789").unwrap_err();
        assert!(
            matches!(
                err,
                Error::LengthOverflow {
                    length: 32,
                    limit: 24
                }
            ),
            "{err}"
        );
        w.reset();
        assert!(matches!(
            w.write_decimal(0, None, 38),
            Err(Error::LengthOverflow { .. })
        ));
        assert!(BinaryRowWriter::try_new(usize::MAX / 16).is_err());
    }

    #[test]
    #[should_panic(expected = "BinaryRowWriter::new")]
    fn huge_arity_panics() {
        let _ = BinaryRowWriter::new(usize::MAX / 16);
    }

    #[test]
    fn decimal_checks() {
        let mut w = BinaryRowWriter::new(1);
        assert!(matches!(
            w.write_decimal(0, Some(100_000), 5),
            Err(Error::DecimalOutOfRange {
                unscaled: 100_000,
                precision: 5
            })
        ));
        assert!(w.write_decimal(0, Some(-99_999), 5).is_ok());
        assert!(matches!(
            w.write_decimal(0, Some(1), 39),
            Err(Error::InvalidTypeParameter { .. })
        ));
        assert!(w.write_decimal(0, Some(ten_pow(38) - 1), 38).is_ok());
    }

    #[test]
    fn value_checks() {
        let mut w = BinaryRowWriter::new(1);
        let dec = LogicalType::Decimal {
            precision: 10,
            scale: 2,
        };
        let err = w
            .write_value(
                0,
                dec,
                &Value::Decimal {
                    unscaled: 1,
                    scale: 3,
                },
                NullEncoding::KeySelector,
            )
            .unwrap_err();
        assert!(matches!(
            err,
            Error::DecimalScaleMismatch {
                position: 0,
                expected: 2,
                actual: 3
            }
        ));
        let err = w
            .write_value(
                0,
                LogicalType::BigInt,
                &Value::Int(1),
                NullEncoding::KeySelector,
            )
            .unwrap_err();
        assert!(matches!(
            err,
            Error::TypeMismatch {
                position: 0,
                actual: "INT",
                ..
            }
        ));
        let err = w
            .write_row(
                RowKind::Insert,
                &[LogicalType::Int],
                &[],
                NullEncoding::KeySelector,
            )
            .unwrap_err();
        assert!(matches!(
            err,
            Error::ArityMismatch {
                expected: 1,
                actual: 0
            }
        ));
        let err = w
            .write_row(
                RowKind::Insert,
                &[LogicalType::Int, LogicalType::Int],
                &[Value::Null, Value::Null],
                NullEncoding::KeySelector,
            )
            .unwrap_err();
        assert!(matches!(
            err,
            Error::ArityMismatch {
                expected: 1,
                actual: 2
            }
        ));
        let ts = Timestamp {
            millis: 0,
            nano_of_milli: 1_000_000,
        };
        let err = w
            .write_value(
                0,
                LogicalType::Timestamp { precision: 9 },
                &Value::Timestamp(ts),
                NullEncoding::KeySelector,
            )
            .unwrap_err();
        assert!(matches!(err, Error::InvalidNanoOfMilli { .. }));
    }

    #[test]
    fn null_encodings_differ_only_for_non_compact() {
        let types = [
            LogicalType::Decimal {
                precision: 20,
                scale: 0,
            },
            LogicalType::Timestamp { precision: 6 },
        ];
        let values = [Value::Null, Value::Null];
        let mut w = BinaryRowWriter::new(2);
        w.write_row(RowKind::Insert, &types, &values, NullEncoding::KeySelector)
            .unwrap();
        assert_eq!(
            hex(w.row()),
            "0003000000000000\
             0000000018000000\
             0000000028000000\
             00000000000000000000000000000000\
             0000000000000000"
        );
        w.write_row(
            RowKind::Insert,
            &types,
            &values,
            NullEncoding::RowDataSerializer,
        )
        .unwrap();
        assert_eq!(
            hex(w.row()),
            "000300000000000000000000000000000000000000000000"
        );
        let compact = [
            LogicalType::Decimal {
                precision: 18,
                scale: 0,
            },
            LogicalType::Timestamp { precision: 3 },
        ];
        w.write_row(
            RowKind::Insert,
            &compact,
            &values,
            NullEncoding::KeySelector,
        )
        .unwrap();
        assert_eq!(
            hex(w.row()),
            "000300000000000000000000000000000000000000000000"
        );
    }
}
