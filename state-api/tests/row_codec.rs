//! `RowCodec`, `Scalar`, `scalar_from_array`, `rows_from_arrays` and `arrays_from_rows`: round trips of every
//! supported type (nullable or not), bitwise floats, refusals with `Error::Codec`, and
//! property tests (random schemas and rows; adversarial columns never panic).

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float32Array,
    Float64Array, Int8Array, Int16Array, Int32Array, Int64Array, LargeStringArray, StringArray,
    TimestampMicrosecondArray, TimestampMillisecondArray, TimestampNanosecondArray,
    TimestampSecondArray,
};
use arrow_schema::{DataType, Field, Fields, TimeUnit};
use proptest::prelude::*;
use state_api::{
    Error, Row, RowCodec, RowReader, Scalar, ValueCodec, arrays_from_flat_rows, arrays_from_rows,
    rows_from_arrays, scalar_from_array,
};

fn all_types() -> Vec<DataType> {
    vec![
        DataType::Boolean,
        DataType::Int8,
        DataType::Int16,
        DataType::Int32,
        DataType::Int64,
        DataType::Float32,
        DataType::Float64,
        DataType::Decimal128(38, 10),
        DataType::Decimal128(5, 2),
        DataType::Utf8,
        DataType::Binary,
        DataType::Date32,
        DataType::Timestamp(TimeUnit::Second, None),
        DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
        DataType::Timestamp(TimeUnit::Microsecond, None),
        DataType::Timestamp(TimeUnit::Nanosecond, Some("+08:00".into())),
    ]
}

fn fields_of(types: &[DataType], nullable: bool) -> Fields {
    types
        .iter()
        .enumerate()
        .map(|(i, t)| Field::new(format!("f{i}"), t.clone(), nullable))
        .collect()
}

/// Edge values of type `t`.
fn edge_values(t: &DataType) -> Vec<Scalar> {
    match t {
        DataType::Boolean => vec![Scalar::Boolean(false), Scalar::Boolean(true)],
        DataType::Int8 => vec![
            Scalar::Int8(i8::MIN),
            Scalar::Int8(0),
            Scalar::Int8(i8::MAX),
        ],
        DataType::Int16 => vec![
            Scalar::Int16(i16::MIN),
            Scalar::Int16(-1),
            Scalar::Int16(i16::MAX),
        ],
        DataType::Int32 => vec![
            Scalar::Int32(i32::MIN),
            Scalar::Int32(7),
            Scalar::Int32(i32::MAX),
        ],
        DataType::Int64 => vec![
            Scalar::Int64(i64::MIN),
            Scalar::Int64(0),
            Scalar::Int64(i64::MAX),
        ],
        DataType::Float32 => vec![
            Scalar::Float32(f32::from_bits(0x7FC0_1234)),
            Scalar::Float32(-0.0),
            Scalar::Float32(f32::NEG_INFINITY),
            Scalar::Float32(f32::from_bits(0xFFC0_0001)),
        ],
        DataType::Float64 => vec![
            Scalar::Float64(f64::from_bits(0x7FF8_0000_0000_BEEF)),
            Scalar::Float64(-0.0),
            Scalar::Float64(f64::INFINITY),
            Scalar::Float64(f64::MIN_POSITIVE / 4.0),
        ],
        DataType::Decimal128(p, _) => {
            let max = 10_i128.pow(u32::from(*p)) - 1;
            vec![
                Scalar::Decimal128(-max),
                Scalar::Decimal128(0),
                Scalar::Decimal128(max),
            ]
        }
        DataType::Utf8 => vec![
            Scalar::Utf8(String::new()),
            Scalar::Utf8("a\0b".into()),
            Scalar::Utf8("日本語 ☃".into()),
        ],
        DataType::Binary => vec![
            Scalar::Binary(vec![]),
            Scalar::Binary(vec![0, 0xFF, 0]),
            Scalar::Binary(vec![1; 100]),
        ],
        DataType::Date32 => vec![Scalar::Date32(i32::MIN), Scalar::Date32(19_000)],
        DataType::Timestamp(..) => vec![
            Scalar::Timestamp(i64::MIN),
            Scalar::Timestamp(-1),
            Scalar::Timestamp(i64::MAX),
        ],
        other => panic!("no edge values for {other}"),
    }
}

