//! Validation of canonical sections before and after Arrow decodes them, shared by every
//! backend: the Arrow IPC stream's structure is checked against the table's schema before
//! `arrow-ipc` reads a byte of it, decoding runs behind a panic barrier, and the decoded rows
//! are checked against the canonical format's rules.
//!
//! # What the IPC validation checks (before `arrow-ipc` reads the bytes)
//!
//! A canonical section is an Arrow IPC *stream*: encapsulated messages
//! (`FF FF FF FF` | metadata length i32 LE | flatbuffer `Message` | body), a schema message
//! first, record-batch messages after it, and the end-of-stream marker `FF FF FF FF 00 00 00
//! 00` last. In order, each failure an [`Error::InvalidIpc`] naming the byte offset:
//!
//! 1. every message starts with the continuation marker and its metadata length is
//!    non-negative and within the bytes left; the flatbuffer passes the flatbuffers verifier;
//!    its body length is non-negative and within the bytes left;
//! 2. the first message is a schema: little-endian, every field without dictionary encoding
//!    or children, of a type this validator knows the buffer layout of (null, boolean,
//!    fixed-width numbers, decimals, dates, times, timestamps, durations, intervals,
//!    fixed-size binary, binary and string in regular and large form); the schema decodes
//!    and its canonical version and fields equal the table's (else
//!    [`CorruptionKind::UnsupportedTableVersion`] / [`CorruptionKind::SchemaMismatch`]);
//! 3. every later message is a record batch (no dictionary batch, no second schema), without
//!    body compression or variadic buffers, with one field node per field and exactly the
//!    buffers the field types need; each node's length equals the batch's row count and its
//!    null count lies in `0..=length` (0 for a non-nullable field, `length` for a null
//!    field); each buffer's offset and length are non-negative, the offset 8-byte aligned
//!    (as the IPC format requires) and the end inside the body; typed buffers hold a whole
//!    number of values; each
//!    buffer is large enough for the row count (validity bits, values, offsets); offsets
//!    start at zero or more, never decrease and end inside the data buffer;
//! 4. the stream ends with the end-of-stream marker and nothing after it.
//!
//! So `arrow-ipc` never allocates more than the section's own size for a buffer, and never
//! slices past the body. Decoding then runs inside [`std::panic::catch_unwind`]: anything
//! that still panics becomes [`Error::DecodePanicked`] (the barrier is the last line: the
//! corruption campaign counts such cases and expects none). The barrier needs
//! `panic = "unwind"` (the default).
//!
//! # Canonical rows (both backends, snapshot and restore)
//!
//! [`validate_canonical_rows`] refuses, with [`Error::Corruption`] or [`Error::InvalidRow`]:
//! a null key or last-access timestamp, keys not strictly ascending by bytes (within the
//! batch and after the previous batch's last key), and — in a table without TTL — a non-zero
//! `last_access`. The last rule is **refuse, not normalise**: the canonical writer always
//! writes 0 there, so another value means the snapshot was written with TTL enabled (or by a
//! buggy writer), and Flink also refuses to restore TTL state into a descriptor without TTL
//! (and the reverse). A backend that reports nothing ([`CanonicalTable::table_has_ttl`]
//! returns `None`) skips this one rule.
//!
//! [`CanonicalTable::table_has_ttl`]: crate::CanonicalTable::table_has_ttl

use std::panic::{AssertUnwindSafe, catch_unwind};

use arrow_array::{Array, BinaryArray, Int64Array, RecordBatch};
use arrow_ipc::reader::StreamReader;
use arrow_schema::{DataType, Schema};

use crate::error::{CorruptionKind, Error, Result};
use crate::snapshot::{CANONICAL_VERSION, CANONICAL_VERSION_KEY};

/// The continuation marker before every IPC message's metadata length.
const CONTINUATION: [u8; 4] = [0xff; 4];

/// Why a section's IPC bytes were refused, before a key group and table are attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IpcFault {
    /// Structure: byte offset and reason.
    Invalid(usize, &'static str),
    /// The schema's canonical version is missing or unknown.
    Version,
    /// The schema's fields differ from the table's.
    Schema,
}

