//! The user keys of the aggregates' companion map (MIN/MAX-with-retraction and DISTINCT value
//! counts, FIRST_VALUE/LAST_VALUE-with-retraction order entries).
//!
//! # Byte format (companion user key, version 2)
//!
//! ```text
//! value entry = u16 BE tag ‖ sort key                    (MIN/MAX, DISTINCT: value -> count)
//! order entry = u16 BE tag ‖ u64 BE sequence ‖ sort key  (FIRST/LAST: orderToValueMap)
//! value-order = u16 BE tag ‖ sort key ‖ u64 BE sequence  (FIRST/LAST: valueToOrderMap)
//! ```
//!
//! The tag numbers the companion (one per MIN/MAX-with-retraction call, one per DISTINCT
//! argument, two per FIRST/LAST-with-retraction call) so that one prefix (the group key)
//! holds every companion of a group and a group is dropped with one range delete. `sort key`
//! is [`state_api::encode_sort_key`] of the one non-null value under an ascending field of
//! its type (version byte, marker, order-preserving value bytes; prefix-free): its byte order
//! is Java's `compareTo`, its byte equality Java's `equals`, so the new MIN after a
//! retraction is one ordered seek, and the entries of one value are one prefix. The sequence
//! is the group's arrival counter (see `group_agg::acc`), big-endian so byte order is
//! arrival order.
//!
//! Version 1 (the crate's own value encoding without the sort key's version byte and
//! marker) is gone; these are native-state bytes only, the canonical snapshot carries them
//! as opaque map keys of the operator's own tables.

use arrow_schema::DataType;
use state_api::{Scalar, SortField, decode_sort_key, encode_sort_key};

use crate::error::{Error, Result};

/// The sort field of a companion value of `data_type`.
fn field(data_type: &DataType) -> [SortField; 1] {
    [SortField::new(data_type.clone())]
}

/// Clears `out` and writes the tag and the sort key of `value` (a `data_type` value).
/// Returns `false` (and leaves `out` with the tag only) for a null.
///
/// # Errors
/// A value that does not fit its type (a state-api codec error).
pub(crate) fn encode(
    tag: u16,
    value: &Scalar,
    data_type: &DataType,
    out: &mut Vec<u8>,
) -> Result<bool> {
    out.clear();
    out.extend_from_slice(&tag.to_be_bytes());
    if value.is_null() {
        return Ok(false);
    }
    encode_sort_key(std::slice::from_ref(value), &field(data_type), out)?;
    Ok(true)
}

/// The tag alone: the prefix of one companion's keys.
pub(crate) fn tag_bytes(tag: u16) -> [u8; 2] {
    tag.to_be_bytes()
}

/// The order entry `tag ‖ seq ‖ sort key` (`value_key` is an [`encode`]d key of another tag;
/// its sort key is reused).
pub(crate) fn order_entry(tag: u16, seq: u64, value_key: &[u8]) -> Vec<u8> {
    let sort_key = value_key.get(2..).unwrap_or_default();
    let mut out = Vec::with_capacity(10 + sort_key.len());
    out.extend_from_slice(&tag.to_be_bytes());
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(sort_key);
    out
}

/// The sequence at the end of a value-order entry.
pub(crate) fn trailing_seq(key: &[u8]) -> Result<u64> {
    key.len()
        .checked_sub(8)
        .and_then(|at| key.get(at..))
        .and_then(|b| b.try_into().ok())
        .map(u64::from_be_bytes)
        .ok_or(CORRUPT)
}

const CORRUPT: Error = Error::CorruptState {
    table: "companions",
    reason: "a companion key does not decode as its value type",
};

/// Decodes the value of a key made by [`encode`] for a value of `data_type`.
///
/// # Errors
/// [`Error::CorruptState`] when the bytes do not decode.
pub(crate) fn decode(user_key: &[u8], data_type: &DataType) -> Result<Scalar> {
    decode_sort(user_key.get(2..).ok_or(CORRUPT)?, data_type)
}

/// Decodes the value of an order entry (`tag ‖ seq ‖ sort key`).
///
/// # Errors
/// [`Error::CorruptState`] when the bytes do not decode.
pub(crate) fn decode_order_entry(user_key: &[u8], data_type: &DataType) -> Result<Scalar> {
    decode_sort(user_key.get(10..).ok_or(CORRUPT)?, data_type)
}

fn decode_sort(sort_key: &[u8], data_type: &DataType) -> Result<Scalar> {
    decode_sort_key(sort_key, &field(data_type))
        .ok()
        .and_then(|row| row.into_iter().next())
        .ok_or(CORRUPT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(v: &Scalar, dt: &DataType) -> Vec<u8> {
        let mut out = Vec::new();
        assert!(encode(3, v, dt, &mut out).unwrap());
        out
    }

    #[test]
    fn byte_order_is_java_compare_to_within_a_tag() {
        let doubles = [
            f64::NEG_INFINITY,
            -1.5,
            -0.0,
            0.0,
            2.0,
            f64::INFINITY,
            f64::NAN,
        ];
        for w in doubles.windows(2) {
            let (a, b) = (Scalar::Float64(w[0]), Scalar::Float64(w[1]));
            assert!(
                key(&a, &DataType::Float64) < key(&b, &DataType::Float64),
                "{w:?}"
            );
        }
        let s = |x: &str| key(&Scalar::Utf8(x.into()), &DataType::Utf8);
        assert!(s("") < s("a") && s("a") < s("a\0") && s("a\0") < s("b"));
        // prefix-free: no value's key is a prefix of another value's key
        assert!(!s("ab").starts_with(&s("a")));
    }

    #[test]
    fn entries_decode() {
        let cases = [
            (Scalar::Int8(-7), DataType::Int8),
            (Scalar::Int64(-5), DataType::Int64),
            (Scalar::Float32(-0.0), DataType::Float32),
            (Scalar::Decimal128(-12_345), DataType::Decimal128(10, 2)),
            (Scalar::Utf8("héllo".into()), DataType::Utf8),
            (Scalar::Boolean(true), DataType::Boolean),
        ];
        for (v, dt) in cases {
            let k = key(&v, &dt);
            assert_eq!(decode(&k, &dt).unwrap(), v);
            let o = order_entry(4, 77, &k);
            assert_eq!(decode_order_entry(&o, &dt).unwrap(), v);
            let mut vo = k.clone();
            vo.extend_from_slice(&77u64.to_be_bytes());
            assert_eq!(trailing_seq(&vo).unwrap(), 77);
        }
        assert!(!encode(1, &Scalar::Null, &DataType::Int64, &mut Vec::new()).unwrap());
        assert!(decode(&[0], &DataType::Int64).is_err());
    }
}