/// Rows over all types: row r takes edge value r (cycled) of every column; with `nulls`,
/// every third cell is null.
fn edge_rows(types: &[DataType], nulls: bool) -> Vec<Row> {
    (0..6)
        .map(|r| {
            types
                .iter()
                .enumerate()
                .map(|(c, t)| {
                    if nulls && (r + c) % 3 == 0 {
                        return Scalar::Null;
                    }
                    let values = edge_values(t);
                    values[r % values.len()].clone()
                })
                .collect()
        })
        .collect()
}

fn round_trip(codec: &RowCodec, rows: &[Row]) -> Vec<Row> {
    let columns = codec.encode(rows.iter()).unwrap();
    assert_eq!(columns.len(), codec.fields().len());
    for (column, field) in columns.iter().zip(codec.fields_ref().iter()) {
        assert_eq!(column.data_type(), field.data_type(), "{}", field.name());
        assert_eq!(column.len(), rows.len());
        if !field.is_nullable() {
            assert_eq!(column.null_count(), 0);
        }
    }
    let mut out = Vec::new();
    codec.decode(&columns, &mut out).unwrap();
    out
}

fn codec_reason(err: &Error) -> &'static str {
    match err {
        Error::Codec { reason, .. } => reason,
        other => panic!("expected Error::Codec, got {other:?}"),
    }
}

#[test]
fn every_type_round_trips_non_nullable() {
    let types = all_types();
    let codec = RowCodec::try_new(fields_of(&types, false)).unwrap();
    let rows = edge_rows(&types, false);
    assert_eq!(round_trip(&codec, &rows), rows);
}

#[test]
fn every_type_round_trips_nullable() {
    let types = all_types();
    let codec = RowCodec::try_new(fields_of(&types, true)).unwrap();
    let rows = edge_rows(&types, true);
    assert!(rows.iter().flatten().any(Scalar::is_null));
    assert_eq!(round_trip(&codec, &rows), rows);
}