impl IpcFault {
    fn into_error(self, key_group: i32, table: &str) -> Error {
        match self {
            IpcFault::Invalid(offset, reason) => Error::InvalidIpc {
                key_group,
                table: table.to_owned(),
                offset,
                reason,
            },
            IpcFault::Version => Error::Corruption {
                key_group,
                table: table.to_owned(),
                kind: CorruptionKind::UnsupportedTableVersion,
            },
            IpcFault::Schema => Error::Corruption {
                key_group,
                table: table.to_owned(),
                kind: CorruptionKind::SchemaMismatch,
            },
        }
    }
}

/// How a field's buffers are laid out in an IPC record batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// No buffers.
    Null,
    /// Validity + one bit per value.
    Bits,
    /// Validity + `width` bytes per value.
    Fixed(usize),
    /// Validity + offsets of `width` bytes + data.
    Variable(usize),
}

impl Layout {
    fn of(data_type: &DataType) -> Option<Layout> {
        Some(match data_type {
            DataType::Null => Layout::Null,
            DataType::Boolean => Layout::Bits,
            DataType::FixedSizeBinary(w) => Layout::Fixed(usize::try_from(*w).ok()?),
            DataType::Binary | DataType::Utf8 => Layout::Variable(4),
            DataType::LargeBinary | DataType::LargeUtf8 => Layout::Variable(8),
            other => Layout::Fixed(other.primitive_width()?),
        })
    }

    fn buffers(self) -> usize {
        match self {
            Layout::Null => 0,
            Layout::Bits | Layout::Fixed(_) => 2,
            Layout::Variable(_) => 3,
        }
    }
}

/// Reads encapsulated IPC messages front to back with every length checked.
struct Messages<'a> {
    bytes: &'a [u8],
    pos: usize,
}

/// One message: its flatbuffer, and where its body lies in the section.
struct Message<'a> {
    offset: usize,
    flatbuffer: arrow_ipc::Message<'a>,
    body: &'a [u8],
}

impl<'a> Messages<'a> {
    fn take(&mut self, n: usize, reason: &'static str) -> Result<&'a [u8], IpcFault> {
        let at = self.pos;
        let slice = at
            .checked_add(n)
            .and_then(|end| self.bytes.get(at..end))
            .ok_or(IpcFault::Invalid(at, reason))?;
        self.pos += n;
        Ok(slice)
    }

    /// The next message, or `None` at the end-of-stream marker (which must end the bytes).
    fn next_message(&mut self) -> Result<Option<Message<'a>>, IpcFault> {
        let offset = self.pos;
        let marker = self.take(4, "stream ends without an end-of-stream marker")?;
        if marker != CONTINUATION {
            return Err(IpcFault::Invalid(
                offset,
                "message without continuation marker",
            ));
        }
        let len_bytes = self.take(4, "message length cut short")?;
        let len = i32::from_le_bytes(<[u8; 4]>::try_from(len_bytes).unwrap_or_default());
        if len == 0 {
            if self.pos != self.bytes.len() {
                return Err(IpcFault::Invalid(
                    self.pos,
                    "bytes after the end-of-stream marker",
                ));
            }
            return Ok(None);
        }
        let len = usize::try_from(len)
            .map_err(|_| IpcFault::Invalid(offset + 4, "negative message length"))?;
        let meta_at = self.pos;
        let meta = self.take(len, "message metadata runs past the section")?;
        let message = arrow_ipc::root_as_message(meta).map_err(|_| {
            IpcFault::Invalid(meta_at, "message metadata is not a valid flatbuffer")
        })?;
        let body_len = usize::try_from(message.bodyLength())
            .map_err(|_| IpcFault::Invalid(meta_at, "negative body length"))?;
        let body = self.take(body_len, "message body runs past the section")?;
        Ok(Some(Message {
            offset,
            flatbuffer: message,
            body,
        }))
    }
}

/// Validates a canonical section's IPC stream against `expected` (the table's canonical
/// schema). Returns the number of record batches.
pub(crate) fn validate_ipc_stream(bytes: &[u8], expected: &Schema) -> Result<usize, IpcFault> {
    validate_stream(bytes, Some(expected)).map(|(_, batches)| batches)
}

