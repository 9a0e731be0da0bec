//! The order-preserving sort-key encoding: byte order equals Java `compareTo` order
//! (property-tested against an independent reference comparator), round trips, exact bytes,
//! and strict, total decoding.

use std::cmp::Ordering;

use arrow_schema::{DataType, TimeUnit};
use proptest::prelude::*;
use state_api::{
    Error, Row, SORT_KEY_VERSION, Scalar, SortField, decode_sort_key, encode_sort_key,
};

fn key(values: &[Scalar], fields: &[SortField]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_sort_key(values, fields, &mut out).unwrap();
    out
}

fn codec_reason(err: &Error) -> &'static str {
    match err {
        Error::Codec { reason, .. } => reason,
        other => panic!("expected Error::Codec, got {other:?}"),
    }
}

// ---- the reference order, written from the Java sources' definitions ----

/// `java.lang.Double.doubleToLongBits`: every NaN becomes 0x7ff8000000000000.
fn double_to_long_bits(v: f64) -> i64 {
    if v.is_nan() {
        0x7ff8_0000_0000_0000
    } else {
        v.to_bits().cast_signed()
    }
}

/// `java.lang.Double.compare`.
fn java_double_compare(a: f64, b: f64) -> Ordering {
    if a < b {
        return Ordering::Less;
    }
    if a > b {
        return Ordering::Greater;
    }
    double_to_long_bits(a).cmp(&double_to_long_bits(b))
}

/// `java.lang.Float.compare`.
fn java_float_compare(a: f32, b: f32) -> Ordering {
    let float_to_int_bits = |v: f32| -> i32 {
        if v.is_nan() {
            0x7fc0_0000
        } else {
            v.to_bits().cast_signed()
        }
    };
    if a < b {
        return Ordering::Less;
    }
    if a > b {
        return Ordering::Greater;
    }
    float_to_int_bits(a).cmp(&float_to_int_bits(b))
}

/// Unsigned lexicographic bytes, as Flink's `BinaryStringData.compareTo` and byte[] order.
fn unsigned_bytes(a: &[u8], b: &[u8]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return if x < y {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
    }
    a.len().cmp(&b.len())
}

fn reference_value(a: &Scalar, b: &Scalar) -> Ordering {
    match (a, b) {
        (Scalar::Boolean(x), Scalar::Boolean(y)) => u8::from(*x).cmp(&u8::from(*y)),
        (Scalar::Int8(x), Scalar::Int8(y)) => i64::from(*x).cmp(&i64::from(*y)),
        (Scalar::Int16(x), Scalar::Int16(y)) => i64::from(*x).cmp(&i64::from(*y)),
        (Scalar::Int32(x), Scalar::Int32(y)) | (Scalar::Date32(x), Scalar::Date32(y)) => {
            i64::from(*x).cmp(&i64::from(*y))
        }
        (Scalar::Int64(x), Scalar::Int64(y)) | (Scalar::Timestamp(x), Scalar::Timestamp(y)) => {
            x.cmp(y)
        }
        (Scalar::Decimal128(x), Scalar::Decimal128(y)) => x.cmp(y),
        (Scalar::Float32(x), Scalar::Float32(y)) => java_float_compare(*x, *y),
        (Scalar::Float64(x), Scalar::Float64(y)) => java_double_compare(*x, *y),
        (Scalar::Utf8(x), Scalar::Utf8(y)) => unsigned_bytes(x.as_bytes(), y.as_bytes()),
        (Scalar::Binary(x), Scalar::Binary(y)) => unsigned_bytes(x, y),
        other => panic!("reference order of mismatched values {other:?}"),
    }
}

fn reference_field(a: &Scalar, b: &Scalar, field: &SortField) -> Ordering {
    match (a.is_null(), b.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) if field.nulls_last => Ordering::Greater,
        (true, false) => Ordering::Less,
        (false, true) if field.nulls_last => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) if field.descending => reference_value(a, b).reverse(),
        (false, false) => reference_value(a, b),
    }
}

