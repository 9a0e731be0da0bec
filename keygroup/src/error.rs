//! The crate's one error type.

use crate::types::LogicalType;

/// `Result` with this crate's [`enum@Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in this crate.
///
/// Where Flink throws an exception with a message in the same situation, the variant's
/// `Display` text is exactly that message, and [`Error::flink_exception`] gives the
/// `"<exception class>: <message>"` form Flink's callers see.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parallelism or max parallelism outside `1..=32768`
    /// (`KeyGroupRangeAssignment.checkParallelismPreconditions`).
    #[error("Operator parallelism not within bounds: {parallelism}")]
    ParallelismOutOfBounds {
        /// The rejected value.
        parallelism: i32,
    },

    /// `max_parallelism < parallelism`
    /// (`KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex`).
    #[error("Maximum parallelism must not be smaller than parallelism.")]
    MaxParallelismSmallerThanParallelism {
        /// The max parallelism (number of key groups).
        max_parallelism: i32,
        /// The larger parallelism.
        parallelism: i32,
    },

    /// The `KeyGroupRange(start, end)` constructor's `0 <= start <= end` check failed
    /// (Flink throws `IllegalArgumentException` without a message).
    #[error("invalid key-group range {start}..={end}: Flink requires 0 <= start <= end")]
    InvalidKeyGroupRange {
        /// The requested first key group.
        start: i32,
        /// The requested last key group (inclusive).
        end: i32,
    },

    /// The `KeyGroupRange(start, end)` constructor's overflow check failed: the number of key
    /// groups `1 + end - start` does not fit a Java `int`.
    #[error("Potential overflow detected.")]
    KeyGroupRangeOverflow {
        /// The requested first key group.
        start: i32,
        /// The requested last key group (inclusive).
        end: i32,
    },

    /// A key-group id below zero.
    #[error("key group {key_group} is negative")]
    NegativeKeyGroup {
        /// The rejected value.
        key_group: i32,
    },

    /// A key-group id outside `0..max_parallelism`.
    #[error("key group {key_group} is outside 0..{max_parallelism}")]
    KeyGroupOutOfRange {
        /// The rejected key group.
        key_group: i32,
        /// The max parallelism (number of key groups) it was checked against.
        max_parallelism: i32,
    },

    /// An operator (subtask) index outside `0..parallelism`.
    #[error("operator index {operator_index} is outside 0..{parallelism}")]
    OperatorIndexOutOfRange {
        /// The rejected index.
        operator_index: i32,
        /// The parallelism it was checked against.
        parallelism: i32,
    },

    /// A Flink SQL type string this crate cannot parse or does not support as a key type.
    #[error("cannot parse type string {input:?} at position {position}: {reason}")]
    InvalidTypeString {
        /// The whole input.
        input: String,
        /// Byte position of the offending token in `input`.
        position: usize,
        /// What was wrong there.
        reason: &'static str,
    },

    /// A type parameter (precision, scale, length) outside the range Flink allows.
    #[error("{type_name} {parameter} {value} is outside {min}..={max}")]
    InvalidTypeParameter {
        /// The SQL type name, e.g. `"DECIMAL"`.
        type_name: &'static str,
        /// `"precision"`, `"scale"` or `"length"`.
        parameter: &'static str,
        /// The rejected value.
        value: i64,
        /// Smallest allowed value.
        min: i64,
        /// Largest allowed value.
        max: i64,
    },

    /// A row with the wrong number of fields: values for the field types, or field types for
    /// a writer's arity.
    #[error("expected {expected} fields, got {actual}")]
    ArityMismatch {
        /// The number of fields required.
        expected: usize,
        /// The number given.
        actual: usize,
    },

    /// A value whose kind does not fit its field's type.
    #[error("field {position}: a {actual} value cannot be written as {expected}")]
    TypeMismatch {
        /// Field index.
        position: usize,
        /// The field's type.
        expected: LogicalType,
        /// The value's kind, e.g. `"BIGINT"`.
        actual: &'static str,
    },

    /// A DECIMAL value whose scale differs from its field type's scale.
    #[error("field {position}: DECIMAL value has scale {actual}, the type has scale {expected}")]
    DecimalScaleMismatch {
        /// Field index.
        position: usize,
        /// The type's scale.
        expected: u8,
        /// The value's scale.
        actual: u8,
    },

    /// A DECIMAL unscaled value with more digits than the precision allows
    /// (`|unscaled| >= 10^precision`; `DecimalData.fromBigDecimal` would return null).
    #[error("DECIMAL unscaled value {unscaled} does not fit precision {precision}")]
    DecimalOutOfRange {
        /// The unscaled value.
        unscaled: i128,
        /// The precision it was checked against.
        precision: u8,
    },

    /// A timestamp's nano-of-millisecond outside `0..=999_999`
    /// (`TimestampData.fromEpochMillis` precondition).
    #[error("nano of millisecond {nano_of_milli} is outside 0..=999999")]
    InvalidNanoOfMilli {
        /// The rejected value.
        nano_of_milli: i64,
    },

    /// A length that does not fit the Java `int` Flink stores it in.
    #[error("length {length} exceeds the limit {limit}")]
    LengthOverflow {
        /// The length that was needed.
        length: u64,
        /// The largest length allowed.
        limit: u64,
    },

    /// Row bytes shorter than the fixed-length part their arity needs.
    #[error("row of {len} bytes is shorter than its fixed-length part of {fixed_part_size} bytes")]
    RowTooShort {
        /// The row's length.
        len: usize,
        /// The fixed-length part size for the row's arity.
        fixed_part_size: usize,
    },

    /// Row bytes whose length is not a multiple of 8 (Flink's writer always pads to words).
    #[error("row length {len} is not a multiple of 8")]
    UnalignedRow {
        /// The row's length.
        len: usize,
    },

    /// A header byte that is no `RowKind` (`RowKind.fromByteValue` throws).
    #[error("header byte {byte} is not a row kind (0..=3)")]
    InvalidRowKind {
        /// The header byte.
        byte: u8,
    },

    /// A field index at or past the row's arity.
    #[error("field {position} does not exist in a row of arity {arity}")]
    FieldOutOfBounds {
        /// The requested field.
        position: usize,
        /// The row's arity.
        arity: usize,
    },

    /// A variable-length field whose bytes do not lie inside the row's variable part.
    #[error(
        "field {position}: {length} bytes at offset {offset} lie outside the variable part \
         {var_part_start}..{row_len}"
    )]
    VariablePartOutOfBounds {
        /// Field index.
        position: usize,
        /// Offset read from the slot, from the row start.
        offset: u64,
        /// Length read from the slot.
        length: u64,
        /// Where the variable part starts (the fixed-length part size).
        var_part_start: usize,
        /// The row's length.
        row_len: usize,
    },

    /// An inline string/binary slot whose length byte says more than 7 bytes.
    #[error("field {position}: inline length {length} is larger than 7")]
    InvalidInlineLength {
        /// Field index.
        position: usize,
        /// The length from the slot's last byte.
        length: u8,
    },

    /// A non-compact DECIMAL whose byte length is outside `1..=16`.
    #[error("field {position}: DECIMAL byte length {length} is outside 1..=16")]
    InvalidDecimalLength {
        /// Field index.
        position: usize,
        /// The length from the slot.
        length: u64,
    },

    /// A CHAR/VARCHAR/STRING field whose bytes are not UTF-8.
    #[error("field {position}: string bytes are not valid UTF-8")]
    InvalidUtf8 {
        /// Field index.
        position: usize,
    },

    /// A composite key was built before `set_key_and_key_group`.
    #[error("no key was set on the composite key builder")]
    KeyNotSet,

    /// A composite user key was built before a namespace was set.
    #[error("no namespace was set on the composite key builder")]
    NamespaceNotSet,
}

impl Error {
    /// The exception Flink 2.3.0 throws in the same situation, as `"<class>: <message>"`
    /// (`"null"` when Flink's exception has no message), or `None` when this error has no
    /// Flink counterpart (Flink would not check, or would fail differently).
    ///
    /// A host that bridges to the JVM can rethrow exactly what Flink would have thrown.
    ///
    /// ```
    /// use keygroup::Parallelism;
    ///
    /// let err = Parallelism::new(0).unwrap_err();
    /// assert_eq!(
    ///     err.flink_exception().as_deref(),
    ///     Some("java.lang.IllegalArgumentException: Operator parallelism not within bounds: 0"),
    /// );
    /// ```
    pub fn flink_exception(&self) -> Option<String> {
        const IAE: &str = "java.lang.IllegalArgumentException";
        match self {
            Self::ParallelismOutOfBounds { .. }
            | Self::MaxParallelismSmallerThanParallelism { .. }
            | Self::KeyGroupRangeOverflow { .. } => Some(format!("{IAE}: {self}")),
            Self::InvalidKeyGroupRange { .. } => Some(format!("{IAE}: null")),
            _ => None,
        }
    }
}
