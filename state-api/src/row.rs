//! A generic value codec for rows of Arrow-typed scalars: [`Scalar`], [`Row`], [`RowCodec`].
//!
//! Operators keep accumulators and records as a [`Row`] (one [`Scalar`] per field) and store
//! them with a [`RowCodec`] built from the row's Arrow [`Fields`], so no operator hand-writes
//! a [`ValueCodec`].
//!
//! The supported types are listed on [`RowCodec`].

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, BooleanBuilder, PrimitiveBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, validate_decimal_precision_and_scale,
};
use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, BinaryArray, BooleanArray, PrimitiveArray, StringArray,
};
use arrow_schema::{DataType, Fields, TimeUnit};

use crate::codec::ValueCodec;
use crate::error::{Error, Result};
use crate::scalar_ref::ScalarRef;
use crate::snapshot::{KEY_COLUMN, LAST_ACCESS_COLUMN};

/// One value of a row: a null or a non-null value of one of the supported Arrow types.
///
/// Equality and hashing are **bitwise** for floats: `NaN == NaN` when the bits are the same,
/// and `-0.0 != 0.0`. That is the identity Flink uses for rows (their serialized bytes), so a
/// `Scalar` is a sound hash-map key. For ordering use [`Scalar::total_cmp_java`].
///
/// ```
/// use state_api::Scalar;
///
/// assert_eq!(Scalar::Float64(f64::NAN), Scalar::Float64(f64::NAN));
/// assert_ne!(Scalar::Float64(-0.0), Scalar::Float64(0.0));
/// ```
#[derive(Debug, Clone)]
pub enum Scalar {
    /// SQL `NULL`, valid in a nullable field of any type.
    Null,
    /// `Boolean`.
    Boolean(bool),
    /// `Int8` (`TINYINT`).
    Int8(i8),
    /// `Int16` (`SMALLINT`).
    Int16(i16),
    /// `Int32` (`INT`).
    Int32(i32),
    /// `Int64` (`BIGINT`).
    Int64(i64),
    /// `Float32` (`FLOAT`).
    Float32(f32),
    /// `Float64` (`DOUBLE`).
    Float64(f64),
    /// `Decimal128(p, s)`: the unscaled value; precision and scale come from the field's
    /// `DataType::Decimal128(p, s)`.
    Decimal128(i128),
    /// `Utf8` (`STRING`).
    Utf8(String),
    /// `Binary` (`BYTES`).
    Binary(Vec<u8>),
    /// `Date32`: days since 1970-01-01.
    Date32(i32),
    /// `Timestamp(unit, tz)`: since the epoch in the field's [`TimeUnit`]; the time zone
    /// belongs to the field and is not part of the value.
    Timestamp(i64),
}

/// A row: one [`Scalar`] per field, in field order.
pub type Row = Vec<Scalar>;