fn reference_row(a: &[Scalar], b: &[Scalar], fields: &[SortField]) -> Ordering {
    a.iter()
        .zip(b)
        .zip(fields)
        .map(|((x, y), f)| reference_field(x, y, f))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// The value a key decodes to: NaNs canonical.
fn canonical(row: &[Scalar]) -> Row {
    row.iter()
        .map(|s| match s {
            Scalar::Float32(v) if v.is_nan() => Scalar::Float32(f32::from_bits(0x7FC0_0000)),
            Scalar::Float64(v) if v.is_nan() => {
                Scalar::Float64(f64::from_bits(0x7FF8_0000_0000_0000))
            }
            other => other.clone(),
        })
        .collect()
}

// ---- fixed cases ----

#[test]
fn prefix_free_strings() {
    let fields = [
        SortField::new(DataType::Utf8),
        SortField::new(DataType::Utf8),
    ];
    let s = |v: &str| Scalar::Utf8(v.to_owned());
    assert!(key(&[s("a"), s("b")], &fields) < key(&[s("ab"), s("")], &fields));
    assert!(key(&[s("a"), s("")], &fields) < key(&[s("a\0"), s("")], &fields));
    assert!(key(&[s(""), s("z")], &fields) < key(&[s("\0"), s("")], &fields));
    assert_eq!(
        key(&[s(""), s("")], &fields),
        [SORT_KEY_VERSION, 1, 0, 0, 1, 0, 0]
    );
    let desc = [
        SortField::new(DataType::Binary).with_descending(true),
        SortField::new(DataType::Binary),
    ];
    let b = |v: &[u8]| Scalar::Binary(v.to_vec());
    assert!(key(&[b(b"ab"), b(b"")], &desc) < key(&[b(b"a"), b(b"b")], &desc));
    assert!(key(&[b(b"a\0"), b(b"")], &desc) < key(&[b(b"a"), b(b"\xFF")], &desc));
    assert!(key(&[b(b"a"), b(b"")], &desc) < key(&[b(b""), b(b"")], &desc));
}

#[test]
fn exact_bytes_per_type() {
    let one = |t: DataType, v: Scalar| key(&[v], &[SortField::new(t)]);
    assert_eq!(one(DataType::Boolean, Scalar::Boolean(true)), [1, 1, 1]);
    assert_eq!(one(DataType::Int8, Scalar::Int8(-128)), [1, 1, 0x00]);
    assert_eq!(one(DataType::Int16, Scalar::Int16(1)), [1, 1, 0x80, 0x01]);
    assert_eq!(
        one(DataType::Date32, Scalar::Date32(0)),
        [1, 1, 0x80, 0, 0, 0]
    );
    assert_eq!(
        one(
            DataType::Timestamp(TimeUnit::Nanosecond, None),
            Scalar::Timestamp(i64::MAX)
        ),
        [1, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
    );
    assert_eq!(
        one(DataType::Float64, Scalar::Float64(-0.0)),
        [1, 1, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
    );
    assert_eq!(
        one(DataType::Float64, Scalar::Float64(-f64::NAN)),
        [1, 1, 0xFF, 0xF8, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(
        one(DataType::Float32, Scalar::Float32(0.0)),
        [1, 1, 0x80, 0, 0, 0]
    );
    let mut dec = vec![1, 1, 0x7F];
    dec.extend([0xFF; 15]);
    assert_eq!(
        one(DataType::Decimal128(10, 2), Scalar::Decimal128(-1)),
        dec
    );
    assert_eq!(
        one(DataType::Binary, Scalar::Binary(vec![0, 0xFF])),
        [1, 1, 0x00, 0xFF, 0xFF, 0x00, 0x00]
    );
    let nulls = [
        SortField::new(DataType::Int64),
        SortField::new(DataType::Int64)
            .with_nulls_last(true)
            .with_descending(true),
    ];
    assert_eq!(key(&[Scalar::Null, Scalar::Null], &nulls), [1, 0x00, 0x02]);
}

#[test]
fn every_type_round_trips_both_directions_and_null_placements() {
    let cases: Vec<(DataType, Vec<Scalar>)> = vec![
        (
            DataType::Boolean,
            vec![Scalar::Boolean(false), Scalar::Boolean(true)],
        ),
        (
            DataType::Int8,
            vec![
                Scalar::Int8(i8::MIN),
                Scalar::Int8(0),
                Scalar::Int8(i8::MAX),
            ],
        ),
        (
            DataType::Int16,
            vec![Scalar::Int16(i16::MIN), Scalar::Int16(i16::MAX)],
        ),
        (
            DataType::Int32,
            vec![
                Scalar::Int32(i32::MIN),
                Scalar::Int32(-1),
                Scalar::Int32(i32::MAX),
            ],
        ),
        (
            DataType::Int64,
            vec![Scalar::Int64(i64::MIN), Scalar::Int64(i64::MAX)],
        ),
        (
            DataType::Float32,
            vec![
                Scalar::Float32(-0.0),
                Scalar::Float32(f32::NEG_INFINITY),
                Scalar::Float32(1.5),
            ],
        ),
        (
            DataType::Float64,
            vec![
                Scalar::Float64(-0.0),
                Scalar::Float64(f64::MIN_POSITIVE),
                Scalar::Float64(f64::INFINITY),
            ],
        ),
        (
            DataType::Decimal128(38, 0),
            vec![
                Scalar::Decimal128(-(10_i128.pow(38) - 1)),
                Scalar::Decimal128(10_i128.pow(38) - 1),
            ],
        ),
        (
            DataType::Utf8,
            vec![Scalar::Utf8(String::new()), Scalar::Utf8("\0ÿ\0".into())],
        ),
        (
            DataType::Binary,
            vec![
                Scalar::Binary(vec![]),
                Scalar::Binary(vec![0xFF, 0, 0, 0xFF]),
            ],
        ),
        (
            DataType::Date32,
            vec![Scalar::Date32(i32::MIN), Scalar::Date32(i32::MAX)],
        ),
        (
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            vec![Scalar::Timestamp(i64::MIN), Scalar::Timestamp(0)],
        ),
    ];
    for (t, values) in cases {
        for descending in [false, true] {
            for nulls_last in [false, true] {
                let field = SortField::new(t.clone())
                    .with_descending(descending)
                    .with_nulls_last(nulls_last);
                let fields = [field.clone(), field];
                for v in values.iter().chain([&Scalar::Null]) {
                    let row = vec![v.clone(), Scalar::Null];
                    let bytes = key(&row, &fields);
                    assert_eq!(
                        decode_sort_key(&bytes, &fields).unwrap(),
                        row,
                        "{t} {bytes:02X?}"
                    );
                }
            }
        }
    }
}

#[test]
fn nan_decodes_canonical() {
    let fields = [
        SortField::new(DataType::Float64),
        SortField::new(DataType::Float32),
    ];
    let row = [
        Scalar::Float64(f64::from_bits(0xFFF0_0000_0000_0001)),
        Scalar::Float32(-f32::NAN),
    ];
    let decoded = decode_sort_key(&key(&row, &fields), &fields).unwrap();
    assert_eq!(decoded, canonical(&row));
    assert_eq!(key(&row, &fields), key(&decoded, &fields));
}

#[test]
fn encode_refuses_bad_values_and_leaves_out_as_it_was() {
    let fields = [
        SortField::new(DataType::Int64),
        SortField::new(DataType::Decimal128(2, 0)),
    ];
    let cases: [(Vec<Scalar>, &[SortField], &str); 4] = [
        (vec![Scalar::Int64(1)], &fields, "wrong number of values"),
        (
            vec![Scalar::Int32(1), Scalar::Null],
            &fields,
            "value does not match the field's data type",
        ),
        (
            vec![Scalar::Int64(1), Scalar::Decimal128(100)],
            &fields,
            "decimal value exceeds the field's precision",
        ),
        (
            vec![Scalar::Null],
            &[SortField::new(DataType::LargeUtf8)],
            "unsupported data type",
        ),
    ];
    for (values, fields, reason) in cases {
        let mut out = vec![0xAB];
        let err = encode_sort_key(&values, fields, &mut out).unwrap_err();
        assert_eq!(codec_reason(&err), reason, "{values:?}");
        assert_eq!(out, [0xAB]);
    }
}

#[test]
fn encode_appends() {
    let fields = [SortField::new(DataType::Boolean)];
    let mut out = vec![0xAB];
    encode_sort_key(&[Scalar::Boolean(true)], &fields, &mut out).unwrap();
    assert_eq!(out, [0xAB, 1, 1, 1]);
}

#[test]
fn decode_refuses_bad_bytes() {
    let b = SortField::new(DataType::Boolean);
    let f64_field = SortField::new(DataType::Float64);
    let s = SortField::new(DataType::Utf8);
    let d = SortField::new(DataType::Decimal128(2, 0));
    let mut dec_100 = vec![1, 1, 0x80];
    dec_100.extend([0; 14]);
    dec_100.push(100);
    let cases: Vec<(Vec<u8>, Vec<SortField>, &str)> = vec![
        (vec![], vec![b.clone()], "empty sort key"),
        (vec![2, 1, 1], vec![b.clone()], "unknown sort key version"),
        (vec![0, 1, 1], vec![b.clone()], "unknown sort key version"),
        (vec![1], vec![b.clone()], "truncated sort key"),
        (vec![1, 1], vec![b.clone()], "truncated sort key"),
        (vec![1, 3], vec![b.clone()], "invalid null marker"),
        // 0x02 is NULLS LAST's marker; this field has nulls first.
        (vec![1, 2], vec![b.clone()], "invalid null marker"),
        (
            vec![1, 0],
            vec![b.clone().with_nulls_last(true)],
            "invalid null marker",
        ),
        (vec![1, 1, 2], vec![b.clone()], "invalid boolean byte"),
        (
            vec![1, 1, 1, 0],
            vec![b.clone()],
            "trailing bytes after the last field",
        ),
        (
            vec![1, 1, 0xFF, 0xF8, 0, 0, 0, 0, 0, 1],
            vec![f64_field.clone()],
            "non-canonical NaN",
        ),
        (
            vec![1, 1, 0xFF, 0xF0, 0, 0, 0, 0, 0],
            vec![f64_field],
            "truncated sort key",
        ),
        (
            vec![1, 1, b'a', 0, 1],
            vec![s.clone()],
            "invalid escape in a string",
        ),
        (vec![1, 1, b'a', 0], vec![s.clone()], "truncated sort key"),
        (vec![1, 1, b'a'], vec![s.clone()], "truncated sort key"),
        (vec![1, 1, 0xC3, 0, 0], vec![s.clone()], "invalid UTF-8"),
        (
            dec_100,
            vec![d],
            "decimal value exceeds the field's precision",
        ),
        (
            vec![1, 0],
            vec![SortField::new(DataType::Utf8View)],
            "unsupported data type",
        ),
    ];
    for (bytes, fields, reason) in cases {
        let err = decode_sort_key(&bytes, &fields).unwrap_err();
        assert_eq!(codec_reason(&err), reason, "{bytes:02X?}");
    }
}

// ---- property tests ----

fn sort_type() -> impl Strategy<Value = DataType> {
    prop::sample::select(vec![
        DataType::Boolean,
        DataType::Int8,
        DataType::Int16,
        DataType::Int32,
        DataType::Int64,
        DataType::Float32,
        DataType::Float64,
        DataType::Decimal128(38, 4),
        DataType::Decimal128(3, 1),
        DataType::Utf8,
        DataType::Binary,
        DataType::Date32,
        DataType::Timestamp(TimeUnit::Nanosecond, None),
    ])
}

fn sort_field() -> impl Strategy<Value = SortField> {
    (sort_type(), any::<bool>(), any::<bool>()).prop_map(|(t, descending, nulls_last)| SortField {
        data_type: t,
        descending,
        nulls_last,
    })
}

fn f64_edge() -> impl Strategy<Value = f64> {
    prop_oneof![
        prop::sample::select(vec![
            f64::NAN,
            -f64::NAN,
            f64::from_bits(0x7FF0_0000_0000_0001),
            f64::from_bits(0xFFFF_FFFF_FFFF_FFFF),
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN,
            f64::MAX,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            f64::from_bits(1),
            1.0,
            -1.0,
        ]),
        any::<u64>().prop_map(f64::from_bits),
    ]
}

fn f32_edge() -> impl Strategy<Value = f32> {
    prop_oneof![
        prop::sample::select(vec![
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7F80_0001),
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN,
            f32::MAX,
            1.0,
        ]),
        any::<u32>().prop_map(f32::from_bits),
    ]
}

/// Strings from a small alphabet (so prefixes and ties are common) including NUL and
/// multi-byte characters.
fn edge_string() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!["\0", "a", "b", "ÿ", "\u{FFFD}", "\u{10FFFF}"]),
        0..4,
    )
    .prop_map(|parts| parts.concat())
}

fn edge_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(vec![0x00_u8, 0x01, 0x7F, 0xFE, 0xFF]),
        0..4,
    )
}

