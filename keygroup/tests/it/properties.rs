//! Property tests (proptest's default config with a fixed seed, so every run checks the same
//! cases):
//! writer -> reader round trips over random rows of random types, the reader on arbitrary
//! bytes, key-group range and rescale invariants, hash determinism.

use keygroup::{
    BinaryRow, BinaryRowReader, BinaryRowWriter, KeyGroup, KeyGroupRange, LogicalType,
    MaxParallelism, NullEncoding, Parallelism, RowKind, Timestamp, Value, assign_to_key_group,
    compute_key_group_for_key_hash, compute_key_group_range_for_operator_index,
    compute_operator_index_for_key_group, decode_row, murmur_hash, rescale_plan,
};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

fn logical_type() -> impl Strategy<Value = LogicalType> {
    prop_oneof![
        Just(LogicalType::Boolean),
        Just(LogicalType::TinyInt),
        Just(LogicalType::SmallInt),
        Just(LogicalType::Int),
        Just(LogicalType::BigInt),
        Just(LogicalType::Float),
        Just(LogicalType::Double),
        Just(LogicalType::Date),
        (1..=20_u32).prop_map(|length| LogicalType::Char { length }),
        (1..=20_u32).prop_map(|length| LogicalType::VarChar { length }),
        Just(LogicalType::VarChar {
            length: keygroup::MAX_LENGTH
        }),
        (1..=20_u32).prop_map(|length| LogicalType::Binary { length }),
        (1..=20_u32).prop_map(|length| LogicalType::VarBinary { length }),
        (1..=38_u8)
            .prop_flat_map(|precision| (Just(precision), 0..=precision))
            .prop_map(|(precision, scale)| LogicalType::Decimal { precision, scale }),
        (0..=9_u8).prop_map(|precision| LogicalType::Time { precision }),
        (0..=9_u8).prop_map(|precision| LogicalType::Timestamp { precision }),
        (0..=9_u8).prop_map(|precision| LogicalType::TimestampLtz { precision }),
    ]
}

fn timestamp(precision: u8) -> impl Strategy<Value = Timestamp> {
    // Compact timestamps (precision <= 3) keep only the millis.
    let max_nanos: u32 = if precision <= 3 { 0 } else { 999_999 };
    (any::<i64>(), 0..=max_nanos).prop_map(|(millis, nano_of_milli)| Timestamp {
        millis,
        nano_of_milli,
    })
}

/// A non-null value of type `ty`, covering its whole domain.
fn value_of(ty: LogicalType) -> BoxedStrategy<Value> {
    match ty {
        LogicalType::Boolean => any::<bool>().prop_map(Value::Boolean).boxed(),
        LogicalType::TinyInt => any::<i8>().prop_map(Value::TinyInt).boxed(),
        LogicalType::SmallInt => any::<i16>().prop_map(Value::SmallInt).boxed(),
        LogicalType::Int => any::<i32>().prop_map(Value::Int).boxed(),
        LogicalType::Date => any::<i32>().prop_map(Value::Date).boxed(),
        LogicalType::Time { .. } => any::<i32>().prop_map(Value::Time).boxed(),
        LogicalType::BigInt => any::<i64>().prop_map(Value::BigInt).boxed(),
        LogicalType::Float => any::<u32>()
            .prop_map(|b| Value::Float(f32::from_bits(b)))
            .boxed(),
        LogicalType::Double => any::<u64>()
            .prop_map(|b| Value::Double(f64::from_bits(b)))
            .boxed(),
        LogicalType::Char { .. } | LogicalType::VarChar { .. } => {
            ".{0,12}".prop_map(Value::String).boxed()
        }
        LogicalType::Binary { .. } | LogicalType::VarBinary { .. } => {
            proptest::collection::vec(any::<u8>(), 0..20)
                .prop_map(Value::Binary)
                .boxed()
        }
        LogicalType::Decimal { precision, scale } => {
            let bound = 10_i128.pow(u32::from(precision)) - 1;
            prop_oneof![Just(bound), Just(-bound), Just(0), -bound..=bound]
                .prop_map(move |unscaled| Value::Decimal { unscaled, scale })
                .boxed()
        }
        LogicalType::Timestamp { precision } => {
            timestamp(precision).prop_map(Value::Timestamp).boxed()
        }
        LogicalType::TimestampLtz { precision } => {
            timestamp(precision).prop_map(Value::TimestampLtz).boxed()
        }
        _ => unreachable!("logical_type() makes no other type"),
    }
}

