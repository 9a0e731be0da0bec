//! Typed field values and the row kind.

use crate::error::{Error, Result};
use crate::types::LogicalType;

/// Flink's `RowKind`, stored in byte 0 of every `BinaryRowData` (`RowKind.toByteValue`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RowKind {
    /// `+I`, byte 0. Flink SQL's key selector always writes this kind.
    #[default]
    Insert,
    /// `-U`, byte 1.
    UpdateBefore,
    /// `+U`, byte 2.
    UpdateAfter,
    /// `-D`, byte 3.
    Delete,
}

impl RowKind {
    /// `RowKind.toByteValue()`.
    pub fn to_byte(self) -> u8 {
        match self {
            Self::Insert => 0,
            Self::UpdateBefore => 1,
            Self::UpdateAfter => 2,
            Self::Delete => 3,
        }
    }

    /// `RowKind.fromByteValue(byte)`.
    ///
    /// # Errors
    /// [`Error::InvalidRowKind`] for a byte outside `0..=3`.
    pub fn from_byte(byte: u8) -> Result<Self> {
        match byte {
            0 => Ok(Self::Insert),
            1 => Ok(Self::UpdateBefore),
            2 => Ok(Self::UpdateAfter),
            3 => Ok(Self::Delete),
            _ => Err(Error::InvalidRowKind { byte }),
        }
    }

    /// The Java enum constant name: `INSERT`, `UPDATE_BEFORE`, `UPDATE_AFTER`, `DELETE`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Insert => "INSERT",
            Self::UpdateBefore => "UPDATE_BEFORE",
            Self::UpdateAfter => "UPDATE_AFTER",
            Self::Delete => "DELETE",
        }
    }
}

/// A TIMESTAMP / `TIMESTAMP_LTZ` value: Flink's `TimestampData`.
///
/// `millis` are epoch milliseconds, floor-based before 1970; `nano_of_milli` must be in
/// `0..=999_999` (checked when written).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Timestamp {
    /// Milliseconds since 1970-01-01T00:00:00.
    pub millis: i64,
    /// Nanoseconds within the millisecond, `0..=999_999`.
    pub nano_of_milli: u32,
}

impl Timestamp {
    /// `TimestampData.fromEpochMillis(millis, nanoOfMillisecond)`.
    ///
    /// # Errors
    /// [`Error::InvalidNanoOfMilli`] unless `nano_of_milli <= 999_999`.
    pub fn new(millis: i64, nano_of_milli: u32) -> Result<Self> {
        check_nano_of_milli(nano_of_milli.into())?;
        Ok(Self {
            millis,
            nano_of_milli,
        })
    }
}

/// `TimestampData`'s precondition on the nanos: `0..=999_999`.
pub(crate) fn check_nano_of_milli(nano_of_milli: i64) -> Result<()> {
    if (0..=999_999).contains(&nano_of_milli) {
        Ok(())
    } else {
        Err(Error::InvalidNanoOfMilli { nano_of_milli })
    }
}

/// One field value of a key row, typed as Flink SQL's internal data structures hold it.
///
/// Equality compares FLOAT and DOUBLE by raw bits, as Flink compares keys: `-0.0 != 0.0` and a
/// NaN equals the NaN with the same payload.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Value {
    /// SQL `NULL`, valid for any type.
    Null,
    /// BOOLEAN.
    Boolean(bool),
    /// TINYINT.
    TinyInt(i8),
    /// SMALLINT.
    SmallInt(i16),
    /// INT.
    Int(i32),
    /// BIGINT.
    BigInt(i64),
    /// FLOAT (raw bits are kept, NaN payloads included).
    Float(f32),
    /// DOUBLE (raw bits are kept, NaN payloads included).
    Double(f64),
    /// CHAR / VARCHAR / STRING.
    String(String),
    /// BINARY / VARBINARY / BYTES.
    Binary(Vec<u8>),
    /// DECIMAL: `unscaled * 10^-scale`.
    Decimal {
        /// The unscaled value; `|unscaled| < 10^precision` of the field type.
        unscaled: i128,
        /// Digits after the point; must equal the field type's scale.
        scale: u8,
    },
    /// DATE: days since 1970-01-01.
    Date(i32),
    /// TIME: milliseconds of the day.
    Time(i32),
    /// TIMESTAMP.
    Timestamp(Timestamp),
    /// `TIMESTAMP_LTZ`.
    TimestampLtz(Timestamp),
}