fn value_for(t: &DataType) -> BoxedStrategy<Scalar> {
    let value = match t {
        DataType::Boolean => any::<bool>().prop_map(Scalar::Boolean).boxed(),
        DataType::Int8 => any::<i8>().prop_map(Scalar::Int8).boxed(),
        DataType::Int16 => prop_oneof![Just(i16::MIN), Just(i16::MAX), -2_i16..2, any::<i16>()]
            .prop_map(Scalar::Int16)
            .boxed(),
        DataType::Int32 => prop_oneof![Just(i32::MIN), Just(i32::MAX), -2_i32..2, any::<i32>()]
            .prop_map(Scalar::Int32)
            .boxed(),
        DataType::Int64 => prop_oneof![Just(i64::MIN), Just(i64::MAX), -2_i64..2, any::<i64>()]
            .prop_map(Scalar::Int64)
            .boxed(),
        DataType::Float32 => f32_edge().prop_map(Scalar::Float32).boxed(),
        DataType::Float64 => f64_edge().prop_map(Scalar::Float64).boxed(),
        DataType::Decimal128(p, _) => {
            let max = 10_i128.pow(u32::from(*p)) - 1;
            prop_oneof![Just(-max), Just(max), -2_i128..2, -max..=max]
                .prop_map(Scalar::Decimal128)
                .boxed()
        }
        DataType::Utf8 => edge_string().prop_map(Scalar::Utf8).boxed(),
        DataType::Binary => edge_bytes().prop_map(Scalar::Binary).boxed(),
        DataType::Date32 => prop_oneof![Just(i32::MIN), Just(i32::MAX), -2_i32..2]
            .prop_map(Scalar::Date32)
            .boxed(),
        DataType::Timestamp(..) => {
            prop_oneof![Just(i64::MIN), Just(i64::MAX), -2_i64..2, any::<i64>()]
                .prop_map(Scalar::Timestamp)
                .boxed()
        }
        other => panic!("no values for {other}"),
    };
    prop_oneof![1 => Just(Scalar::Null), 4 => value].boxed()
}

