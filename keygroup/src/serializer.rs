//! Flink's `TypeSerializer` byte forms for RocksDB state keys, namespaces and user keys.

use crate::error::{Error, Result};

/// Java's `int` limit for lengths written by Flink's serializers.
const MAX_JAVA_LENGTH: u64 = i32::MAX.cast_unsigned() as u64;

/// A Flink `TypeSerializer`'s state-key behaviour: its declared length and its bytes.
///
/// `T` is the Rust form of the serialized value: `i32`, `i64`, `str`, [`VoidNamespace`],
/// [`TimeWindow`], or `[u8]` holding a `BinaryRowData`'s bytes for the row serializers.
/// Implement it for other serializers to use them with
/// [`CompositeKeyBuilder`](crate::CompositeKeyBuilder).
pub trait StateSerializer<T: ?Sized> {
    /// `TypeSerializer.getLength()`: `Some(n)` for a fixed length `n`, `None` for a
    /// variable-length serializer (`getLength() < 0`). The value Flink declares, which is what
    /// decides key ambiguity, even where it is not the number of bytes written (see
    /// [`VoidNamespaceSerializer`], [`TimeWindowSerializer`]).
    fn fixed_length(&self) -> Option<usize>;

    /// `TypeSerializer.serialize(value, target)`: appends the value's bytes to `out`.
    ///
    /// # Errors
    /// [`Error::LengthOverflow`] where Flink's form cannot hold the value's length.
    fn serialize(&self, value: &T, out: &mut Vec<u8>) -> Result<()>;
}

impl<T: ?Sized, S: StateSerializer<T> + ?Sized> StateSerializer<T> for &S {
    fn fixed_length(&self) -> Option<usize> {
        (**self).fixed_length()
    }

    fn serialize(&self, value: &T, out: &mut Vec<u8>) -> Result<()> {
        (**self).serialize(value, out)
    }
}

/// `CompositeKeySerializationUtils.isSerializerTypeVariableSized(serializer)`.
fn is_variable_sized<T: ?Sized>(serializer: &(impl StateSerializer<T> + ?Sized)) -> bool {
    serializer.fixed_length().is_none()
}

/// `CompositeKeySerializationUtils.isAmbiguousKeyPossible(keySerializer, namespaceSerializer)`:
/// both are variable-length, so RocksDB keys carry the key's and the namespace's lengths.
pub fn is_ambiguous_key_possible<K: ?Sized, N: ?Sized>(
    key_serializer: &(impl StateSerializer<K> + ?Sized),
    namespace_serializer: &(impl StateSerializer<N> + ?Sized),
) -> bool {
    is_variable_sized(key_serializer) && is_variable_sized(namespace_serializer)
}

/// `IntSerializer`: 4 bytes big-endian; `getLength()` 4.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntSerializer;

impl StateSerializer<i32> for IntSerializer {
    fn fixed_length(&self) -> Option<usize> {
        Some(4)
    }

    fn serialize(&self, value: &i32, out: &mut Vec<u8>) -> Result<()> {
        out.extend_from_slice(&value.to_be_bytes());
        Ok(())
    }
}

/// `LongSerializer`: 8 bytes big-endian; `getLength()` 8. Also Flink SQL's window-aggregate
/// namespace (the slice end).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LongSerializer;

impl StateSerializer<i64> for LongSerializer {
    fn fixed_length(&self) -> Option<usize> {
        Some(8)
    }

    fn serialize(&self, value: &i64, out: &mut Vec<u8>) -> Result<()> {
        out.extend_from_slice(&value.to_be_bytes());
        Ok(())
    }
}

/// `StringSerializer`, i.e. `StringValue.writeString`: variable length.
///
/// Not UTF-8: the number of UTF-16 code units plus one, as a 7-bit varint (low groups first,
/// high bit = more follows), then every UTF-16 code unit as the same kind of varint. The empty
/// string is `01`; `"a"` is `02 61`; `"é"` (U+00E9) is `02 e9 01`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StringSerializer;

/// Appends `value` as `StringValue`'s 7-bit varint.
fn write_varint7(mut value: u32, out: &mut Vec<u8>) {
    while value >= 0x80 {
        // The low 7 bits plus the continuation bit: truncation to a byte is the point.
        out.push(u8::try_from(value & 0x7f).unwrap_or_default() | 0x80);
        value >>= 7;
    }
    out.push(u8::try_from(value).unwrap_or_default());
}

