//! The on-disk format: key and value layout, the metadata keys, and the arrow-row value codec
//! with its structural guard.

use arrow_array::ArrayRef;
use arrow_row::{RowConverter, RowParser, Rows, SortField};
use arrow_schema::{DataType, Fields};
use keygroup::{KeyGroup, MaxParallelism};
use state_api::{TimeDomain, ValueCodec};

use crate::error::Error;

/// The on-disk format of this build: the typed-store layout version and the exact arrow-row
/// version whose byte encoding the values use. Stored under [`META_FORMAT_KEY`] in the
/// default column family; a store holding another string is refused at open with
/// [`Error::FormatVersionMismatch`].
pub const FORMAT_VERSION: &str = "typed-store-format=1;arrow-row=60.1.0";

/// Metadata key (default column family) of [`FORMAT_VERSION`].
pub const META_FORMAT_KEY: &[u8] = b"sfstate.typed-store.format";

/// Metadata key of the max parallelism (i32, big-endian) the key-group prefixes were
/// written for.
pub const META_MAX_PARALLELISM_KEY: &[u8] = b"sfstate.typed-store.max-parallelism";

/// Metadata key prefix: `table.cf/<name>` holds the name of the column family with table
/// `<name>`'s entries.
pub const META_TABLE_CF_PREFIX: &str = "table.cf/";

/// Metadata key prefix: `table.columns/<name>` holds the description of the table's value
/// columns ([`describe_fields`]; `map;<columns>` for a map table, `timer;<domain>` for a
/// timer table); a table opened with other columns, or as another kind, is refused.
pub const META_TABLE_COLUMNS_PREFIX: &str = "table.columns/";

/// Prefix of the column-family names of tables (`tbl.<n>`, `n` a counter).
pub const TABLE_CF_PREFIX: &str = "tbl.";

/// Width of the TTL timestamp in front of every value.
pub const TIMESTAMP_BYTES: usize = 8;

/// Writes Flink's key-group prefix of `key_group` (1 byte up to max parallelism 128, else 2,
/// big-endian) into `out`.
pub(crate) fn push_key_group_prefix(out: &mut Vec<u8>, key_group: KeyGroup, prefix_bytes: usize) {
    let kg = key_group.get().to_be_bytes();
    // A key group is in 0..32768, so its two low bytes hold it.
    let [_, _, hi, lo] = kg;
    if prefix_bytes == 1 {
        out.push(lo);
    } else {
        out.extend_from_slice(&[hi, lo]);
    }
}

/// The RocksDB key of `key` in `key_group`: prefix + key bytes, into `out` (cleared first).
pub(crate) fn composite_key(
    out: &mut Vec<u8>,
    key_group: KeyGroup,
    prefix_bytes: usize,
    key: &[u8],
) {
    out.clear();
    push_key_group_prefix(out, key_group, prefix_bytes);
    out.extend_from_slice(key);
}

/// The first key after every key with this key group's prefix (exclusive upper bound):
/// the prefix of `key_group + 1`, which still fits the width (key groups of a 1-byte prefix
/// are at most 127, of a 2-byte prefix at most 32767).
pub(crate) fn key_group_upper_bound(key_group: KeyGroup, prefix_bytes: usize) -> Vec<u8> {
    let [_, _, hi, lo] = (key_group.get() + 1).to_be_bytes();
    if prefix_bytes == 1 {
        vec![lo]
    } else {
        vec![hi, lo]
    }
}

/// The max parallelism's prefix width.
pub(crate) fn prefix_bytes(max_parallelism: MaxParallelism) -> usize {
    max_parallelism.key_group_prefix_bytes()
}

/// Splits a stored value into its TTL timestamp and its arrow-row bytes.
pub(crate) fn split_value(value: &[u8]) -> Option<(i64, &[u8])> {
    let (ts, row) = value.split_first_chunk::<TIMESTAMP_BYTES>()?;
    Some((i64::from_be_bytes(*ts), row))
}

/// A stable description of value columns (`name:type:nullable`, comma separated), stored per
/// table so a codec with other columns cannot misread stored arrow-row bytes.
pub fn describe_fields(fields: &Fields) -> String {
    fields
        .iter()
        .map(|f| format!("{}:{}:{}", f.name(), f.data_type(), f.is_nullable()))
        .collect::<Vec<_>>()
        .join(",")
}

/// The stored column description of a map table: `map;` + [`describe_fields`], so a map
/// table and a keyed table of one codec cannot open each other's column family.
pub(crate) fn map_columns(fields: &Fields) -> String {
    format!("map;{}", describe_fields(fields))
}

