//! An order-preserving ("memcomparable"), versioned encoding of [`Scalar`] tuples, for map
//! user keys whose byte order must be their value order: MIN/MAX companions, OVER time keys,
//! Top-N sort keys.
//!
//! The byte format is documented on [`encode_sort_key`].

use arrow_schema::DataType;

use crate::error::{Error, Result};
use crate::row::{Kind, Row, Scalar, codec_error, decimal_fits};

/// The version of the sort-key byte format, the first byte of every key.
pub const SORT_KEY_VERSION: u8 = 1;

const NULL_FIRST: u8 = 0x00;
const NON_NULL: u8 = 0x01;
const NULL_LAST: u8 = 0x02;

const CANONICAL_NAN_64: u64 = 0x7FF8_0000_0000_0000;
const CANONICAL_NAN_32: u32 = 0x7FC0_0000;

/// One field of a sort key: its Arrow type (one supported by
/// [`RowCodec`](crate::RowCodec)), direction and null placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortField {
    /// The field's Arrow type.
    pub data_type: DataType,
    /// Sort this field in descending order (its non-null values' bytes are inverted).
    pub descending: bool,
    /// Nulls after every non-null value (`NULLS LAST`) instead of before; independent of
    /// `descending`.
    pub nulls_last: bool,
}

impl SortField {
    /// An ascending, nulls-first field of `data_type`.
    pub fn new(data_type: DataType) -> Self {
        SortField {
            data_type,
            descending: false,
            nulls_last: false,
        }
    }

    /// Sets the direction. Defaults to ascending (`false`).
    #[must_use]
    pub fn with_descending(mut self, descending: bool) -> Self {
        self.descending = descending;
        self
    }

    /// Sets the null placement. Defaults to nulls first (`false`).
    #[must_use]
    pub fn with_nulls_last(mut self, nulls_last: bool) -> Self {
        self.nulls_last = nulls_last;
        self
    }

    fn null_marker(&self) -> u8 {
        if self.nulls_last {
            NULL_LAST
        } else {
            NULL_FIRST
        }
    }
}

fn field_name(index: usize) -> String {
    format!("sort key field {index}")
}

fn field_error(index: usize, reason: &'static str) -> Error {
    Error::Codec {
        column: field_name(index),
        reason,
    }
}

fn kind_of(field: &SortField, index: usize) -> Result<Kind> {
    Kind::of(&field.data_type).ok_or_else(|| field_error(index, "unsupported data type"))
}

