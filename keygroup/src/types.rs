//! The SQL key types (`LogicalType`) and a parser for Flink's type strings.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// Largest CHAR/VARCHAR/BINARY/VARBINARY length (`VarCharType.MAX_LENGTH`, `Integer.MAX_VALUE`).
pub const MAX_LENGTH: u32 = i32::MAX.cast_unsigned();

/// The Flink SQL types a `BinaryRowData` key field can have (Flink's `LogicalType`, the atomic
/// types that are valid keys).
///
/// Nullability is not part of the type: every `BinaryRowData` field has a null bit, so the
/// layout is the same for `INT` and `INT NOT NULL`.
///
/// Parameters are checked where they are used (writer, reader) and by the parser; the ranges
/// are Flink's: DECIMAL precision `1..=38` and scale `0..=precision`, TIME / TIMESTAMP /
/// `TIMESTAMP_LTZ` precision `0..=9`, lengths `1..=2147483647`.
///
/// `Display` prints, and [`FromStr`] parses, Flink's type strings:
///
/// ```
/// use keygroup::LogicalType;
///
/// let t: LogicalType = "DECIMAL(38, 10)".parse()?;
/// assert_eq!(t, LogicalType::Decimal { precision: 38, scale: 10 });
/// assert_eq!("timestamp_ltz(3)".parse::<LogicalType>()?.to_string(), "TIMESTAMP_LTZ(3)");
/// assert_eq!("TIMESTAMP(6) WITH LOCAL TIME ZONE".parse::<LogicalType>()?.to_string(), "TIMESTAMP_LTZ(6)");
/// assert_eq!("STRING".parse::<LogicalType>()?, LogicalType::VarChar { length: keygroup::MAX_LENGTH });
/// # Ok::<(), keygroup::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LogicalType {
    /// `BOOLEAN`: 1 byte, 0 or 1.
    Boolean,
    /// `TINYINT`: `i8`.
    TinyInt,
    /// `SMALLINT`: `i16`.
    SmallInt,
    /// `INT` / `INTEGER`: `i32`.
    Int,
    /// `BIGINT`: `i64`.
    BigInt,
    /// `FLOAT`: `f32`, keyed by its raw bits.
    Float,
    /// `DOUBLE`: `f64`, keyed by its raw bits.
    Double,
    /// `CHAR(length)`: UTF-8 text (the writer does not pad).
    Char {
        /// Declared length in code points.
        length: u32,
    },
    /// `VARCHAR(length)`; `STRING` is `VARCHAR(2147483647)`.
    VarChar {
        /// Declared maximum length in code points.
        length: u32,
    },
    /// `BINARY(length)`.
    Binary {
        /// Declared length in bytes.
        length: u32,
    },
    /// `VARBINARY(length)`; `BYTES` is `VARBINARY(2147483647)`.
    VarBinary {
        /// Declared maximum length in bytes.
        length: u32,
    },
    /// `DECIMAL(precision, scale)`; compact (an `i64` in the slot) when `precision <= 18`.
    Decimal {
        /// Total number of digits, `1..=38`.
        precision: u8,
        /// Digits after the point, `0..=precision`.
        scale: u8,
    },
    /// `DATE`: days since 1970-01-01 as `i32`.
    Date,
    /// `TIME(precision)`: milliseconds of the day as `i32`.
    Time {
        /// Fractional-second digits, `0..=9` (does not change the layout).
        precision: u8,
    },
    /// `TIMESTAMP(precision)`; compact (millis in the slot) when `precision <= 3`.
    Timestamp {
        /// Fractional-second digits, `0..=9`.
        precision: u8,
    },
    /// `TIMESTAMP_LTZ(precision)` (`TIMESTAMP WITH LOCAL TIME ZONE`); same layout as
    /// `TIMESTAMP`.
    TimestampLtz {
        /// Fractional-second digits, `0..=9`.
        precision: u8,
    },
}

/// Flink's `DecimalType.MAX_PRECISION`.
pub(crate) const MAX_DECIMAL_PRECISION: u8 = 38;
/// Flink's `TimestampType.MAX_PRECISION` (also TIME and `TIMESTAMP_LTZ`).
pub(crate) const MAX_TIME_PRECISION: u8 = 9;

fn parameter_error(
    type_name: &'static str,
    parameter: &'static str,
    value: i64,
    min: i64,
    max: i64,
) -> Error {
    Error::InvalidTypeParameter {
        type_name,
        parameter,
        value,
        min,
        max,
    }
}

