//! Canonical snapshots: per key group, each table's logical rows as an Arrow IPC stream
//! section inside one SFCS envelope; and the all-or-nothing restore by key-group range.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BinaryArray, Int64Array, RecordBatch};
use arrow_buffer::ScalarBuffer;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use keygroup::{KeyGroup, KeyGroupRange};
use sfcs_format::{Container, SectionWriter, Sections, read_envelope, write_envelope};

use crate::codec::ValueCodec;
use crate::error::{CorruptionKind, Error, Result};
use crate::memory::{MemoryPool, MemoryReservation};

/// The canonical table format version, stored in the Arrow schema metadata under
/// [`CANONICAL_VERSION_KEY`].
pub const CANONICAL_VERSION: &str = "1";

/// The schema-metadata key holding [`CANONICAL_VERSION`] (the only metadata entry, so the
/// IPC bytes are deterministic).
pub const CANONICAL_VERSION_KEY: &str = "sfstate.canonical.version";

/// Name of the key column (`Binary`, non-null).
pub const KEY_COLUMN: &str = "key";

/// Name of the last-access timestamp column (`Int64`, non-null, epoch milliseconds; 0 for
/// tables without TTL).
pub const LAST_ACCESS_COLUMN: &str = "last_access";

/// The canonical schema of a table whose codec has `value_fields`:
/// `key: Binary`, `last_access: Int64`, then the value fields, with the canonical version in
/// the schema metadata.
pub fn canonical_schema(value_fields: &Fields) -> SchemaRef {
    let mut fields: Vec<Arc<Field>> = Vec::with_capacity(value_fields.len() + 2);
    fields.push(Arc::new(Field::new(KEY_COLUMN, DataType::Binary, false)));
    fields.push(Arc::new(Field::new(
        LAST_ACCESS_COLUMN,
        DataType::Int64,
        false,
    )));
    fields.extend(value_fields.iter().cloned());
    let metadata = HashMap::from([(
        CANONICAL_VERSION_KEY.to_owned(),
        CANONICAL_VERSION.to_owned(),
    )]);
    Arc::new(Schema::new_with_metadata(fields, metadata))
}

/// Builds a canonical record batch from rows **already sorted by key bytes**, encoding the
/// values with one [`ValueCodec::encode`] call.
///
/// # Errors
/// The codec's error; [`Error::Codec`] if the codec's columns do not fit `schema`.
pub fn encode_canonical_batch<C: ValueCodec>(
    schema: &SchemaRef,
    codec: &C,
    rows: &[(&[u8], i64, &C::Value)],
) -> Result<RecordBatch> {
    let keys = BinaryArray::from_iter_values(rows.iter().map(|r| r.0));
    let last_access = Int64Array::from_iter_values(rows.iter().map(|r| r.1));
    let mut columns: Vec<ArrayRef> = vec![Arc::new(keys), Arc::new(last_access)];
    columns.extend(codec.encode(rows.iter().map(|r| r.2))?);
    RecordBatch::try_new(Arc::clone(schema), columns).map_err(|_| Error::Codec {
        column: String::new(),
        reason: "codec columns do not match its fields",
    })
}

/// A canonical batch decoded for a backend to apply.
#[derive(Debug, Clone)]
pub struct DecodedRows<V> {
    /// The keys, ascending.
    pub keys: BinaryArray,
    /// The last-access timestamps.
    pub last_access: ScalarBuffer<i64>,
    /// The values, decoded with one [`ValueCodec::decode`] call.
    pub values: Vec<V>,
}