#[test]
fn floats_round_trip_bit_for_bit() {
    let types = [DataType::Float32, DataType::Float64];
    let codec = RowCodec::try_new(fields_of(&types, false)).unwrap();
    let rows = vec![
        vec![
            Scalar::Float32(f32::from_bits(0xFF80_0001)),
            Scalar::Float64(f64::from_bits(0xFFF0_0000_0000_0001)),
        ],
        vec![Scalar::Float32(-0.0), Scalar::Float64(-0.0)],
    ];
    let out = round_trip(&codec, &rows);
    let bits = |rows: &[Row]| -> Vec<u64> {
        rows.iter()
            .flatten()
            .map(|s| match s {
                Scalar::Float32(v) => u64::from(v.to_bits()),
                Scalar::Float64(v) => v.to_bits(),
                other => panic!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(bits(&out), bits(&rows));
}

#[test]
fn empty_input_round_trips() {
    let codec = RowCodec::try_new(fields_of(&all_types(), true)).unwrap();
    assert!(round_trip(&codec, &[]).is_empty());
}

#[test]
fn decode_appends_after_existing_rows() {
    let codec = RowCodec::try_new(fields_of(&[DataType::Int64], false)).unwrap();
    let columns = codec.encode([vec![Scalar::Int64(2)]].iter()).unwrap();
    let mut out = vec![vec![Scalar::Int64(1)]];
    codec.decode(&columns, &mut out).unwrap();
    assert_eq!(out, [vec![Scalar::Int64(1)], vec![Scalar::Int64(2)]]);
}

#[test]
fn try_new_refuses_unsupported_and_reserved() {
    let one =
        |name: &str, t: DataType| RowCodec::try_new(Fields::from(vec![Field::new(name, t, true)]));
    for t in [
        DataType::LargeUtf8,
        DataType::Utf8View,
        DataType::UInt64,
        DataType::Float16,
        DataType::Date64,
        DataType::Decimal256(10, 0),
        DataType::Decimal128(0, 0),
        DataType::Decimal128(39, 0),
        DataType::Decimal128(5, 6),
        DataType::List(Arc::new(Field::new("item", DataType::Int32, true))),
        DataType::Null,
    ] {
        let err = one("v", t.clone()).unwrap_err();
        assert_eq!(codec_reason(&err), "unsupported data type", "{t}");
    }
    assert_eq!(
        codec_reason(&one("key", DataType::Int64).unwrap_err()),
        "reserved column name"
    );
    assert_eq!(
        codec_reason(&one("last_access", DataType::Int64).unwrap_err()),
        "reserved column name"
    );
    assert!(matches!(
        RowCodec::try_new(Fields::empty()),
        Err(Error::Codec { .. })
    ));
    let err = arrays_from_rows(
        &Fields::from(vec![Field::new("v", DataType::LargeBinary, true)]),
        std::iter::empty::<&Row>(),
    )
    .unwrap_err();
    assert_eq!(codec_reason(&err), "unsupported data type");
}

#[test]
fn encode_refuses_bad_rows() {
    let fields = Fields::from(vec![
        Field::new("a", DataType::Int64, false),
        Field::new("d", DataType::Decimal128(3, 1), true),
    ]);
    let codec = RowCodec::try_new(fields).unwrap();
    let cases: [(Row, &str); 5] = [
        (vec![Scalar::Int64(1)], "row has the wrong number of values"),
        (
            vec![Scalar::Int64(1), Scalar::Null, Scalar::Null],
            "row has the wrong number of values",
        ),
        (
            vec![Scalar::Null, Scalar::Null],
            "null in a non-nullable column",
        ),
        (
            vec![Scalar::Int32(1), Scalar::Null],
            "value does not match the column's data type",
        ),
        (
            vec![Scalar::Int64(1), Scalar::Decimal128(1_000)],
            "decimal value exceeds the column's precision",
        ),
    ];
    for (row, reason) in cases {
        let err = codec.encode([row.clone()].iter()).unwrap_err();
        assert_eq!(codec_reason(&err), reason, "{row:?}");
    }
    // The largest values of the precision are fine.
    codec
        .encode([vec![Scalar::Int64(1), Scalar::Decimal128(-999)]].iter())
        .unwrap();
}

#[test]
fn decode_refuses_mismatched_columns() {
    let fields = Fields::from(vec![
        Field::new("a", DataType::Int64, false),
        Field::new(
            "t",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            true,
        ),
        Field::new("d", DataType::Decimal128(3, 1), true),
    ]);
    let codec = RowCodec::try_new(fields).unwrap();
    let good = codec
        .encode(
            [vec![
                Scalar::Int64(1),
                Scalar::Timestamp(5),
                Scalar::Decimal128(12),
            ]]
            .iter(),
        )
        .unwrap();
    let with = |i: usize, column: ArrayRef| {
        let mut columns = good.clone();
        columns[i] = column;
        columns
    };
    let cases: Vec<(Vec<ArrayRef>, &str)> = vec![
        (good[..2].to_vec(), "wrong number of value columns"),
        (
            with(0, Arc::new(Int32Array::from(vec![1]))),
            "unexpected data type",
        ),
        (
            with(1, Arc::new(TimestampMillisecondArray::from(vec![5]))),
            "unexpected data type",
        ),
        (
            with(
                2,
                Arc::new(
                    Decimal128Array::from(vec![12])
                        .with_precision_and_scale(3, 2)
                        .unwrap(),
                ),
            ),
            "unexpected data type",
        ),
        (
            with(0, Arc::new(Int64Array::from(vec![1, 2]))),
            "columns differ in length",
        ),
        (
            with(0, Arc::new(Int64Array::from(vec![None::<i64>]))),
            "null in a non-nullable column",
        ),
        (
            with(
                2,
                Arc::new(
                    Decimal128Array::from(vec![1_000])
                        .with_precision_and_scale(3, 1)
                        .unwrap(),
                ),
            ),
            "decimal value exceeds the column's precision",
        ),
    ];
    for (columns, reason) in cases {
        let mut out = vec![vec![Scalar::Null]];
        let err = codec.decode(&columns, &mut out).unwrap_err();
        assert_eq!(codec_reason(&err), reason);
        assert_eq!(out, [vec![Scalar::Null]], "out is left as it was");
    }
}

#[test]
fn heap_size_counts_strings_binaries_and_the_vec() {
    let codec = RowCodec::try_new(fields_of(
        &[DataType::Utf8, DataType::Binary, DataType::Int64],
        true,
    ))
    .unwrap();
    let mut row: Row = Vec::with_capacity(4);
    row.push(Scalar::Utf8(String::with_capacity(40)));
    row.push(Scalar::Binary(Vec::with_capacity(7)));
    row.push(Scalar::Int64(1));
    assert_eq!(codec.heap_size(&row), 4 * size_of::<Scalar>() + 47);
    assert_eq!(codec.heap_size(&Vec::new()), 0);
}

#[test]
fn scalar_from_array_reads_every_type() {
    let cases: Vec<(ArrayRef, Scalar)> = vec![
        (
            Arc::new(BooleanArray::from(vec![None, Some(true)])),
            Scalar::Boolean(true),
        ),
        (
            Arc::new(Int8Array::from(vec![None, Some(-8)])),
            Scalar::Int8(-8),
        ),
        (
            Arc::new(Int16Array::from(vec![None, Some(-16)])),
            Scalar::Int16(-16),
        ),
        (
            Arc::new(Int32Array::from(vec![None, Some(-32)])),
            Scalar::Int32(-32),
        ),
        (
            Arc::new(Int64Array::from(vec![None, Some(-64)])),
            Scalar::Int64(-64),
        ),
        (
            Arc::new(Float32Array::from(vec![None, Some(-0.0)])),
            Scalar::Float32(-0.0),
        ),
        (
            Arc::new(Float64Array::from(vec![None, Some(f64::NAN)])),
            Scalar::Float64(f64::NAN),
        ),
        (
            Arc::new(
                Decimal128Array::from(vec![None, Some(-99)])
                    .with_precision_and_scale(2, 0)
                    .unwrap(),
            ),
            Scalar::Decimal128(-99),
        ),
        (
            Arc::new(StringArray::from(vec![None, Some("x")])),
            Scalar::Utf8("x".into()),
        ),
        (
            Arc::new(BinaryArray::from(vec![None, Some(&b"\0"[..])])),
            Scalar::Binary(vec![0]),
        ),
        (
            Arc::new(Date32Array::from(vec![None, Some(3)])),
            Scalar::Date32(3),
        ),
        (
            Arc::new(TimestampSecondArray::from(vec![None, Some(1)])),
            Scalar::Timestamp(1),
        ),
        (
            Arc::new(TimestampMillisecondArray::from(vec![None, Some(2)]).with_timezone("UTC")),
            Scalar::Timestamp(2),
        ),
        (
            Arc::new(TimestampMicrosecondArray::from(vec![None, Some(3)])),
            Scalar::Timestamp(3),
        ),
        (
            Arc::new(TimestampNanosecondArray::from(vec![None, Some(4)])),
            Scalar::Timestamp(4),
        ),
    ];
    for (array, expected) in cases {
        assert_eq!(scalar_from_array(array.as_ref(), 0).unwrap(), Scalar::Null);
        assert_eq!(scalar_from_array(array.as_ref(), 1).unwrap(), expected);
        let err = scalar_from_array(array.as_ref(), 2).unwrap_err();
        assert_eq!(codec_reason(&err), "row index out of bounds");
        // A slice reads relative to its offset.
        let sliced = array.slice(1, 1);
        assert_eq!(scalar_from_array(sliced.as_ref(), 0).unwrap(), expected);
    }
    let large = LargeStringArray::from(vec!["x"]);
    assert_eq!(
        codec_reason(&scalar_from_array(&large, 0).unwrap_err()),
        "unsupported data type"
    );
    let overflow = Decimal128Array::from(vec![100])
        .with_precision_and_scale(2, 0)
        .unwrap();
    assert_eq!(
        codec_reason(&scalar_from_array(&overflow, 0).unwrap_err()),
        "decimal value exceeds the column's precision"
    );
}

#[test]
fn sliced_columns_decode() {
    let codec = RowCodec::try_new(fields_of(&[DataType::Utf8, DataType::Int32], true)).unwrap();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec![Some("a"), None, Some("c")]).slice(1, 2)),
        Arc::new(Int32Array::from(vec![Some(1), Some(2), None]).slice(1, 2)),
    ];
    let mut out = Vec::new();
    codec.decode(&columns, &mut out).unwrap();
    assert_eq!(
        out,
        [
            vec![Scalar::Null, Scalar::Int32(2)],
            vec![Scalar::Utf8("c".into()), Scalar::Null]
        ]
    );
}