/// Appends the sort key of `values` under `fields` to `out`.
///
/// **Contract.** For values `a` and `b` of the same [`SortField`]s,
/// `encode(a).cmp(&encode(b))` (unsigned lexicographic bytes) equals the field-by-field
/// comparison of `a` and `b` with Java's `compareTo` of the corresponding Flink types
/// ([`Scalar::total_cmp_java_nulls`] with the field's null placement), each field reversed
/// when `descending`. Two keys are byte-equal exactly when their values are equal under that
/// order; the only values that are equal without being identical are NaNs (all NaNs are one
/// key, as `Double.compare` and `Double.equals` make them), so a NaN decodes as the
/// canonical NaN (`0x7FF8_0000_0000_0000` / `0x7FC0_0000`), not its original payload.
///
/// **Ownership and stability.** This encoding belongs to this project and is independent of
/// `arrow-row` (whose bytes may change between arrow releases). Version
/// [`SORT_KEY_VERSION`] is fixed: any change to the bytes below is a new version, and
/// [`decode_sort_key`] refuses versions it does not know.
///
/// # Byte format (version 1)
///
/// ```text
/// key     = version field*              one `field` per SortField, in order, no separators
/// version = 0x01                        SORT_KEY_VERSION, the first byte of every key
/// field   = 0x00                        NULL of a NULLS FIRST field
///         | 0x02                        NULL of a NULLS LAST field
///         | 0x01 value                  non-null; for a DESC field every byte of `value`
///                                       (not the 0x01 marker) is inverted (XOR 0xFF)
/// value, by the field's Arrow type:
///   Boolean            1 byte: 0x00 false, 0x01 true
///   Int8/16/32/64      1/2/4/8 bytes, big-endian two's complement with the sign bit flipped
///   Date32             as Int32 (days since the epoch)
///   Timestamp(unit,_)  as Int64 (in the field's unit; the time zone is not encoded)
///   Decimal128(p,s)    16 bytes: the unscaled i128 big-endian, sign bit flipped (the scale
///                      is fixed per field, so unscaled order is value order); |v| < 10^p
///   Float32/Float64    4/8 bytes: the IEEE bits big-endian, NaN first canonicalised
///                      (0x7FC00000 / 0x7FF8000000000000); then, if the sign bit is set,
///                      every bit inverted, else only the sign bit flipped
///   Utf8/Binary        the UTF-8 / raw bytes with every 0x00 written as 0x00 0xFF, then
///                      the terminator 0x00 0x00
/// ```
///
/// Why it sorts: the null markers put a field's nulls before (0x00) or after (0x02) every
/// non-null value (0x01), whatever the direction. Fixed-width values compare as numbers once
/// the sign is flipped; the float mapping is the usual total order (`-inf < … < -0.0 < 0.0 <
/// … < +inf < NaN`). The string escaping is prefix-free (a `0x00 0x00` occurs only as the
/// terminator) and keeps byte order: a string sorts before its own extensions because the
/// terminator `0x00 0x00` is below every continuation (`0x00 0xFF` or a byte `>= 0x01`), so
/// `("a", "b") < ("ab", "")`. Because every field's bytes are prefix-free, comparison is
/// decided inside the first differing field, so inverting that field's bytes (DESC) reverses
/// exactly its order. It also makes the encoding of the first `k` values (with the first
/// `k` fields) a byte prefix of every key starting with those values: a prefix scan.
///
/// Decoding is strict, so every accepted byte string is the encoding of exactly the row it
/// decodes to: unknown version, truncation, an invalid marker, a boolean other than 0/1, a
/// non-canonical NaN, an escape other than `0x00 0xFF`/`0x00 0x00`, invalid UTF-8, a decimal
/// beyond its precision, and trailing bytes are all an [`Error::Codec`].
///
/// # Worked example
///
/// Fields `(Int32 ASC NULLS FIRST, Utf8 DESC NULLS LAST, Float64 ASC NULLS LAST)`, values
/// `(-1, "a\0", NULL)`:
///
/// ```text
/// 01                      version 1
/// 01 7F FF FF FF          non-null; -1 = FF FF FF FF with the sign bit flipped
/// 01 9E FF 00 FF FF       non-null; "a\0" = 61 00 FF 00 00, inverted (DESC)
/// 02                      NULL of a NULLS LAST field
/// ```
///
/// ```
/// use state_api::arrow_schema::DataType;
/// use state_api::{Scalar, SortField, decode_sort_key, encode_sort_key};
///
/// let fields = [
///     SortField::new(DataType::Int32),
///     SortField::new(DataType::Utf8).with_descending(true).with_nulls_last(true),
///     SortField::new(DataType::Float64).with_nulls_last(true),
/// ];
/// let values = [Scalar::Int32(-1), Scalar::Utf8("a\0".into()), Scalar::Null];
/// let mut key = Vec::new();
/// encode_sort_key(&values, &fields, &mut key)?;
/// assert_eq!(
///     key,
///     [0x01, 0x01, 0x7F, 0xFF, 0xFF, 0xFF, 0x01, 0x9E, 0xFF, 0x00, 0xFF, 0xFF, 0x02]
/// );
/// assert_eq!(decode_sort_key(&key, &fields)?, values);
/// # Ok::<(), state_api::Error>(())
/// ```
///
/// # Divergence from Flink's `MapState` bytes
///
/// Flink's RocksDB `MapState` stores an entry under the composite key followed by the user
/// key serialized with the user key's `TypeSerializer` (e.g. `LongSerializer` writes plain
/// big-endian two's complement, so `-1` sorts after `1`; `StringSerializer` and row
/// serializers write length-prefixed data). Those bytes are not order-preserving, and
/// Flink's operators cannot rely on them anyway (the heap backend's `MapState` iterates in
/// hash order), so where Flink needs an order it scans or sorts in memory. Map
/// tables keyed by this encoding therefore hold **different user-key bytes than Flink's**
/// for the same logical key. That is deliberate and confined to native checkpoints, which
/// belong to the binary that wrote them; the canonical snapshot (decoded values, not these
/// bytes) is the portable path.
///
/// # Errors
/// [`Error::Codec`] when `values` and `fields` differ in length, a field's type is not
/// supported, a value does not match its field's type, or a decimal exceeds its precision.
/// On error `out` is left as it was.
pub fn encode_sort_key(values: &[Scalar], fields: &[SortField], out: &mut Vec<u8>) -> Result<()> {
    let start = out.len();
    let result = encode_into(values, fields, out);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn encode_into(values: &[Scalar], fields: &[SortField], out: &mut Vec<u8>) -> Result<()> {
    if values.len() != fields.len() {
        return Err(codec_error("sort key", "wrong number of values"));
    }
    out.push(SORT_KEY_VERSION);
    for (index, (value, field)) in values.iter().zip(fields).enumerate() {
        let kind = kind_of(field, index)?;
        if value.is_null() {
            out.push(field.null_marker());
            continue;
        }
        out.push(NON_NULL);
        let value_start = out.len();
        encode_value(value, kind, index, out)?;
        if field.descending {
            out.iter_mut().skip(value_start).for_each(|b| *b = !*b);
        }
    }
    Ok(())
}

fn encode_value(value: &Scalar, kind: Kind, index: usize, out: &mut Vec<u8>) -> Result<()> {
    const SIGN_8: u8 = 0x80;
    match (kind, value) {
        (Kind::Boolean, Scalar::Boolean(v)) => out.push(u8::from(*v)),
        (Kind::Int8, Scalar::Int8(v)) => out.push(v.cast_unsigned() ^ SIGN_8),
        (Kind::Int16, Scalar::Int16(v)) => {
            out.extend_from_slice(&(v.cast_unsigned() ^ (1 << 15)).to_be_bytes());
        }
        (Kind::Int32, Scalar::Int32(v)) | (Kind::Date32, Scalar::Date32(v)) => {
            out.extend_from_slice(&(v.cast_unsigned() ^ (1 << 31)).to_be_bytes());
        }
        (Kind::Int64, Scalar::Int64(v)) | (Kind::Timestamp(_), Scalar::Timestamp(v)) => {
            out.extend_from_slice(&(v.cast_unsigned() ^ (1 << 63)).to_be_bytes());
        }
        (Kind::Decimal128 { precision }, Scalar::Decimal128(v)) => {
            if !decimal_fits(*v, precision) {
                return Err(field_error(
                    index,
                    "decimal value exceeds the field's precision",
                ));
            }
            out.extend_from_slice(&(v.cast_unsigned() ^ (1 << 127)).to_be_bytes());
        }
        (Kind::Float32, Scalar::Float32(v)) => {
            let bits = if v.is_nan() {
                CANONICAL_NAN_32
            } else {
                v.to_bits()
            };
            let key = if bits >> 31 == 1 {
                !bits
            } else {
                bits ^ (1 << 31)
            };
            out.extend_from_slice(&key.to_be_bytes());
        }
        (Kind::Float64, Scalar::Float64(v)) => {
            let bits = if v.is_nan() {
                CANONICAL_NAN_64
            } else {
                v.to_bits()
            };
            let key = if bits >> 63 == 1 {
                !bits
            } else {
                bits ^ (1 << 63)
            };
            out.extend_from_slice(&key.to_be_bytes());
        }
        (Kind::Utf8, Scalar::Utf8(s)) => encode_bytes(s.as_bytes(), out),
        (Kind::Binary, Scalar::Binary(b)) => encode_bytes(b, out),
        _ => {
            return Err(field_error(
                index,
                "value does not match the field's data type",
            ));
        }
    }
    Ok(())
}

/// Each 0x00 as 0x00 0xFF, then 0x00 0x00.
fn encode_bytes(bytes: &[u8], out: &mut Vec<u8>) {
    out.reserve(bytes.len() + 2);
    let mut chunks = bytes.split(|b| *b == 0);
    if let Some(first) = chunks.next() {
        out.extend_from_slice(first);
    }
    for chunk in chunks {
        out.extend_from_slice(&[0x00, 0xFF]);
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&[0x00, 0x00]);
}

/// Decodes a key written by [`encode_sort_key`] with the same `fields`.
///
/// Also accepts the key of a leading subset: the bytes of the first `k` values decode with
/// the first `k` fields.
///
/// # Errors
/// [`Error::Codec`] for an empty key, an unknown version, a field type that is not
/// supported, and bytes that are not exactly the encoding of one row under `fields` (see
/// [`encode_sort_key`]). Never panics.
pub fn decode_sort_key(bytes: &[u8], fields: &[SortField]) -> Result<Row> {
    let (version, mut rest) = bytes
        .split_first()
        .ok_or_else(|| codec_error("sort key", "empty sort key"))?;
    if *version != SORT_KEY_VERSION {
        return Err(codec_error("sort key", "unknown sort key version"));
    }
    let mut row = Vec::with_capacity(fields.len());
    for (index, field) in fields.iter().enumerate() {
        let kind = kind_of(field, index)?;
        let (marker, after) = rest
            .split_first()
            .ok_or_else(|| field_error(index, "truncated sort key"))?;
        rest = after;
        if *marker == field.null_marker() {
            row.push(Scalar::Null);
            continue;
        }
        if *marker != NON_NULL {
            return Err(field_error(index, "invalid null marker"));
        }
        let mask = if field.descending { 0xFF } else { 0x00 };
        let mut reader = Reader { rest, mask, index };
        row.push(reader.value(kind)?);
        rest = reader.rest;
    }
    if !rest.is_empty() {
        return Err(codec_error(
            "sort key",
            "trailing bytes after the last field",
        ));
    }
    Ok(row)
}

/// Reads one field's value bytes, un-inverting them with `mask`.
struct Reader<'b> {
    rest: &'b [u8],
    mask: u8,
    index: usize,
}