impl Value {
    /// The SQL name of the value's kind, e.g. `"BIGINT"` (`"NULL"` for [`Value::Null`];
    /// `"STRING"` and `"BYTES"` for the text and binary kinds).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Self::Null => "NULL",
            Self::Boolean(_) => "BOOLEAN",
            Self::TinyInt(_) => "TINYINT",
            Self::SmallInt(_) => "SMALLINT",
            Self::Int(_) => "INT",
            Self::BigInt(_) => "BIGINT",
            Self::Float(_) => "FLOAT",
            Self::Double(_) => "DOUBLE",
            Self::String(_) => "STRING",
            Self::Binary(_) => "BYTES",
            Self::Decimal { .. } => "DECIMAL",
            Self::Date(_) => "DATE",
            Self::Time(_) => "TIME",
            Self::Timestamp(_) => "TIMESTAMP",
            Self::TimestampLtz(_) => "TIMESTAMP_LTZ",
        }
    }

    /// Whether this value may be written to a field of type `ty` (any value kind fits its own
    /// types; `Null` fits every type).
    pub fn fits(&self, ty: LogicalType) -> bool {
        matches!(
            (self, ty),
            (Self::Null, _)
                | (Self::Boolean(_), LogicalType::Boolean)
                | (Self::TinyInt(_), LogicalType::TinyInt)
                | (Self::SmallInt(_), LogicalType::SmallInt)
                | (Self::Int(_), LogicalType::Int)
                | (Self::BigInt(_), LogicalType::BigInt)
                | (Self::Float(_), LogicalType::Float)
                | (Self::Double(_), LogicalType::Double)
                | (
                    Self::String(_),
                    LogicalType::Char { .. } | LogicalType::VarChar { .. }
                )
                | (
                    Self::Binary(_),
                    LogicalType::Binary { .. } | LogicalType::VarBinary { .. }
                )
                | (Self::Decimal { .. }, LogicalType::Decimal { .. })
                | (Self::Date(_), LogicalType::Date)
                | (Self::Time(_), LogicalType::Time { .. })
                | (Self::Timestamp(_), LogicalType::Timestamp { .. })
                | (Self::TimestampLtz(_), LogicalType::TimestampLtz { .. })
        )
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Null, Self::Null) => true,
            (Self::Boolean(a), Self::Boolean(b)) => a == b,
            (Self::TinyInt(a), Self::TinyInt(b)) => a == b,
            (Self::SmallInt(a), Self::SmallInt(b)) => a == b,
            (Self::Int(a), Self::Int(b))
            | (Self::Date(a), Self::Date(b))
            | (Self::Time(a), Self::Time(b)) => a == b,
            (Self::BigInt(a), Self::BigInt(b)) => a == b,
            (Self::Float(a), Self::Float(b)) => a.to_bits() == b.to_bits(),
            (Self::Double(a), Self::Double(b)) => a.to_bits() == b.to_bits(),
            (Self::String(a), Self::String(b)) => a == b,
            (Self::Binary(a), Self::Binary(b)) => a == b,
            (
                Self::Decimal {
                    unscaled: a,
                    scale: sa,
                },
                Self::Decimal {
                    unscaled: b,
                    scale: sb,
                },
            ) => a == b && sa == sb,
            (Self::Timestamp(a), Self::Timestamp(b))
            | (Self::TimestampLtz(a), Self::TimestampLtz(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_kind_bytes() {
        for kind in [
            RowKind::Insert,
            RowKind::UpdateBefore,
            RowKind::UpdateAfter,
            RowKind::Delete,
        ] {
            assert_eq!(RowKind::from_byte(kind.to_byte()).unwrap(), kind);
        }
        assert!(matches!(
            RowKind::from_byte(4),
            Err(Error::InvalidRowKind { byte: 4 })
        ));
        assert_eq!(RowKind::UpdateBefore.name(), "UPDATE_BEFORE");
    }

    #[test]
    fn timestamp_nanos_checked() {
        assert!(Timestamp::new(0, 999_999).is_ok());
        assert!(matches!(
            Timestamp::new(0, 1_000_000),
            Err(Error::InvalidNanoOfMilli {
                nano_of_milli: 1_000_000
            })
        ));
    }

    #[test]
    fn floats_compare_by_bits() {
        assert_ne!(Value::Float(0.0), Value::Float(-0.0));
        assert_eq!(Value::Double(f64::NAN), Value::Double(f64::NAN));
        assert_ne!(
            Value::Float(f32::from_bits(0x7fc0_0001)),
            Value::Float(f32::from_bits(0x7fc0_0000))
        );
        assert_ne!(Value::Int(1), Value::Date(1));
        assert_ne!(
            Value::Timestamp(Timestamp::default()),
            Value::TimestampLtz(Timestamp::default())
        );
    }

    #[test]
    fn fits() {
        assert!(Value::Null.fits(LogicalType::Int));
        assert!(Value::String(String::new()).fits(LogicalType::Char { length: 1 }));
        assert!(!Value::Int(1).fits(LogicalType::BigInt));
    }
}