impl Scalar {
    /// Whether this is [`Scalar::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, Scalar::Null)
    }

    /// Heap bytes owned by the value (string and binary capacity), for memory accounting.
    pub fn heap_size(&self) -> usize {
        match self {
            Scalar::Utf8(s) => s.capacity(),
            Scalar::Binary(b) => b.capacity(),
            _ => 0,
        }
    }

    /// The variant's rank, used to order values of different variants.
    fn rank(&self) -> u8 {
        match self {
            Scalar::Null => 0,
            Scalar::Boolean(_) => 1,
            Scalar::Int8(_) => 2,
            Scalar::Int16(_) => 3,
            Scalar::Int32(_) => 4,
            Scalar::Int64(_) => 5,
            Scalar::Float32(_) => 6,
            Scalar::Float64(_) => 7,
            Scalar::Decimal128(_) => 8,
            Scalar::Utf8(_) => 9,
            Scalar::Binary(_) => 10,
            Scalar::Date32(_) => 11,
            Scalar::Timestamp(_) => 12,
        }
    }

    /// Compares two values as Java's `compareTo` of the corresponding Flink types does,
    /// with `NULL` before every non-null value (SQL `NULLS FIRST`; see
    /// [`total_cmp_java_nulls`](Scalar::total_cmp_java_nulls) for the other placement).
    ///
    /// - floats: `Float.compare` / `Double.compare`: `-0.0 < 0.0`, every NaN equal to every
    ///   other NaN and greater than `+inf`;
    /// - integers, dates, timestamps, decimals (unscaled, as the scale is fixed per field):
    ///   signed numeric order; booleans `false < true`;
    /// - strings: by their UTF-8 bytes, as Flink's `BinaryStringData.compareTo` (this is
    ///   not `java.lang.String.compareTo`, which compares UTF-16 units and differs for
    ///   characters above U+FFFF against U+E000..U+FFFF); binaries by unsigned bytes.
    ///
    /// Values of different non-null variants (which no field can hold together) are ordered
    /// by variant, only to keep the order total.
    ///
    /// ```
    /// use std::cmp::Ordering;
    /// use state_api::Scalar;
    ///
    /// let cmp = |a: f64, b: f64| Scalar::Float64(a).total_cmp_java(&Scalar::Float64(b));
    /// assert_eq!(cmp(-0.0, 0.0), Ordering::Less);
    /// assert_eq!(cmp(f64::NAN, f64::INFINITY), Ordering::Greater);
    /// assert_eq!(cmp(f64::NAN, -f64::NAN), Ordering::Equal);
    /// assert_eq!(Scalar::Null.total_cmp_java(&Scalar::Int64(i64::MIN)), Ordering::Less);
    /// ```
    pub fn total_cmp_java(&self, other: &Scalar) -> Ordering {
        self.total_cmp_java_nulls(other, false)
    }

    /// [`total_cmp_java`](Scalar::total_cmp_java) with `NULL` placed after every non-null
    /// value when `nulls_last`, before it otherwise. Two nulls are equal.
    pub fn total_cmp_java_nulls(&self, other: &Scalar, nulls_last: bool) -> Ordering {
        let null_order = if nulls_last {
            Ordering::Greater
        } else {
            Ordering::Less
        };
        match (self, other) {
            (Scalar::Null, Scalar::Null) => Ordering::Equal,
            (Scalar::Null, _) => null_order,
            (_, Scalar::Null) => null_order.reverse(),
            (Scalar::Boolean(a), Scalar::Boolean(b)) => a.cmp(b),
            (Scalar::Int8(a), Scalar::Int8(b)) => a.cmp(b),
            (Scalar::Int16(a), Scalar::Int16(b)) => a.cmp(b),
            (Scalar::Int32(a), Scalar::Int32(b)) | (Scalar::Date32(a), Scalar::Date32(b)) => {
                a.cmp(b)
            }
            (Scalar::Int64(a), Scalar::Int64(b)) | (Scalar::Timestamp(a), Scalar::Timestamp(b)) => {
                a.cmp(b)
            }
            (Scalar::Float32(a), Scalar::Float32(b)) => java_f32_cmp(*a, *b),
            (Scalar::Float64(a), Scalar::Float64(b)) => java_f64_cmp(*a, *b),
            (Scalar::Decimal128(a), Scalar::Decimal128(b)) => a.cmp(b),
            (Scalar::Utf8(a), Scalar::Utf8(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Scalar::Binary(a), Scalar::Binary(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

/// `Double.compare`: NaNs equal and greatest, `-0.0 < 0.0`.
fn java_f64_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.total_cmp(&b),
    }
}

/// `Float.compare`: NaNs equal and greatest, `-0.0 < 0.0`.
fn java_f32_cmp(a: f32, b: f32) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.total_cmp(&b),
    }
}

impl PartialEq for Scalar {
    fn eq(&self, other: &Scalar) -> bool {
        match (self, other) {
            (Scalar::Null, Scalar::Null) => true,
            (Scalar::Boolean(a), Scalar::Boolean(b)) => a == b,
            (Scalar::Int8(a), Scalar::Int8(b)) => a == b,
            (Scalar::Int16(a), Scalar::Int16(b)) => a == b,
            (Scalar::Int32(a), Scalar::Int32(b)) | (Scalar::Date32(a), Scalar::Date32(b)) => a == b,
            (Scalar::Int64(a), Scalar::Int64(b)) | (Scalar::Timestamp(a), Scalar::Timestamp(b)) => {
                a == b
            }
            (Scalar::Float32(a), Scalar::Float32(b)) => a.to_bits() == b.to_bits(),
            (Scalar::Float64(a), Scalar::Float64(b)) => a.to_bits() == b.to_bits(),
            (Scalar::Decimal128(a), Scalar::Decimal128(b)) => a == b,
            (Scalar::Utf8(a), Scalar::Utf8(b)) => a == b,
            (Scalar::Binary(a), Scalar::Binary(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Scalar {}

impl Hash for Scalar {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u8(self.rank());
        match self {
            Scalar::Null => {}
            Scalar::Boolean(v) => v.hash(state),
            Scalar::Int8(v) => v.hash(state),
            Scalar::Int16(v) => v.hash(state),
            Scalar::Int32(v) | Scalar::Date32(v) => v.hash(state),
            Scalar::Int64(v) | Scalar::Timestamp(v) => v.hash(state),
            Scalar::Float32(v) => v.to_bits().hash(state),
            Scalar::Float64(v) => v.to_bits().hash(state),
            Scalar::Decimal128(v) => v.hash(state),
            Scalar::Utf8(v) => v.hash(state),
            Scalar::Binary(v) => v.hash(state),
        }
    }
}

/// A supported Arrow type, resolved once per field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Boolean,
    Int8,
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    Decimal128 { precision: u8 },
    Utf8,
    Binary,
    Date32,
    Timestamp(TimeUnit),
}

impl Kind {
    /// The kind of `data_type`, or `None` if it is not supported (including a
    /// `Decimal128(p, s)` that Arrow itself rejects).
    pub(crate) fn of(data_type: &DataType) -> Option<Kind> {
        Some(match data_type {
            DataType::Boolean => Kind::Boolean,
            DataType::Int8 => Kind::Int8,
            DataType::Int16 => Kind::Int16,
            DataType::Int32 => Kind::Int32,
            DataType::Int64 => Kind::Int64,
            DataType::Float32 => Kind::Float32,
            DataType::Float64 => Kind::Float64,
            DataType::Decimal128(precision, scale) => {
                validate_decimal_precision_and_scale::<Decimal128Type>(*precision, *scale).ok()?;
                Kind::Decimal128 {
                    precision: *precision,
                }
            }
            DataType::Utf8 => Kind::Utf8,
            DataType::Binary => Kind::Binary,
            DataType::Date32 => Kind::Date32,
            DataType::Timestamp(unit, _) => Kind::Timestamp(*unit),
            _ => return None,
        })
    }
}

/// Whether the unscaled decimal `value` has at most `precision` digits.
pub(crate) fn decimal_fits(value: i128, precision: u8) -> bool {
    10_u128
        .checked_pow(u32::from(precision))
        .is_some_and(|limit| value.unsigned_abs() < limit)
}

pub(crate) fn codec_error(column: &str, reason: &'static str) -> Error {
    Error::Codec {
        column: column.to_owned(),
        reason,
    }
}

const UNSUPPORTED: &str = "unsupported data type";
const WRONG_TYPE: &str = "unexpected data type";
const NULL_IN_NON_NULLABLE: &str = "null in a non-nullable column";
const DECIMAL_OVERFLOW: &str = "decimal value exceeds the column's precision";
const VALUE_MISMATCH: &str = "value does not match the column's data type";

/// A [`ValueCodec`] for [`Row`]s of any [`Fields`] of the supported types: one Arrow column per
/// field, of the field's type and nullability.
///
/// # Supported types
///
/// | Arrow `DataType`        | `Scalar` variant          | notes                                   |
/// |-------------------------|---------------------------|-----------------------------------------|
/// | `Boolean`               | `Boolean(bool)`           |                                         |
/// | `Int8` … `Int64`        | `Int8(i8)` … `Int64(i64)` |                                         |
/// | `Float32`, `Float64`    | `Float32`, `Float64`      | bit for bit (NaN payloads, `-0.0`)      |
/// | `Decimal128(p, s)`      | `Decimal128(i128)`        | unscaled; `\|v\| < 10^p` or an error     |
/// | `Utf8`                  | `Utf8(String)`            | `i32` offsets                           |
/// | `Binary`                | `Binary(Vec<u8>)`         | `i32` offsets                           |
/// | `Date32`                | `Date32(i32)`             | days since the epoch                    |
/// | `Timestamp(unit, tz)`   | `Timestamp(i64)`          | in the field's unit; `tz` is carried by the field only |
///
/// Any field may be nullable; a null is [`Scalar::Null`]. Other types (`LargeUtf8`, views,
/// dictionaries, nested types, …) are refused by [`RowCodec::try_new`].
///
/// # Example
///
/// ```
/// use state_api::arrow_schema::{DataType, Field, Fields};
/// use state_api::{RowCodec, Scalar, ValueCodec};
///
/// let codec = RowCodec::try_new(Fields::from(vec![
///     Field::new("count", DataType::Int64, false),
///     Field::new("sum", DataType::Decimal128(20, 2), true),
///     Field::new("last", DataType::Utf8, true),
/// ]))?;
/// let rows = vec![
///     vec![Scalar::Int64(3), Scalar::Decimal128(1_050), Scalar::Utf8("eu".into())],
///     vec![Scalar::Int64(0), Scalar::Null, Scalar::Null],
/// ];
/// let columns = codec.encode(rows.iter())?;
/// let mut decoded = Vec::new();
/// codec.decode(&columns, &mut decoded)?;
/// assert_eq!(decoded, rows);
/// # Ok::<(), state_api::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct RowCodec {
    fields: Fields,
    kinds: Arc<[Kind]>,
}

impl RowCodec {
    /// A codec for rows of `fields`.
    ///
    /// # Errors
    /// [`Error::Codec`] when `fields` is empty, a field is named `key` or `last_access` (the
    /// canonical columns), or a field's type is not supported (reason
    /// `"unsupported data type"`, also for a `Decimal128(p, s)` Arrow rejects).
    pub fn try_new(fields: Fields) -> Result<Self> {
        if fields.is_empty() {
            return Err(codec_error("", "a row codec needs at least one field"));
        }
        let kinds = fields
            .iter()
            .map(|field| {
                if field.name() == KEY_COLUMN || field.name() == LAST_ACCESS_COLUMN {
                    return Err(codec_error(field.name(), "reserved column name"));
                }
                Kind::of(field.data_type()).ok_or_else(|| codec_error(field.name(), UNSUPPORTED))
            })
            .collect::<Result<Arc<[Kind]>>>()?;
        Ok(RowCodec { fields, kinds })
    }

    /// The fields, without cloning.
    pub fn fields_ref(&self) -> &Fields {
        &self.fields
    }
}

impl ValueCodec for RowCodec {
    type Value = Row;

    fn fields(&self) -> Fields {
        self.fields.clone()
    }

    fn encode<'a, I>(&self, values: I) -> Result<Vec<ArrayRef>>
    where
        I: ExactSizeIterator<Item = &'a Row> + Clone,
    {
        encode_columns(&self.fields, &self.kinds, &values.map(Vec::as_slice))
    }

    fn decode(&self, columns: &[ArrayRef], out: &mut Vec<Row>) -> Result<()> {
        let width = self.fields.len();
        let first_name = self.fields.first().map_or("", |f| f.name().as_str());
        if columns.len() != width {
            return Err(codec_error(first_name, "wrong number of value columns"));
        }
        let len = columns.first().map_or(0, Array::len);
        for (field, column) in self.fields.iter().zip(columns) {
            if column.data_type() != field.data_type() {
                return Err(codec_error(field.name(), WRONG_TYPE));
            }
            if column.len() != len {
                return Err(codec_error(field.name(), "columns differ in length"));
            }
            if !field.is_nullable() && column.null_count() > 0 {
                return Err(codec_error(field.name(), NULL_IN_NON_NULLABLE));
            }
        }
        let typed = self
            .fields
            .iter()
            .zip(self.kinds.iter())
            .zip(columns)
            .map(|((field, kind), column)| Typed::new(*kind, field.name(), column.as_ref()))
            .collect::<Result<Vec<Typed<'_>>>>()?;
        RowReader {
            columns: typed,
            len,
        }
        .append_rows(out);
        Ok(())
    }

    fn heap_size(&self, value: &Row) -> usize {
        value.capacity() * size_of::<Scalar>() + value.iter().map(Scalar::heap_size).sum::<usize>()
    }

    /// A row's cells live in its vector's heap buffer, away from the table's slot.
    const PREFETCH_HEAP: bool = true;

    /// The row's cells (at most two cache lines: the first cells, which accounting and an
    /// aggregate's update read first).
    fn prefetch_heap(&self, value: &Row) {
        crate::flat_map::prefetch_bytes(
            value.as_ptr().cast(),
            value.len() * size_of::<Scalar>(),
            2,
        );
    }
}

/// Builds one Arrow column per field from `rows` (the encoding [`RowCodec`] uses, without
/// a codec).
///
/// # Errors
/// [`Error::Codec`] when a field's type is not supported, a row's length differs from
/// `fields.len()`, a value does not match its field's type, a null is in a non-nullable
/// field, a decimal exceeds its precision, or string/binary data exceeds `i32` offsets.
// Reason: takes the iterator by value, as `ValueCodec::encode` does.
#[allow(clippy::needless_pass_by_value)]
pub fn arrays_from_rows<'a, I>(fields: &Fields, rows: I) -> Result<Vec<ArrayRef>>
where
    I: ExactSizeIterator<Item = &'a Row> + Clone,
{
    encode_columns(fields, &kinds_of(fields)?, &rows.map(Vec::as_slice))
}

/// [`arrays_from_rows`] of rows laid end to end in one vector: `values` holds
/// `fields.len()` cells per row, row after row, so a caller building many rows allocates
/// one vector instead of one per row.
///
/// ```
/// use std::sync::Arc;
/// use state_api::arrow_schema::{DataType, Field, Fields};
/// use state_api::{Scalar, arrays_from_flat_rows};
///
/// let fields = Fields::from(vec![
///     Field::new("k", DataType::Int64, false),
///     Field::new("s", DataType::Utf8, true),
/// ]);
/// let values = [Scalar::Int64(1), Scalar::Null, Scalar::Int64(2), Scalar::Utf8("b".into())];
/// let columns = arrays_from_flat_rows(&fields, &values).unwrap();
/// assert_eq!(columns[0].len(), 2);
/// assert!(arrays_from_flat_rows(&fields, &values[..3]).is_err());
/// ```
///
/// # Errors
/// As [`arrays_from_rows`]; [`Error::Codec`] when `values` is not a whole number of rows
/// (or holds values for a row of no fields).
pub fn arrays_from_flat_rows(fields: &Fields, values: &[Scalar]) -> Result<Vec<ArrayRef>> {
    let width = fields.len();
    if width == 0 {
        return if values.is_empty() {
            Ok(Vec::new())
        } else {
            Err(codec_error("", "values for a row of no fields"))
        };
    }
    if !values.len().is_multiple_of(width) {
        return Err(codec_error("", "values are not a whole number of rows"));
    }
    encode_columns(fields, &kinds_of(fields)?, &values.chunks_exact(width))
}

/// Each field's kind, refusing an unsupported type.
fn kinds_of(fields: &Fields) -> Result<Vec<Kind>> {
    fields
        .iter()
        .map(|field| {
            Kind::of(field.data_type()).ok_or_else(|| codec_error(field.name(), UNSUPPORTED))
        })
        .collect()
}

/// Reads every row of `columns` (arrays of one length, each of a supported type) as a
/// [`Row`], row by row: each column is downcast once (see [`RowReader`]), where
/// [`scalar_from_array`] downcasts per cell.
///
/// ```
/// use std::sync::Arc;
/// use state_api::arrow_array::{ArrayRef, Int64Array, StringArray};
/// use state_api::{Scalar, rows_from_arrays};
///
/// let columns: Vec<ArrayRef> = vec![
///     Arc::new(Int64Array::from(vec![Some(1), None])),
///     Arc::new(StringArray::from(vec!["a", "b"])),
/// ];
/// let rows = rows_from_arrays(&columns).unwrap();
/// assert_eq!(rows[1], vec![Scalar::Null, Scalar::Utf8("b".into())]);
/// ```
///
/// # Errors
/// As [`RowReader::try_new`]; nothing is read then.
pub fn rows_from_arrays(columns: &[ArrayRef]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    RowReader::try_new(columns)?.append_rows(&mut rows);
    Ok(rows)
}

/// The rows of a batch's columns read as [`Scalar`]s, each column downcast (and its decimals
/// checked) once when the reader is made.
///
/// ```
/// use std::sync::Arc;
/// use state_api::arrow_array::{ArrayRef, Int64Array};
/// use state_api::{RowReader, Scalar};
///
/// let columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(vec![7, 8]))];
/// let reader = RowReader::try_new(&columns).unwrap();
/// let mut row = Vec::new();
/// reader.read_into(1, &mut row).unwrap();
/// assert_eq!(row, [Scalar::Int64(8)]);
/// assert!(reader.read_into(2, &mut row).is_err());
/// ```
pub struct RowReader<'a> {
    columns: Vec<Typed<'a>>,
    len: usize,
}

impl fmt::Debug for RowReader<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowReader")
            .field("columns", &self.columns.len())
            .field("len", &self.len)
            .finish()
    }
}

