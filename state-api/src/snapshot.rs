//! Canonical snapshots: per key group, each table's logical rows as an Arrow IPC stream
//! section inside one SFCS envelope; and the all-or-nothing restore by key-group range.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BinaryArray, Int64Array, RecordBatch};
use arrow_buffer::ScalarBuffer;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use keygroup::{KeyGroup, KeyGroupRange, MaxParallelism};
use sfcs_format::{
    Container, Manifest, ManifestEntry, SectionWriter, Sections, read_vouched_envelope,
    write_envelope,
};

use crate::codec::ValueCodec;
use crate::error::{CorruptionKind, Error, Result};
use crate::memory::{MemoryPool, MemoryReservation};
use crate::validate::{catch_panic, decode_section, key_columns, validate_canonical_rows};

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
/// - [`table_max_parallelism`](CanonicalTable::table_max_parallelism) and
///   [`table_has_ttl`](CanonicalTable::table_has_ttl) are required: a snapshot records the
///   max parallelism in its manifest and a restore refuses another one, and the canonical
///   row rules refuse a non-zero `last_access` in a table without TTL. Neither check can be
///   skipped by a backend.
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

    /// The max parallelism the table's key groups are computed with
    /// ([`StoreConfig::max_parallelism`](crate::StoreConfig::max_parallelism)). Snapshots
    /// record it in their manifest and restores refuse a snapshot of another one.
    fn table_max_parallelism(&self) -> MaxParallelism;

    /// Whether the table has TTL: the [canonical row rule](crate::validate_canonical_rows)
    /// that a table without TTL holds only `last_access == 0` needs it.
    fn table_has_ttl(&self) -> bool;
}

/// What a canonical snapshot wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SnapshotSummary {
    /// Key groups written (those with at least one row, or a deadline).
    pub key_groups: usize,
    /// Rows written over all tables.
    pub rows: usize,
}

/// What a canonical restore applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RestoreSummary {
    /// Key groups read from the sources.
    pub key_groups: usize,
    /// Rows restored over all tables.
    pub rows: usize,
    /// The processing-time deadline each restored key group's envelope carries (`None`: no
    /// deadline), ascending by key group, one entry per key group read — so a restored
    /// operator can re-register its processing-time timers.
    pub deadlines: Vec<(KeyGroup, Option<i64>)>,
}

impl RestoreSummary {
    /// The earliest processing-time deadline over the restored key groups.
    pub fn earliest_deadline(&self) -> Option<i64> {
        self.deadlines.iter().filter_map(|(_, d)| *d).min()
    }
}

/// The canonical table format version as the manifest's payload version.
const PAYLOAD_VERSION: u32 = 1;

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