/// [`validate_ipc_stream`] against `expected`, or (`None`) against the stream's own schema,
/// which must still be flat, dictionary-free and of supported types. Returns the schema and
/// the number of record batches.
fn validate_stream(bytes: &[u8], expected: Option<&Schema>) -> Result<(Schema, usize), IpcFault> {
    let mut messages = Messages { bytes, pos: 0 };
    let first = messages
        .next_message()?
        .ok_or(IpcFault::Invalid(0, "stream without a schema"))?;
    let found = check_schema(&first, expected)?;
    let layouts: Vec<(Layout, bool)> = found
        .fields()
        .iter()
        .map(|f| Layout::of(f.data_type()).map(|l| (l, f.is_nullable())))
        .collect::<Option<_>>()
        .ok_or(IpcFault::Invalid(
            first.offset,
            "field type not supported by the validator",
        ))?;
    let mut batches = 0;
    while let Some(message) = messages.next_message()? {
        check_batch(&message, &layouts)?;
        batches += 1;
    }
    Ok((found, batches))
}

fn check_version(message: &arrow_ipc::Message<'_>, offset: usize) -> Result<(), IpcFault> {
    let version = message.version();
    if version == arrow_ipc::MetadataVersion::V4 || version == arrow_ipc::MetadataVersion::V5 {
        Ok(())
    } else {
        Err(IpcFault::Invalid(
            offset,
            "unsupported IPC metadata version",
        ))
    }
}

fn check_schema(first: &Message<'_>, expected: Option<&Schema>) -> Result<Schema, IpcFault> {
    let at = first.offset;
    check_version(&first.flatbuffer, at)?;
    let schema = first
        .flatbuffer
        .header_as_schema()
        .ok_or(IpcFault::Invalid(at, "first message is not a schema"))?;
    if !first.body.is_empty() {
        return Err(IpcFault::Invalid(at, "schema message with a body"));
    }
    if schema.endianness() != arrow_ipc::Endianness::Little {
        return Err(IpcFault::Invalid(at, "big-endian stream"));
    }
    let fields = schema
        .fields()
        .ok_or(IpcFault::Invalid(at, "schema without fields"))?;
    for field in fields {
        if field.dictionary().is_some() {
            return Err(IpcFault::Invalid(at, "dictionary-encoded field"));
        }
        if field.children().is_some_and(|c| !c.is_empty()) {
            return Err(IpcFault::Invalid(at, "nested field"));
        }
    }
    let found = arrow_ipc::convert::try_fb_to_schema(schema)
        .map_err(|_| IpcFault::Invalid(at, "schema does not decode"))?;
    let Some(expected) = expected else {
        return Ok(found);
    };
    if found
        .metadata()
        .get(CANONICAL_VERSION_KEY)
        .map(String::as_str)
        != Some(CANONICAL_VERSION)
    {
        return Err(IpcFault::Version);
    }
    if found.fields() != expected.fields() {
        return Err(IpcFault::Schema);
    }
    Ok(found)
}

