//! `BinaryRowReader`: typed, checked reads of `BinaryRowData` bytes.

use crate::error::{Error, Result};
use crate::row::{
    HEADER_SIZE_IN_BITS, MAX_COMPACT_DECIMAL_PRECISION, MAX_COMPACT_TIMESTAMP_PRECISION,
    MAX_FIX_PART_DATA_SIZE, bit_set_width_in_bytes, fixed_part_size,
};
use crate::types::LogicalType;
use crate::value::{RowKind, Timestamp, Value, check_nano_of_milli};
use crate::writer::check_decimal_range;

/// Reads the fields of one `BinaryRowData` (Flink's `BinaryRowData.getXxx` getters), checking
/// every offset and length before it is used.
///
/// Made for untrusted bytes: no method panics and nothing is allocated before the length it
/// depends on has been checked against the row. [`new`](Self::new) checks the row as a whole
/// (size, alignment, header); [`read_field`](Self::read_field) checks one field:
///
/// * a null bit set gives [`Value::Null`], whatever the slot holds;
/// * inline string/binary lengths must be <= 7, variable-length data must lie inside the
///   variable part (from the fixed part's end to the row's end);
/// * strings must be UTF-8, DECIMAL values must fit their precision (and non-compact ones be
///   1..=16 bytes), timestamp nanos must be in `0..=999_999`.
///
/// Slot padding and unused null bits are not checked, and any non-zero BOOLEAN byte reads as
/// `true`: Flink's getters read those rows the same way.
///
/// ```
/// use keygroup::{decode_row, BinaryRow, LogicalType, Value};
///
/// let types = [LogicalType::BigInt, LogicalType::VarChar { length: 20 }];
/// let values = [Value::BigInt(7), Value::String("a string of 19 bytes".into())];
/// let row = BinaryRow::from_values(&types, &values)?;
/// assert_eq!(decode_row(&types, row.as_bytes())?, values);
///
/// // Truncated bytes are an error, not a panic.
/// assert!(decode_row(&types, &row.as_bytes()[..32]).is_err());
/// # Ok::<(), keygroup::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct BinaryRowReader<'a> {
    types: &'a [LogicalType],
    row: &'a [u8],
    kind: RowKind,
    null_bits_size: usize,
    fixed_size: usize,
}

impl<'a> BinaryRowReader<'a> {
    /// Checks `row` as a row with one field per entry of `types`.
    ///
    /// # Errors
    /// [`Error::RowTooShort`] if `row` is shorter than the fixed-length part;
    /// [`Error::UnalignedRow`] unless its length is a multiple of 8;
    /// [`Error::InvalidRowKind`] unless the header byte is 0..=3.
    pub fn new(types: &'a [LogicalType], row: &'a [u8]) -> Result<Self> {
        let fixed_size = fixed_part_size(types.len());
        if row.len() < fixed_size {
            return Err(Error::RowTooShort {
                len: row.len(),
                fixed_part_size: fixed_size,
            });
        }
        if !row.len().is_multiple_of(8) {
            return Err(Error::UnalignedRow { len: row.len() });
        }
        // The fixed part is at least 8 bytes, so the header byte exists.
        let kind = RowKind::from_byte(row.first().copied().unwrap_or_default())?;
        Ok(Self {
            types,
            row,
            kind,
            null_bits_size: bit_set_width_in_bytes(types.len()),
            fixed_size,
        })
    }

    /// `getArity()`.
    pub fn arity(&self) -> usize {
        self.types.len()
    }

    /// `getRowKind()`.
    pub fn row_kind(&self) -> RowKind {
        self.kind
    }

    /// `getSizeInBytes()`.
    pub fn size_in_bytes(&self) -> usize {
        self.row.len()
    }

    fn check_position(&self, pos: usize) -> Result<()> {
        if pos < self.types.len() {
            Ok(())
        } else {
            Err(Error::FieldOutOfBounds {
                position: pos,
                arity: self.types.len(),
            })
        }
    }

    /// `isNullAt(pos)`.
    ///
    /// # Errors
    /// [`Error::FieldOutOfBounds`] if `pos >= arity`.
    pub fn is_null_at(&self, pos: usize) -> Result<bool> {
        self.check_position(pos)?;
        let bit = pos + HEADER_SIZE_IN_BITS;
        let byte = self.row.get(bit / 8).copied().unwrap_or_default();
        Ok(byte & (1 << (bit % 8)) != 0)
    }

    /// The 8-byte slot of field `pos` (`pos < arity` checked by the caller).
    fn slot(&self, pos: usize) -> [u8; 8] {
        let start = self.null_bits_size + 8 * pos;
        self.row
            .get(start..start + 8)
            .and_then(|s| <[u8; 8]>::try_from(s).ok())
            .unwrap_or_default()
    }

