//! Flink's `BinaryRowData` byte format (documented on [`BinaryRow`]) and layout helpers.

use crate::assignment::{KeyGroup, MaxParallelism, compute_key_group_for_key_hash};
use crate::error::Result;
use crate::hash::{JavaHashCode, murmur_hash_bytes};
use crate::reader::BinaryRowReader;
use crate::types::LogicalType;
use crate::value::{RowKind, Value};
use crate::writer::{BinaryRowWriter, NullEncoding};

/// `BinaryRowData.HEADER_SIZE_IN_BITS`: the header byte comes before the null bits.
pub(crate) const HEADER_SIZE_IN_BITS: usize = 8;

/// Longest string/binary stored inline in its slot (`BinaryFormat.MAX_FIX_PART_DATA_SIZE`).
pub(crate) const MAX_FIX_PART_DATA_SIZE: usize = 7;

/// `DecimalData.MAX_COMPACT_PRECISION`: DECIMALs up to this precision sit in the slot.
pub(crate) const MAX_COMPACT_DECIMAL_PRECISION: u8 = 18;

/// `TimestampData` compact precision: TIMESTAMPs up to millisecond precision sit in the slot.
pub(crate) const MAX_COMPACT_TIMESTAMP_PRECISION: u8 = 3;

/// `BinaryRowData.calculateBitSetWidthInBytes(arity)`: `((arity + 63 + 8) / 64) * 8`, the
/// width of the header byte plus the null bit set.
///
/// Preconditions: none (saturates instead of overflowing for absurd arities).
#[must_use]
pub fn bit_set_width_in_bytes(arity: usize) -> usize {
    (arity.saturating_add(63 + HEADER_SIZE_IN_BITS) / 64).saturating_mul(8)
}

/// `BinaryRowData.calculateFixPartSizeInBytes(arity)`: the bit set plus one 8-byte slot per
/// field, i.e. where the variable part starts.
///
/// Preconditions: none (saturates instead of overflowing for absurd arities).
#[must_use]
pub fn fixed_part_size(arity: usize) -> usize {
    bit_set_width_in_bytes(arity).saturating_add(arity.saturating_mul(8))
}