impl<'a> RowReader<'a> {
    /// A reader of `columns` (arrays of one length, each of a supported type).
    ///
    /// # Errors
    /// [`Error::Codec`] (with an empty column name) when a column's type is not supported,
    /// the columns differ in length, or a decimal exceeds its precision.
    pub fn try_new(columns: &'a [ArrayRef]) -> Result<Self> {
        let len = columns.first().map_or(0, Array::len);
        let columns = columns
            .iter()
            .map(|column| {
                if column.len() != len {
                    return Err(codec_error("", "columns differ in length"));
                }
                let kind =
                    Kind::of(column.data_type()).ok_or_else(|| codec_error("", UNSUPPORTED))?;
                Typed::new(kind, "", column.as_ref())
            })
            .collect::<Result<Vec<Typed<'a>>>>()?;
        Ok(Self { columns, len })
    }

    /// Rows in the columns.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the columns hold no row.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Replaces `out`'s contents with the cells of row `row`.
    ///
    /// # Errors
    /// [`Error::Codec`] for a row out of bounds (`out` is then empty).
    pub fn read_into(&self, row: usize, out: &mut Vec<Scalar>) -> Result<()> {
        out.clear();
        if row >= self.len {
            return Err(codec_error("", "row index out of bounds"));
        }
        out.extend(self.cells(row));
        Ok(())
    }