    /// `length` bytes at `offset` (from the row start), which must lie in the variable part.
    fn var_bytes(&self, pos: usize, offset: u64, length: u64) -> Result<&'a [u8]> {
        let out_of_bounds = || Error::VariablePartOutOfBounds {
            position: pos,
            offset,
            length,
            var_part_start: self.fixed_size,
            row_len: self.row.len(),
        };
        let start = usize::try_from(offset).map_err(|_| out_of_bounds())?;
        let len = usize::try_from(length).map_err(|_| out_of_bounds())?;
        if start < self.fixed_size {
            return Err(out_of_bounds());
        }
        start
            .checked_add(len)
            .and_then(|end| self.row.get(start..end))
            .ok_or_else(out_of_bounds)
    }

    /// The bytes of a string/binary field (`BinarySegmentUtils.readBinary`).
    fn binary_bytes(&self, pos: usize) -> Result<&'a [u8]> {
        let slot = self.slot(pos);
        let mark = slot[MAX_FIX_PART_DATA_SIZE];
        if mark & 0x80 != 0 {
            let length = mark & 0x7f;
            let start = self.null_bits_size + 8 * pos;
            let inline = usize::from(length) <= MAX_FIX_PART_DATA_SIZE;
            return inline
                .then(|| self.row.get(start..start + usize::from(length)))
                .flatten()
                .ok_or(Error::InvalidInlineLength {
                    position: pos,
                    length,
                });
        }
        let (offset, length) = split_offset_and_size(slot);
        self.var_bytes(pos, offset, length)
    }

    /// Reads field `pos` as its type.
    ///
    /// # Errors
    /// [`Error::FieldOutOfBounds`] if `pos >= arity`; [`Error::InvalidTypeParameter`] if
    /// the field's type is outside Flink's parameter ranges; for a non-null field the checks
    /// listed on [`BinaryRowReader`]: [`Error::InvalidInlineLength`],
    /// [`Error::VariablePartOutOfBounds`], [`Error::InvalidUtf8`],
    /// [`Error::InvalidDecimalLength`], [`Error::DecimalOutOfRange`],
    /// [`Error::InvalidNanoOfMilli`].
    pub fn read_field(&self, pos: usize) -> Result<Value> {
        self.check_position(pos)?;
        let ty = self.types.get(pos).copied().unwrap_or(LogicalType::Boolean);
        ty.validate()?;
        if self.is_null_at(pos)? {
            return Ok(Value::Null);
        }
        let slot = self.slot(pos);
        let long = i64::from_le_bytes(slot);
        let [b0, b1, b2, b3, ..] = slot;
        let int = i32::from_le_bytes([b0, b1, b2, b3]);
        Ok(match ty {
            LogicalType::Boolean => Value::Boolean(b0 != 0),
            LogicalType::TinyInt => Value::TinyInt(b0.cast_signed()),
            LogicalType::SmallInt => Value::SmallInt(i16::from_le_bytes([b0, b1])),
            LogicalType::Int => Value::Int(int),
            LogicalType::Date => Value::Date(int),
            LogicalType::Time { .. } => Value::Time(int),
            LogicalType::BigInt => Value::BigInt(long),
            LogicalType::Float => {
                Value::Float(f32::from_bits(u32::from_le_bytes([b0, b1, b2, b3])))
            }
            LogicalType::Double => Value::Double(f64::from_bits(u64::from_le_bytes(slot))),
            LogicalType::Char { .. } | LogicalType::VarChar { .. } => {
                let bytes = self.binary_bytes(pos)?;
                let text =
                    std::str::from_utf8(bytes).map_err(|_| Error::InvalidUtf8 { position: pos })?;
                Value::String(text.to_owned())
            }
            LogicalType::Binary { .. } | LogicalType::VarBinary { .. } => {
                Value::Binary(self.binary_bytes(pos)?.to_vec())
            }
            LogicalType::Decimal { precision, scale } => {
                let unscaled = if precision <= MAX_COMPACT_DECIMAL_PRECISION {
                    i128::from(long)
                } else {
                    let (offset, length) = split_offset_and_size(slot);
                    if !(1..=16).contains(&length) {
                        return Err(Error::InvalidDecimalLength {
                            position: pos,
                            length,
                        });
                    }
                    from_big_integer_bytes(self.var_bytes(pos, offset, length)?)
                };
                check_decimal_range(unscaled, precision)?;
                Value::Decimal { unscaled, scale }
            }
            LogicalType::Timestamp { precision } => {
                Value::Timestamp(self.timestamp(pos, slot, precision)?)
            }
            LogicalType::TimestampLtz { precision } => {
                Value::TimestampLtz(self.timestamp(pos, slot, precision)?)
            }
        })
    }

    /// `getTimestamp(pos, precision)`.
    fn timestamp(&self, pos: usize, slot: [u8; 8], precision: u8) -> Result<Timestamp> {
        if precision <= MAX_COMPACT_TIMESTAMP_PRECISION {
            return Ok(Timestamp {
                millis: i64::from_le_bytes(slot),
                nano_of_milli: 0,
            });
        }
        let (offset, nanos) = split_offset_and_size(slot);
        // The nanos are the slot's low 32 bits read as a Java int.
        let nano_of_milli = u32::try_from(nanos).unwrap_or(u32::MAX).cast_signed();
        check_nano_of_milli(nano_of_milli.into())?;
        let millis = self
            .var_bytes(pos, offset, 8)?
            .try_into()
            .map(i64::from_le_bytes)
            .unwrap_or_default();
        Ok(Timestamp {
            millis,
            nano_of_milli: nano_of_milli.cast_unsigned(),
        })
    }

    /// Reads every field, in order.
    ///
    /// # Errors
    /// The first error of [`read_field`](Self::read_field).
    pub fn read_all(&self) -> Result<Vec<Value>> {
        (0..self.types.len())
            .map(|pos| self.read_field(pos))
            .collect()
    }
}

