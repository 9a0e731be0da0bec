//! Changelog batches: an Arrow [`RecordBatch`] with one Flink [`RowKind`] per row.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{Field, Fields, Schema, SchemaRef};
use keygroup::RowKind;
use state_api::{
    Row, RowReader, Scalar, arrays_from_flat_rows, arrays_from_rows, rows_from_arrays,
    scalar_from_array,
};

use crate::error::{Error, Result};

/// Whether `kind` adds to an aggregate / a side's state (`+I`, `+U`): Flink's
/// `RowDataUtil.isAccumulateMsg`.
pub fn is_accumulate(kind: RowKind) -> bool {
    matches!(kind, RowKind::Insert | RowKind::UpdateAfter)
}

/// The short form Flink prints: `+I`, `-U`, `+U`, `-D`.
pub fn short_string(kind: RowKind) -> &'static str {
    match kind {
        RowKind::Insert => "+I",
        RowKind::UpdateBefore => "-U",
        RowKind::UpdateAfter => "+U",
        RowKind::Delete => "-D",
    }
}

/// Parses `+I`, `-U`, `+U`, `-D`.
///
/// # Errors
/// [`Error::RowKind`] for anything else (`row` names the row for the message).
pub fn parse_row_kind(s: &str, row: usize) -> Result<RowKind> {
    match s {
        "+I" => Ok(RowKind::Insert),
        "-U" => Ok(RowKind::UpdateBefore),
        "+U" => Ok(RowKind::UpdateAfter),
        "-D" => Ok(RowKind::Delete),
        other => Err(Error::RowKind {
            row,
            kind: other.to_owned(),
            reason: "unknown row kind",
        }),
    }
}

/// Converts Flink's `RowKind.toByteValue` bytes into kinds.
///
/// # Errors
/// [`Error::RowKind`] for a byte outside `0..=3`.
pub fn kinds_from_bytes(bytes: &[u8]) -> Result<Vec<RowKind>> {
    bytes
        .iter()
        .enumerate()
        .map(|(row, b)| {
            RowKind::from_byte(*b).map_err(|_| Error::RowKind {
                row,
                kind: format!("byte {b}"),
                reason: "unknown row kind",
            })
        })
        .collect()
}

/// A batch of changelog rows: the columns plus one [`RowKind`] per row.
#[derive(Debug, Clone)]
pub struct ChangelogBatch {
    batch: RecordBatch,
    kinds: Vec<RowKind>,
}

impl ChangelogBatch {
    /// Pairs `batch` with `kinds`.
    ///
    /// # Errors
    /// [`Error::KindCount`] when the lengths differ.
    pub fn try_new(batch: RecordBatch, kinds: Vec<RowKind>) -> Result<Self> {
        if batch.num_rows() != kinds.len() {
            return Err(Error::KindCount {
                rows: batch.num_rows(),
                kinds: kinds.len(),
            });
        }
        Ok(Self { batch, kinds })
    }

    /// Builds a batch of `schema` from rows.
    ///
    /// # Errors
    /// A state-api codec error when a row does not fit the schema; an Arrow error.
    pub fn from_rows(schema: &SchemaRef, rows: &[(RowKind, Row)]) -> Result<Self> {
        let columns = arrays_from_rows(schema.fields(), rows.iter().map(|(_, r)| r))?;
        Ok(Self {
            batch: record_batch(schema, columns, rows.len())?,
            kinds: rows.iter().map(|(k, _)| *k).collect(),
        })
    }

    /// A batch of `schema` from rows laid end to end in `values` (`schema`'s width cells a
    /// row), one per kind in `kinds`: what [`from_rows`](Self::from_rows) builds, without a
    /// vector per row.
    ///
    /// # Errors
    /// A value that does not fit its column, or `values` not `kinds.len()` whole rows.
    pub fn from_flat_rows(
        schema: &SchemaRef,
        kinds: Vec<RowKind>,
        values: &[Scalar],
    ) -> Result<Self> {
        if values.len() != kinds.len() * schema.fields().len() {
            return Err(Error::spec("output values are not one row per row kind"));
        }
        let columns = arrays_from_flat_rows(schema.fields(), values)?;
        Ok(Self {
            batch: record_batch(schema, columns, kinds.len())?,
            kinds,
        })
    }

    /// An empty batch of `schema`.
    pub fn empty(schema: &SchemaRef) -> Self {
        Self {
            batch: RecordBatch::new_empty(Arc::clone(schema)),
            kinds: Vec::new(),
        }
    }

    /// The columns.
    pub fn batch(&self) -> &RecordBatch {
        &self.batch
    }

