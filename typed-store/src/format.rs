//! The on-disk format: key layout, the metadata keys, and the table-named wrappers of the
//! value codec. The value layout (TTL prefix + arrow-row bytes) and its structural guard live
//! in the `typed-store-value` crate (no RocksDB there, so the fuzz workspace reaches the very
//! code used here); this module only attaches the table's name to their errors.

use arrow_schema::Fields;
use keygroup::{KeyGroup, MaxParallelism};
use state_api::{TimeDomain, ValueCodec};
pub use typed_store_value::TIMESTAMP_BYTES;
pub(crate) use typed_store_value::split_value;

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

/// Encodes and decodes a codec's value columns as arrow-row bytes behind the structural guard:
/// [`typed_store_value::RowCodec`] (the format and guard live in that crate, without RocksDB,
/// so the fuzz workspace reaches them), created with the table's name for its errors.
#[derive(Debug)]
pub(crate) struct RowCodec(typed_store_value::RowCodec);

impl RowCodec {
    /// A row codec for `fields`.
    pub(crate) fn try_new(table: &str, fields: &Fields) -> Result<Self, Error> {
        typed_store_value::RowCodec::try_new(fields)
            .map(Self)
            .map_err(|e| value_error(table, e))
    }
}

/// A [`typed_store_value::Error`] as this crate's error of `table`: corrupt bytes stay
/// [`Error::CorruptValue`], arrow-row failures [`Error::Arrow`], anything else is
/// [`Error::Value`].
fn value_error(table: &str, error: typed_store_value::Error) -> Error {
    let table = table.to_owned();
    match error {
        typed_store_value::Error::CorruptValue { reason } => Error::CorruptValue { table, reason },
        typed_store_value::Error::Arrow { source } => Error::Arrow { table, source },
        other => Error::Value {
            table,
            source: other,
        },
    }
}

/// [`typed_store_value::Error`] as a [`state_api::Error`]: a codec's own error unchanged.
fn value_api_error(table: &str, error: typed_store_value::Error) -> state_api::Error {
    match error {
        typed_store_value::Error::Codec { source } => source,
        other => value_error(table, other).into(),
    }
}

/// Decodes stored values (8-byte timestamp + arrow-row bytes) behind the structural guard:
/// [`typed_store_value::decode_stored_values`], bad bytes being [`Error::CorruptValue`] of
/// `table`. Shared by every table kind that stores values.
pub(crate) fn decode_stored_values<'a, C: ValueCodec>(
    table: &str,
    rows: &RowCodec,
    codec: &C,
    stored: impl ExactSizeIterator<Item = &'a [u8]>,
) -> state_api::Result<(Vec<i64>, Vec<C::Value>)> {
    typed_store_value::decode_stored_values(&rows.0, codec, stored)
        .map_err(|e| value_api_error(table, e))
}

/// Encodes `(timestamp, value)` pairs into stored values
/// ([`typed_store_value::encode_stored_values`]), handing each (index, bytes) to `sink` in
/// order.
pub(crate) fn encode_stored_values<C: ValueCodec>(
    table: &str,
    rows: &RowCodec,
    codec: &C,
    entries: &[(i64, &C::Value)],
    sink: impl FnMut(usize, &[u8]),
) -> state_api::Result<()> {
    typed_store_value::encode_stored_values(&rows.0, codec, entries, sink)
        .map_err(|e| value_api_error(table, e))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
