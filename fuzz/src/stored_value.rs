//! typed-store's stored-value guard: arbitrary stored values (8-byte TTL timestamp + arrow-row
//! bytes) of arbitrary value columns, decoded by `typed_store_value::decode_stored_values`,
//! the function typed-store's keyed and map tables call on every value read from RocksDB.
//!
//! Input layout (the seeds are real encoded values in this layout, see
//! [`stored_value_seeds`]):
//!
//! ```text
//! byte 0            arity - 1 (low 2 bits: 1..=4 columns)
//! arity bytes       per column: type = byte & 0x7f mod TYPES.len(), nullable = byte & 0x80
//! then, repeated    one stored value: a length byte L then L bytes (L = 255: the rest)
//! ```

use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field, Fields, TimeUnit};
use state_api::{Row, RowCodec as ScalarRowCodec, Scalar, ValueCodec};
use typed_store_value::{Error, RowCodec, decode_stored_values, encode_stored_values};

/// Column types the target draws from: every type the guard walks. The first twelve are the
/// types `state_api::RowCodec` (the operators' codec) supports.
const TYPES: &[DataType] = &[
    DataType::Boolean,
    DataType::Int8,
    DataType::Int16,
    DataType::Int32,
    DataType::Int64,
    DataType::Float32,
    DataType::Float64,
    DataType::Decimal128(20, 3),
    DataType::Utf8,
    DataType::Binary,
    DataType::Date32,
    DataType::Timestamp(TimeUnit::Millisecond, None),
    DataType::UInt16,
    DataType::Float16,
    DataType::LargeUtf8,
    DataType::LargeBinary,
    DataType::Utf8View,
    DataType::BinaryView,
];

/// Most values decoded per input.
const MAX_VALUES: usize = 64;

/// A codec of any columns that decodes only the row count: lets arrow-row decode every
/// walked type, including those no sfstate codec uses. It never encodes.
struct RowCountCodec(Fields);

impl ValueCodec for RowCountCodec {
    type Value = ();

    fn fields(&self) -> Fields {
        self.0.clone()
    }

    fn encode<'a, I>(&self, _values: I) -> state_api::Result<Vec<ArrayRef>>
    where
        I: ExactSizeIterator<Item = &'a ()> + Clone,
    {
        Err(state_api::Error::Codec {
            column: String::new(),
            reason: "the row-count codec does not encode",
        })
    }

    fn decode(&self, columns: &[ArrayRef], out: &mut Vec<()>) -> state_api::Result<()> {
        assert_eq!(
            columns.len(),
            self.0.len(),
            "arrow-row decoded another arity"
        );
        let rows = columns.first().map_or(0, |c| c.len());
        for column in columns {
            assert_eq!(column.len(), rows, "columns of different lengths");
        }
        out.resize(out.len() + rows, ());
        Ok(())
    }
}

/// The columns and stored values of an input; `None` when it is too short for its columns.
fn parse(data: &[u8]) -> Option<(Fields, Vec<&[u8]>)> {
    let (&first, rest) = data.split_first()?;
    let arity = usize::from(first & 3) + 1;
    let (types, mut rest) = rest.split_at_checked(arity)?;
    let fields: Fields = types
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let data_type = TYPES[usize::from(t & 0x7f) % TYPES.len()].clone();
            Field::new(format!("c{i}"), data_type, t & 0x80 != 0)
        })
        .collect();
    let mut values = Vec::new();
    while let Some((&len, tail)) = rest.split_first() {
        if values.len() == MAX_VALUES {
            break;
        }
        let (value, tail) = if len == u8::MAX {
            (tail, &[][..])
        } else {
            tail.split_at_checked(usize::from(len))
                .unwrap_or((tail, &[][..]))
        };
        values.push(value);
        rest = tail;
    }
    Some((fields, values))
}

/// Stored-value decode of arbitrary bytes: never panics (whatever passes the guard, arrow-row
/// decodes without panicking, for every walked type); with the operators' codec, values that
/// decode re-encode to stored values that decode to the same timestamps and values.
pub fn stored_value(data: &[u8]) {
    let Some((fields, values)) = parse(data) else {
        return;
    };
    let rows = RowCodec::try_new(&fields).expect("arrow-row encodes every type in TYPES");
    assert!(
        rows.guard().walks_every_column(),
        "TYPES holds only walked types"
    );
    let all_pass = values.iter().all(|v| {
        typed_store_value::split_value(v).is_some_and(|(_, row)| rows.guard().well_formed(row))
    });
    match decode_stored_values(
        &rows,
        &RowCountCodec(fields.clone()),
        values.iter().copied(),
    ) {
        Ok((timestamps, units)) => {
            assert!(all_pass, "a value failing the guard was decoded");
            assert_eq!(
                (timestamps.len(), units.len()),
                (values.len(), values.len())
            );
        }
        Err(Error::CorruptValue { .. }) => assert!(!all_pass, "the guard passed every value"),
        Err(_) => assert!(all_pass, "a value failing the guard reached arrow-row"),
    }
    let Ok(codec) = ScalarRowCodec::try_new(fields) else {
        return; // a type the operators' codec does not support
    };
    let Ok((timestamps, decoded)) = decode_stored_values(&rows, &codec, values.iter().copied())
    else {
        return;
    };
    let entries: Vec<(i64, &Row)> = timestamps.iter().copied().zip(&decoded).collect();
    let mut stored = Vec::new();
    encode_stored_values(&rows, &codec, &entries, |_, bytes| {
        stored.push(bytes.to_vec());
    })
    .expect("decoded values re-encode");
    let (again_ts, again) = decode_stored_values(&rows, &codec, stored.iter().map(Vec::as_slice))
        .expect("re-encoded values decode");
    assert_eq!(
        again_ts, timestamps,
        "timestamps changed through a round trip"
    );
    assert_eq!(again, decoded, "values changed through a round trip");
}