    /// The cell of `column` at `row`, borrowed from the column (a string or bytes are not
    /// copied), `None` outside the columns: what [`read_into`](Self::read_into) reads as a
    /// [`Scalar`], for a caller that encodes cells without keeping them.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use state_api::arrow_array::{ArrayRef, StringArray};
    /// use state_api::{RowReader, ScalarRef};
    ///
    /// let columns: Vec<ArrayRef> = vec![Arc::new(StringArray::from(vec![Some("a"), None]))];
    /// let reader = RowReader::try_new(&columns).unwrap();
    /// assert!(matches!(reader.cell(0, 0), Some(ScalarRef::Utf8("a"))));
    /// assert!(reader.cell(0, 1).is_some_and(|cell| cell.is_null()));
    /// assert!(reader.cell(0, 2).is_none() && reader.cell(1, 0).is_none());
    /// ```
    #[expect(
        clippy::inline_always,
        reason = "measured: returned through memory, the 32-byte cell was stored and reloaded per cell"
    )]
    #[inline(always)]
    pub fn cell(&self, column: usize, row: usize) -> Option<ScalarRef<'a>> {
        if row < self.len {
            self.columns.get(column).map(|typed| typed.cell_ref(row))
        } else {
            None
        }
    }

    /// The cells of row `row`, which the caller keeps below [`len`](Self::len).
    fn cells(&self, row: usize) -> impl Iterator<Item = Scalar> + '_ {
        self.columns.iter().map(move |column| column.cell(row))
    }

    /// Appends every row to `out`.
    fn append_rows(&self, out: &mut Vec<Row>) {
        out.reserve(self.len);
        out.extend((0..self.len).map(|row| self.cells(row).collect()));
    }
}