/// Splits a validated canonical batch (as handed to [`CanonicalTable::stage_restore`]) into
/// keys, timestamps and values decoded with one codec call.
///
/// # Errors
/// [`Error::Codec`] when the value columns do not decode.
pub fn decode_canonical_batch<C: ValueCodec>(
    codec: &C,
    batch: &RecordBatch,
) -> Result<DecodedRows<C::Value>> {
    let (keys, last_access) = key_columns(batch).ok_or(Error::Codec {
        column: KEY_COLUMN.to_owned(),
        reason: "not a canonical batch",
    })?;
    let mut values = Vec::with_capacity(batch.num_rows());
    codec.decode(batch.columns().get(2..).unwrap_or_default(), &mut values)?;
    if values.len() != keys.len() {
        return Err(Error::Codec {
            column: String::new(),
            reason: "codec decoded a different number of rows",
        });
    }
    Ok(DecodedRows {
        keys: keys.clone(),
        last_access: last_access.values().clone(),
        values,
    })
}

fn key_columns(batch: &RecordBatch) -> Option<(&BinaryArray, &Int64Array)> {
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

/// The canonical-snapshot capability of a table; implemented by every backend's table.
///
/// Contract:
/// - [`export_key_group`](CanonicalTable::export_key_group) returns the committed, live
///   (not expired at the store clock's now) rows of one key group as a batch of
///   [`canonical_schema`](CanonicalTable::canonical_schema), sorted ascending by key bytes,
///   or `None` when there are none. Equal logical state gives equal batches on every backend.
/// - [`stage_restore`](CanonicalTable::stage_restore) decodes and validates the rows and
///   reserves their memory **without changing visible state**; it replaces any earlier
///   staged restore. [`commit_restore`](CanonicalTable::commit_restore) then replaces the
///   table's whole content with the staged rows and cannot fail;
///   [`abort_restore`](CanonicalTable::abort_restore) drops them.
/// - All three snapshot entry points return [`Error::BundleState`] while a bundle is open.
pub trait CanonicalTable {
    /// The table (and section) name.
    fn table_name(&self) -> &str;

    /// The table's key-group range.
    fn table_key_groups(&self) -> KeyGroupRange;

    /// The table's canonical schema (see [`canonical_schema`]).
    fn canonical_schema(&self) -> SchemaRef;

    /// The rows of `key_group`, sorted by key.
    ///
    /// # Errors
    /// [`Error::BundleState`]; [`Error::MemoryExhausted`] when materialising the batch
    /// exceeds the pool; a codec or backend failure.
    fn export_key_group(&self, key_group: KeyGroup) -> Result<Option<RecordBatch>>;

    /// Decodes and validates `batches` (each a validated canonical batch of one key group in
    /// the table's range, keys strictly ascending within it) for a later commit.
    ///
    /// # Errors
    /// [`Error::BundleState`]; [`Error::MemoryExhausted`]; a codec failure.
    fn stage_restore(&mut self, batches: Vec<(KeyGroup, RecordBatch)>) -> Result<()>;

    /// Replaces the table's content with the staged rows (empty if nothing was staged).
    fn commit_restore(&mut self);

    /// Drops the staged rows.
    fn abort_restore(&mut self);
}

/// What a canonical snapshot wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SnapshotSummary {
    /// Key groups written (those with at least one row).
    pub key_groups: usize,
    /// Rows written over all tables.
    pub rows: usize,
}

/// What a canonical restore applied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RestoreSummary {
    /// Key groups read from the sources.
    pub key_groups: usize,
    /// Rows restored over all tables.
    pub rows: usize,
}

fn check_table_set(names: &[&str], ranges: &[KeyGroupRange]) -> Result<Option<KeyGroupRange>> {
    let Some(&first) = ranges.first() else {
        return Ok(None);
    };
    for (i, (name, range)) in names.iter().zip(ranges).enumerate() {
        if *range != first || names.iter().take(i).any(|n| n == name) {
            return Err(Error::TableSetMismatch {
                table: (*name).to_owned(),
            });
        }
    }
    Ok(Some(first))
}

fn arrow_error(key_group: i32, table: &str) -> impl Fn(arrow_schema::ArrowError) -> Error + '_ {
    move |source| Error::Arrow {
        key_group,
        table: table.to_owned(),
        source,
    }
}

fn corruption(key_group: i32, table: &str, kind: CorruptionKind) -> Error {
    Error::Corruption {
        key_group,
        table: table.to_owned(),
        kind,
    }
}

