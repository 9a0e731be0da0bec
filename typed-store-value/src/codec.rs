//! The stored value (8-byte TTL timestamp + arrow-row bytes) and its codec: encoding through
//! arrow-row, decoding behind the structural guard.

use arrow_array::ArrayRef;
use arrow_row::{RowConverter, RowParser, Rows, SortField};
use arrow_schema::Fields;
use state_api::ValueCodec;

use crate::error::{Error, Result};
use crate::guard::RowGuard;

/// Width of the TTL timestamp in front of every value.
pub const TIMESTAMP_BYTES: usize = 8;

/// Splits a stored value into its TTL timestamp (big-endian) and its arrow-row bytes; `None`
/// when it is shorter than the timestamp.
pub fn split_value(value: &[u8]) -> Option<(i64, &[u8])> {
    let (ts, row) = value.split_first_chunk::<TIMESTAMP_BYTES>()?;
    Some((i64::from_be_bytes(*ts), row))
}

/// Encodes and decodes a codec's value columns as arrow-row bytes, with a structural check
/// before any stored byte reaches arrow-row's (trusting) decoder.
#[derive(Debug)]
pub struct RowCodec {
    converter: RowConverter,
    parser: RowParser,
    guard: RowGuard,
}

impl RowCodec {
    /// A row codec for `fields`.
    ///
    /// # Errors
    ///
    /// [`Error::Arrow`] when arrow-row cannot encode a column type.
    pub fn try_new(fields: &Fields) -> Result<Self> {
        let sort_fields = fields
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect();
        let converter = RowConverter::new(sort_fields).map_err(|source| Error::Arrow { source })?;
        let parser = converter.parser();
        Ok(Self {
            converter,
            parser,
            guard: RowGuard::new(fields),
        })
    }

    /// The structural guard [`decode_stored_values`] applies.
    pub fn guard(&self) -> &RowGuard {
        &self.guard
    }

    /// Encodes columns into rows.
    ///
    /// # Errors
    ///
    /// [`Error::Arrow`] when the columns do not match the fields.
    pub fn encode(&self, columns: &[ArrayRef]) -> Result<Rows> {
        self.converter
            .convert_columns(columns)
            .map_err(|source| Error::Arrow { source })
    }

    /// Decodes rows (already checked with the [`guard`](Self::guard)) into columns.
    fn decode<'a>(&self, rows: impl IntoIterator<Item = &'a [u8]>) -> Result<Vec<ArrayRef>> {
        let parser = &self.parser;
        self.converter
            .convert_rows(rows.into_iter().map(|r| parser.parse(r)))
            .map_err(|source| Error::Arrow { source })
    }
}

/// Decodes stored values (8-byte timestamp + arrow-row bytes) with one arrow-row conversion
/// and one [`ValueCodec::decode`]: each value first passes the structural guard, so bad bytes
/// are [`Error::CorruptValue`], never a panic. Shared by every table kind that stores values.
///
/// # Errors
///
/// [`Error::CorruptValue`] for a value failing the guard, [`Error::Arrow`] when arrow-row
/// refuses the rows, [`Error::Codec`] when the codec does.
pub fn decode_stored_values<'a, C: ValueCodec>(
    rows: &RowCodec,
    codec: &C,
    stored: impl ExactSizeIterator<Item = &'a [u8]>,
) -> Result<(Vec<i64>, Vec<C::Value>)> {
    let n = stored.len();
    let corrupt = |reason| Error::CorruptValue { reason };
    let mut timestamps = Vec::with_capacity(n);
    let mut row_bytes = Vec::with_capacity(n);
    for value in stored {
        let Some((ts, row)) = split_value(value) else {
            return Err(corrupt("shorter than the 8-byte timestamp"));
        };
        if !rows.guard.well_formed(row) {
            return Err(corrupt("arrow-row bytes do not match the table's columns"));
        }
        timestamps.push(ts);
        row_bytes.push(row);
    }
    let mut values = Vec::with_capacity(n);
    if n > 0 {
        let columns = rows.decode(row_bytes)?;
        codec
            .decode(&columns, &mut values)
            .map_err(|source| Error::Codec { source })?;
    }
    if values.len() != n {
        return Err(Error::Codec {
            source: state_api::Error::Codec {
                column: String::new(),
                reason: "codec decoded a different number of rows",
            },
        });
    }
    Ok((timestamps, values))
}

/// Encodes `(timestamp, value)` pairs into stored values with one [`ValueCodec::encode`] and
/// one arrow-row conversion, handing each (index, bytes) to `sink` in order.
///
/// # Errors
///
/// [`Error::Codec`] when the codec cannot encode a value, [`Error::Arrow`] when its columns
/// do not match the fields.
pub fn encode_stored_values<C: ValueCodec>(
    rows: &RowCodec,
    codec: &C,
    entries: &[(i64, &C::Value)],
    mut sink: impl FnMut(usize, &[u8]),
) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let columns = codec
        .encode(entries.iter().map(|e| e.1))
        .map_err(|source| Error::Codec { source })?;
    let encoded = rows.encode(&columns)?;
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
    use arrow_schema::{DataType, Field};

    use super::*;

    fn fields() -> Fields {
        Fields::from(vec![
            Field::new("i", DataType::Int64, false),
            Field::new("f", DataType::Float64, false),
            Field::new("s", DataType::Utf8, true),
        ])
    }

    #[test]
    fn guard_accepts_every_encoded_row_and_rejects_every_truncation() {
        let codec = RowCodec::try_new(&fields()).unwrap();
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
        let rows = codec.encode(&columns).unwrap();
        for row in &rows {
            let bytes = row.data();
            assert!(codec.guard().well_formed(bytes), "{bytes:?}");
            for cut in 0..bytes.len() {
                assert!(!codec.guard().well_formed(&bytes[..cut]), "cut at {cut}");
            }
            let mut longer = bytes.to_vec();
            longer.push(0);
            assert!(!codec.guard().well_formed(&longer));
        }
        let decoded = codec.decode(rows.iter().map(|r| r.data())).unwrap();
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