/// Reads the cell at `row` of `array` (of a supported type) as a [`Scalar`].
///
/// # Errors
/// [`Error::Codec`] (with an empty column name) when `row` is out of bounds, the array's
/// type is not supported, or a decimal exceeds its precision.
pub fn scalar_from_array(array: &dyn Array, row: usize) -> Result<Scalar> {
    if row >= array.len() {
        return Err(codec_error("", "row index out of bounds"));
    }
    let kind = Kind::of(array.data_type()).ok_or_else(|| codec_error("", UNSUPPORTED))?;
    if array.is_null(row) {
        return Ok(Scalar::Null);
    }
    let wrong = || codec_error("", WRONG_TYPE);
    Ok(match kind {
        Kind::Boolean => Scalar::Boolean(array.as_boolean_opt().ok_or_else(wrong)?.value(row)),
        Kind::Int8 => Scalar::Int8(primitive_value::<Int8Type>(array, row)?),
        Kind::Int16 => Scalar::Int16(primitive_value::<Int16Type>(array, row)?),
        Kind::Int32 => Scalar::Int32(primitive_value::<Int32Type>(array, row)?),
        Kind::Int64 => Scalar::Int64(primitive_value::<Int64Type>(array, row)?),
        Kind::Float32 => Scalar::Float32(primitive_value::<Float32Type>(array, row)?),
        Kind::Float64 => Scalar::Float64(primitive_value::<Float64Type>(array, row)?),
        Kind::Decimal128 { precision } => {
            let value = primitive_value::<Decimal128Type>(array, row)?;
            if !decimal_fits(value, precision) {
                return Err(codec_error("", DECIMAL_OVERFLOW));
            }
            Scalar::Decimal128(value)
        }
        Kind::Utf8 => Scalar::Utf8(
            array
                .as_string_opt::<i32>()
                .ok_or_else(wrong)?
                .value(row)
                .to_owned(),
        ),
        Kind::Binary => Scalar::Binary(
            array
                .as_binary_opt::<i32>()
                .ok_or_else(wrong)?
                .value(row)
                .to_vec(),
        ),
        Kind::Date32 => Scalar::Date32(primitive_value::<Date32Type>(array, row)?),
        Kind::Timestamp(unit) => Scalar::Timestamp(match unit {
            TimeUnit::Second => primitive_value::<TimestampSecondType>(array, row)?,
            TimeUnit::Millisecond => primitive_value::<TimestampMillisecondType>(array, row)?,
            TimeUnit::Microsecond => primitive_value::<TimestampMicrosecondType>(array, row)?,
            TimeUnit::Nanosecond => primitive_value::<TimestampNanosecondType>(array, row)?,
        }),
    })
}

