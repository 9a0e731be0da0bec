//! Bad input gives a typed error before any state changes: the operator's next valid
//! bundle produces exactly what it would have produced without the bad one.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Fields, Schema};
use keygroup::{MaxParallelism, Parallelism};
use memory_store::MemoryStore;
use operators::{
    AggCall, AggFunction, ChangelogBatch, Error, GroupAggSpec, GroupAggregate, InnerJoin, JoinSide,
    JoinSpec, RowKind, SortColumn, Top1, Top1Spec, kinds_from_bytes, schema_of,
};
use state_api::{Scalar, StoreConfig};

fn store() -> MemoryStore {
    let mp = MaxParallelism::new(128).unwrap();
    MemoryStore::new(StoreConfig::for_subtask(mp, Parallelism::new(1).unwrap(), 0).unwrap())
}

fn input() -> Fields {
    Fields::from(vec![
        Field::new("k", DataType::Int32, false),
        Field::new("v", DataType::Int64, true),
    ])
}

fn good(rows: &[(RowKind, i32, i64)]) -> ChangelogBatch {
    let rows: Vec<(RowKind, Vec<Scalar>)> = rows
        .iter()
        .map(|(kind, k, v)| (*kind, vec![Scalar::Int32(*k), Scalar::Int64(*v)]))
        .collect();
    ChangelogBatch::from_rows(&schema_of(&input()), &rows).unwrap()
}

fn raw(columns: Vec<(&str, ArrayRef, bool)>, kinds: Vec<RowKind>) -> ChangelogBatch {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a, nullable)| Field::new(*n, a.data_type().clone(), *nullable))
        .collect();
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns.into_iter().map(|(_, a, _)| a).collect(),
    )
    .unwrap();
    ChangelogBatch::try_new(batch, kinds).unwrap()
}

/// A bad batch and the check of its error.
type BadCase = (ChangelogBatch, fn(&Error) -> bool);

/// The bad batches every operator must refuse.
fn bad_batches() -> Vec<BadCase> {
    let ins = vec![RowKind::Insert; 2];
    vec![
        (
            raw(
                vec![("k", Arc::new(Int32Array::from(vec![1, 2])), false)],
                ins.clone(),
            ),
            |e| matches!(e, Error::MissingColumn { .. }),
        ),
        (
            raw(
                vec![
                    ("k", Arc::new(Int32Array::from(vec![1, 2])), false),
                    ("v", Arc::new(StringArray::from(vec!["a", "b"])), true),
                ],
                ins.clone(),
            ),
            |e| matches!(e, Error::WrongType { index: 1, .. }),
        ),
        (
            raw(
                vec![
                    ("k", Arc::new(Int32Array::from(vec![Some(1), None])), true),
                    ("v", Arc::new(Int64Array::from(vec![1, 2])), true),
                ],
                ins,
            ),
            |e| matches!(e, Error::NullInNonNullable { index: 0, row: 1 }),
        ),
    ]
}

#[test]
fn kinds_and_lengths_are_checked() {
    let err = kinds_from_bytes(&[0, 1, 7]).unwrap_err();
    assert!(matches!(err, Error::RowKind { row: 2, .. }), "{err}");
    let batch = good(&[(RowKind::Insert, 1, 1)]);
    let err = ChangelogBatch::try_new(batch.batch().clone(), vec![]).unwrap_err();
    assert!(
        matches!(err, Error::KindCount { rows: 1, kinds: 0 }),
        "{err}"
    );
}

#[test]
fn group_aggregate_refuses_bad_input_without_state_change() {
    let spec = |insert_only| {
        GroupAggSpec::new(
            input(),
            vec![0],
            vec![
                AggCall::new(AggFunction::Sum, vec![1]),
                AggCall::new(AggFunction::Min, vec![1]),
            ],
            insert_only,
        )
    };
    let first = good(&[(RowKind::Insert, 1, 5), (RowKind::Insert, 2, 7)]);
    let next = good(&[(RowKind::Insert, 1, 1), (RowKind::Delete, 2, 7)]);
    let mut reference_store = store();
    let mut reference = GroupAggregate::try_new("g", spec(false), &mut reference_store).unwrap();
    reference.process_bundle(&first).unwrap();
    let expected = reference.process_bundle(&next).unwrap().to_rows().unwrap();

    let mut st = store();
    let mut op = GroupAggregate::try_new("g", spec(false), &mut st).unwrap();
    op.process_bundle(&first).unwrap();
    for (bad, is_expected) in bad_batches() {
        let err = op.process_bundle(&bad).unwrap_err();
        assert!(is_expected(&err), "{err}");
    }
    assert_eq!(
        op.process_bundle(&next).unwrap().to_rows().unwrap(),
        expected
    );

    // A retraction into an aggregate planned for insert-only input.
    let mut st = store();
    let mut op = GroupAggregate::try_new("g", spec(true), &mut st).unwrap();
    let err = op
        .process_bundle(&good(&[
            (RowKind::Insert, 1, 5),
            (RowKind::UpdateBefore, 1, 5),
        ]))
        .unwrap_err();
    assert!(matches!(err, Error::RowKind { row: 1, .. }), "{err}");
    let out = op
        .process_bundle(&good(&[(RowKind::Insert, 1, 5)]))
        .unwrap();
    assert_eq!(out.kinds(), [RowKind::Insert]);
}

#[test]
fn top1_refuses_bad_input_and_retractions() {
    let spec = Top1Spec::new(
        input(),
        vec![0],
        vec![SortColumn {
            column: 1,
            descending: false,
            nulls_last: false,
        }],
        false,
    );
    let mut st = store();
    let mut op = Top1::try_new("t", spec, &mut st).unwrap();
    for (bad, is_expected) in bad_batches() {
        let err = op.process_bundle(&bad).unwrap_err();
        assert!(is_expected(&err), "{err}");
    }
    let err = op
        .process_bundle(&good(&[(RowKind::Insert, 1, 5), (RowKind::Delete, 1, 5)]))
        .unwrap_err();
    assert!(matches!(err, Error::RowKind { row: 1, .. }), "{err}");
    // Nothing was stored: the key's first row is still an insert.
    let out = op
        .process_bundle(&good(&[(RowKind::Insert, 1, 9)]))
        .unwrap();
    assert_eq!(out.kinds(), [RowKind::Insert]);
}

#[test]
fn join_refuses_bad_segments_without_state_change() {
    let spec = JoinSpec::new(input(), input(), vec![0], vec![0]);
    let mut st = store();
    let mut op = InnerJoin::try_new("j", &spec, &mut st).unwrap();
    let left = good(&[(RowKind::Insert, 1, 5)]);
    for (bad, is_expected) in bad_batches() {
        // The good left segment comes first but must not be applied either.
        let err = op
            .process_bundle(&[(JoinSide::Left, &left), (JoinSide::Right, &bad)])
            .unwrap_err();
        assert!(is_expected(&err), "{err}");
    }
    let right = good(&[(RowKind::Insert, 1, 6)]);
    assert_eq!(
        op.process_bundle(&[(JoinSide::Right, &right)])
            .unwrap()
            .num_rows(),
        0
    );
    let err = JoinSpec::new(input(), input(), vec![0], vec![1]);
    assert!(matches!(
        InnerJoin::try_new("j2", &err, &mut st),
        Err(Error::Unsupported { .. })
    ));
    let cond = JoinSpec::new(input(), input(), vec![0], vec![0])
        .with_non_equi_condition("`left`.v + 1 < `right`.v");
    assert!(matches!(
        InnerJoin::try_new("j3", &cond, &mut st),
        Err(Error::Unsupported { .. })
    ));
}