/// The max parallelism of a call: `explicit` if given, else the tables' (when they report
/// one). Tables that disagree with each other or with `explicit` are refused.
fn resolve_max_parallelism(
    explicit: Option<MaxParallelism>,
    reported: impl Iterator<Item = Option<MaxParallelism>>,
) -> Result<Option<MaxParallelism>> {
    let mut resolved = explicit;
    for mp in reported.flatten() {
        match resolved {
            Some(r) if r != mp => {
                return Err(Error::MaxParallelismMismatch {
                    expected: Some(r.get()),
                    found: Some(mp.get()),
                    source_index: None,
                });
            }
            _ => resolved = Some(mp),
        }
    }
    Ok(resolved)
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

/// Writes the canonical snapshot of `tables` (one operator's tables, sharing one key-group
/// range) into `container` as one new generation: for every key group of the range, one
/// SFCS envelope for `operator_id` holding one section per table with rows in that key group
/// (sections in ascending name order, each an Arrow IPC stream of one batch), or — when no
/// table has rows there — none; then the [manifest](sfcs_format::Manifest) (operator id, max
/// parallelism, versions, the covered range, every envelope's lengths and CRCs), committed
/// atomically with the generation.
///
/// `deadline` goes into every envelope. The max parallelism recorded is the tables'
/// ([`CanonicalTable::table_max_parallelism`]); [`write_canonical_snapshot_at`] names it explicitly and sets a deadline per key group.
///
/// The bytes depend only on the logical state (keys, timestamps, values) and the clock's
/// now, never on the backend or insertion order.
///
/// Materialised batches and IPC bytes of one key group at a time are reserved from `pool`.
///
/// # Errors
/// [`Error::TableSetMismatch`]; [`Error::MaxParallelismMismatch`] when the tables disagree;
/// [`Error::MemoryExhausted`]; [`Error::BundleState`]; [`Error::Corruption`] /
/// [`Error::InvalidRow`] for an export that breaks the canonical rules; an Arrow, codec or
/// container error. On error the tables are unchanged and the container's committed snapshot
/// is the previous one (the generation being written is never committed).
pub fn write_canonical_snapshot(
    operator_id: &str,
    deadline: Option<i64>,
    tables: &[&dyn CanonicalTable],
    container: &mut dyn Container,
    pool: &Arc<dyn MemoryPool>,
) -> Result<SnapshotSummary> {
    write_snapshot(
        operator_id,
        None,
        &|_| deadline,
        false,
        tables,
        container,
        pool,
    )
}

/// [`write_canonical_snapshot`] at an explicit max parallelism (the tables must not report
/// another), with a processing-time deadline per key group: a key group with a deadline gets
/// an envelope even when it has no rows (zero sections), so the deadline survives.
///
/// # Errors
/// As [`write_canonical_snapshot`].
pub fn write_canonical_snapshot_at(
    max_parallelism: MaxParallelism,
    operator_id: &str,
    deadlines: &dyn Fn(KeyGroup) -> Option<i64>,
    tables: &[&dyn CanonicalTable],
    container: &mut dyn Container,
    pool: &Arc<dyn MemoryPool>,
) -> Result<SnapshotSummary> {
    write_snapshot(
        operator_id,
        Some(max_parallelism),
        deadlines,
        true,
        tables,
        container,
        pool,
    )
}

#[allow(
    clippy::too_many_arguments,
    reason = "the private body of the two entry points"
)]
fn write_snapshot(
    operator_id: &str,
    max_parallelism: Option<MaxParallelism>,
    deadlines: &dyn Fn(KeyGroup) -> Option<i64>,
    deadline_makes_envelope: bool,
    tables: &[&dyn CanonicalTable],
    container: &mut dyn Container,
    pool: &Arc<dyn MemoryPool>,
) -> Result<SnapshotSummary> {
    let names: Vec<&str> = tables.iter().map(|t| t.table_name()).collect();
    let ranges: Vec<KeyGroupRange> = tables.iter().map(|t| t.table_key_groups()).collect();
    let Some(range) = check_table_set(&names, &ranges)? else {
        return Ok(SnapshotSummary::default());
    };
    let max_parallelism = resolve_max_parallelism(
        max_parallelism,
        tables.iter().map(|t| Some(t.table_max_parallelism())),
    )?;
    if let Some(mp) = max_parallelism
        && !range.is_empty()
        && range.end() >= mp.get()
    {
        return Err(Error::KeyGroupOutOfRange {
            key_group: range.end(),
            range: mp.key_groups(),
        });
    }
    let mut order: Vec<&dyn CanonicalTable> = tables.to_vec();
    order.sort_by(|a, b| a.table_name().cmp(b.table_name()));
    let mut summary = SnapshotSummary::default();
    let mut entries = Vec::new();
    let mut reservation = MemoryReservation::new(Arc::clone(pool));
    container.begin_generation()?;
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
            validate_canonical_rows(kg, name, &batch, None, Some(table.table_has_ttl()))?;
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
        let deadline = deadlines(key_group);
        if any || (deadline_makes_envelope && deadline.is_some()) {
            let kg_u32 = kg.cast_unsigned();
            let payload = sections.finish();
            reservation.try_grow(payload.len())?;
            let header = write_envelope(container, kg_u32, operator_id, deadline, &payload)?;
            entries.push(ManifestEntry::for_header(kg_u32, &header));
            summary.key_groups += 1;
        }
        reservation.free();
    }
    let manifest = Manifest::try_new(
        operator_id,
        max_parallelism.map_or(0, |mp| mp.get().cast_unsigned()),
        range.start().cast_unsigned(),
        u32::try_from(range.len()).unwrap_or(u32::MAX),
        PAYLOAD_VERSION,
        entries,
    )
    .map_err(sfcs_format::Error::from)?;
    container.commit_generation(&manifest.encode())?;
    Ok(summary)
}

/// One restore source after its manifest passed every check.
struct Source<'a> {
    container: &'a dyn Container,
    manifest: Manifest,
}