/// The value at `row` (checked in bounds by the caller) of a primitive array of type `T`.
fn primitive_value<T: ArrowPrimitiveType>(array: &dyn Array, row: usize) -> Result<T::Native> {
    Ok(array
        .as_primitive_opt::<T>()
        .ok_or_else(|| codec_error("", WRONG_TYPE))?
        .value(row))
}

fn encode_columns<'a, I>(fields: &Fields, kinds: &[Kind], rows: &I) -> Result<Vec<ArrayRef>>
where
    I: ExactSizeIterator<Item = &'a [Scalar]> + Clone,
{
    let width = fields.len();
    fields
        .iter()
        .zip(kinds)
        .enumerate()
        .map(|(index, (field, kind))| {
            let column = Column {
                name: field.name(),
                kind: *kind,
                nullable: field.is_nullable(),
                index,
                width,
            };
            column.encode(field.data_type(), rows)
        })
        .collect()
}

/// One column being encoded.
struct Column<'f> {
    name: &'f str,
    kind: Kind,
    nullable: bool,
    /// The column's position in a row.
    index: usize,
    /// The number of values every row must have.
    width: usize,
}

impl Column<'_> {
    /// The error for a cell that cannot go into this column.
    fn cell_error(&self, cell: &Scalar) -> Error {
        match (self.kind, cell) {
            (_, Scalar::Null) => codec_error(self.name, NULL_IN_NON_NULLABLE),
            (Kind::Decimal128 { .. }, Scalar::Decimal128(_)) => {
                codec_error(self.name, DECIMAL_OVERFLOW)
            }
            _ => codec_error(self.name, VALUE_MISMATCH),
        }
    }

    /// This column's cell of every row, refusing rows of the wrong width.
    fn cells<'a, I>(&self, rows: &I) -> impl Iterator<Item = Result<&'a Scalar>> + use<'a, '_, I>
    where
        I: Iterator<Item = &'a [Scalar]> + Clone,
    {
        rows.clone().map(move |row| {
            row.get(self.index)
                .filter(|_| row.len() == self.width)
                .ok_or_else(|| codec_error(self.name, "row has the wrong number of values"))
        })
    }

    fn encode<'a, I>(&self, data_type: &DataType, rows: &I) -> Result<ArrayRef>
    where
        I: ExactSizeIterator<Item = &'a [Scalar]> + Clone,
    {
        macro_rules! prim {
            ($t:ty, $variant:ident) => {
                Arc::new(self.primitive::<$t, _>(rows, |s| match s {
                    Scalar::$variant(v) => Some(*v),
                    _ => None,
                })?)
            };
        }
        let array: ArrayRef = match self.kind {
            Kind::Boolean => {
                let mut builder = BooleanBuilder::with_capacity(rows.len());
                for cell in self.cells(rows) {
                    match cell? {
                        Scalar::Boolean(v) => builder.append_value(*v),
                        Scalar::Null if self.nullable => builder.append_null(),
                        other => return Err(self.cell_error(other)),
                    }
                }
                Arc::new(builder.finish())
            }
            Kind::Int8 => prim!(Int8Type, Int8),
            Kind::Int16 => prim!(Int16Type, Int16),
            Kind::Int32 => prim!(Int32Type, Int32),
            Kind::Int64 => prim!(Int64Type, Int64),
            Kind::Float32 => prim!(Float32Type, Float32),
            Kind::Float64 => prim!(Float64Type, Float64),
            Kind::Date32 => prim!(Date32Type, Date32),
            Kind::Decimal128 { precision } => {
                let DataType::Decimal128(_, scale) = data_type else {
                    return Err(codec_error(self.name, WRONG_TYPE));
                };
                let array = self.primitive::<Decimal128Type, _>(rows, |s| match s {
                    Scalar::Decimal128(v) if decimal_fits(*v, precision) => Some(*v),
                    _ => None,
                })?;
                Arc::new(
                    array
                        .with_precision_and_scale(precision, *scale)
                        .map_err(|_| codec_error(self.name, UNSUPPORTED))?,
                )
            }
            Kind::Timestamp(unit) => {
                let DataType::Timestamp(_, tz) = data_type else {
                    return Err(codec_error(self.name, WRONG_TYPE));
                };
                let tz = tz.clone();
                match unit {
                    TimeUnit::Second => Arc::new(
                        self.timestamps::<TimestampSecondType, _>(rows)?
                            .with_timezone_opt(tz),
                    ),
                    TimeUnit::Millisecond => Arc::new(
                        self.timestamps::<TimestampMillisecondType, _>(rows)?
                            .with_timezone_opt(tz),
                    ),
                    TimeUnit::Microsecond => Arc::new(
                        self.timestamps::<TimestampMicrosecondType, _>(rows)?
                            .with_timezone_opt(tz),
                    ),
                    TimeUnit::Nanosecond => Arc::new(
                        self.timestamps::<TimestampNanosecondType, _>(rows)?
                            .with_timezone_opt(tz),
                    ),
                }
            }
            Kind::Utf8 => {
                let mut builder =
                    StringBuilder::with_capacity(rows.len(), self.offsets_total(rows)?);
                for cell in self.cells(rows) {
                    match cell? {
                        Scalar::Utf8(v) => builder.append_value(v),
                        Scalar::Null if self.nullable => builder.append_null(),
                        other => return Err(self.cell_error(other)),
                    }
                }
                Arc::new(builder.finish())
            }
            Kind::Binary => {
                let mut builder =
                    BinaryBuilder::with_capacity(rows.len(), self.offsets_total(rows)?);
                for cell in self.cells(rows) {
                    match cell? {
                        Scalar::Binary(v) => builder.append_value(v),
                        Scalar::Null if self.nullable => builder.append_null(),
                        other => return Err(self.cell_error(other)),
                    }
                }
                Arc::new(builder.finish())
            }
        };
        Ok(array)
    }

    /// The total string and binary bytes of this column, checked to fit `i32` offsets (a
    /// larger total would make the Arrow builder panic).
    fn offsets_total<'a, I>(&self, rows: &I) -> Result<usize>
    where
        I: Iterator<Item = &'a [Scalar]> + Clone,
    {
        rows.clone()
            .filter_map(|row| row.get(self.index))
            .try_fold(0_usize, |acc, s| match s {
                Scalar::Utf8(v) => acc.checked_add(v.len()),
                Scalar::Binary(v) => acc.checked_add(v.len()),
                _ => Some(acc),
            })
            .filter(|total| i32::try_from(*total).is_ok())
            .ok_or_else(|| codec_error(self.name, "string or binary data exceeds i32 offsets"))
    }

    fn timestamps<'a, T, I>(&self, rows: &I) -> Result<PrimitiveArray<T>>
    where
        T: ArrowPrimitiveType<Native = i64>,
        I: ExactSizeIterator<Item = &'a [Scalar]> + Clone,
    {
        self.primitive::<T, _>(rows, |s| match s {
            Scalar::Timestamp(v) => Some(*v),
            _ => None,
        })
    }

    fn primitive<'a, T, I>(
        &self,
        rows: &I,
        get: impl Fn(&Scalar) -> Option<T::Native>,
    ) -> Result<PrimitiveArray<T>>
    where
        T: ArrowPrimitiveType,
        I: ExactSizeIterator<Item = &'a [Scalar]> + Clone,
    {
        let mut builder = PrimitiveBuilder::<T>::with_capacity(rows.len());
        for cell in self.cells(rows) {
            let cell = cell?;
            if let Some(v) = get(cell) {
                builder.append_value(v);
            } else if self.nullable && cell.is_null() {
                builder.append_null();
            } else {
                return Err(self.cell_error(cell));
            }
        }
        Ok(builder.finish())
    }
}