#[test]
fn eq_and_hash_are_bitwise() {
    let set: HashSet<Scalar> = [
        Scalar::Float64(f64::NAN),
        Scalar::Float64(f64::NAN),
        Scalar::Float64(-f64::NAN),
        Scalar::Float64(0.0),
        Scalar::Float64(-0.0),
        Scalar::Int64(0),
        Scalar::Timestamp(0),
        Scalar::Int32(0),
        Scalar::Date32(0),
        Scalar::Null,
    ]
    .into_iter()
    .collect();
    // NaN deduplicates with itself only; -NaN, ±0.0 and same-valued other variants stay distinct.
    assert_eq!(set.len(), 9);
    assert_ne!(Scalar::Float32(0.0), Scalar::Float32(-0.0));
    assert_eq!(Scalar::Float32(f32::NAN), Scalar::Float32(f32::NAN));
    assert_ne!(Scalar::Int64(0), Scalar::Timestamp(0));
}

#[test]
fn java_order_edge_cases() {
    use Ordering::{Equal, Greater, Less};
    let d = Scalar::Float64;
    let f = Scalar::Float32;
    let cases = [
        (d(-0.0), d(0.0), Less),
        (d(f64::NAN), d(f64::INFINITY), Greater),
        (d(f64::NAN), d(-f64::NAN), Equal),
        (d(f64::NEG_INFINITY), d(f64::MIN), Less),
        (f(-0.0), f(0.0), Less),
        (f(f32::NAN), f(f32::INFINITY), Greater),
        (f(f32::from_bits(0xFFC0_0001)), f(f32::NAN), Equal),
        (Scalar::Null, Scalar::Int64(i64::MIN), Less),
        (Scalar::Null, Scalar::Null, Equal),
        (Scalar::Int8(-1), Scalar::Int8(1), Less),
        (Scalar::Boolean(false), Scalar::Boolean(true), Less),
        (Scalar::Decimal128(-5), Scalar::Decimal128(3), Less),
        (Scalar::Utf8("ab".into()), Scalar::Utf8("b".into()), Less),
        (Scalar::Utf8("a".into()), Scalar::Utf8("a\0".into()), Less),
        // UTF-8 byte order (Flink's StringData), not UTF-16 order: U+FFFD < U+1F600 here.
        (
            Scalar::Utf8("\u{FFFD}".into()),
            Scalar::Utf8("\u{1F600}".into()),
            Less,
        ),
        (Scalar::Binary(vec![0x7F]), Scalar::Binary(vec![0x80]), Less),
        (Scalar::Timestamp(-1), Scalar::Timestamp(0), Less),
    ];
    for (a, b, expected) in cases {
        assert_eq!(a.total_cmp_java(&b), expected, "{a:?} vs {b:?}");
        assert_eq!(b.total_cmp_java(&a), expected.reverse(), "{b:?} vs {a:?}");
    }
    assert_eq!(
        Scalar::Null.total_cmp_java_nulls(&Scalar::Int8(0), true),
        Greater
    );
    assert_eq!(
        Scalar::Int8(0).total_cmp_java_nulls(&Scalar::Null, true),
        Less
    );
}

