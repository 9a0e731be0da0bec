//! The user keys of the group aggregate's companion map (MIN/MAX and DISTINCT value counts).
//!
//! # Byte format (companion user key, version 1)
//!
//! ```text
//! u16 big-endian companion tag ‖ value bytes
//! ```
//!
//! The tag numbers the companion (one per MIN/MAX-with-retraction call, one per DISTINCT
//! argument) so that one prefix (the group key) holds every companion of a group and a
//! group is dropped with one range delete. The value bytes are an order-preserving encoding
//! of one non-null value whose byte order is Java's `compareTo` and whose byte equality is
//! Java's `equals` (so a MIN after a retraction is one `first()` seek):
//!
//! | type | bytes |
//! |---|---|
//! | BOOLEAN | 1 byte, 0 / 1 |
//! | TINYINT, SMALLINT, INT, DATE, BIGINT, TIMESTAMP | big-endian two's complement, sign bit flipped (1, 2, 4, 4, 8, 8 bytes) |
//! | FLOAT, DOUBLE | IEEE bits big-endian; NaN canonicalised to `0x7fc00000` / `0x7ff8000000000000`; negative: all bits flipped, else the sign bit flipped (so `-0.0 < 0.0`, NaN greatest) |
//! | DECIMAL | the unscaled `i128`, 16 bytes big-endian, sign bit flipped |
//! | STRING, BYTES | the UTF-8 / raw bytes (the value is the whole rest of the key) |
//!
//! This is the project's own encoding, not Flink's `MapState` user-key bytes (Flink's
//! heap backend orders nothing; its RocksDB backend stores the serializer's bytes, whose
//! order is not `compareTo`). The divergence only matters for byte-level savepoint
//! compatibility of these companion tables, which this crate does not claim.

use arrow_schema::DataType;
use state_api::Scalar;