/// Checks a DECIMAL type's precision and scale.
pub(crate) fn check_decimal(precision: u8, scale: u8) -> Result<()> {
    if !(1..=MAX_DECIMAL_PRECISION).contains(&precision) {
        return Err(parameter_error(
            "DECIMAL",
            "precision",
            precision.into(),
            1,
            MAX_DECIMAL_PRECISION.into(),
        ));
    }
    if scale > precision {
        return Err(parameter_error(
            "DECIMAL",
            "scale",
            scale.into(),
            0,
            precision.into(),
        ));
    }
    Ok(())
}

/// Checks a TIME / TIMESTAMP / `TIMESTAMP_LTZ` precision.
pub(crate) fn check_time_precision(type_name: &'static str, precision: u8) -> Result<()> {
    if precision > MAX_TIME_PRECISION {
        return Err(parameter_error(
            type_name,
            "precision",
            precision.into(),
            0,
            MAX_TIME_PRECISION.into(),
        ));
    }
    Ok(())
}

impl LogicalType {
    /// Checks the type's parameters against Flink's ranges (see the type's doc).
    ///
    /// # Errors
    /// [`Error::InvalidTypeParameter`] for the first parameter out of range.
    pub fn validate(self) -> Result<Self> {
        match self {
            Self::Decimal { precision, scale } => check_decimal(precision, scale)?,
            Self::Time { precision } => check_time_precision("TIME", precision)?,
            Self::Timestamp { precision } => check_time_precision("TIMESTAMP", precision)?,
            Self::TimestampLtz { precision } => check_time_precision("TIMESTAMP_LTZ", precision)?,
            Self::Char { length }
            | Self::VarChar { length }
            | Self::Binary { length }
            | Self::VarBinary { length } => {
                if !(1..=MAX_LENGTH).contains(&length) {
                    return Err(parameter_error(
                        self.name(),
                        "length",
                        length.into(),
                        1,
                        MAX_LENGTH.into(),
                    ));
                }
            }
            Self::Boolean
            | Self::TinyInt
            | Self::SmallInt
            | Self::Int
            | Self::BigInt
            | Self::Float
            | Self::Double
            | Self::Date => {}
        }
        Ok(self)
    }

    /// The SQL type name without parameters, e.g. `"DECIMAL"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Boolean => "BOOLEAN",
            Self::TinyInt => "TINYINT",
            Self::SmallInt => "SMALLINT",
            Self::Int => "INT",
            Self::BigInt => "BIGINT",
            Self::Float => "FLOAT",
            Self::Double => "DOUBLE",
            Self::Char { .. } => "CHAR",
            Self::VarChar { .. } => "VARCHAR",
            Self::Binary { .. } => "BINARY",
            Self::VarBinary { .. } => "VARBINARY",
            Self::Decimal { .. } => "DECIMAL",
            Self::Date => "DATE",
            Self::Time { .. } => "TIME",
            Self::Timestamp { .. } => "TIMESTAMP",
            Self::TimestampLtz { .. } => "TIMESTAMP_LTZ",
        }
    }
}

/// Flink's summary form: `INT`, `VARCHAR(10)`, `STRING`, `BYTES`, `DECIMAL(38, 10)`,
/// `TIMESTAMP(9)`, `TIMESTAMP_LTZ(3)`.
impl fmt::Display for LogicalType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name();
        match *self {
            Self::VarChar { length: MAX_LENGTH } => f.write_str("STRING"),
            Self::VarBinary { length: MAX_LENGTH } => f.write_str("BYTES"),
            Self::Char { length }
            | Self::VarChar { length }
            | Self::Binary { length }
            | Self::VarBinary { length } => write!(f, "{name}({length})"),
            Self::Decimal { precision, scale } => write!(f, "{name}({precision}, {scale})"),
            Self::Time { precision }
            | Self::Timestamp { precision }
            | Self::TimestampLtz { precision } => write!(f, "{name}({precision})"),
            _ => f.write_str(name),
        }
    }
}

/// Parses a type string as Flink's `LogicalTypeParser` does, for the key types above:
/// keywords in any case; `INTEGER`, `NUMERIC`/`DEC`, `DOUBLE PRECISION`, `STRING`, `BYTES`
/// synonyms; Flink's defaults for omitted parameters (`CHAR` = `CHAR(1)`, `DECIMAL` =
/// `DECIMAL(10, 0)`, `TIME` = `TIME(0)`, `TIMESTAMP` = `TIMESTAMP(6)`, ...); the
/// `WITHOUT TIME ZONE` / `WITH LOCAL TIME ZONE` suffixes; and a trailing `NULL` or `NOT NULL`,
/// which is accepted and dropped (see [`LogicalType`] on nullability).
impl FromStr for LogicalType {
    type Err = Error;