/// Random field types with values, about one in five null.
fn row() -> impl Strategy<Value = (Vec<LogicalType>, Vec<Value>)> {
    (0..12_usize).prop_flat_map(row_of_arity)
}

/// A row of `arity` random field types with values.
fn row_of_arity(arity: usize) -> impl Strategy<Value = (Vec<LogicalType>, Vec<Value>)> {
    proptest::collection::vec(logical_type(), arity).prop_flat_map(|types| {
        let values: Vec<_> = types
            .iter()
            .map(|ty| prop_oneof![1 => Just(Value::Null), 4 => value_of(*ty)])
            .collect();
        (Just(types), values)
    })
}

fn row_kind() -> impl Strategy<Value = RowKind> {
    prop_oneof![
        Just(RowKind::Insert),
        Just(RowKind::UpdateBefore),
        Just(RowKind::UpdateAfter),
        Just(RowKind::Delete),
    ]
}

fn null_encoding() -> impl Strategy<Value = NullEncoding> {
    prop_oneof![
        Just(NullEncoding::KeySelector),
        Just(NullEncoding::RowDataSerializer)
    ]
}

fn max_parallelism() -> impl Strategy<Value = MaxParallelism> {
    prop_oneof![1..=300_i32, Just(32_768), 1..=32_768_i32]
        .prop_map(|v| MaxParallelism::new(v).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig {
        rng_seed: RngSeed::Fixed(0x6b65_7967_726f_7570),
        ..ProptestConfig::default()
    })]

    #[test]
    fn write_then_read_round_trips(
        (types, values) in row(),
        kind in row_kind(),
        nulls in null_encoding(),
    ) {
        let row = BinaryRow::from_values_with(kind, &types, &values, nulls).unwrap();
        prop_assert_eq!(row.size_in_bytes() % 8, 0);
        let reader = BinaryRowReader::new(&types, row.as_bytes()).unwrap();
        prop_assert_eq!(reader.row_kind(), kind);
        prop_assert_eq!(reader.read_all().unwrap(), values.clone());
        let copy = BinaryRow::from_bytes(&types, row.as_bytes().to_vec()).unwrap();
        prop_assert_eq!(copy.hash_code(), row.hash_code());
    }

    #[test]
    fn a_reused_writer_writes_the_same_bytes(
        ((types, values), (earlier_types, earlier_values)) in row()
            .prop_flat_map(|row| { let arity = row.0.len(); (Just(row), row_of_arity(arity)) }),
    ) {
        let fresh = BinaryRow::from_values(&types, &values).unwrap();
        // Reuse a writer after another row of the same arity (with its own types).
        let mut writer = BinaryRowWriter::new(types.len());
        writer
            .write_row(RowKind::Delete, &earlier_types, &earlier_values, NullEncoding::KeySelector)
            .unwrap();
        writer.write_row(RowKind::Insert, &types, &values, NullEncoding::KeySelector).unwrap();
        prop_assert_eq!(writer.row(), fresh.as_bytes());
        prop_assert_eq!(writer.hash_code(), fresh.hash_code());
        let mp = MaxParallelism::new(128).unwrap();
        prop_assert_eq!(writer.key_group(mp), assign_to_key_group(&fresh, mp));
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(
        types in proptest::collection::vec(logical_type(), 0..6),
        bytes in proptest::collection::vec(any::<u8>(), 0..128),
    ) {
        let _ = decode_row(&types, &bytes);
    }

    #[test]
    fn decoding_corrupted_rows_never_panics(
        (types, values) in row(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let mut bytes = BinaryRow::from_values(&types, &values).unwrap().into_bytes();
        for (index, value) in flips {
            let i = index.index(bytes.len());
            bytes[i] = value;
        }
        if let Ok(decoded) = decode_row(&types, &bytes) {
            // Whatever decodes must be writable again.
            prop_assert!(BinaryRow::from_values(&types, &decoded).is_ok());
        }
    }

    #[test]
    fn key_groups_are_deterministic_and_in_range(hash in any::<i32>(), mp in max_parallelism()) {
        let kg = compute_key_group_for_key_hash(hash, mp);
        prop_assert_eq!(kg, compute_key_group_for_key_hash(hash, mp));
        prop_assert!(murmur_hash(hash) >= 0);
        prop_assert_eq!(kg.get(), murmur_hash(hash) % mp.get());
        prop_assert_eq!(kg, assign_to_key_group(&hash, mp));
    }

    #[test]
    fn every_key_group_is_in_exactly_one_operator_range(
        (mp, p) in max_parallelism().prop_flat_map(|mp| (Just(mp), 1..=mp.get().min(512))),
    ) {
        let p = Parallelism::new(p).unwrap();
        let ranges: Vec<KeyGroupRange> = (0..p.get())
            .map(|i| compute_key_group_range_for_operator_index(mp, p, i).unwrap())
            .collect();
        // Contiguous and ascending: together exactly 0..mp, each non-empty.
        let mut next = 0;
        for (index, range) in (0..).zip(&ranges) {
            prop_assert!(!range.is_empty());
            prop_assert_eq!(range.start(), next);
            next = range.end() + 1;
            for kg in [range.start(), range.end()] {
                let kg = KeyGroup::new(kg).unwrap();
                prop_assert_eq!(compute_operator_index_for_key_group(mp, p, kg), index);
            }
        }
        prop_assert_eq!(next, mp.get());
    }

    #[test]
    fn operator_of_every_key_group_owns_it(
        (mp, p, kg) in max_parallelism()
            .prop_flat_map(|mp| (Just(mp), 1..=mp.get(), 0..mp.get())),
    ) {
        let p = Parallelism::new(p).unwrap();
        let kg = mp.key_group(kg).unwrap();
        let operator = compute_operator_index_for_key_group(mp, p, kg);
        let range = compute_key_group_range_for_operator_index(mp, p, operator).unwrap();
        prop_assert!(range.contains(kg));
    }

    #[test]
    fn rescale_intersections_cover_each_new_range_exactly(
        (mp, old, new) in max_parallelism()
            .prop_flat_map(|mp| (Just(mp), 1..=mp.get().min(200), 1..=mp.get().min(200))),
    ) {
        let (old, new) = (Parallelism::new(old).unwrap(), Parallelism::new(new).unwrap());
        let plan = rescale_plan(mp, old, new).unwrap();
        prop_assert_eq!(plan.len(), usize::try_from(new.get()).unwrap());
        for target in &plan {
            let mut next = target.key_groups.start();
            for source in &target.sources {
                prop_assert_eq!(source.key_groups.start(), next);
                next = source.key_groups.end() + 1;
                let old_range =
                    compute_key_group_range_for_operator_index(mp, old, source.old_operator_index).unwrap();
                prop_assert_eq!(source.key_groups, old_range.intersection(target.key_groups));
            }
            prop_assert_eq!(next, target.key_groups.end() + 1);
        }
    }

    #[test]
    fn intersection_contains_exactly_the_common_key_groups(
        a in (0..200_i32, 0..200_i32),
        b in (0..200_i32, 0..200_i32),
        kg in 0..210_i32,
    ) {
        let a = KeyGroupRange::of(a.0, a.1).unwrap();
        let b = KeyGroupRange::of(b.0, b.1).unwrap();
        let kg = KeyGroup::new(kg).unwrap();
        let both = a.intersection(b);
        prop_assert_eq!(both.contains(kg), a.contains(kg) && b.contains(kg));
        prop_assert_eq!(both, b.intersection(a));
        prop_assert_eq!(both.iter().count(), both.len());
    }
}