/// Reads and checks the manifest of every source: present, valid, for `operator_id`, of a
/// known canonical version, of the target's max parallelism (when both are known), and
/// listing exactly the envelopes the source holds.
fn open_sources<'a>(
    operator_id: &str,
    target: KeyGroupRange,
    max_parallelism: Option<MaxParallelism>,
    sources: &[&'a dyn Container],
) -> Result<Vec<Source<'a>>> {
    let mut out = Vec::with_capacity(sources.len());
    for (index, container) in sources.iter().enumerate() {
        let bytes = container.get_manifest()?.ok_or(Error::IncompleteSnapshot {
            source_index: index,
        })?;
        let manifest =
            Manifest::decode(&bytes, Some(operator_id)).map_err(sfcs_format::Error::from)?;
        if manifest.payload_version() != PAYLOAD_VERSION {
            return Err(Error::UnsupportedSnapshotVersion {
                found: manifest.payload_version(),
                source_index: index,
            });
        }
        let found = manifest.max_parallelism().map(u32::cast_signed);
        let mismatch = match (max_parallelism, found) {
            (Some(expected), found) => found != Some(expected.get()),
            (None, Some(found)) => !target.is_empty() && target.end() >= found,
            (None, None) => false,
        };
        if mismatch {
            return Err(Error::MaxParallelismMismatch {
                expected: max_parallelism.map(MaxParallelism::get),
                found,
                source_index: Some(index),
            });
        }
        manifest.check_listing(*container).map_err(|e| match e {
            sfcs_format::Error::KeyGroupMissing { key_group } => Error::MissingKeyGroup {
                key_group: key_group.cast_signed(),
                source_index: Some(index),
            },
            sfcs_format::Error::KeyGroupUnlisted { key_group } => Error::UnexpectedKeyGroup {
                key_group: key_group.cast_signed(),
                source_index: index,
            },
            other => Error::Snapshot(other),
        })?;
        out.push(Source {
            container: *container,
            manifest,
        });
    }
    Ok(out)
}