    fn from_str(input: &str) -> Result<Self> {
        Parser::new(input).parse()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Word(&'a str),
    Int(&'a str),
    Open,
    Close,
    Comma,
}

/// A small recursive-descent parser over Flink's token grammar.
struct Parser<'a> {
    input: &'a str,
    /// Tokens with their byte positions.
    tokens: Vec<(usize, Token<'a>)>,
    next: usize,
    /// A tokenizer failure, reported when parsing starts.
    lex_error: Option<(usize, &'static str)>,
}

impl<'a> Parser<'a> {
    fn new(input: &'a str) -> Self {
        let mut tokens = Vec::new();
        let mut lex_error = None;
        let mut chars = input.char_indices().peekable();
        while let Some(&(pos, c)) = chars.peek() {
            let single = match c {
                '(' => Some(Token::Open),
                ')' => Some(Token::Close),
                ',' => Some(Token::Comma),
                _ => None,
            };
            if let Some(token) = single {
                tokens.push((pos, token));
                chars.next();
            } else if c.is_whitespace() {
                chars.next();
            } else if c.is_ascii_digit() || c.is_ascii_alphabetic() || c == '_' {
                let digits = c.is_ascii_digit();
                let mut end = pos;
                while let Some(&(p, d)) = chars.peek() {
                    let part = if digits {
                        d.is_ascii_digit()
                    } else {
                        d.is_ascii_alphanumeric() || d == '_'
                    };
                    if !part {
                        break;
                    }
                    end = p + d.len_utf8();
                    chars.next();
                }
                let text = input.get(pos..end).unwrap_or_default();
                tokens.push((
                    pos,
                    if digits {
                        Token::Int(text)
                    } else {
                        Token::Word(text)
                    },
                ));
            } else {
                lex_error = Some((pos, "unexpected character"));
                break;
            }
        }
        Self {
            input,
            tokens,
            next: 0,
            lex_error,
        }
    }

    fn error(&self, reason: &'static str) -> Error {
        let position = self
            .tokens
            .get(self.next.saturating_sub(1))
            .map_or(0, |&(pos, _)| pos);
        Error::InvalidTypeString {
            input: self.input.to_owned(),
            position,
            reason,
        }
    }

    fn peek(&self) -> Option<Token<'a>> {
        self.tokens.get(self.next).map(|&(_, t)| t)
    }

    fn bump(&mut self) -> Option<Token<'a>> {
        let token = self.peek();
        if token.is_some() {
            self.next += 1;
        }
        token
    }

    fn peek_keyword(&self, keyword: &str) -> bool {
        matches!(self.peek(), Some(Token::Word(w)) if w.eq_ignore_ascii_case(keyword))
    }

    fn expect_keyword(&mut self, keyword: &str) -> Result<()> {
        if self.peek_keyword(keyword) {
            self.next += 1;
            Ok(())
        } else {
            self.next += 1;
            Err(self.error("unexpected token"))
        }
    }

    fn expect(&mut self, token: Token<'_>, reason: &'static str) -> Result<()> {
        if self.bump() == Some(token) {
            Ok(())
        } else {
            Err(self.error(reason))
        }
    }

    fn int(&mut self) -> Result<u32> {
        match self.bump() {
            Some(Token::Int(text)) => text
                .parse::<i32>()
                .map(i32::cast_unsigned)
                .map_err(|_| self.error("invalid integer value")),
            _ => Err(self.error("integer expected")),
        }
    }

    /// `( int )` if present.
    fn optional_int_param(&mut self) -> Result<Option<u32>> {
        if self.peek() != Some(Token::Open) {
            return Ok(None);
        }
        self.next += 1;
        let value = self.int()?;
        self.expect(Token::Close, "')' expected")?;
        Ok(Some(value))
    }

    fn precision(&mut self, type_name: &'static str, default: u8) -> Result<u8> {
        match self.optional_int_param()? {
            None => Ok(default),
            Some(value) => {
                let precision = u8::try_from(value).unwrap_or(u8::MAX);
                check_time_precision(type_name, precision)
                    .map_err(|_| parameter_error(type_name, "precision", value.into(), 0, 9))?;
                Ok(precision)
            }
        }
    }

    fn length(&mut self, type_name: &'static str) -> Result<u32> {
        let length = self.optional_int_param()?.unwrap_or(1);
        if length == 0 {
            return Err(parameter_error(
                type_name,
                "length",
                0,
                1,
                MAX_LENGTH.into(),
            ));
        }
        Ok(length)
    }

    fn decimal(&mut self) -> Result<LogicalType> {
        let (mut precision, mut scale) = (10, 0);
        if self.peek() == Some(Token::Open) {
            self.next += 1;
            precision = self.int()?;
            if self.peek() == Some(Token::Comma) {
                self.next += 1;
                scale = self.int()?;
            }
            self.expect(Token::Close, "')' expected")?;
        }
        let precision_u8 = u8::try_from(precision).unwrap_or(u8::MAX);
        let scale_u8 = u8::try_from(scale).unwrap_or(u8::MAX);
        check_decimal(precision_u8, scale_u8).map_err(|err| match err {
            Error::InvalidTypeParameter {
                parameter: "precision",
                ..
            } => parameter_error("DECIMAL", "precision", precision.into(), 1, 38),
            _ => parameter_error("DECIMAL", "scale", scale.into(), 0, precision.into()),
        })?;
        Ok(LogicalType::Decimal {
            precision: precision_u8,
            scale: scale_u8,
        })
    }

    fn timestamp(&mut self) -> Result<LogicalType> {
        let precision = self.precision("TIMESTAMP", 6)?;
        if self.peek_keyword("WITHOUT") {
            self.next += 1;
            self.time_zone_suffix()?;
        } else if self.peek_keyword("WITH") {
            self.next += 1;
            if !self.peek_keyword("LOCAL") {
                self.next += 1;
                return Err(self.error("TIMESTAMP WITH TIME ZONE is not a supported key type"));
            }
            self.next += 1;
            self.time_zone_suffix()?;
            return Ok(LogicalType::TimestampLtz { precision });
        }
        Ok(LogicalType::Timestamp { precision })
    }

    /// `TIME ZONE`
    fn time_zone_suffix(&mut self) -> Result<()> {
        self.expect_keyword("TIME")?;
        self.expect_keyword("ZONE")
    }

    fn parse(mut self) -> Result<LogicalType> {
        if let Some((position, reason)) = self.lex_error {
            return Err(Error::InvalidTypeString {
                input: self.input.to_owned(),
                position,
                reason,
            });
        }
        let Some(Token::Word(word)) = self.bump() else {
            return Err(self.error("type name expected"));
        };
        let ty = match word.to_ascii_uppercase().as_str() {
            "BOOLEAN" => LogicalType::Boolean,
            "TINYINT" => LogicalType::TinyInt,
            "SMALLINT" => LogicalType::SmallInt,
            "INT" | "INTEGER" => LogicalType::Int,
            "BIGINT" => LogicalType::BigInt,
            "FLOAT" => LogicalType::Float,
            "DOUBLE" => {
                if self.peek_keyword("PRECISION") {
                    self.next += 1;
                }
                LogicalType::Double
            }
            "CHAR" => LogicalType::Char {
                length: self.length("CHAR")?,
            },
            "VARCHAR" => LogicalType::VarChar {
                length: self.length("VARCHAR")?,
            },
            "STRING" => LogicalType::VarChar { length: MAX_LENGTH },
            "BINARY" => LogicalType::Binary {
                length: self.length("BINARY")?,
            },
            "VARBINARY" => LogicalType::VarBinary {
                length: self.length("VARBINARY")?,
            },
            "BYTES" => LogicalType::VarBinary { length: MAX_LENGTH },
            "DECIMAL" | "NUMERIC" | "DEC" => self.decimal()?,
            "DATE" => LogicalType::Date,
            "TIME" => {
                let precision = self.precision("TIME", 0)?;
                if self.peek_keyword("WITHOUT") {
                    self.next += 1;
                    self.time_zone_suffix()?;
                }
                LogicalType::Time { precision }
            }
            "TIMESTAMP" => self.timestamp()?,
            "TIMESTAMP_LTZ" => LogicalType::TimestampLtz {
                precision: self.precision("TIMESTAMP_LTZ", 6)?,
            },
            _ => return Err(self.error("unsupported key type")),
        };
        // Nullability suffix: `NOT NULL` or `NULL`.
        if self.peek_keyword("NOT") {
            self.next += 1;
            self.expect_keyword("NULL")?;
        } else if self.peek_keyword("NULL") {
            self.next += 1;
        }
        if self.bump().is_some() {
            return Err(self.error("unexpected token"));
        }
        Ok(ty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> LogicalType {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn vector_spellings_round_trip() {
        for s in [
            "BOOLEAN",
            "TINYINT",
            "SMALLINT",
            "INT",
            "BIGINT",
            "FLOAT",
            "DOUBLE",
            "CHAR(5)",
            "VARCHAR(10)",
            "STRING",
            "BINARY(4)",
            "VARBINARY(20)",
            "BYTES",
            "DECIMAL(10, 2)",
            "DECIMAL(38, 10)",
            "DECIMAL(19, 0)",
            "DATE",
            "TIME(0)",
            "TIMESTAMP(3)",
            "TIMESTAMP(9)",
            "TIMESTAMP_LTZ(6)",
        ] {
            assert_eq!(parse(s).to_string(), s);
        }
    }

    #[test]
    fn synonyms_and_defaults() {
        assert_eq!(parse("integer"), LogicalType::Int);
        assert_eq!(parse("DOUBLE PRECISION"), LogicalType::Double);
        assert_eq!(
            parse("NUMERIC(5,1)"),
            LogicalType::Decimal {
                precision: 5,
                scale: 1
            }
        );
        assert_eq!(
            parse("DEC"),
            LogicalType::Decimal {
                precision: 10,
                scale: 0
            }
        );
        assert_eq!(
            parse("DECIMAL(7)"),
            LogicalType::Decimal {
                precision: 7,
                scale: 0
            }
        );
        assert_eq!(parse("CHAR"), LogicalType::Char { length: 1 });
        assert_eq!(parse("VARCHAR"), LogicalType::VarChar { length: 1 });
        assert_eq!(parse("VARCHAR(2147483647)").to_string(), "STRING");
        assert_eq!(parse("VARBINARY(2147483647)").to_string(), "BYTES");
        assert_eq!(parse("TIME"), LogicalType::Time { precision: 0 });
        assert_eq!(
            parse("TIME(3) WITHOUT TIME ZONE"),
            LogicalType::Time { precision: 3 }
        );
        assert_eq!(parse("TIMESTAMP"), LogicalType::Timestamp { precision: 6 });
        assert_eq!(
            parse("TIMESTAMP WITHOUT TIME ZONE"),
            LogicalType::Timestamp { precision: 6 }
        );
        assert_eq!(
            parse("TIMESTAMP(3) WITH LOCAL TIME ZONE"),
            LogicalType::TimestampLtz { precision: 3 }
        );
        assert_eq!(
            parse("TIMESTAMP_LTZ"),
            LogicalType::TimestampLtz { precision: 6 }
        );
        assert_eq!(parse("  BIGINT NOT NULL "), LogicalType::BigInt);
        assert_eq!(parse("BIGINT NULL"), LogicalType::BigInt);
    }

    #[test]
    fn rejects_bad_strings() {
        for s in [
            "",
            "ARRAY<INT>",
            "ROW(a INT)",
            "INT INT",
            "DECIMAL(10, 2",
            "VARCHAR(x)",
            "TIMESTAMP(3) WITH TIME ZONE",
            "BIGINT NOT",
            "MAP<INT, INT>",
            "INT;",
            "VARCHAR(99999999999)",
        ] {
            let err = s.parse::<LogicalType>().unwrap_err();
            assert!(matches!(err, Error::InvalidTypeString { .. }), "{s}: {err}");
        }
    }

    #[test]
    fn rejects_bad_parameters() {
        for s in [
            "DECIMAL(39, 0)",
            "DECIMAL(0, 0)",
            "DECIMAL(5, 6)",
            "TIMESTAMP(10)",
            "TIME(12)",
            "TIMESTAMP_LTZ(300)",
            "CHAR(0)",
            "VARBINARY(0)",
        ] {
            let err = s.parse::<LogicalType>().unwrap_err();
            assert!(
                matches!(err, Error::InvalidTypeParameter { .. }),
                "{s}: {err}"
            );
        }
    }

    #[test]
    fn validate_checks_parameters() {
        assert!(
            LogicalType::Decimal {
                precision: 40,
                scale: 0
            }
            .validate()
            .is_err()
        );
        assert!(LogicalType::Timestamp { precision: 10 }.validate().is_err());
        assert!(LogicalType::Char { length: 0 }.validate().is_err());
        assert!(
            LogicalType::VarChar { length: u32::MAX }
                .validate()
                .is_err()
        );
        assert_eq!(LogicalType::Date.validate().unwrap(), LogicalType::Date);
    }
}