    /// The row kinds.
    pub fn kinds(&self) -> &[RowKind] {
        &self.kinds
    }

    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        self.kinds.len()
    }

    /// Every row as `(kind, values)`.
    ///
    /// # Errors
    /// A state-api codec error for a column of an unsupported type.
    pub fn to_rows(&self) -> Result<Vec<(RowKind, Row)>> {
        let columns = self.batch.columns();
        let mut out = Vec::with_capacity(self.num_rows());
        for (i, kind) in self.kinds.iter().enumerate() {
            let row = columns
                .iter()
                .map(|c| scalar_from_array(c.as_ref(), i))
                .collect::<state_api::Result<Vec<Scalar>>>()?;
            out.push((*kind, row));
        }
        Ok(out)
    }
}

/// A schema of `fields` (no metadata).
pub fn schema_of(fields: &Fields) -> SchemaRef {
    Arc::new(Schema::new(fields.clone()))
}

/// A record batch of `schema` with `columns` and `rows` rows (a schema without columns
/// needs the count given).
fn record_batch(schema: &SchemaRef, columns: Vec<ArrayRef>, rows: usize) -> Result<RecordBatch> {
    Ok(if columns.is_empty() {
        RecordBatch::try_new_with_options(
            Arc::clone(schema),
            columns,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
        )?
    } else {
        RecordBatch::try_new(Arc::clone(schema), columns)?
    })
}

/// Checks `batch` against the operator's `input` fields at the column `indexes` it reads:
/// presence, Arrow type, nulls in non-nullable columns. Returns the rows decoded.
///
/// # Errors
/// [`Error::MissingColumn`], [`Error::WrongType`], [`Error::NullInNonNullable`].
pub(crate) fn validated_rows(input: &Fields, batch: &ChangelogBatch) -> Result<Vec<Row>> {
    validate(input, batch)?;
    Ok(rows_from_arrays(input_columns(input, batch))?)
}

/// Checks `batch` as [`validated_rows`] does and returns a reader of its rows (each column
/// downcast once), for an operator that reads rows as it needs them instead of all at once.
///
/// # Errors
/// As [`validated_rows`].
pub(crate) fn validated_reader<'a>(
    input: &Fields,
    batch: &'a ChangelogBatch,
) -> Result<RowReader<'a>> {
    validate(input, batch)?;
    Ok(RowReader::try_new(input_columns(input, batch))?)
}

/// An operator's output rows under construction: their kinds, and their cells laid end to
/// end (one vector for a bundle, not one per row); [`finish`](Self::finish) makes the batch.
#[derive(Debug, Default)]
pub(crate) struct FlatRows {
    kinds: Vec<RowKind>,
    values: Vec<Scalar>,
}

impl FlatRows {
    /// Starts a row of `kind`; its cells go into the vector returned.
    pub(crate) fn row(&mut self, kind: RowKind) -> &mut Vec<Scalar> {
        self.kinds.push(kind);
        &mut self.values
    }

    /// The rows as a batch of `schema`.
    ///
    /// # Errors
    /// As [`ChangelogBatch::from_flat_rows`].
    pub(crate) fn finish(self, schema: &SchemaRef) -> Result<ChangelogBatch> {
        ChangelogBatch::from_flat_rows(schema, self.kinds, &self.values)
    }
}

/// The columns of `batch` an operator with `input` fields reads (its first `input.len()`;
/// [`validate`] checks there are that many).
pub(crate) fn input_columns<'a>(input: &Fields, batch: &'a ChangelogBatch) -> &'a [ArrayRef] {
    let columns = batch.batch().columns();
    columns.get(..input.len()).unwrap_or(columns)
}

/// Checks `batch` against the operator's `input` fields as [`validated_rows`] does, without
/// decoding the rows.
///
/// # Errors
/// [`Error::MissingColumn`], [`Error::WrongType`], [`Error::NullInNonNullable`].
pub(crate) fn validate(input: &Fields, batch: &ChangelogBatch) -> Result<()> {
    let b = batch.batch();
    if b.num_columns() < input.len() {
        return Err(Error::MissingColumn {
            index: b.num_columns(),
            columns: b.num_columns(),
        });
    }
    for (index, field) in input.iter().enumerate() {
        let column = b.column(index);
        check_column(index, field, column.as_ref())?;
    }
    Ok(())
}

fn check_column(index: usize, field: &Field, column: &dyn Array) -> Result<()> {
    if column.data_type() != field.data_type() {
        return Err(Error::WrongType {
            index,
            expected: field.data_type().clone(),
            actual: column.data_type().clone(),
        });
    }
    if !field.is_nullable() && column.null_count() > 0 {
        let row = (0..column.len()).find(|r| column.is_null(*r)).unwrap_or(0);
        return Err(Error::NullInNonNullable { index, row });
    }
    Ok(())
}