impl Reader<'_> {
    fn error(&self, reason: &'static str) -> Error {
        field_error(self.index, reason)
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N]> {
        let (head, tail) = self
            .rest
            .split_first_chunk::<N>()
            .ok_or_else(|| self.error("truncated sort key"))?;
        self.rest = tail;
        let mut value = *head;
        for b in &mut value {
            *b ^= self.mask;
        }
        Ok(value)
    }

    fn value(&mut self, kind: Kind) -> Result<Scalar> {
        Ok(match kind {
            Kind::Boolean => match self.fixed::<1>()? {
                [0] => Scalar::Boolean(false),
                [1] => Scalar::Boolean(true),
                _ => return Err(self.error("invalid boolean byte")),
            },
            Kind::Int8 => Scalar::Int8((u8::from_be_bytes(self.fixed()?) ^ 0x80).cast_signed()),
            Kind::Int16 => {
                Scalar::Int16((u16::from_be_bytes(self.fixed()?) ^ (1 << 15)).cast_signed())
            }
            Kind::Int32 => {
                Scalar::Int32((u32::from_be_bytes(self.fixed()?) ^ (1 << 31)).cast_signed())
            }
            Kind::Date32 => {
                Scalar::Date32((u32::from_be_bytes(self.fixed()?) ^ (1 << 31)).cast_signed())
            }
            Kind::Int64 => {
                Scalar::Int64((u64::from_be_bytes(self.fixed()?) ^ (1 << 63)).cast_signed())
            }
            Kind::Timestamp(_) => {
                Scalar::Timestamp((u64::from_be_bytes(self.fixed()?) ^ (1 << 63)).cast_signed())
            }
            Kind::Decimal128 { precision } => {
                let v = (u128::from_be_bytes(self.fixed()?) ^ (1 << 127)).cast_signed();
                if !decimal_fits(v, precision) {
                    return Err(self.error("decimal value exceeds the field's precision"));
                }
                Scalar::Decimal128(v)
            }
            Kind::Float32 => {
                let key = u32::from_be_bytes(self.fixed()?);
                let bits = if key >> 31 == 1 {
                    key ^ (1 << 31)
                } else {
                    !key
                };
                let v = f32::from_bits(bits);
                if v.is_nan() && bits != CANONICAL_NAN_32 {
                    return Err(self.error("non-canonical NaN"));
                }
                Scalar::Float32(v)
            }
            Kind::Float64 => {
                let key = u64::from_be_bytes(self.fixed()?);
                let bits = if key >> 63 == 1 {
                    key ^ (1 << 63)
                } else {
                    !key
                };
                let v = f64::from_bits(bits);
                if v.is_nan() && bits != CANONICAL_NAN_64 {
                    return Err(self.error("non-canonical NaN"));
                }
                Scalar::Float64(v)
            }
            Kind::Utf8 => Scalar::Utf8(
                String::from_utf8(self.bytes()?).map_err(|_| self.error("invalid UTF-8"))?,
            ),
            Kind::Binary => Scalar::Binary(self.bytes()?),
        })
    }

    /// Unescapes a 0x00-escaped, 0x00 0x00-terminated byte string, a run of plain bytes at
    /// a time.
    fn bytes(&mut self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        // A 0x00 of the ascending encoding, as stored.
        let zero = self.mask;
        loop {
            let run = self
                .rest
                .iter()
                .position(|b| *b == zero)
                .ok_or_else(|| self.error("truncated sort key"))?;
            let (plain, tail) = self.rest.split_at_checked(run).unwrap_or_default();
            if self.mask == 0 {
                out.extend_from_slice(plain);
            } else {
                out.extend(plain.iter().map(|b| b ^ self.mask));
            }
            let Some(([_, escape], tail)) = tail.split_first_chunk::<2>() else {
                return Err(self.error("truncated sort key"));
            };
            self.rest = tail;
            match escape ^ self.mask {
                0x00 => return Ok(out),
                0xFF => out.push(0x00),
                _ => return Err(self.error("invalid escape in a string")),
            }
        }
    }
}