/// An owned row in Flink's `BinaryRowData` format.
///
/// Built from typed values (checked against the field types) or from bytes (fully decoded
/// once, so every field is known to be readable). For the per-record hot path, use a reusable
/// [`BinaryRowWriter`] instead.
///
/// # Byte format
///
/// A `BinaryRowData` of arity `n` is one contiguous byte string, always a multiple of 8 bytes
/// long. All multi-byte values are **little-endian** (Flink uses the platform's order,
/// `BinaryRowData.LITTLE_ENDIAN`, which is little-endian on every platform Flink supports).
///
/// ```text
/// +--------------------------+-----------+-----------+-----+--------------------------+
/// | header + null bit set    | slot 0    | slot 1    | ... | variable part            |
/// | W = ((n + 71) / 64) * 8  | 8 bytes   | 8 bytes   |     | 8-byte aligned chunks    |
/// +--------------------------+-----------+-----------+-----+--------------------------+
/// ^ 0                        ^ W         ^ W + 8           ^ W + 8n = fixed part size
/// ```
///
/// * **Byte 0** is the [`RowKind`](crate::RowKind) (`INSERT`=0, `UPDATE_BEFORE`=1,
///   `UPDATE_AFTER`=2, `DELETE`=3).
/// * **Null bits**: field `i` is null when bit `i + 8` of the bit set is 1, i.e. byte
///   `(i + 8) / 8`, mask `1 << ((i + 8) % 8)`. `W` is 8 bytes for arity 0..=56, 16 for
///   57..=120, 24 for 121..=184, ...
/// * **Slots**, one per field, 8 bytes each, unused bytes zero. A null field's slot is zero,
///   except for the non-compact reservation below.
///
///   | type | slot content |
///   |---|---|
///   | BOOLEAN, TINYINT | 1 byte (BOOLEAN 0/1) |
///   | SMALLINT | `i16` |
///   | INT, DATE (days), TIME (millis of day) | `i32` |
///   | FLOAT | `f32` raw bits (`-0.0`, NaN payloads kept) |
///   | BIGINT, DOUBLE | `i64` / `f64` raw bits |
///   | CHAR, VARCHAR, STRING, BINARY, VARBINARY, BYTES of **<= 7 bytes** | the bytes at slot bytes `0..len`, slot byte 7 = `0x80 \| len` |
///   | the same of **>= 8 bytes** | `u64` `(offset << 32) \| len`; bytes at `offset` in the variable part, zero-padded to 8 |
///   | DECIMAL, precision <= 18 (compact) | the unscaled value as `i64` |
///   | DECIMAL, precision >= 19 | `(offset << 32) \| byte_len`; 16 zeroed bytes reserved at `offset`, holding `BigInteger.toByteArray()` of the unscaled value (big-endian two's complement, minimal length 1..=16) |
///   | `TIMESTAMP(p)` / `TIMESTAMP_LTZ(p)`, p <= 3 (compact) | epoch millis as `i64` |
///   | `TIMESTAMP(p)` / `TIMESTAMP_LTZ(p)`, p >= 4 | `(offset << 32) \| nano_of_milli`; epoch millis as `i64` in 8 bytes at `offset` |
///
///   Strings are UTF-8; the writer pads nothing (a CHAR(5) value may be 5 to 20 bytes).
///   Offsets count from the row start.
/// * **Nulls of non-compact DECIMAL / TIMESTAMP** depend on the code path
///   ([`NullEncoding`](crate::NullEncoding)): Flink SQL's key selector (generated projection
///   code calling `writeDecimal(pos, null, p)` / `writeTimestamp(pos, null, p)`) still reserves
///   the 16 / 8 zero bytes and sets the slot to `offset << 32`; `RowDataSerializer.toBinaryRow`
///   only sets the null bit and leaves the slot zero.
/// * **`hashCode()`** is `murmur3_32`, seed 42, over the whole row read as 4-byte little-endian
///   words, header included, then `fmix(h ^ size)`: see
///   [`murmur_hash_bytes`](crate::murmur_hash_bytes). The key group of a row is
///   `murmurHash(hashCode) % maxParallelism`. The SQL key selector always writes header 0, so
///   state keys do not depend on the changelog kind.
/// * **Serialized** (`BinaryRowDataSerializer` / `RowDataSerializer`): a 4-byte
///   **big-endian** length, then the row bytes.
///
/// ## Worked example
///
/// `(INT 42, VARCHAR 'abc', BIGINT NULL, STRING 'hello, world')`, kind `INSERT`, arity 4:
///
/// ```text
/// offset  bytes                    meaning
///      0  00                       RowKind INSERT
///      1  04                       null bits 8..15: bit 10 = field 2 is null
///      2  00 00 00 00 00 00        rest of the 8-byte null bit set
///      8  2a 00 00 00 00 00 00 00  slot 0: INT 42
///     16  61 62 63 00 00 00 00 83  slot 1: 'abc' inline, 0x80 | 3
///     24  00 00 00 00 00 00 00 00  slot 2: null
///     32  0c 00 00 00 28 00 00 00  slot 3: offset 40 (0x28) << 32 | length 12
///     40  68 65 6c 6c 6f 2c 20 77  'hello, w'
///     48  6f 72 6c 64 00 00 00 00  'orld' + 4 bytes of padding
/// ```
///
/// 56 bytes; `hashCode()` = `-341_847_227`. The doc test of [`BinaryRow`] checks these bytes.
///
/// # Example
///
/// The worked example above, built and checked:
///
/// ```
/// use keygroup::{BinaryRow, LogicalType, MaxParallelism, Value};
///
/// let types: Vec<LogicalType> = ["INT", "VARCHAR(10)", "BIGINT", "STRING"]
///     .iter()
///     .map(|t| t.parse())
///     .collect::<Result<_, _>>()?;
/// let row = BinaryRow::from_values(
///     &types,
///     &[
///         Value::Int(42),
///         Value::String("abc".into()),
///         Value::Null,
///         Value::String("hello, world".into()),
///     ],
/// )?;
/// let expected: [u8; 56] = [
///     0x00, 0x04, 0, 0, 0, 0, 0, 0, // header, null bit of field 2
///     0x2a, 0, 0, 0, 0, 0, 0, 0, // INT 42
///     b'a', b'b', b'c', 0, 0, 0, 0, 0x83, // inline 'abc'
///     0, 0, 0, 0, 0, 0, 0, 0, // null
///     0x0c, 0, 0, 0, 0x28, 0, 0, 0, // offset 40, length 12
///     b'h', b'e', b'l', b'l', b'o', b',', b' ', b'w',
///     b'o', b'r', b'l', b'd', 0, 0, 0, 0,
/// ];
/// assert_eq!(row.as_bytes(), expected);
/// assert_eq!(row.hash_code(), -341_847_227);
/// assert_eq!(row.key_group(MaxParallelism::new(128)?), keygroup::assign_to_key_group(&row, MaxParallelism::new(128)?));
/// assert_eq!(row.values(&types)?[3], Value::String("hello, world".into()));
/// # Ok::<(), keygroup::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BinaryRow {
    bytes: Vec<u8>,
    arity: usize,
}