fn check_batch(message: &Message<'_>, layouts: &[(Layout, bool)]) -> Result<(), IpcFault> {
    let at = message.offset;
    let bad = |reason| Err(IpcFault::Invalid(at, reason));
    check_version(&message.flatbuffer, at)?;
    let Some(batch) = message.flatbuffer.header_as_record_batch() else {
        return bad("message after the schema is not a record batch");
    };
    if batch.compression().is_some() {
        return bad("compressed record batch");
    }
    if batch.variadicBufferCounts().is_some_and(|v| !v.is_empty()) {
        return bad("variadic buffers");
    }
    let Ok(rows) = usize::try_from(batch.length()) else {
        return bad("negative row count");
    };
    let nodes = batch.nodes().map_or(0, |n| n.len());
    let buffers: Vec<(usize, usize)> = batch
        .buffers()
        .into_iter()
        .flatten()
        .map(|b| {
            let offset = usize::try_from(b.offset()).ok()?;
            let len = usize::try_from(b.length()).ok()?;
            offset
                .checked_add(len)
                .filter(|&end| end <= message.body.len() && offset % 8 == 0)
                .map(|_| (offset, len))
        })
        .collect::<Option<_>>()
        .ok_or(IpcFault::Invalid(
            at,
            "buffer outside the message body or not 8-byte aligned",
        ))?;
    if nodes != layouts.len() {
        return bad("field node count differs from the schema");
    }
    if buffers.len() != layouts.iter().map(|(l, _)| l.buffers()).sum::<usize>() {
        return bad("buffer count differs from the schema");
    }
    let mut next_buffer = buffers.iter();
    for (node, &(layout, nullable)) in batch.nodes().into_iter().flatten().zip(layouts) {
        if usize::try_from(node.length()).ok() != Some(rows) {
            return bad("field length differs from the batch's row count");
        }
        let Some(nulls) = usize::try_from(node.null_count())
            .ok()
            .filter(|&n| n <= rows)
        else {
            return bad("null count out of bounds");
        };
        if layout == Layout::Null {
            if nulls != rows {
                return bad("null field with non-null values");
            }
            continue;
        }
        if !nullable && nulls != 0 {
            return bad("nulls in a non-nullable field");
        }
        let mut buffer = || next_buffer.next().copied().unwrap_or_default();
        let validity = buffer();
        if nulls > 0 && validity.1 < rows.div_ceil(8) {
            return bad("validity buffer too short");
        }
        let values = buffer();
        let needed = match layout {
            Layout::Bits => Some(rows.div_ceil(8)),
            Layout::Fixed(width) => rows.checked_mul(width),
            Layout::Variable(_) if rows == 0 => Some(0),
            Layout::Variable(width) => rows.checked_add(1).and_then(|n| n.checked_mul(width)),
            Layout::Null => Some(0),
        };
        if needed.is_none_or(|n| values.1 < n) {
            return bad("value buffer too short for the row count");
        }
        // Arrow views typed buffers as slices of their native type: the length must be a
        // whole number of values.
        let typed_width = match layout {
            Layout::Fixed(width) | Layout::Variable(width) => width,
            Layout::Bits | Layout::Null => 1,
        };
        if values.1 % typed_width != 0 {
            return bad("value buffer length is not a whole number of values");
        }
        if let Layout::Variable(width) = layout {
            let data = buffer();
            if rows > 0 {
                let offsets = message
                    .body
                    .get(values.0..values.0 + values.1)
                    .unwrap_or_default();
                if !offsets_in_bounds(offsets, width, rows, data.1) {
                    return bad("offsets decrease or end outside the data buffer");
                }
            }
        }
    }
    Ok(())
}

/// Whether the first `rows + 1` little-endian offsets of `width` bytes start at 0 or more,
/// never decrease and end at or before `data_len`.
fn offsets_in_bounds(offsets: &[u8], width: usize, rows: usize, data_len: usize) -> bool {
    let mut previous = 0_i64;
    for (i, raw) in offsets.chunks_exact(width).take(rows + 1).enumerate() {
        let value = if let Ok(narrow) = <[u8; 4]>::try_from(raw) {
            i64::from(i32::from_le_bytes(narrow))
        } else if let Ok(wide) = <[u8; 8]>::try_from(raw) {
            i64::from_le_bytes(wide)
        } else {
            return false;
        };
        if value < 0 || (i > 0 && value < previous) {
            return false;
        }
        previous = value;
    }
    usize::try_from(previous).is_ok_and(|end| end <= data_len)
}

/// Validates and decodes a canonical section: [`validate_ipc_stream`], then `arrow-ipc`'s
/// reader (with its own validation) behind a panic barrier.
///
/// # Errors
/// [`Error::InvalidIpc`], [`Error::Corruption`] (version, schema), [`Error::Arrow`],
/// [`Error::DecodePanicked`].
pub(crate) fn decode_section(
    key_group: i32,
    table: &str,
    bytes: &[u8],
    expected: &Schema,
) -> Result<Vec<RecordBatch>> {
    validate_ipc_stream(bytes, expected).map_err(|f| f.into_error(key_group, table))?;
    let arrow_error = |source| Error::Arrow {
        key_group,
        table: table.to_owned(),
        source,
    };
    let decoded = catch_panic(key_group, table, || {
        StreamReader::try_new(bytes, None)?.collect::<Result<Vec<_>, _>>()
    })?;
    decoded.map_err(arrow_error)
}