/// The stored column description of a timer table: `timer;event-time` or
/// `timer;processing-time`.
pub(crate) fn timer_columns(domain: TimeDomain) -> String {
    match domain {
        TimeDomain::EventTime => "timer;event-time".to_owned(),
        TimeDomain::ProcessingTime => "timer;processing-time".to_owned(),
    }
}

/// How one column is laid out in an arrow-row row (ascending, nulls first, non-dictionary).
#[derive(Debug, Clone, Copy)]
enum ColumnLayout {
    /// A null/validity byte then `width` value bytes (primitives, booleans).
    Fixed(usize),
    /// arrow-row's variable-length block encoding (strings, binaries).
    Variable,
}

/// Column layouts the guard can walk, or `None` when a type is outside the walked set.
fn layouts(fields: &Fields) -> Option<Vec<ColumnLayout>> {
    fields
        .iter()
        .map(|f| match f.data_type() {
            DataType::Boolean => Some(ColumnLayout::Fixed(1)),
            DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::Utf8View
            | DataType::BinaryView => Some(ColumnLayout::Variable),
            t if t.is_primitive() => t.primitive_width().map(ColumnLayout::Fixed),
            _ => None,
        })
        .collect()
}

// arrow-row's variable-length encoding (arrow-row 60.1.0 `variable.rs`, ascending order).
const NON_EMPTY_SENTINEL: u8 = 2;
const BLOCK_CONTINUATION: u8 = 0xFF;
const MINI_BLOCK_SIZE: usize = 8;
const MINI_BLOCK_COUNT: usize = 4;
const BLOCK_SIZE: usize = 32;

/// The byte length of one variable-length column at the start of `row`, walking its blocks
/// with bounds checks; `None` if the bytes cannot be such a column.
fn variable_len(row: &[u8]) -> Option<usize> {
    if *row.first()? != NON_EMPTY_SENTINEL {
        return Some(1); // null or empty
    }
    let mut index = 1;
    let mut block = |size: usize| -> Option<Option<usize>> {
        let sentinel = *row.get(index + size)?;
        index += size + 1;
        if sentinel == BLOCK_CONTINUATION {
            Some(None)
        } else if usize::from(sentinel) <= size {
            Some(Some(index))
        } else {
            None
        }
    };
    for _ in 0..MINI_BLOCK_COUNT {
        if let Some(end) = block(MINI_BLOCK_SIZE)? {
            return Some(end);
        }
    }
    loop {
        if let Some(end) = block(BLOCK_SIZE)? {
            return Some(end);
        }
    }
}

/// Encodes and decodes a codec's value columns as arrow-row bytes, with a structural check
/// before any stored byte reaches arrow-row's (trusting) decoder.
#[derive(Debug)]
pub(crate) struct RowCodec {
    converter: RowConverter,
    parser: RowParser,
    layouts: Option<Vec<ColumnLayout>>,
}

impl RowCodec {
    /// A row codec for `fields`.
    pub(crate) fn try_new(table: &str, fields: &Fields) -> Result<Self, Error> {
        let sort_fields = fields
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect();
        let converter = RowConverter::new(sort_fields).map_err(|source| Error::Arrow {
            table: table.to_owned(),
            source,
        })?;
        let parser = converter.parser();
        Ok(Self {
            converter,
            parser,
            layouts: layouts(fields),
        })
    }

    /// Whether `row` has exactly the length its columns' encodings say (always true for
    /// column types outside the walked set, which rely on RocksDB's block checksums).
    pub(crate) fn well_formed(&self, row: &[u8]) -> bool {
        let Some(layouts) = &self.layouts else {
            return true;
        };
        let mut rest = row;
        for layout in layouts {
            let len = match layout {
                ColumnLayout::Fixed(width) => 1 + width,
                ColumnLayout::Variable => match variable_len(rest) {
                    Some(len) => len,
                    None => return false,
                },
            };
            match rest.get(len..) {
                Some(tail) => rest = tail,
                None => return false,
            }
        }
        rest.is_empty()
    }

    /// Encodes columns into rows.
    pub(crate) fn encode(&self, table: &str, columns: &[ArrayRef]) -> Result<Rows, Error> {
        self.converter
            .convert_columns(columns)
            .map_err(|source| Error::Arrow {
                table: table.to_owned(),
                source,
            })
    }

    /// Decodes rows (already checked with [`well_formed`](Self::well_formed)) into columns.
    pub(crate) fn decode<'a>(
        &self,
        table: &str,
        rows: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Vec<ArrayRef>, Error> {
        let parser = &self.parser;
        self.converter
            .convert_rows(rows.into_iter().map(|r| parser.parse(r)))
            .map_err(|source| Error::Arrow {
                table: table.to_owned(),
                source,
            })
    }
}