/// A value column, downcast (and its decimals checked) once, then read a cell at a time.
enum Typed<'a> {
    Boolean(&'a BooleanArray),
    Int8(&'a PrimitiveArray<Int8Type>),
    Int16(&'a PrimitiveArray<Int16Type>),
    Int32(&'a PrimitiveArray<Int32Type>),
    Int64(&'a PrimitiveArray<Int64Type>),
    Float32(&'a PrimitiveArray<Float32Type>),
    Float64(&'a PrimitiveArray<Float64Type>),
    Decimal128(&'a PrimitiveArray<Decimal128Type>),
    Utf8(&'a StringArray),
    Binary(&'a BinaryArray),
    Date32(&'a PrimitiveArray<Date32Type>),
    TimestampSecond(&'a PrimitiveArray<TimestampSecondType>),
    TimestampMillisecond(&'a PrimitiveArray<TimestampMillisecondType>),
    TimestampMicrosecond(&'a PrimitiveArray<TimestampMicrosecondType>),
    TimestampNanosecond(&'a PrimitiveArray<TimestampNanosecondType>),
}

impl<'a> Typed<'a> {
    /// Downcasts `array` (already checked to be of `kind`'s data type), refusing decimals
    /// beyond the precision.
    fn new(kind: Kind, name: &str, array: &'a dyn Array) -> Result<Self> {
        fn prim<'a, T: ArrowPrimitiveType>(
            array: &'a dyn Array,
            name: &str,
        ) -> Result<&'a PrimitiveArray<T>> {
            array
                .as_primitive_opt::<T>()
                .ok_or_else(|| codec_error(name, WRONG_TYPE))
        }
        let wrong = || codec_error(name, WRONG_TYPE);
        Ok(match kind {
            Kind::Boolean => Typed::Boolean(array.as_boolean_opt().ok_or_else(wrong)?),
            Kind::Int8 => Typed::Int8(prim(array, name)?),
            Kind::Int16 => Typed::Int16(prim(array, name)?),
            Kind::Int32 => Typed::Int32(prim(array, name)?),
            Kind::Int64 => Typed::Int64(prim(array, name)?),
            Kind::Float32 => Typed::Float32(prim(array, name)?),
            Kind::Float64 => Typed::Float64(prim(array, name)?),
            Kind::Decimal128 { precision } => {
                let typed = prim::<Decimal128Type>(array, name)?;
                if typed.iter().flatten().any(|v| !decimal_fits(v, precision)) {
                    return Err(codec_error(name, DECIMAL_OVERFLOW));
                }
                Typed::Decimal128(typed)
            }
            Kind::Utf8 => Typed::Utf8(array.as_string_opt::<i32>().ok_or_else(wrong)?),
            Kind::Binary => Typed::Binary(array.as_binary_opt::<i32>().ok_or_else(wrong)?),
            Kind::Date32 => Typed::Date32(prim(array, name)?),
            Kind::Timestamp(TimeUnit::Second) => Typed::TimestampSecond(prim(array, name)?),
            Kind::Timestamp(TimeUnit::Millisecond) => {
                Typed::TimestampMillisecond(prim(array, name)?)
            }
            Kind::Timestamp(TimeUnit::Microsecond) => {
                Typed::TimestampMicrosecond(prim(array, name)?)
            }
            Kind::Timestamp(TimeUnit::Nanosecond) => Typed::TimestampNanosecond(prim(array, name)?),
        })
    }

    /// The cell at `row`, which the caller keeps below the column's length.
    fn cell(&self, row: usize) -> Scalar {
        self.cell_ref(row).to_scalar()
    }

    /// The cell at `row`, borrowed, which the caller keeps below the column's length.
    /// Inlined into the caller: returned through memory, the 32-byte cell was stored and
    /// reloaded per cell (a stalled reload was a third of the join's record encoding).
    #[inline(always)]
    fn cell_ref(&self, row: usize) -> ScalarRef<'a> {
        macro_rules! read {
            ($array:expr, $make:expr) => {
                if $array.is_null(row) {
                    ScalarRef::Null
                } else {
                    $make($array.value(row))
                }
            };
        }
        match self {
            Typed::Boolean(a) => read!(a, ScalarRef::Boolean),
            Typed::Int8(a) => read!(a, ScalarRef::Int8),
            Typed::Int16(a) => read!(a, ScalarRef::Int16),
            Typed::Int32(a) => read!(a, ScalarRef::Int32),
            Typed::Int64(a) => read!(a, ScalarRef::Int64),
            Typed::Float32(a) => read!(a, ScalarRef::Float32),
            Typed::Float64(a) => read!(a, ScalarRef::Float64),
            Typed::Decimal128(a) => read!(a, ScalarRef::Decimal128),
            Typed::Utf8(a) => read!(a, ScalarRef::Utf8),
            Typed::Binary(a) => read!(a, ScalarRef::Binary),
            Typed::Date32(a) => read!(a, ScalarRef::Date32),
            Typed::TimestampSecond(a) => read!(a, ScalarRef::Timestamp),
            Typed::TimestampMillisecond(a) => read!(a, ScalarRef::Timestamp),
            Typed::TimestampMicrosecond(a) => read!(a, ScalarRef::Timestamp),
            Typed::TimestampNanosecond(a) => read!(a, ScalarRef::Timestamp),
        }
    }
}