// ---- property tests ----

fn data_type_strategy() -> impl Strategy<Value = DataType> {
    prop::sample::select(all_types())
}

fn scalar_strategy(t: &DataType) -> BoxedStrategy<Scalar> {
    match t {
        DataType::Boolean => any::<bool>().prop_map(Scalar::Boolean).boxed(),
        DataType::Int8 => any::<i8>().prop_map(Scalar::Int8).boxed(),
        DataType::Int16 => any::<i16>().prop_map(Scalar::Int16).boxed(),
        DataType::Int32 => any::<i32>().prop_map(Scalar::Int32).boxed(),
        DataType::Int64 => any::<i64>().prop_map(Scalar::Int64).boxed(),
        DataType::Float32 => any::<u32>()
            .prop_map(|b| Scalar::Float32(f32::from_bits(b)))
            .boxed(),
        DataType::Float64 => any::<u64>()
            .prop_map(|b| Scalar::Float64(f64::from_bits(b)))
            .boxed(),
        DataType::Decimal128(p, _) => {
            let max = 10_i128.pow(u32::from(*p)) - 1;
            (-max..=max).prop_map(Scalar::Decimal128).boxed()
        }
        DataType::Utf8 => ".{0,8}".prop_map(Scalar::Utf8).boxed(),
        DataType::Binary => prop::collection::vec(any::<u8>(), 0..8)
            .prop_map(Scalar::Binary)
            .boxed(),
        DataType::Date32 => any::<i32>().prop_map(Scalar::Date32).boxed(),
        DataType::Timestamp(..) => any::<i64>().prop_map(Scalar::Timestamp).boxed(),
        other => panic!("no strategy for {other}"),
    }
}