/// Decodes stored values (8-byte timestamp + arrow-row bytes) with one arrow-row conversion
/// and one [`ValueCodec::decode`]: each value first passes the structural guard, so bad bytes
/// are [`Error::CorruptValue`], never a panic. Shared by every table kind that stores values.
pub(crate) fn decode_stored_values<'a, C: ValueCodec>(
    table: &str,
    rows: &RowCodec,
    codec: &C,
    stored: impl ExactSizeIterator<Item = &'a [u8]>,
) -> state_api::Result<(Vec<i64>, Vec<C::Value>)> {
    let n = stored.len();
    let corrupt = |reason| Error::CorruptValue {
        table: table.to_owned(),
        reason,
    };
    let mut timestamps = Vec::with_capacity(n);
    let mut row_bytes = Vec::with_capacity(n);
    for value in stored {
        let Some((ts, row)) = split_value(value) else {
            return Err(corrupt("shorter than the 8-byte timestamp").into());
        };
        if !rows.well_formed(row) {
            return Err(corrupt("arrow-row bytes do not match the table's columns").into());
        }
        timestamps.push(ts);
        row_bytes.push(row);
    }
    let mut values = Vec::with_capacity(n);
    if n > 0 {
        let columns = rows.decode(table, row_bytes)?;
        codec.decode(&columns, &mut values)?;
    }
    if values.len() != n {
        return Err(state_api::Error::Codec {
            column: String::new(),
            reason: "codec decoded a different number of rows",
        });
    }
    Ok((timestamps, values))
}

/// Encodes `(timestamp, value)` pairs into stored values with one [`ValueCodec::encode`] and
/// one arrow-row conversion, handing each (index, bytes) to `sink` in order.
pub(crate) fn encode_stored_values<C: ValueCodec>(
    table: &str,
    rows: &RowCodec,
    codec: &C,
    entries: &[(i64, &C::Value)],
    mut sink: impl FnMut(usize, &[u8]),
) -> state_api::Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let columns = codec.encode(entries.iter().map(|e| e.1))?;
    let encoded = rows.encode(table, &columns)?;
    let mut buffer = Vec::new();
    for (i, ((ts, _), row)) in entries.iter().zip(encoded.iter()).enumerate() {
        buffer.clear();
        buffer.extend_from_slice(&ts.to_be_bytes());
        buffer.extend_from_slice(row.data());
        sink(i, &buffer);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Float64Array, Int64Array, StringArray};
    use arrow_schema::Field;

    use super::*;

    fn fields() -> Fields {
        Fields::from(vec![
            Field::new("i", DataType::Int64, false),
            Field::new("f", DataType::Float64, false),
            Field::new("s", DataType::Utf8, true),
        ])
    }

    #[test]
    fn prefixes_are_flink_layout() {
        let mut out = Vec::new();
        composite_key(&mut out, KeyGroup::new(5).unwrap(), 1, b"k");
        assert_eq!(out, [5, b'k']);
        composite_key(&mut out, KeyGroup::new(0x1234).unwrap(), 2, b"k");
        assert_eq!(out, [0x12, 0x34, b'k']);
        assert_eq!(key_group_upper_bound(KeyGroup::new(127).unwrap(), 1), [128]);
        assert_eq!(
            key_group_upper_bound(KeyGroup::new(32767).unwrap(), 2),
            [0x80, 0x00]
        );
    }

    #[test]
    fn guard_accepts_every_encoded_row_and_rejects_every_truncation() {
        let codec = RowCodec::try_new("t", &fields()).unwrap();
        let strings: Vec<Option<String>> = (0..80)
            .map(|n| (n % 7 != 0).then(|| "x".repeat(n)))
            .collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(0..80)),
            Arc::new(Float64Array::from_iter_values((0..80).map(f64::from))),
            Arc::new(
                strings
                    .iter()
                    .map(Option::as_deref)
                    .collect::<StringArray>(),
            ),
        ];
        let rows = codec.encode("t", &columns).unwrap();
        for row in &rows {
            let bytes = row.data();
            assert!(codec.well_formed(bytes), "{bytes:?}");
            for cut in 0..bytes.len() {
                assert!(!codec.well_formed(&bytes[..cut]), "cut at {cut}");
            }
            let mut longer = bytes.to_vec();
            longer.push(0);
            assert!(!codec.well_formed(&longer));
        }
        let decoded = codec.decode("t", rows.iter().map(|r| r.data())).unwrap();
        assert_eq!(decoded.len(), 3);
        assert_eq!(&decoded[2], &columns[2]);
    }

    #[test]
    fn timestamp_prefix_is_big_endian() {
        let mut v = 0x0102_0304_0506_0708_i64.to_be_bytes().to_vec();
        v.push(9);
        assert_eq!(split_value(&v), Some((0x0102_0304_0506_0708, &[9][..])));
        assert_eq!(split_value(&[1, 2, 3]), None);
    }
}