fn row_for(fields: &[SortField]) -> BoxedStrategy<Row> {
    fields
        .iter()
        .map(|f| value_for(&f.data_type))
        .collect::<Vec<_>>()
        .boxed()
}

/// Fields (1-3) and two rows of them.
fn fields_and_two_rows() -> impl Strategy<Value = (Vec<SortField>, Row, Row)> {
    prop::collection::vec(sort_field(), 1..=3).prop_flat_map(|fields| {
        let rows = (row_for(&fields), row_for(&fields));
        (Just(fields), rows).prop_map(|(f, (a, b))| (f, a, b))
    })
}

fn fields_and_rows() -> impl Strategy<Value = (Vec<SortField>, Vec<Row>)> {
    prop::collection::vec(sort_field(), 1..=3).prop_flat_map(|fields| {
        let rows = prop::collection::vec(row_for(&fields), 0..24);
        (Just(fields), rows)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn byte_order_is_java_order((fields, a, b) in fields_and_two_rows()) {
        let (ka, kb) = (key(&a, &fields), key(&b, &fields));
        prop_assert_eq!(ka.cmp(&kb), reference_row(&a, &b, &fields), "{:02X?} vs {:02X?}", ka, kb);
        // The Scalar comparator agrees with the reference field by field.
        for ((x, y), f) in a.iter().zip(&b).zip(&fields) {
            let expected = reference_field(x, y, &SortField { descending: false, ..f.clone() });
            prop_assert_eq!(x.total_cmp_java_nulls(y, f.nulls_last), expected);
        }
    }

    #[test]
    fn sorting_keys_sorts_rows((fields, mut rows) in fields_and_rows()) {
        let mut keyed: Vec<(Vec<u8>, Row)> = rows.iter().map(|r| (key(r, &fields), r.clone())).collect();
        keyed.sort_by(|x, y| x.0.cmp(&y.0));
        rows.sort_by(|x, y| reference_row(x, y, &fields));
        for (a, (_, b)) in rows.iter().zip(&keyed) {
            prop_assert_eq!(reference_row(a, b, &fields), Ordering::Equal);
        }
    }

    #[test]
    fn round_trip_and_prefixes((fields, a, _b) in fields_and_two_rows()) {
        let bytes = key(&a, &fields);
        prop_assert_eq!(bytes[0], SORT_KEY_VERSION);
        let decoded = decode_sort_key(&bytes, &fields).unwrap();
        prop_assert_eq!(&decoded, &canonical(&a));
        // Leading fields encode to a byte prefix that decodes on its own.
        for k in 0..=fields.len() {
            let prefix = key(&a[..k], &fields[..k]);
            prop_assert!(bytes.starts_with(&prefix));
            prop_assert_eq!(decode_sort_key(&prefix, &fields[..k]).unwrap(), canonical(&a[..k]));
        }
        // Every proper prefix of a key fails to decode with all fields.
        for cut in 0..bytes.len() {
            prop_assert!(decode_sort_key(&bytes[..cut], &fields).is_err());
        }
    }

    #[test]
    fn decode_is_total_and_strict(
        fields in prop::collection::vec(sort_field(), 0..=3),
        tail in prop::collection::vec(
            prop_oneof![Just(0x00_u8), Just(0x01), Just(0x02), Just(0xFF), any::<u8>()], 0..40),
        versioned in any::<bool>(),
    ) {
        let mut bytes = if versioned { vec![SORT_KEY_VERSION] } else { Vec::new() };
        bytes.extend(tail);
        match decode_sort_key(&bytes, &fields) {
            // Accepted bytes are exactly the encoding of what they decode to.
            Ok(row) => prop_assert_eq!(key(&row, &fields), bytes),
            Err(err) => prop_assert!(matches!(err, Error::Codec { .. }), "{}", err),
        }
    }
}