/// A length Flink writes as a Java `int`: at most `i32::MAX`.
fn java_length(len: usize) -> Result<u32> {
    let len = u64::try_from(len).unwrap_or(u64::MAX);
    u32::try_from(len)
        .ok()
        .filter(|len| u64::from(*len) <= MAX_JAVA_LENGTH)
        .ok_or(Error::LengthOverflow {
            length: len,
            limit: MAX_JAVA_LENGTH,
        })
}

impl StateSerializer<str> for StringSerializer {
    fn fixed_length(&self) -> Option<usize> {
        None
    }

    fn serialize(&self, value: &str, out: &mut Vec<u8>) -> Result<()> {
        let units = value.encode_utf16().count();
        write_varint7(java_length(units.saturating_add(1))?, out);
        for unit in value.encode_utf16() {
            write_varint7(unit.into(), out);
        }
        Ok(())
    }
}

/// `VoidNamespace`: the namespace of state that has none (value, list and map state outside
/// windows).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct VoidNamespace;

/// `VoidNamespaceSerializer`: writes one `00` byte, but declares `getLength()` 0, so it never
/// makes a key ambiguous.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VoidNamespaceSerializer;

impl StateSerializer<VoidNamespace> for VoidNamespaceSerializer {
    fn fixed_length(&self) -> Option<usize> {
        Some(0)
    }

    fn serialize(&self, _: &VoidNamespace, out: &mut Vec<u8>) -> Result<()> {
        out.push(0);
        Ok(())
    }
}

/// A time window `[start, end)` in epoch milliseconds: Flink's DataStream
/// `org.apache.flink.streaming.api.windowing.windows.TimeWindow` and Flink SQL's
/// `org.apache.flink.table.runtime.operators.window.TimeWindow`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimeWindow {
    /// First millisecond of the window.
    pub start: i64,
    /// First millisecond after the window.
    pub end: i64,
}

/// Appends a window as `start`, `end`, each a big-endian `i64`.
fn write_time_window(window: &TimeWindow, out: &mut Vec<u8>) {
    out.extend_from_slice(&window.start.to_be_bytes());
    out.extend_from_slice(&window.end.to_be_bytes());
}

/// DataStream `TimeWindow.Serializer`: `start`, `end` as big-endian `i64` (16 bytes), but
/// declares `getLength()` 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeWindowSerializer;

impl StateSerializer<TimeWindow> for TimeWindowSerializer {
    fn fixed_length(&self) -> Option<usize> {
        Some(0)
    }

    fn serialize(&self, value: &TimeWindow, out: &mut Vec<u8>) -> Result<()> {
        write_time_window(value, out);
        Ok(())
    }
}

/// Flink SQL's `table.runtime.operators.window.TimeWindow.Serializer` (group windows): the
/// same 16 bytes; `getLength()` 16.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableTimeWindowSerializer;

impl StateSerializer<TimeWindow> for TableTimeWindowSerializer {
    fn fixed_length(&self) -> Option<usize> {
        Some(16)
    }

    fn serialize(&self, value: &TimeWindow, out: &mut Vec<u8>) -> Result<()> {
        write_time_window(value, out);
        Ok(())
    }
}

/// Appends a `BinaryRowData` as `BinaryRowDataSerializer.serialize` does: its size as a
/// big-endian `i32`, then its bytes.
fn write_binary_row(row: &[u8], out: &mut Vec<u8>) -> Result<()> {
    out.extend_from_slice(&java_length(row.len())?.to_be_bytes());
    out.extend_from_slice(row);
    Ok(())
}

/// `BinaryRowDataSerializer`: a 4-byte big-endian length, then the row bytes; variable
/// length. The value is a row's bytes, e.g. [`BinaryRow::as_bytes`](crate::BinaryRow::as_bytes)
/// or [`BinaryRowWriter::row`](crate::BinaryRowWriter::row).
///
/// ```
/// use keygroup::{BinaryRowDataSerializer, StateSerializer};
///
/// let mut out = Vec::new();
/// BinaryRowDataSerializer.serialize(&[0; 8], &mut out)?;
/// assert_eq!(out, [0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0]);
/// # Ok::<(), keygroup::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BinaryRowDataSerializer;