/// Appends the tag and the order-preserving bytes of `value` to `out` (cleared first).
/// Returns `false` (and leaves `out` with the tag only) for a null or an unsupported type.
pub(crate) fn encode(tag: u16, value: &Scalar, out: &mut Vec<u8>) -> bool {
    out.clear();
    out.extend_from_slice(&tag.to_be_bytes());
    match value {
        Scalar::Boolean(b) => out.push(u8::from(*b)),
        Scalar::Int8(v) => out.push(v.to_be_bytes()[0] ^ 0x80),
        Scalar::Int16(v) => out.extend_from_slice(&(v.cast_unsigned() ^ 0x8000).to_be_bytes()),
        Scalar::Int32(v) | Scalar::Date32(v) => {
            out.extend_from_slice(&(v.cast_unsigned() ^ 0x8000_0000).to_be_bytes());
        }
        Scalar::Int64(v) | Scalar::Timestamp(v) => {
            out.extend_from_slice(&(v.cast_unsigned() ^ (1 << 63)).to_be_bytes());
        }
        Scalar::Float32(v) => {
            let bits = if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() };
            let key = if bits >> 31 == 1 {
                !bits
            } else {
                bits ^ (1 << 31)
            };
            out.extend_from_slice(&key.to_be_bytes());
        }
        Scalar::Float64(v) => {
            let bits = if v.is_nan() {
                0x7ff8_0000_0000_0000
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
        Scalar::Decimal128(v) => {
            out.extend_from_slice(&(v.cast_unsigned() ^ (1 << 127)).to_be_bytes());
        }
        Scalar::Utf8(s) => out.extend_from_slice(s.as_bytes()),
        Scalar::Binary(b) => out.extend_from_slice(b),
        Scalar::Null => return false,
    }
    true
}

/// The tag alone: the lower bound of the companion's keys.
pub(crate) fn tag_bytes(tag: u16) -> [u8; 2] {
    tag.to_be_bytes()
}

/// Decodes the value of a user key made by [`encode`] for a value of `data_type`; `None`
/// when the bytes do not fit.
pub(crate) fn decode(user_key: &[u8], data_type: &DataType) -> Option<Scalar> {
    let bytes = user_key.get(2..)?;
    Some(match data_type {
        DataType::Boolean => Scalar::Boolean(*bytes.first()? != 0),
        DataType::Int8 => Scalar::Int8(i8::from_be_bytes([bytes.first()? ^ 0x80])),
        DataType::Int16 => {
            Scalar::Int16((u16::from_be_bytes(bytes.try_into().ok()?) ^ 0x8000).cast_signed())
        }
        DataType::Int32 => {
            Scalar::Int32((u32::from_be_bytes(bytes.try_into().ok()?) ^ 0x8000_0000).cast_signed())
        }
        DataType::Date32 => {
            Scalar::Date32((u32::from_be_bytes(bytes.try_into().ok()?) ^ 0x8000_0000).cast_signed())
        }
        DataType::Int64 => {
            Scalar::Int64((u64::from_be_bytes(bytes.try_into().ok()?) ^ (1 << 63)).cast_signed())
        }
        DataType::Timestamp(_, _) => Scalar::Timestamp(
            (u64::from_be_bytes(bytes.try_into().ok()?) ^ (1 << 63)).cast_signed(),
        ),
        DataType::Float32 => {
            let key = u32::from_be_bytes(bytes.try_into().ok()?);
            let bits = if key >> 31 == 1 {
                key ^ (1 << 31)
            } else {
                !key
            };
            Scalar::Float32(f32::from_bits(bits))
        }
        DataType::Float64 => {
            let key = u64::from_be_bytes(bytes.try_into().ok()?);
            let bits = if key >> 63 == 1 {
                key ^ (1 << 63)
            } else {
                !key
            };
            Scalar::Float64(f64::from_bits(bits))
        }
        DataType::Decimal128(_, _) => Scalar::Decimal128(
            (u128::from_be_bytes(bytes.try_into().ok()?) ^ (1 << 127)).cast_signed(),
        ),
        DataType::Utf8 => Scalar::Utf8(String::from_utf8(bytes.to_vec()).ok()?),
        DataType::Binary => Scalar::Binary(bytes.to_vec()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(v: &Scalar) -> Vec<u8> {
        let mut out = Vec::new();
        assert!(encode(3, v, &mut out));
        out
    }

    #[test]
    fn byte_order_is_java_compare_to() {
        let doubles = [
            f64::NEG_INFINITY,
            -1.5,
            -0.0,
            0.0,
            f64::MIN_POSITIVE,
            2.0,
            f64::INFINITY,
            f64::NAN,
        ];
        for w in doubles.windows(2) {
            assert!(
                key(&Scalar::Float64(w[0])) < key(&Scalar::Float64(w[1])),
                "{w:?}"
            );
        }
        assert_eq!(
            key(&Scalar::Float64(f64::NAN)),
            key(&Scalar::Float64(-f64::NAN))
        );
        for w in [i64::MIN, -1, 0, 1, i64::MAX].windows(2) {
            assert!(key(&Scalar::Int64(w[0])) < key(&Scalar::Int64(w[1])));
        }
        for w in [i128::MIN + 1, -1, 0, 7].windows(2) {
            assert!(key(&Scalar::Decimal128(w[0])) < key(&Scalar::Decimal128(w[1])));
        }
        assert!(key(&Scalar::Utf8(String::new())) < key(&Scalar::Utf8("a".into())));
        assert!(key(&Scalar::Int8(-1)) < key(&Scalar::Int8(0)));
        assert!(key(&Scalar::Float32(-0.0)) < key(&Scalar::Float32(0.0)));
    }

    #[test]
    fn decode_inverts_encode() {
        let cases = [
            (Scalar::Int8(-7), DataType::Int8),
            (Scalar::Int16(-300), DataType::Int16),
            (Scalar::Int32(i32::MIN), DataType::Int32),
            (Scalar::Int64(-5), DataType::Int64),
            (Scalar::Float32(-0.0), DataType::Float32),
            (Scalar::Float64(-2.5), DataType::Float64),
            (Scalar::Decimal128(-12_345), DataType::Decimal128(10, 2)),
            (Scalar::Utf8("héllo".into()), DataType::Utf8),
            (Scalar::Boolean(true), DataType::Boolean),
        ];
        for (v, dt) in cases {
            assert_eq!(decode(&key(&v), &dt), Some(v.clone()), "{v:?}");
        }
        assert!(!encode(1, &Scalar::Null, &mut Vec::new()));
        assert_eq!(decode(&[0], &DataType::Int64), None);
    }
}