/// Validates and decodes one canonical section for tools that do not know the table's
/// schema (the inspector): the IPC checks of
/// [`restore_canonical_snapshot`](crate::restore_canonical_snapshot) against the stream's own schema (which
/// must still be flat and dictionary-free), `arrow-ipc`'s reader behind the panic barrier,
/// and [`validate_canonical_rows`] on every batch (TTL unknown). `key_group` and `table`
/// only label errors.
///
/// # Errors
/// [`Error::InvalidIpc`], [`Error::Arrow`], [`Error::DecodePanicked`], [`Error::Corruption`],
/// [`Error::InvalidRow`].
pub fn decode_canonical_section(
    key_group: i32,
    table: &str,
    bytes: &[u8],
) -> Result<(arrow_schema::SchemaRef, Vec<RecordBatch>)> {
    let (schema, _) = validate_stream(bytes, None).map_err(|f| f.into_error(key_group, table))?;
    let batches = catch_panic(key_group, table, || {
        StreamReader::try_new(bytes, None)?.collect::<Result<Vec<_>, _>>()
    })?
    .map_err(|source| Error::Arrow {
        key_group,
        table: table.to_owned(),
        source,
    })?;
    let mut last: Option<Vec<u8>> = None;
    for batch in &batches {
        validate_canonical_rows(key_group, table, batch, last.as_deref(), None)?;
        if let Some((keys, _)) = key_columns(batch)
            && let Some(k) = keys.iter().last().flatten()
        {
            last = Some(k.to_vec());
        }
    }
    Ok((std::sync::Arc::new(schema), batches))
}

/// Runs `f`, turning a panic into [`Error::DecodePanicked`].
pub(crate) fn catch_panic<T>(key_group: i32, table: &str, f: impl FnOnce() -> T) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".to_owned());
        Error::DecodePanicked {
            key_group,
            table: table.to_owned(),
            message,
        }
    })
}

/// The key and last-access columns of a canonical batch.
pub(crate) fn key_columns(batch: &RecordBatch) -> Option<(&BinaryArray, &Int64Array)> {
    let keys = batch
        .columns()
        .first()?
        .as_any()
        .downcast_ref::<BinaryArray>()?;
    let ts = batch
        .columns()
        .get(1)?
        .as_any()
        .downcast_ref::<Int64Array>()?;
    Some((keys, ts))
}