/// Whether `keys` is strictly ascending and starts above `previous`.
fn strictly_ascending(keys: &BinaryArray, previous: Option<&[u8]>) -> bool {
    let mut prev = previous;
    for key in keys {
        let Some(key) = key else { return false };
        if prev.is_some_and(|p| p >= key) {
            return false;
        }
        prev = Some(key);
    }
    true
}

/// Writes the canonical snapshot of `tables` (one operator's tables, sharing one key-group
/// range) into `container`: for every key group of the range, one SFCS envelope for
/// `operator_id` holding one section per table with rows in that key group (sections in
/// ascending name order, each an Arrow IPC stream of one batch), or — when no table has
/// rows there — nothing (any stale entry for that key group is removed).
///
/// The bytes depend only on the logical state (keys, timestamps, values) and the clock's
/// now, never on the backend or insertion order.
///
/// Materialised batches and IPC bytes of one key group at a time are reserved from `pool`.
///
/// # Errors
/// [`Error::TableSetMismatch`]; [`Error::MemoryExhausted`]; [`Error::BundleState`]; an Arrow,
/// codec or container error. On error the tables are unchanged, but the container may hold
/// some of the key groups already written.
pub fn write_canonical_snapshot(
    operator_id: &str,
    deadline: Option<i64>,
    tables: &[&dyn CanonicalTable],
    container: &mut dyn Container,
    pool: &Arc<dyn MemoryPool>,
) -> Result<SnapshotSummary> {
    let names: Vec<&str> = tables.iter().map(|t| t.table_name()).collect();
    let ranges: Vec<KeyGroupRange> = tables.iter().map(|t| t.table_key_groups()).collect();
    let Some(range) = check_table_set(&names, &ranges)? else {
        return Ok(SnapshotSummary::default());
    };
    let mut order: Vec<&dyn CanonicalTable> = tables.to_vec();
    order.sort_by(|a, b| a.table_name().cmp(b.table_name()));
    let mut summary = SnapshotSummary::default();
    let mut reservation = MemoryReservation::new(Arc::clone(pool));
    for key_group in range {
        let kg = key_group.get();
        let mut sections = SectionWriter::new();
        let mut any = false;
        for table in &order {
            let Some(batch) = table.export_key_group(key_group)? else {
                continue;
            };
            let name = table.table_name();
            reservation.try_grow(batch.get_array_memory_size())?;
            let schema = table.canonical_schema();
            if batch.schema() != schema {
                return Err(corruption(kg, name, CorruptionKind::SchemaMismatch));
            }
            if !key_columns(&batch).is_some_and(|(keys, _)| strictly_ascending(keys, None)) {
                return Err(corruption(kg, name, CorruptionKind::KeysNotSorted));
            }
            let mut writer =
                StreamWriter::try_new(Vec::new(), &schema).map_err(arrow_error(kg, name))?;
            writer.write(&batch).map_err(arrow_error(kg, name))?;
            writer.finish().map_err(arrow_error(kg, name))?;
            let bytes = writer.into_inner().map_err(arrow_error(kg, name))?;
            reservation.try_grow(bytes.len())?;
            sections
                .push(name, &bytes)
                .map_err(sfcs_format::Error::from)?;
            summary.rows += batch.num_rows();
            any = true;
        }
        let kg_u32 = kg.cast_unsigned();
        if any {
            let payload = sections.finish();
            reservation.try_grow(payload.len())?;
            write_envelope(container, kg_u32, operator_id, deadline, &payload)?;
            summary.key_groups += 1;
        } else {
            container.remove_key_group(kg_u32)?;
        }
        reservation.free();
    }
    Ok(summary)
}