/// One seed: a selector over `types` (indices into [`TYPES`], nullable when `nullable`) and
/// `rows` encoded by `encode_stored_values` with timestamps `0, 1000, 2000, ...`.
fn seed(types: &[u8], nullable: bool, rows: &[Row]) -> Vec<u8> {
    let fields: Fields = types
        .iter()
        .enumerate()
        .map(|(i, &t)| Field::new(format!("c{i}"), TYPES[usize::from(t)].clone(), nullable))
        .collect();
    let rows_codec = RowCodec::try_new(&fields).expect("row codec");
    let codec = ScalarRowCodec::try_new(fields).expect("operators' codec");
    let entries: Vec<(i64, &Row)> = (0..).step_by(1000).zip(rows).collect();
    let arity = u8::try_from(types.len() - 1).expect("arity 1..=4");
    let mut out = vec![arity];
    out.extend(types.iter().map(|&t| t | if nullable { 0x80 } else { 0 }));
    encode_stored_values(&rows_codec, &codec, &entries, |_, bytes| {
        out.push(u8::try_from(bytes.len()).expect("seed values are < 255 bytes"));
        out.extend_from_slice(bytes);
    })
    .expect("seed rows encode");
    out
}

/// The seed corpus of `stored_value`: real encoded values (`encode_stored_values` over the
/// operators' codec) of the column shapes sfstate stores: a count, a sum and average
/// accumulator, a top-n row with a string, a window accumulator with nulls, binaries; strings
/// of 0..=100 bytes cover the mini-block and block boundaries of arrow-row's encoding.
#[must_use]
pub fn stored_value_seeds() -> Vec<(String, Vec<u8>)> {
    let text = |n: usize| Scalar::Utf8("é".repeat(n / 2) + &"x".repeat(n % 2));
    let mut seeds = vec![
        (
            "count".to_owned(),
            seed(
                &[4],
                false,
                &[vec![Scalar::Int64(7)], vec![Scalar::Int64(-1)]],
            ),
        ),
        (
            "sum_avg".to_owned(),
            seed(
                &[7, 4, 6],
                false,
                &[vec![
                    Scalar::Decimal128(12_345),
                    Scalar::Int64(3),
                    Scalar::Float64(1.5),
                ]],
            ),
        ),
        (
            "window_nulls".to_owned(),
            seed(
                &[11, 0, 10, 2],
                true,
                &[
                    vec![
                        Scalar::Null,
                        Scalar::Boolean(true),
                        Scalar::Date32(19_000),
                        Scalar::Null,
                    ],
                    vec![
                        Scalar::Timestamp(1_700_000_000_000),
                        Scalar::Null,
                        Scalar::Null,
                        Scalar::Int16(-3),
                    ],
                ],
            ),
        ),
        (
            "binaries".to_owned(),
            seed(
                &[9, 1, 5],
                true,
                &[
                    vec![
                        Scalar::Binary(vec![0xff; 33]),
                        Scalar::Int8(1),
                        Scalar::Float32(0.5),
                    ],
                    vec![Scalar::Binary(Vec::new()), Scalar::Null, Scalar::Null],
                ],
            ),
        ),
    ];
    for n in [0_usize, 1, 7, 8, 9, 31, 32, 33, 40, 64, 100] {
        seeds.push((
            format!("topn_string_{n:03}"),
            seed(
                &[4, 8],
                true,
                &[
                    vec![Scalar::Int64(1), text(n)],
                    vec![Scalar::Null, Scalar::Null],
                ],
            ),
        ));
    }
    seeds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_reads_columns_and_values() {
        let (fields, values) = parse(&[1, 4, 0x88, 2, 9, 9, 255, 1, 2, 3]).unwrap();
        assert_eq!(fields.len(), 2);
        assert_eq!(fields[1].data_type(), &DataType::Utf8);
        assert!(fields[1].is_nullable());
        assert_eq!(values, [&[9, 9][..], &[1, 2, 3][..]]);
    }
}