impl BinaryRow {
    /// The state key Flink SQL's key selector makes from these values: kind `INSERT`,
    /// [`NullEncoding::KeySelector`].
    ///
    /// # Errors
    /// See [`BinaryRowWriter::write_row`].
    pub fn from_values(types: &[LogicalType], values: &[Value]) -> Result<Self> {
        Self::from_values_with(RowKind::Insert, types, values, NullEncoding::KeySelector)
    }

    /// A row of the given kind with the given null encoding.
    ///
    /// # Errors
    /// See [`BinaryRowWriter::write_row`].
    pub fn from_values_with(
        kind: RowKind,
        types: &[LogicalType],
        values: &[Value],
        nulls: NullEncoding,
    ) -> Result<Self> {
        let mut writer = BinaryRowWriter::try_new(types.len())?;
        writer.write_row(kind, types, values, nulls)?;
        Ok(writer.to_binary_row())
    }

    /// Takes row bytes after checking that every field decodes as its type.
    ///
    /// # Errors
    /// Any error of [`BinaryRowReader::new`] and [`BinaryRowReader::read_field`].
    pub fn from_bytes(types: &[LogicalType], bytes: Vec<u8>) -> Result<Self> {
        BinaryRowReader::new(types, &bytes)?.read_all()?;
        Ok(Self {
            bytes,
            arity: types.len(),
        })
    }

    /// A row the crate's writer just produced.
    pub(crate) fn from_written(bytes: Vec<u8>, arity: usize) -> Self {
        Self { bytes, arity }
    }

    /// The row bytes (`BinarySegmentUtils.copyToBytes(segments, offset, sizeInBytes)`).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The row bytes, by value.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// `getArity()`: the number of fields.
    pub fn arity(&self) -> usize {
        self.arity
    }

    /// `getSizeInBytes()`.
    pub fn size_in_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// `getRowKind()`: the kind in the header byte.
    pub fn row_kind(&self) -> RowKind {
        // Both constructors guarantee a valid header byte.
        self.bytes
            .first()
            .and_then(|&b| RowKind::from_byte(b).ok())
            .unwrap_or_default()
    }

    /// `BinaryRowData.hashCode()`.
    pub fn hash_code(&self) -> i32 {
        murmur_hash_bytes(&self.bytes)
    }

    /// `KeyGroupRangeAssignment.assignToKeyGroup(row, maxParallelism)`.
    pub fn key_group(&self, max_parallelism: MaxParallelism) -> KeyGroup {
        compute_key_group_for_key_hash(self.hash_code(), max_parallelism)
    }

    /// Decodes every field (`types` must be the row's field types).
    ///
    /// # Errors
    /// As [`BinaryRowReader::read_all`], e.g. when `types` has another arity.
    pub fn values(&self, types: &[LogicalType]) -> Result<Vec<Value>> {
        BinaryRowReader::new(types, &self.bytes)?.read_all()
    }
}

/// `BinaryRowData.hashCode()`.
impl JavaHashCode for BinaryRow {
    fn java_hash_code(&self) -> i32 {
        self.hash_code()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_set_widths() {
        for (arity, width) in [
            (0, 8),
            (1, 8),
            (56, 8),
            (57, 16),
            (120, 16),
            (121, 24),
            (184, 24),
        ] {
            assert_eq!(bit_set_width_in_bytes(arity), width, "arity {arity}");
        }
        assert_eq!(fixed_part_size(0), 8);
        assert_eq!(fixed_part_size(1), 16);
        assert_eq!(fixed_part_size(57), 16 + 57 * 8);
        assert_eq!(fixed_part_size(usize::MAX), usize::MAX);
    }

    #[test]
    fn empty_row() {
        let row = BinaryRow::from_values(&[], &[]).unwrap();
        assert_eq!(row.as_bytes(), [0; 8]);
        assert_eq!(row.hash_code(), -1_670_924_195);
        assert_eq!(row.arity(), 0);
        assert_eq!(row.row_kind(), RowKind::Insert);
    }

    #[test]
    fn from_bytes_validates() {
        let types = [LogicalType::Int];
        let good = BinaryRow::from_values(&types, &[Value::Int(7)]).unwrap();
        let copy = BinaryRow::from_bytes(&types, good.as_bytes().to_vec()).unwrap();
        assert_eq!(copy, good);
        assert!(BinaryRow::from_bytes(&types, vec![0; 8]).is_err());
        let deleted = BinaryRow::from_values_with(
            RowKind::Delete,
            &types,
            &[Value::Int(7)],
            NullEncoding::KeySelector,
        )
        .unwrap();
        assert_eq!(deleted.row_kind(), RowKind::Delete);
        assert_ne!(deleted.hash_code(), good.hash_code());
        assert_eq!(deleted.into_bytes().len(), 16);
    }
}