/// Which source holds each key group of `target`: the restore plan after a rescale (merge
/// after scale-in, split after scale-out). Key groups outside `target` are ignored; key
/// groups of `target` that no source holds are empty.
///
/// # Errors
/// [`Error::DuplicateKeyGroup`] when two sources hold one key group of `target`; a container
/// error.
pub fn plan_restore(
    target: KeyGroupRange,
    sources: &[&dyn Container],
) -> Result<Vec<(KeyGroup, usize)>> {
    let mut owner: HashMap<i32, usize> = HashMap::new();
    for (index, source) in sources.iter().enumerate() {
        for kg in source.key_groups()? {
            let Ok(kg) = i32::try_from(kg) else { continue };
            let Ok(key_group) = KeyGroup::new(kg) else {
                continue;
            };
            if !target.contains(key_group) {
                continue;
            }
            if let Some(first) = owner.insert(kg, index) {
                return Err(Error::DuplicateKeyGroup {
                    key_group: kg,
                    first,
                    second: index,
                });
            }
        }
    }
    let mut plan: Vec<(KeyGroup, usize)> = owner
        .into_iter()
        .filter_map(|(kg, source)| KeyGroup::new(kg).ok().map(|kg| (kg, source)))
        .collect();
    plan.sort_unstable();
    Ok(plan)
}