/// Random fields (1-5) and rows (0-20) that fit them.
fn schema_and_rows() -> impl Strategy<Value = (Fields, Vec<Row>)> {
    prop::collection::vec((data_type_strategy(), any::<bool>()), 1..=5).prop_flat_map(|spec| {
        let fields: Fields = spec
            .iter()
            .enumerate()
            .map(|(i, (t, nullable))| Field::new(format!("c{i}"), t.clone(), *nullable))
            .collect();
        let row = spec
            .iter()
            .map(|(t, nullable)| {
                if *nullable {
                    prop_oneof![1 => Just(Scalar::Null), 3 => scalar_strategy(t)].boxed()
                } else {
                    scalar_strategy(t)
                }
            })
            .collect::<Vec<_>>();
        (Just(fields), prop::collection::vec(row, 0..20))
    })
}

/// A random column of a random supported (or not) type, random nulls and length.
fn column_strategy() -> impl Strategy<Value = ArrayRef> {
    let len = 0_usize..4;
    prop_oneof![
        prop::collection::vec(any::<Option<i64>>(), len.clone())
            .prop_map(|v| Arc::new(Int64Array::from(v)) as ArrayRef),
        prop::collection::vec(any::<Option<i32>>(), len.clone())
            .prop_map(|v| Arc::new(Int32Array::from(v)) as ArrayRef),
        prop::collection::vec(any::<Option<f64>>(), len.clone())
            .prop_map(|v| Arc::new(Float64Array::from(v)) as ArrayRef),
        prop::collection::vec(any::<Option<bool>>(), len.clone())
            .prop_map(|v| Arc::new(BooleanArray::from(v)) as ArrayRef),
        prop::collection::vec(any::<Option<String>>(), len.clone())
            .prop_map(|v| Arc::new(StringArray::from(v)) as ArrayRef),
        prop::collection::vec(any::<Option<String>>(), len.clone())
            .prop_map(|v| Arc::new(LargeStringArray::from(v)) as ArrayRef),
        (
            prop::collection::vec(any::<Option<i128>>(), len.clone()),
            1_u8..=38,
            0_i8..=5
        )
            .prop_map(|(v, p, s)| {
                Arc::new(
                    Decimal128Array::from(v)
                        .with_precision_and_scale(p, s.min(p.cast_signed()))
                        .unwrap(),
                ) as ArrayRef
            }),
        (
            prop::collection::vec(any::<Option<i64>>(), len.clone()),
            any::<bool>()
        )
            .prop_map(|(v, tz)| {
                let a = TimestampMillisecondArray::from(v);
                Arc::new(if tz { a.with_timezone("UTC") } else { a }) as ArrayRef
            }),
        prop::collection::vec(any::<Option<i32>>(), len)
            .prop_map(|v| Arc::new(Date32Array::from(v)) as ArrayRef),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_rows_round_trip((fields, rows) in schema_and_rows()) {
        let codec = RowCodec::try_new(fields.clone()).unwrap();
        let columns = codec.encode(rows.iter()).unwrap();
        let again = arrays_from_rows(&fields, rows.iter()).unwrap();
        prop_assert_eq!(columns.len(), again.len());
        for (a, b) in columns.iter().zip(&again) {
            prop_assert_eq!(a.as_ref(), b.as_ref());
        }
        // The same rows laid end to end in one vector build the same columns.
        let flat: Vec<Scalar> = rows.iter().flatten().cloned().collect();
        let from_flat = arrays_from_flat_rows(&fields, &flat).unwrap();
        prop_assert_eq!(from_flat.len(), again.len());
        for (a, b) in from_flat.iter().zip(&again) {
            prop_assert_eq!(a.as_ref(), b.as_ref());
        }
        if !fields.is_empty() && !flat.is_empty() {
            prop_assert!(arrays_from_flat_rows(&fields, &flat[1..]).is_err() || fields.len() == 1);
        }
        for (r, row) in rows.iter().enumerate() {
            for (c, cell) in row.iter().enumerate() {
                prop_assert_eq!(&scalar_from_array(columns[c].as_ref(), r).unwrap(), cell);
            }
        }
        prop_assert_eq!(&rows_from_arrays(&columns).unwrap(), &rows);
        let reader = RowReader::try_new(&columns).unwrap();
        prop_assert_eq!(reader.len(), rows.len());
        let mut cells = vec![Scalar::Null];
        for (r, row) in rows.iter().enumerate() {
            reader.read_into(r, &mut cells).unwrap();
            prop_assert_eq!(&cells, row);
            for (c, cell) in row.iter().enumerate() {
                prop_assert_eq!(&reader.cell(c, r).unwrap().to_scalar(), cell);
            }
            prop_assert!(reader.cell(row.len(), r).is_none());
        }
        for c in 0..fields.len() {
            prop_assert!(reader.cell(c, rows.len()).is_none());
        }
        prop_assert!(reader.read_into(rows.len(), &mut cells).is_err());
        prop_assert!(cells.is_empty());
        let mut out = Vec::new();
        codec.decode(&columns, &mut out).unwrap();
        prop_assert_eq!(out, rows);
    }

    #[test]
    fn adversarial_columns_never_panic(
        (fields, _) in schema_and_rows(),
        columns in prop::collection::vec(column_strategy(), 0..=5),
    ) {
        let codec = RowCodec::try_new(fields).unwrap();
        let mut out = Vec::new();
        match codec.decode(&columns, &mut out) {
            Ok(()) => {
                // Whatever decodes re-encodes to the same columns.
                let again = codec.encode(out.iter()).unwrap();
                for (a, b) in columns.iter().zip(&again) {
                    prop_assert_eq!(a.as_ref(), b.as_ref());
                }
            }
            Err(err) => {
                prop_assert!(matches!(err, Error::Codec { .. }), "{err}");
                prop_assert!(out.is_empty());
            }
        }
        for column in &columns {
            for row in 0..=column.len() {
                let _ = scalar_from_array(column.as_ref(), row);
            }
        }
        // Reading the columns whole agrees with reading them cell by cell, or refuses them.
        match rows_from_arrays(&columns) {
            Ok(read) => {
                for (r, row) in read.iter().enumerate() {
                    prop_assert_eq!(row.len(), columns.len());
                    for (column, cell) in columns.iter().zip(row) {
                        prop_assert_eq!(&scalar_from_array(column.as_ref(), r).unwrap(), cell);
                    }
                }
            }
            Err(err) => prop_assert!(matches!(err, Error::Codec { .. }), "{err}"),
        }
        // A reader of the columns hands out the same cells borrowed, or refuses them.
        match RowReader::try_new(&columns) {
            Ok(reader) => {
                for (c, column) in columns.iter().enumerate() {
                    for r in 0..column.len() {
                        prop_assert_eq!(
                            reader.cell(c, r).unwrap().to_scalar(),
                            scalar_from_array(column.as_ref(), r).unwrap()
                        );
                    }
                    prop_assert!(reader.cell(c, reader.len()).is_none());
                }
                prop_assert!(reader.cell(columns.len(), 0).is_none());
            }
            Err(err) => prop_assert!(matches!(err, Error::Codec { .. }), "{err}"),
        }
    }
}

#[test]
fn rows_from_arrays_refuses_unequal_lengths_unsupported_types_and_wide_decimals() {
    let short: ArrayRef = Arc::new(Int64Array::from(vec![1]));
    let long: ArrayRef = Arc::new(Int64Array::from(vec![1, 2]));
    let err = rows_from_arrays(&[long.clone(), short]).unwrap_err();
    assert_eq!(codec_reason(&err), "columns differ in length");
    let large: ArrayRef = Arc::new(LargeStringArray::from(vec!["a", "b"]));
    let err = rows_from_arrays(&[long.clone(), large]).unwrap_err();
    assert_eq!(codec_reason(&err), "unsupported data type");
    let wide: ArrayRef = Arc::new(
        Decimal128Array::from(vec![Some(1), None, Some(100_000)])
            .with_precision_and_scale(5, 2)
            .unwrap(),
    );
    let err = rows_from_arrays(&[wide]).unwrap_err();
    assert!(matches!(err, Error::Codec { .. }), "{err}");
    assert_eq!(rows_from_arrays(&[]).unwrap(), Vec::<Row>::new());
    assert_eq!(
        rows_from_arrays(&[long]).unwrap(),
        vec![vec![Scalar::Int64(1)], vec![Scalar::Int64(2)]]
    );
}

/// A row keeps its cells on the heap: `RowCodec` asks backends for the second prefetch stage
/// (plain codecs do not), and its hint takes any row, empty or wider than two cache lines,
/// without changing it.
#[test]
fn row_codec_asks_for_its_cells_to_be_prefetched() {
    const { assert!(RowCodec::PREFETCH_HEAP) };
    const { assert!(!state_api::I64Codec::PREFETCH_HEAP) };
    let codec = RowCodec::try_new(fields_of(&[DataType::Int64], true)).unwrap();
    for row in [
        Vec::new(),
        vec![Scalar::Int64(7); 1],
        vec![Scalar::Null; 64],
    ] {
        let before = row.clone();
        codec.prefetch_heap(&row);
        assert_eq!(row, before);
    }
}