/// Checks one canonical batch of `table` in `key_group` against the canonical rules: keys and
/// timestamps non-null, keys strictly ascending by bytes, and — in a table without TTL — a
/// `last_access` of 0 (refused, not normalised: the writer always writes 0 there, and Flink
/// refuses TTL state restored without TTL). `previous_key` is the last key of the batch
/// before it in the same key group. `has_ttl` is whether the table has TTL (`None`: unknown, the
/// last-access rule is skipped). Used by snapshot and restore alike, for every backend.
///
/// # Errors
/// [`Error::Corruption`] ([`CorruptionKind::SchemaMismatch`] when the first two columns are
/// not the key and timestamp, [`CorruptionKind::UnexpectedNull`],
/// [`CorruptionKind::KeysNotSorted`]) or [`Error::InvalidRow`].
pub fn validate_canonical_rows(
    key_group: i32,
    table: &str,
    batch: &RecordBatch,
    previous_key: Option<&[u8]>,
    has_ttl: Option<bool>,
) -> Result<()> {
    let corruption = |kind| Error::Corruption {
        key_group,
        table: table.to_owned(),
        kind,
    };
    let (keys, ts) = key_columns(batch).ok_or(corruption(CorruptionKind::SchemaMismatch))?;
    if keys.null_count() > 0 || ts.null_count() > 0 {
        return Err(corruption(CorruptionKind::UnexpectedNull));
    }
    let mut prev = previous_key;
    for key in keys.iter().flatten() {
        if prev.is_some_and(|p| p >= key) {
            return Err(corruption(CorruptionKind::KeysNotSorted));
        }
        prev = Some(key);
    }
    if has_ttl == Some(false)
        && let Some(row) = ts.values().iter().position(|&t| t != 0)
    {
        return Err(Error::InvalidRow {
            key_group,
            table: table.to_owned(),
            row,
            reason: "non-zero last_access in a table without TTL",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_ipc::writer::StreamWriter;

    use super::*;
    use crate::codec::{I64F64StrCodec, ValueCodec};
    use crate::snapshot::{canonical_schema, encode_canonical_batch};

    fn section() -> (Vec<u8>, Arc<Schema>) {
        let schema = canonical_schema(&I64F64StrCodec.fields());
        let v = [(1, 0.5, Some("x".to_owned())), (2, 1.5, None)];
        let rows: Vec<(&[u8], i64, &_)> = vec![(b"a", 0, &v[0]), (b"bb", 0, &v[1])];
        let batch = encode_canonical_batch(&schema, &I64F64StrCodec, &rows).unwrap();
        let mut w = StreamWriter::try_new(Vec::new(), &schema).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
        (w.into_inner().unwrap(), schema)
    }

    #[test]
    fn writer_output_passes() {
        let (bytes, schema) = section();
        assert_eq!(validate_ipc_stream(&bytes, &schema), Ok(1));
        let batches = decode_section(0, "t", &bytes, &schema).unwrap();
        assert_eq!(batches.len(), 1);
        assert_eq!(batches[0].num_rows(), 2);
    }

    #[test]
    fn every_cut_is_refused_before_decoding() {
        let (bytes, schema) = section();
        for cut in 0..bytes.len() {
            assert!(
                validate_ipc_stream(&bytes[..cut], &schema).is_err(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(
            validate_ipc_stream(&longer, &schema),
            Err(IpcFault::Invalid(_, "bytes after the end-of-stream marker"))
        ));
    }

    #[test]
    fn every_byte_flip_is_an_error_or_decodes_without_panic() {
        let (bytes, schema) = section();
        for i in 0..bytes.len() {
            for bit in [0, 3, 7] {
                let mut b = bytes.clone();
                b[i] ^= 1 << bit;
                if let Err(Error::DecodePanicked { message, .. }) =
                    decode_section(0, "t", &b, &schema)
                {
                    panic!("byte {i} bit {bit}: panicked: {message}")
                }
            }
        }
    }

    #[test]
    fn offsets_checks() {
        let le = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        assert!(offsets_in_bounds(&le(&[0, 1, 3]), 4, 2, 3));
        assert!(!offsets_in_bounds(&le(&[0, 3, 1]), 4, 2, 3));
        assert!(!offsets_in_bounds(&le(&[0, 1, 4]), 4, 2, 3));
        assert!(!offsets_in_bounds(&le(&[-1, 1, 2]), 4, 2, 3));
    }

    #[test]
    fn rows_without_ttl_must_have_zero_last_access() {
        let schema = canonical_schema(&I64F64StrCodec.fields());
        let v = (1, 0.5, None);
        let rows: Vec<(&[u8], i64, &_)> = vec![(b"a", 0, &v), (b"b", 5, &v)];
        let batch = encode_canonical_batch(&schema, &I64F64StrCodec, &rows).unwrap();
        validate_canonical_rows(3, "t", &batch, None, Some(true)).unwrap();
        validate_canonical_rows(3, "t", &batch, None, None).unwrap();
        let err = validate_canonical_rows(3, "t", &batch, None, Some(false)).unwrap_err();
        assert!(matches!(err, Error::InvalidRow { row: 1, .. }), "{err}");
        let err = validate_canonical_rows(3, "t", &batch, Some(b"b"), None).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Corruption {
                    kind: CorruptionKind::KeysNotSorted,
                    ..
                }
            ),
            "{err}"
        );
    }
}