impl StateSerializer<[u8]> for BinaryRowDataSerializer {
    fn fixed_length(&self) -> Option<usize> {
        None
    }

    fn serialize(&self, value: &[u8], out: &mut Vec<u8>) -> Result<()> {
        write_binary_row(value, out)
    }
}

/// `RowDataSerializer`, the key serializer of Flink SQL's keyed state: for a
/// `BinaryRowData` the same bytes as [`BinaryRowDataSerializer`]. (A `GenericRowData` is first
/// turned into a binary row with `toBinaryRow`, i.e. [`NullEncoding::RowDataSerializer`];
/// build that row with [`BinaryRow::from_values_with`](crate::BinaryRow::from_values_with).)
///
/// [`NullEncoding::RowDataSerializer`]: crate::NullEncoding::RowDataSerializer
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowDataSerializer;

impl StateSerializer<[u8]> for RowDataSerializer {
    fn fixed_length(&self) -> Option<usize> {
        None
    }

    fn serialize(&self, value: &[u8], out: &mut Vec<u8>) -> Result<()> {
        write_binary_row(value, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes<T: ?Sized>(serializer: &impl StateSerializer<T>, value: &T) -> Vec<u8> {
        let mut out = Vec::new();
        serializer.serialize(value, &mut out).unwrap();
        out
    }

    #[test]
    fn fixed_forms() {
        assert_eq!(bytes(&IntSerializer, &-2), [0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(bytes(&LongSerializer, &1), [0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(bytes(&VoidNamespaceSerializer, &VoidNamespace), [0]);
        let w = TimeWindow { start: 1, end: -1 };
        let expected = [
            0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ];
        assert_eq!(bytes(&TimeWindowSerializer, &w), expected);
        assert_eq!(bytes(&TableTimeWindowSerializer, &w), expected);
    }

    #[test]
    fn string_value_form() {
        assert_eq!(bytes(&StringSerializer, ""), [0x01]);
        assert_eq!(bytes(&StringSerializer, "a"), [0x02, 0x61]);
        assert_eq!(bytes(&StringSerializer, "é"), [0x02, 0xe9, 0x01]);
        // U+2713 = 0b10_0111_0001_0011: low 7 bits 0x13 | 0x80, then 0x4e.
        assert_eq!(bytes(&StringSerializer, "✓"), [0x02, 0x93, 0x4e]);
        // A supplementary character is two UTF-16 units (0xd83d 0xde00), 3 bytes each.
        assert_eq!(
            bytes(&StringSerializer, "😀"),
            [0x03, 0xbd, 0xb0, 0x03, 0x80, 0xbc, 0x03]
        );
        // 127 units: length 128 needs two bytes.
        let long = "x".repeat(127);
        assert_eq!(bytes(&StringSerializer, long.as_str())[..2], [0x80, 0x01]);
    }

    #[test]
    fn java_length_limit() {
        // Strings and rows longer than this cannot be allocated in a test; the check they
        // share is tested directly.
        assert_eq!(java_length(0).unwrap(), 0);
        assert_eq!(
            java_length(i32::MAX as usize).unwrap(),
            i32::MAX.cast_unsigned()
        );
        assert!(matches!(
            java_length(i32::MAX as usize + 1),
            Err(Error::LengthOverflow {
                length: 2_147_483_648,
                limit: 2_147_483_647
            })
        ));
    }

    #[test]
    fn ambiguity() {
        assert!(is_ambiguous_key_possible(
            &StringSerializer,
            &StringSerializer
        ));
        assert!(is_ambiguous_key_possible(
            &RowDataSerializer,
            &StringSerializer
        ));
        assert!(!is_ambiguous_key_possible(
            &StringSerializer,
            &VoidNamespaceSerializer
        ));
        assert!(!is_ambiguous_key_possible(
            &StringSerializer,
            &TimeWindowSerializer
        ));
        assert!(!is_ambiguous_key_possible(
            &BinaryRowDataSerializer,
            &LongSerializer
        ));
        assert!(!is_ambiguous_key_possible(
            &IntSerializer,
            &StringSerializer
        ));
    }
}