/// For every key group of `target`, the one source whose manifest covers it; and whether
/// that source has an envelope for it.
fn plan_sources(target: KeyGroupRange, sources: &[Source<'_>]) -> Result<Vec<(KeyGroup, usize)>> {
    let mut plan = Vec::new();
    for key_group in target {
        let kg = key_group.get().cast_unsigned();
        let mut owner = None;
        for (index, source) in sources.iter().enumerate() {
            if !source.manifest.covers(kg) {
                continue;
            }
            if let Some(first) = owner.replace(index) {
                return Err(Error::DuplicateKeyGroup {
                    key_group: key_group.get(),
                    first,
                    second: index,
                });
            }
        }
        let owner = owner.ok_or(Error::MissingKeyGroup {
            key_group: key_group.get(),
            source_index: None,
        })?;
        if sources
            .get(owner)
            .is_some_and(|s| s.manifest.entry(kg).is_some())
        {
            plan.push((key_group, owner));
        }
    }
    Ok(plan)
}

/// Which source holds each key group of `target` that has an envelope: the restore plan
/// after a rescale (merge after scale-in, split after scale-out). Every source must hold a
/// valid manifest; every key group of `target` must be covered by exactly one source's
/// manifest (covered key groups without an envelope are empty and left out of the plan).
///
/// # Errors
/// [`Error::IncompleteSnapshot`]; [`Error::DuplicateKeyGroup`] when two sources cover one key
/// group of `target`; [`Error::MissingKeyGroup`] when none does or an envelope is missing;
/// [`Error::UnexpectedKeyGroup`]; a manifest or container error.
pub fn plan_restore(
    target: KeyGroupRange,
    sources: &[&dyn Container],
) -> Result<Vec<(KeyGroup, usize)>> {
    let mut opened = Vec::with_capacity(sources.len());
    for (index, container) in sources.iter().enumerate() {
        let bytes = container.get_manifest()?.ok_or(Error::IncompleteSnapshot {
            source_index: index,
        })?;
        let manifest = Manifest::decode(&bytes, None).map_err(sfcs_format::Error::from)?;
        opened.push(Source {
            container: *container,
            manifest,
        });
    }
    plan_sources(target, &opened)
}

/// Restores `tables` (one operator's tables, sharing one key-group range: the restore
/// target) from any number of canonical snapshots in `sources`, taking exactly the key
/// groups of the target range.
///
/// Complete or refused: every source must hold a committed [manifest](sfcs_format::Manifest)
/// for `operator_id` that lists exactly the envelopes it holds; every key group of the
/// target must be covered by exactly one source; each envelope must match its manifest entry
/// (so a swapped or copied key group is refused, naming it); the max parallelism must match
/// the target's (taken from [`CanonicalTable::table_max_parallelism`]; see
/// [`restore_canonical_snapshot_at`] to name it).
///
/// All or nothing: every envelope of every key group is read, vouched for and checksummed
/// first; then every section, schema and row is validated (the Arrow IPC bytes before Arrow
/// reads them, the rows by
/// [`validate_canonical_rows`]) and staged in every table first; only then is each table's
/// content replaced (tables the snapshot has no rows for become empty). On any error every
/// table is unchanged. Envelope and decoded bytes are reserved from `pool` while staging.
/// A panic while decoding or staging is caught and returned as [`Error::DecodePanicked`].
///
/// # Errors
/// [`Error::IncompleteSnapshot`]; [`Error::MissingKeyGroup`]; [`Error::UnexpectedKeyGroup`];
/// [`Error::DuplicateKeyGroup`]; [`Error::MaxParallelismMismatch`];
/// [`Error::UnsupportedSnapshotVersion`]; [`Error::Snapshot`] for a manifest or envelope that
/// fails validation (wrong operator, version, checksum, truncation, not vouched for…);
/// [`Error::InvalidIpc`], [`Error::Corruption`], [`Error::InvalidRow`], [`Error::Arrow`] for
/// a section that does not fit its table; [`Error::DecodePanicked`];
/// [`Error::TableSetMismatch`]; [`Error::MemoryExhausted`]; [`Error::BundleState`]; a codec
/// error.
pub fn restore_canonical_snapshot(
    operator_id: &str,
    sources: &[&dyn Container],
    tables: &mut [&mut dyn CanonicalTable],
    pool: &Arc<dyn MemoryPool>,
) -> Result<RestoreSummary> {
    restore_snapshot(operator_id, None, sources, tables, pool)
}

/// [`restore_canonical_snapshot`] into a target of `max_parallelism` (the tables must not
/// report another; a snapshot whose manifest does not record `max_parallelism` is refused).
///
/// # Errors
/// As [`restore_canonical_snapshot`].
pub fn restore_canonical_snapshot_at(
    max_parallelism: MaxParallelism,
    operator_id: &str,
    sources: &[&dyn Container],
    tables: &mut [&mut dyn CanonicalTable],
    pool: &Arc<dyn MemoryPool>,
) -> Result<RestoreSummary> {
    restore_snapshot(operator_id, Some(max_parallelism), sources, tables, pool)
}

fn restore_snapshot(
    operator_id: &str,
    max_parallelism: Option<MaxParallelism>,
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
    let max_parallelism = resolve_max_parallelism(
        max_parallelism,
        tables.iter().map(|t| Some(t.table_max_parallelism())),
    )?;
    let schemas: Vec<SchemaRef> = tables.iter().map(|t| t.canonical_schema()).collect();
    let ttls: Vec<Option<bool>> = tables.iter().map(|t| Some(t.table_has_ttl())).collect();
    let opened = open_sources(operator_id, range, max_parallelism, sources)?;
    let plan = plan_sources(range, &opened)?;

    let mut reservation = MemoryReservation::new(Arc::clone(pool));
    let mut staged: Vec<Vec<(KeyGroup, RecordBatch)>> = vec![Vec::new(); tables.len()];
    let mut summary = RestoreSummary::default();
    // Pass 1, cheap checks first: every envelope of the plan read, vouched for by its
    // manifest and checksummed, and its section framing and table names checked, before any
    // Arrow decoding.
    let mut payloads = Vec::with_capacity(plan.len());
    for &(key_group, index) in &plan {
        let kg = key_group.get();
        let Some(source) = opened.get(index) else {
            continue;
        };
        let (header, payload) =
            read_vouched_envelope(source.container, &source.manifest, kg.cast_unsigned()).map_err(
                |e| match e {
                    sfcs_format::Error::KeyGroupMissing { key_group } => Error::MissingKeyGroup {
                        key_group: key_group.cast_signed(),
                        source_index: Some(index),
                    },
                    other => Error::Snapshot(other),
                },
            )?;
        reservation.try_grow(payload.len())?;
        let sections = Sections::decode(&payload).map_err(sfcs_format::Error::from)?;
        if let Some(unknown) = sections.iter().find(|s| !names.iter().any(|n| n == s.name)) {
            return Err(corruption(kg, unknown.name, CorruptionKind::UnknownTable));
        }
        summary.deadlines.push((key_group, header.deadline()));
        payloads.push((key_group, payload));
    }
    // Pass 2: decode and validate every section.
    for (key_group, payload) in &payloads {
        let (key_group, kg) = (*key_group, key_group.get());
        let sections = Sections::decode(payload).map_err(sfcs_format::Error::from)?;
        for section in &sections {
            let Some(index) = names.iter().position(|n| n == section.name) else {
                return Err(corruption(kg, section.name, CorruptionKind::UnknownTable));
            };
            let (Some(schema), Some(out)) = (schemas.get(index), staged.get_mut(index)) else {
                continue;
            };
            let has_ttl = ttls.get(index).copied().flatten();
            let mut last_key: Option<Vec<u8>> = None;
            for batch in decode_section(kg, section.name, section.data, schema)? {
                reservation.try_grow(batch.get_array_memory_size())?;
                validate_canonical_rows(kg, section.name, &batch, last_key.as_deref(), has_ttl)?;
                if let Some((keys, _)) = key_columns(&batch)
                    && let Some(k) = keys.iter().last().flatten()
                {
                    last_key = Some(k.to_vec());
                }
                summary.rows += batch.num_rows();
                out.push((key_group, batch));
            }
        }
        summary.key_groups += 1;
    }
    drop(payloads);

    // Stage every table; on the first failure (or panic), drop everything staged so far.
    for i in 0..tables.len() {
        let batches = staged.get_mut(i).map(std::mem::take).unwrap_or_default();
        let result = match tables.get_mut(i) {
            Some(table) => {
                let name = names.get(i).map_or("", String::as_str);
                catch_panic(-1, name, || table.stage_restore(batches)).and_then(|r| r)
            }
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

    /// A committed snapshot covering `first..first + count` with (empty) envelopes for
    /// `with_envelopes`.
    fn covering(first: u32, count: u32, with_envelopes: &[u32]) -> MemoryContainer {
        let mut c = MemoryContainer::new();
        c.begin_generation().unwrap();
        let mut entries = Vec::new();
        for &kg in with_envelopes {
            let h = write_envelope(&mut c, kg, "op", None, b"").unwrap();
            entries.push(ManifestEntry::for_header(kg, &h));
        }
        let m = Manifest::try_new("op", 16, first, count, PAYLOAD_VERSION, entries).unwrap();
        c.commit_generation(&m.encode()).unwrap();
        c
    }

    #[test]
    fn plan_ignores_outside_and_rejects_duplicates_and_gaps() {
        let a = covering(0, 6, &[1, 5]);
        let b = covering(6, 10, &[6, 9]);
        let plan = plan_restore(KeyGroupRange::new(2, 8).unwrap(), &[&a, &b]).unwrap();
        let plan: Vec<(i32, usize)> = plan.iter().map(|(k, s)| (k.get(), *s)).collect();
        assert_eq!(plan, [(5, 0), (6, 1)]);
        let overlapping = covering(5, 2, &[5]);
        let err =
            plan_restore(KeyGroupRange::new(2, 8).unwrap(), &[&a, &b, &overlapping]).unwrap_err();
        assert!(
            matches!(
                err,
                Error::DuplicateKeyGroup {
                    key_group: 5,
                    first: 0,
                    second: 2
                }
            ),
            "{err}"
        );
        // Outside the target the overlap does not matter.
        assert!(plan_restore(KeyGroupRange::new(7, 8).unwrap(), &[&a, &b, &overlapping]).is_ok());
        // A key group no source covers is missing.
        let err = plan_restore(KeyGroupRange::new(2, 8).unwrap(), &[&a]).unwrap_err();
        assert!(
            matches!(
                err,
                Error::MissingKeyGroup {
                    key_group: 6,
                    source_index: None
                }
            ),
            "{err}"
        );
        // A container without a manifest is incomplete.
        let err = plan_restore(
            KeyGroupRange::new(2, 3).unwrap(),
            &[&MemoryContainer::new()],
        )
        .unwrap_err();
        assert!(
            matches!(err, Error::IncompleteSnapshot { source_index: 0 }),
            "{err}"
        );
    }

    #[test]
    fn restore_summary_earliest_deadline() {
        let kg = |k| KeyGroup::new(k).unwrap();
        let s = RestoreSummary {
            key_groups: 3,
            rows: 0,
            deadlines: vec![(kg(1), None), (kg(2), Some(9)), (kg(3), Some(4))],
        };
        assert_eq!(s.earliest_deadline(), Some(4));
        assert_eq!(RestoreSummary::default().earliest_deadline(), None);
    }
}