/// Decodes a whole row: [`BinaryRowReader::new`] then [`BinaryRowReader::read_all`].
///
/// This is the entry point for untrusted bytes (and for fuzzing): it returns the field values
/// or a typed error, never panics, and allocates only for fields whose bounds were checked.
///
/// # Errors
/// Any error of [`BinaryRowReader::new`] or [`BinaryRowReader::read_field`].
pub fn decode_row(types: &[LogicalType], row: &[u8]) -> Result<Vec<Value>> {
    BinaryRowReader::new(types, row)?.read_all()
}

/// A slot's `(offset << 32) | size` split into its halves.
fn split_offset_and_size(slot: [u8; 8]) -> (u64, u64) {
    let word = u64::from_le_bytes(slot);
    (word >> 32, word & 0xffff_ffff)
}

/// `new BigInteger(bytes)` for 1..=16 big-endian two's complement bytes.
fn from_big_integer_bytes(bytes: &[u8]) -> i128 {
    let fill = if bytes.first().is_some_and(|b| b & 0x80 != 0) {
        0xff
    } else {
        0x00
    };
    let mut be = [fill; 16];
    let start = 16 - bytes.len().min(16);
    for (dst, src) in be.iter_mut().skip(start).zip(bytes) {
        *dst = *src;
    }
    i128::from_be_bytes(be)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::BinaryRow;

    fn row(types: &[LogicalType], values: &[Value]) -> Vec<u8> {
        BinaryRow::from_values(types, values).unwrap().into_bytes()
    }

    #[test]
    fn whole_row_checks() {
        let types = [LogicalType::Int];
        assert!(matches!(
            BinaryRowReader::new(&types, &[0; 8]),
            Err(Error::RowTooShort {
                len: 8,
                fixed_part_size: 16
            })
        ));
        assert!(matches!(
            BinaryRowReader::new(&types, &[0; 17]),
            Err(Error::UnalignedRow { len: 17 })
        ));
        let mut bad_kind = [0; 16];
        bad_kind[0] = 4;
        assert!(matches!(
            BinaryRowReader::new(&types, &bad_kind),
            Err(Error::InvalidRowKind { byte: 4 })
        ));
        let reader = BinaryRowReader::new(&types, &[0; 16]).unwrap();
        assert!(matches!(
            reader.read_field(1),
            Err(Error::FieldOutOfBounds {
                position: 1,
                arity: 1
            })
        ));
        assert!(reader.is_null_at(1).is_err());
        assert_eq!(reader.size_in_bytes(), 16);
        assert_eq!(reader.arity(), 1);
    }

    #[test]
    fn invalid_inline_length() {
        let types = [LogicalType::VarChar { length: 10 }];
        let mut bytes = row(&types, &[Value::String("abc".into())]);
        bytes[15] = 0x88;
        assert!(matches!(
            decode_row(&types, &bytes),
            Err(Error::InvalidInlineLength {
                position: 0,
                length: 8
            })
        ));
    }

    #[test]
    fn variable_part_bounds() {
        let types = [LogicalType::VarBinary { length: 100 }];
        let mut bytes = row(&types, &[Value::Binary(vec![7; 9])]);
        // Length 17 runs past the row's end.
        bytes[8] = 17;
        assert!(matches!(
            decode_row(&types, &bytes),
            Err(Error::VariablePartOutOfBounds {
                position: 0,
                length: 17,
                ..
            })
        ));
        // Offset 8 points into the fixed part.
        bytes[8] = 9;
        bytes[12] = 8;
        assert!(matches!(
            decode_row(&types, &bytes),
            Err(Error::VariablePartOutOfBounds { .. })
        ));
        // A huge length is rejected before anything is allocated.
        let mut huge = row(&types, &[Value::Binary(vec![7; 9])]);
        huge[8..12].copy_from_slice(&[0xff; 4]);
        assert!(matches!(
            decode_row(&types, &huge),
            Err(Error::VariablePartOutOfBounds { .. })
        ));
    }

    #[test]
    fn invalid_utf8() {
        let types = [LogicalType::VarChar { length: 10 }];
        let mut bytes = row(&types, &[Value::String("ab".into())]);
        bytes[8] = 0xff;
        assert!(matches!(
            decode_row(&types, &bytes),
            Err(Error::InvalidUtf8 { position: 0 })
        ));
    }

    #[test]
    fn decimal_checks() {
        let types = [LogicalType::Decimal {
            precision: 20,
            scale: 2,
        }];
        let mut bytes = row(
            &types,
            &[Value::Decimal {
                unscaled: -5,
                scale: 2,
            }],
        );
        assert_eq!(
            decode_row(&types, &bytes).unwrap(),
            [Value::Decimal {
                unscaled: -5,
                scale: 2
            }]
        );
        bytes[8] = 0;
        assert!(matches!(
            decode_row(&types, &bytes),
            Err(Error::InvalidDecimalLength {
                position: 0,
                length: 0
            })
        ));
        bytes[8] = 17;
        assert!(matches!(
            decode_row(&types, &bytes),
            Err(Error::InvalidDecimalLength { .. })
        ));
        // 16 bytes of 0x7f.. is far beyond 10^20.
        bytes[8] = 16;
        bytes[16..32].fill(0x7f);
        assert!(matches!(
            decode_row(&types, &bytes),
            Err(Error::DecimalOutOfRange { .. })
        ));
        let compact = [LogicalType::Decimal {
            precision: 2,
            scale: 0,
        }];
        let mut bytes = row(
            &compact,
            &[Value::Decimal {
                unscaled: 99,
                scale: 0,
            }],
        );
        bytes[8] = 100;
        assert!(matches!(
            decode_row(&compact, &bytes),
            Err(Error::DecimalOutOfRange {
                unscaled: 100,
                precision: 2
            })
        ));
    }

    #[test]
    fn timestamp_checks() {
        let types = [LogicalType::TimestampLtz { precision: 9 }];
        let ts = Timestamp {
            millis: -1,
            nano_of_milli: 999_999,
        };
        let mut bytes = row(&types, &[Value::TimestampLtz(ts)]);
        assert_eq!(
            decode_row(&types, &bytes).unwrap(),
            [Value::TimestampLtz(ts)]
        );
        bytes[8..12].copy_from_slice(&1_000_000_u32.to_le_bytes());
        assert!(matches!(
            decode_row(&types, &bytes),
            Err(Error::InvalidNanoOfMilli {
                nano_of_milli: 1_000_000
            })
        ));
        bytes[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            decode_row(&types, &bytes),
            Err(Error::InvalidNanoOfMilli { nano_of_milli: -1 })
        ));
    }

    #[test]
    fn invalid_type_is_an_error() {
        let types = [LogicalType::Decimal {
            precision: 60,
            scale: 0,
        }];
        assert!(matches!(
            decode_row(&types, &[0; 16]),
            Err(Error::InvalidTypeParameter { .. })
        ));
    }

    #[test]
    fn null_bits_win_over_slots() {
        let types = [
            LogicalType::BigInt,
            LogicalType::Decimal {
                precision: 30,
                scale: 0,
            },
        ];
        let bytes = row(&types, &[Value::Null, Value::Null]);
        assert_eq!(
            decode_row(&types, &bytes).unwrap(),
            [Value::Null, Value::Null]
        );
    }

    #[test]
    fn big_integer_bytes() {
        assert_eq!(from_big_integer_bytes(&[0x00]), 0);
        assert_eq!(from_big_integer_bytes(&[0xff]), -1);
        assert_eq!(from_big_integer_bytes(&[0x00, 0x80]), 128);
        assert_eq!(from_big_integer_bytes(&[0x80]), -128);
    }
}