/// Restores `tables` (one operator's tables, sharing one key-group range: the restore
/// target) from any number of canonical snapshots in `sources`, taking exactly the key
/// groups of the target range.
///
/// All or nothing: every envelope, section, schema and row of every key group is read,
/// validated and staged in every table first; only then is each table's content replaced
/// (tables the snapshot has no rows for become empty). On any error every table is
/// unchanged. Envelope and decoded bytes are reserved from `pool` while staging.
///
/// # Errors
/// [`Error::Snapshot`] for an envelope that fails validation (wrong operator, version,
/// checksum, truncation…); [`Error::Corruption`] for a section that does not fit its table;
/// [`Error::Arrow`]; [`Error::DuplicateKeyGroup`]; [`Error::TableSetMismatch`];
/// [`Error::MemoryExhausted`]; [`Error::BundleState`]; a codec error.
pub fn restore_canonical_snapshot(
    operator_id: &str,
    sources: &[&dyn Container],
    tables: &mut [&mut dyn CanonicalTable],
    pool: &Arc<dyn MemoryPool>,
) -> Result<RestoreSummary> {
    let names: Vec<String> = tables.iter().map(|t| t.table_name().to_owned()).collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let ranges: Vec<KeyGroupRange> = tables.iter().map(|t| t.table_key_groups()).collect();
    let Some(range) = check_table_set(&name_refs, &ranges)? else {
        return Ok(RestoreSummary::default());
    };
    let schemas: Vec<SchemaRef> = tables.iter().map(|t| t.canonical_schema()).collect();
    let plan = plan_restore(range, sources)?;

    let mut reservation = MemoryReservation::new(Arc::clone(pool));
    let mut staged: Vec<Vec<(KeyGroup, RecordBatch)>> = vec![Vec::new(); tables.len()];
    let mut summary = RestoreSummary::default();
    for &(key_group, source) in &plan {
        let kg = key_group.get();
        let Some(container) = sources.get(source) else {
            continue;
        };
        let (_, payload) = read_envelope(*container, kg.cast_unsigned(), operator_id)?;
        reservation.try_grow(payload.len())?;
        let sections = Sections::decode(&payload).map_err(sfcs_format::Error::from)?;
        for section in &sections {
            let Some(index) = names.iter().position(|n| n == section.name) else {
                return Err(corruption(kg, section.name, CorruptionKind::UnknownTable));
            };
            let (Some(schema), Some(out)) = (schemas.get(index), staged.get_mut(index)) else {
                continue;
            };
            let reader =
                StreamReader::try_new(section.data, None).map_err(arrow_error(kg, section.name))?;
            let found = reader.schema();
            if found
                .metadata()
                .get(CANONICAL_VERSION_KEY)
                .map(String::as_str)
                != Some(CANONICAL_VERSION)
            {
                return Err(corruption(
                    kg,
                    section.name,
                    CorruptionKind::UnsupportedTableVersion,
                ));
            }
            if found.fields() != schema.fields() {
                return Err(corruption(kg, section.name, CorruptionKind::SchemaMismatch));
            }
            let mut last_key: Option<Vec<u8>> = None;
            for batch in reader {
                let batch = batch.map_err(arrow_error(kg, section.name))?;
                reservation.try_grow(batch.get_array_memory_size())?;
                let Some((keys, ts)) = key_columns(&batch) else {
                    return Err(corruption(kg, section.name, CorruptionKind::SchemaMismatch));
                };
                if ts.null_count() > 0 || keys.null_count() > 0 {
                    return Err(corruption(kg, section.name, CorruptionKind::UnexpectedNull));
                }
                if !strictly_ascending(keys, last_key.as_deref()) {
                    return Err(corruption(kg, section.name, CorruptionKind::KeysNotSorted));
                }
                if let Some(k) = keys.iter().last().flatten() {
                    last_key = Some(k.to_vec());
                }
                summary.rows += batch.num_rows();
                out.push((key_group, batch));
            }
        }
        summary.key_groups += 1;
    }

    // Stage every table; on the first failure, drop everything staged so far.
    for i in 0..tables.len() {
        let batches = staged.get_mut(i).map(std::mem::take).unwrap_or_default();
        let result = match tables.get_mut(i) {
            Some(table) => table.stage_restore(batches),
            None => Ok(()),
        };
        if let Err(err) = result {
            for table in tables.iter_mut() {
                table.abort_restore();
            }
            return Err(err);
        }
    }
    for table in tables.iter_mut() {
        table.commit_restore();
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use sfcs_format::MemoryContainer;

    use super::*;
    use crate::codec::I64Codec;

    #[test]
    fn canonical_schema_layout() {
        let schema = canonical_schema(&I64Codec.fields());
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["key", "last_access", "value"]);
        assert_eq!(schema.metadata().len(), 1);
    }

    #[test]
    fn encode_decode_batch_round_trip() {
        let schema = canonical_schema(&I64Codec.fields());
        let rows: Vec<(&[u8], i64, &i64)> = vec![(b"a", 1, &10), (b"b", 2, &20)];
        let batch = encode_canonical_batch(&schema, &I64Codec, &rows).unwrap();
        let decoded = decode_canonical_batch(&I64Codec, &batch).unwrap();
        assert_eq!(decoded.keys.value(1), b"b");
        assert_eq!(&decoded.last_access[..], &[1, 2]);
        assert_eq!(decoded.values, [10, 20]);
    }

    #[test]
    fn strictly_ascending_rejects_duplicates_and_disorder() {
        let sorted = BinaryArray::from_iter_values([&b"a"[..], b"ab", b"b"]);
        assert!(strictly_ascending(&sorted, None));
        assert!(!strictly_ascending(&sorted, Some(b"a")));
        let dup = BinaryArray::from_iter_values([&b"a"[..], b"a"]);
        assert!(!strictly_ascending(&dup, None));
    }

    #[test]
    fn plan_ignores_outside_and_rejects_duplicates() {
        let mut a = MemoryContainer::new();
        let mut b = MemoryContainer::new();
        for kg in [1_u32, 5, 9] {
            write_envelope(&mut a, kg, "op", None, b"").unwrap();
        }
        write_envelope(&mut b, 6, "op", None, b"").unwrap();
        let plan = plan_restore(KeyGroupRange::new(2, 8).unwrap(), &[&a, &b]).unwrap();
        let plan: Vec<(i32, usize)> = plan.iter().map(|(k, s)| (k.get(), *s)).collect();
        assert_eq!(plan, [(5, 0), (6, 1)]);
        write_envelope(&mut b, 5, "op", None, b"").unwrap();
        let err = plan_restore(KeyGroupRange::new(2, 8).unwrap(), &[&a, &b]).unwrap_err();
        assert!(
            matches!(
                err,
                Error::DuplicateKeyGroup {
                    key_group: 5,
                    first: 0,
                    second: 1
                }
            ),
            "{err}"
        );
        // Outside the target the duplicate does not matter.
        assert!(plan_restore(KeyGroupRange::new(6, 8).unwrap(), &[&a, &b]).is_ok());
    }
}
