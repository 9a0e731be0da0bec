//! The corruption campaign: seeded mutations of a canonical snapshot, each restored into a
//! store that holds other state.
//!
//! Every case must end in a typed error with the target unchanged (its canonical snapshot
//! byte-identical to before), or in a restore whose result equals, row for row, what a
//! reference decoder (plain `arrow-ipc`, no validation of ours) reads from the mutated
//! snapshot — which for every mutation that is not re-sealed is the original state. Panics
//! (escaped or caught by the decode barrier) and silent differences fail the campaign.
//!
//! `SFSTATE_CAMPAIGN_SEED` (default `0x5eed2026`) and `SFSTATE_CAMPAIGN_CASES` (default
//! 10 000 container cases; directory cases are a fiftieth of that, at least 40) set the run.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{
    Array, ArrayRef, BinaryArray, Float64Array, Int64Array, RecordBatch, StringArray,
};
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::DataType;
use keygroup::{KeyGroup, MaxParallelism};
use sfcs_format::{
    Container, DirContainer, FIXED_HEADER_LEN, Manifest, MemoryContainer, SectionWriter, Sections,
    read_envelope,
};

use super::snapshot::{put_envelope_raw, put_payload, reseal};
use super::{Key, StoreFactory, full_config, key, max_parallelism, read_all, write_all};
use crate::codec::{I64Codec, I64F64StrCodec};
use crate::error::Error;
use crate::snapshot::{
    CanonicalTable, RestoreSummary, restore_canonical_snapshot_at, write_canonical_snapshot_at,
};
use crate::table::KeyedStateStore;
use crate::ttl::{ManualClock, TtlConfig, is_expired};

const OPERATOR: &str = "op";
const NOW: i64 = 5_000;
const TTL_MS: i64 = 3_600_000;

/// splitmix64: small, seedable, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn byte(&mut self) -> u8 {
        self.next() as u8
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Mutations of a snapshot held in a [`MemoryContainer`].
const CONTAINER_MUTATIONS: &[&str] = &[
    "bit-flip",
    "byte-run",
    "truncate",
    "append-garbage",
    "surplus-chunk",
    "header-field",
    "delete-key-group",
    "duplicate-key-group",
    "swap-key-groups",
    "extra-key-group",
    "manifest-bit-flip",
    "manifest-truncate",
    "manifest-delete",
    "manifest-resealed-field",
    "header-field-resealed",
    "section-resealed",
    "ipc-metadata-resealed",
    "ipc-body-resealed",
    "value-resealed",
];

/// Mutations of a snapshot written into a [`DirContainer`].
const DIR_MUTATIONS: &[&str] = &[
    "dir-stray-temp-files",
    "dir-stray-key-group-file",
    "dir-delete-file",
    "dir-swap-files",
    "dir-truncate-file",
    "dir-flip-file",
    "dir-manifest-damage",
    "dir-current-damage",
    "dir-interrupted-writer",
];

/// Each key group's deadline, ascending.
type Deadlines = Vec<(KeyGroup, Option<i64>)>;

/// What [`Target::state`] reads.
type State = (Vec<Option<i64>>, Vec<Option<(i64, f64, Option<String>)>>);

/// One row of a table in a key group, as compared by the campaign: key, last access, each
/// value column's one-row slice.
type RowRepr = (Vec<u8>, i64, Vec<ArrayRef>);
/// (key group, table) -> rows, in key order.
type Logical = BTreeMap<(u32, String), Vec<RowRepr>>;

/// The restore target: two tables over the full range of a max parallelism, holding other
/// state than the snapshot.
struct Target<S: KeyedStateStore> {
    store: S,
    main: S::Table<I64Codec>,
    side: S::Table<I64F64StrCodec>,
    mp: MaxParallelism,
}

impl<S: KeyedStateStore> Target<S> {
    fn new<F: StoreFactory<Store = S>>(f: &F, clock: &ManualClock, mp: MaxParallelism) -> Self {
        let mut store = f.create(full_config(mp, clock));
        let main = store.open_table("main", I64Codec, None).expect("open main");
        let side = store
            .open_table(
                "side",
                I64F64StrCodec,
                Some(TtlConfig::new(Duration::from_millis(
                    TTL_MS.cast_unsigned(),
                ))),
            )
            .expect("open side");
        Self {
            store,
            main,
            side,
            mp,
        }
    }

    fn fill(&mut self, keys: &[Key], offset: i64) {
        write_all(
            &mut self.main,
            &keys
                .iter()
                .enumerate()
                .map(|(i, k)| (k.clone(), Some(i as i64 * 11 + offset)))
                .collect::<Vec<_>>(),
        );
        write_all(
            &mut self.side,
            &keys
                .iter()
                .enumerate()
                .step_by(2)
                .map(|(i, k)| {
                    let v = (
                        i as i64 - offset,
                        i as f64 / 8.0,
                        (i % 3 == 1).then(|| format!("s{i}")),
                    );
                    (k.clone(), Some(v))
                })
                .collect::<Vec<_>>(),
        );
    }

    fn snapshot(&self) -> MemoryContainer {
        let mut c = MemoryContainer::new();
        write_canonical_snapshot_at(
            self.mp,
            OPERATOR,
            &|kg| (kg.get() % 4 == 1).then(|| 7_000 + i64::from(kg.get())),
            &[&self.main, &self.side],
            &mut c,
            self.store.config().memory_pool(),
        )
        .expect("snapshot");
        c
    }

    /// Every table's value for each of `keys` (the campaign's key universe), read in one
    /// bundle per table: the cheap "unchanged" check after a refused restore.
    fn state(&mut self, keys: &[Key]) -> State {
        (
            read_all(&mut self.main, keys),
            read_all(&mut self.side, keys),
        )
    }

    fn restore(&mut self, source: &dyn Container) -> crate::Result<RestoreSummary> {
        let pool = Arc::clone(self.store.config().memory_pool());
        restore_canonical_snapshot_at(
            self.mp,
            OPERATOR,
            &[source],
            &mut [&mut self.main as &mut dyn CanonicalTable, &mut self.side],
            &pool,
        )
    }
}

/// What the reference decoder reads from a snapshot (manifest entries, envelopes, sections,
/// plain `arrow-ipc`), with the rows the export leaves out (expired in the TTL table at
/// [`NOW`]) dropped; and each key group's deadline. `None` when the reference decoder cannot
/// read it.
fn reference(container: &dyn Container) -> Option<(Logical, Deadlines)> {
    let manifest = Manifest::decode(&container.get_manifest().ok()??, None).ok()?;
    let mut logical = Logical::new();
    let mut deadlines = Vec::new();
    for entry in manifest.entries() {
        let kg = entry.key_group;
        let (header, payload) = read_envelope(container, kg, OPERATOR).ok()?;
        deadlines.push((KeyGroup::new(kg as i32).ok()?, header.deadline()));
        let sections = Sections::decode(&payload).ok()?;
        for section in &sections {
            let batches = catch_unwind(|| {
                StreamReader::try_new(section.data, None)
                    .ok()?
                    .collect::<Result<Vec<_>, _>>()
                    .ok()
            })
            .ok()??;
            let rows = logical.entry((kg, section.name.to_owned())).or_default();
            for batch in &batches {
                rows.extend(batch_rows(batch, section.name == "side")?);
            }
        }
    }
    logical.retain(|_, rows| !rows.is_empty());
    Some((logical, deadlines))
}

fn batch_rows(batch: &RecordBatch, ttl: bool) -> Option<Vec<RowRepr>> {
    let keys = batch.column(0).as_any().downcast_ref::<BinaryArray>()?;
    let ts = batch.column(1).as_any().downcast_ref::<Int64Array>()?;
    let mut out = Vec::with_capacity(batch.num_rows());
    for row in 0..batch.num_rows() {
        let (key, ts) = (keys.value(row).to_vec(), ts.value(row));
        if ttl && is_expired(ts, TTL_MS, NOW) {
            continue;
        }
        let values = batch.columns()[2..]
            .iter()
            .map(|c| c.slice(row, 1))
            .collect();
        out.push((key, ts, values));
    }
    Some(out)
}

/// A short label of an error: its variant path (`Snapshot::Envelope::ChecksumMismatch`),
/// without fields or messages.
fn label(err: &Error) -> String {
    let mut debug = String::new();
    let mut quoted = false;
    for c in format!("{err:?}").chars() {
        if c == '"' {
            quoted = !quoted;
        } else if !quoted {
            debug.push(c);
        }
    }
    debug
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.chars().next().is_some_and(char::is_uppercase))
        .filter(|w| !matches!(*w, "Some" | "None"))
        .take(3)
        .collect::<Vec<_>>()
        .join("::")
}

struct Tally {
    counts: BTreeMap<(String, String), usize>,
    failures: Vec<String>,
}

impl Tally {
    fn record(&mut self, mutation: &str, outcome: String) {
        *self
            .counts
            .entry((mutation.to_owned(), outcome))
            .or_default() += 1;
    }
}

/// The target before each case: its snapshot, and its state over the key universe.
struct Before<'a> {
    snapshot: &'a MemoryContainer,
    keys: &'a [Key],
    state: &'a State,
}

/// Restores `source` into `target` (holding `before`) and checks the outcome.
fn run_case<S: KeyedStateStore>(
    target: &mut Target<S>,
    before: &Before<'_>,
    source: &dyn Container,
    original: &Logical,
    mutation: &str,
    case: &str,
    tally: &mut Tally,
) {
    let result = catch_unwind(AssertUnwindSafe(|| target.restore(source)));
    match result {
        Err(_) => {
            tally
                .failures
                .push(format!("{case}: {mutation}: panic escaped the restore"));
            tally.record(mutation, "PANIC".to_owned());
        }
        Ok(Err(Error::DecodePanicked { message, .. })) => {
            tally.failures.push(format!(
                "{case}: {mutation}: panic caught at the barrier: {message}"
            ));
            tally.record(mutation, "PANIC(caught)".to_owned());
        }
        Ok(Err(err)) => {
            if target.state(before.keys) != *before.state {
                tally.failures.push(format!(
                    "{case}: {mutation}: target changed by a failed restore ({err})"
                ));
            }
            tally.record(mutation, format!("refused: {}", label(&err)));
        }
        Ok(Ok(summary)) => {
            let restored = reference(&target.snapshot()).map(|r| r.0);
            match reference(source) {
                None => tally.failures.push(format!(
                    "{case}: {mutation}: restored a snapshot the reference decoder cannot read"
                )),
                Some((want, deadlines)) => {
                    if restored.as_ref() != Some(&want) {
                        tally
                            .failures
                            .push(format!("{case}: {mutation}: silent difference"));
                    } else if summary.deadlines != deadlines {
                        tally
                            .failures
                            .push(format!("{case}: {mutation}: deadlines differ"));
                    }
                    let outcome = if &want == original {
                        "restored: equal to the original"
                    } else {
                        "restored: equal to the mutated snapshot"
                    };
                    tally.record(mutation, outcome.to_owned());
                }
            }
            target.restore(before.snapshot).expect("reset the target");
        }
    }
}

/// The envelope bytes of a key group: header and chunks.
fn stored(c: &MemoryContainer, kg: u32) -> (Vec<u8>, Vec<Vec<u8>>) {
    let header = c
        .get_header(kg)
        .ok()
        .flatten()
        .map(std::borrow::Cow::into_owned)
        .unwrap_or_default();
    let mut chunks = Vec::new();
    while let Some(chunk) = c.get_chunk(kg, chunks.len() as u32).ok().flatten() {
        chunks.push(chunk.into_owned());
    }
    (header, chunks)
}

fn manifest_of(c: &MemoryContainer) -> Manifest {
    Manifest::decode(&c.get_manifest().expect("get").expect("manifest"), None).expect("manifest")
}

/// Applies one container mutation to a copy of `original`.
#[allow(
    clippy::too_many_lines,
    reason = "one arm per mutation reads best in one place"
)]
fn mutate(original: &MemoryContainer, mutation: &str, rng: &mut Rng, mp: u32) -> MemoryContainer {
    let mut c = original.clone();
    let kgs = c.key_groups().expect("key groups");
    let kg = *rng.pick(&kgs);
    let (header, chunks) = stored(&c, kg);
    let in_chunk = !chunks.is_empty() && rng.below(3) > 0;
    let mut target = if in_chunk {
        chunks[0].clone()
    } else {
        header.clone()
    };
    let put_target = |c: &mut MemoryContainer, bytes: Vec<u8>| {
        if in_chunk {
            c.set_chunk_raw(kg, 0, Some(bytes));
        } else {
            c.set_header_raw(kg, bytes);
        }
    };
    match mutation {
        "bit-flip" => {
            let bit = rng.below(target.len() * 8);
            target[bit / 8] ^= 1 << (bit % 8);
            put_target(&mut c, target);
        }
        "byte-run" => {
            let at = rng.below(target.len());
            let n = 1 + rng.below(16).min(target.len() - at - 1);
            let run = rng.bytes(n);
            target[at..at + n].copy_from_slice(&run);
            put_target(&mut c, target);
        }
        "truncate" => {
            target.truncate(rng.below(target.len()));
            put_target(&mut c, target);
        }
        "append-garbage" => {
            let n = 1 + rng.below(32);
            let garbage = rng.bytes(n);
            if rng.below(3) == 0 {
                let mut m = c.get_manifest().expect("get").expect("m").into_owned();
                m.extend_from_slice(&garbage);
                c.set_manifest_raw(Some(m));
            } else {
                target.extend_from_slice(&garbage);
                put_target(&mut c, target);
            }
        }
        "surplus-chunk" => {
            let n = rng.below(64);
            c.set_chunk_raw(kg, chunks.len() as u32, Some(rng.bytes(n)));
        }
        "header-field" | "header-field-resealed" => {
            let id_len = header.len() - FIXED_HEADER_LEN;
            let fields = [
                (0, 4),
                (4, 4),
                (8, 4),
                (12, id_len),
                (12 + id_len, 8),
                (20 + id_len, 4),
                (24 + id_len, 4),
                (28 + id_len, 4),
            ];
            let (at, len) = *rng.pick(&fields);
            let mut h = header.clone();
            if len == 0 {
                h.insert(12, b'x');
            } else if rng.below(2) == 0 {
                let run = rng.bytes(len);
                h[at..at + len].copy_from_slice(&run);
            } else {
                let bit = rng.below(len * 8);
                h[at + bit / 8] ^= 1 << (bit % 8);
            }
            c.set_header_raw(kg, h);
            if mutation == "header-field-resealed" {
                reseal(&mut c);
            }
        }
        "delete-key-group" => {
            let m = c
                .get_manifest()
                .expect("get")
                .map(std::borrow::Cow::into_owned);
            c.remove_key_group(kg).expect("remove");
            c.set_manifest_raw(m);
        }
        "duplicate-key-group" => {
            let other = *rng.pick(&kgs);
            let to = if other == kg { (kg + 1) % mp } else { other };
            c.copy_key_group_raw(kg, to);
        }
        "swap-key-groups" => {
            let other = *rng.pick(&kgs);
            let (oh, oc) = stored(&c, other);
            let oc: Vec<&[u8]> = oc.iter().map(Vec::as_slice).collect();
            let m = c
                .get_manifest()
                .expect("get")
                .map(std::borrow::Cow::into_owned);
            c.put_key_group(kg, &oh, &oc).expect("put");
            let chunks: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
            c.put_key_group(other, &header, &chunks).expect("put");
            c.set_manifest_raw(m);
        }
        "extra-key-group" => {
            let free: Vec<u32> = (0..mp).filter(|k| !kgs.contains(k)).collect();
            if let Some(&extra) = free.get(rng.below(free.len().max(1))) {
                put_envelope_raw(
                    &mut c,
                    extra,
                    OPERATOR,
                    None,
                    &SectionWriter::new().finish(),
                );
            } else {
                c.copy_key_group_raw(kg, mp + 1);
            }
        }
        "manifest-bit-flip" => {
            let mut m = c.get_manifest().expect("get").expect("m").into_owned();
            let bit = rng.below(m.len() * 8);
            m[bit / 8] ^= 1 << (bit % 8);
            c.set_manifest_raw(Some(m));
        }
        "manifest-truncate" => {
            let mut m = c.get_manifest().expect("get").expect("m").into_owned();
            m.truncate(rng.below(m.len()));
            c.set_manifest_raw(Some(m));
        }
        "manifest-delete" => c.set_manifest_raw(None),
        "manifest-resealed-field" => {
            let m = manifest_of(&c);
            let mut entries = m.entries().to_vec();
            let covered = m.covered();
            let (mut op, mut mpv, mut first, mut count, mut version) = (
                m.operator_id().to_owned(),
                mp,
                covered.start,
                covered.end - covered.start,
                m.payload_version(),
            );
            match rng.below(7) {
                0 => mpv = *rng.pick(&[0, 1, mp / 2, mp * 2, 32_768]),
                1 => {
                    first += 1 + rng.below(3) as u32;
                    count = count.saturating_sub(first);
                    entries.retain(|e| e.key_group >= first && e.key_group < first + count);
                }
                2 => count = count.saturating_sub(1 + rng.below(4) as u32),
                3 => "other-op".clone_into(&mut op),
                4 => version = 1 + 1 + rng.below(5) as u32,
                5 => {
                    let i = rng.below(entries.len());
                    entries.remove(i);
                }
                _ => {
                    let i = rng.below(entries.len());
                    let e = &mut entries[i];
                    match rng.below(4) {
                        0 => e.header_crc32c ^= 1 << rng.below(32),
                        1 => e.payload_crc32c ^= 1 << rng.below(32),
                        2 => e.payload_len ^= 1 << rng.below(20),
                        _ => e.header_len ^= 1 << rng.below(6),
                    }
                }
            }
            entries.retain(|e| e.key_group >= first && e.key_group < first.saturating_add(count));
            let rebuilt = Manifest::try_new(&op, mpv, first, count, version, entries)
                .map_or_else(|_| m.encode(), |m| m.encode());
            c.set_manifest_raw(Some(rebuilt));
        }
        "section-resealed" | "ipc-metadata-resealed" | "ipc-body-resealed" | "value-resealed" => {
            reseal_payload_mutation(&mut c, kg, mutation, rng);
        }
        other => panic!("unknown mutation {other}"),
    }
    c
}

/// Damages `kg`'s payload at the section, IPC-message or value level, then re-encodes the
/// envelope and re-seals the manifest, so every checksum is valid.
fn reseal_payload_mutation(c: &mut MemoryContainer, kg: u32, mutation: &str, rng: &mut Rng) {
    let (header, payload) = read_envelope(c, kg, OPERATOR).expect("pristine envelope");
    let sections = Sections::decode(&payload).expect("pristine sections");
    let mut parts: Vec<(String, Vec<u8>)> = sections
        .iter()
        .map(|s| (s.name.to_owned(), s.data.to_vec()))
        .collect();
    let new_payload = if mutation == "section-resealed" || parts.is_empty() {
        section_mutation(&mut parts, &payload, rng)
    } else {
        let i = rng.below(parts.len());
        let bytes = &mut parts[i].1;
        match mutation {
            "ipc-metadata-resealed" => ipc_mutation(bytes, rng, true),
            "ipc-body-resealed" => ipc_mutation(bytes, rng, false),
            _ => value_mutation(bytes, rng),
        }
        frame(&parts)
    };
    put_payload(c, kg, OPERATOR, header.deadline(), &new_payload);
}

fn frame(parts: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut w = SectionWriter::new();
    for (name, bytes) in parts {
        // A renamed section may now repeat a name: the writer refuses it, the section is
        // dropped (one more way the payload differs).
        let _ = w.push(name, bytes);
    }
    w.finish()
}

/// Section framing: drop, rename, duplicate, reorder sections, or damage the framing bytes.
fn section_mutation(parts: &mut Vec<(String, Vec<u8>)>, payload: &[u8], rng: &mut Rng) -> Vec<u8> {
    match rng.below(6) {
        0 if !parts.is_empty() => {
            let i = rng.below(parts.len());
            parts.remove(i);
            frame(parts)
        }
        1 if !parts.is_empty() => {
            let i = rng.below(parts.len());
            parts[i].0 = rng
                .pick(&["main", "side", "other", "Main", "side2"])
                .to_string();
            frame(parts)
        }
        2 if parts.len() > 1 => {
            parts.reverse();
            frame(parts)
        }
        3 if !parts.is_empty() => {
            let i = rng.below(parts.len());
            let data = parts[i].1.clone();
            let j = rng.below(parts.len());
            parts[j].1 = data;
            frame(parts)
        }
        4 => {
            let mut p = payload.to_vec();
            let bit = rng.below(p.len() * 8);
            p[bit / 8] ^= 1 << (bit % 8);
            p
        }
        _ => {
            let mut p = payload.to_vec();
            p.truncate(rng.below(p.len()));
            p
        }
    }
}

/// Where the messages of an IPC stream lie: (metadata range, body range) per message.
fn ipc_layout(bytes: &[u8]) -> Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 8 <= bytes.len() {
        let len = i32::from_le_bytes(bytes[pos + 4..pos + 8].try_into().expect("4 bytes"));
        let Ok(len) = usize::try_from(len) else { break };
        if len == 0 || pos + 8 + len > bytes.len() {
            break;
        }
        let meta = pos + 8..pos + 8 + len;
        let body_len = arrow_ipc::root_as_message(&bytes[meta.clone()])
            .map_or(0, |m| usize::try_from(m.bodyLength()).unwrap_or(0));
        let body = meta.end..(meta.end + body_len).min(bytes.len());
        pos = body.end;
        out.push((meta, body));
    }
    out
}

/// Flips bits, overwrites a run, or rewrites a 4- or 8-byte little-endian integer in an IPC
/// message's metadata (`metadata`) or body.
fn ipc_mutation(bytes: &mut [u8], rng: &mut Rng, metadata: bool) {
    let layout = ipc_layout(bytes);
    let ranges: Vec<std::ops::Range<usize>> = layout
        .into_iter()
        .map(|(m, b)| if metadata { m } else { b })
        .filter(|r| !r.is_empty())
        .collect();
    let range = if ranges.is_empty() {
        0..bytes.len()
    } else {
        rng.pick(&ranges).clone()
    };
    let at = range.start + rng.below(range.len());
    match rng.below(4) {
        0 => bytes[at] ^= 1 << rng.below(8),
        1 => {
            let n = (1 + rng.below(8)).min(range.end - at);
            let run = rng.bytes(n);
            bytes[at..at + n].copy_from_slice(&run);
        }
        2 => {
            let at = range.start
                + (rng.below(range.len() / 4 + 1) * 4).min(range.len().saturating_sub(4));
            let value = *rng.pick(&[0_i32, 1, -1, 7, 8, 64, i32::MAX, i32::MIN, 1 << 20]);
            if at + 4 <= bytes.len() {
                bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
            }
        }
        _ => {
            let at = range.start
                + (rng.below(range.len() / 8 + 1) * 8).min(range.len().saturating_sub(8));
            let value = *rng.pick(&[0_i64, 1, -1, 8, i64::MAX, i64::MIN, 1 << 40]);
            if at + 8 <= bytes.len() {
                bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
            }
        }
    }
}

/// Decodes the section's batch, changes one value (a key, a timestamp, a value, a null),
/// and re-encodes it with Arrow's writer: structurally perfect bytes of other content.
fn value_mutation(bytes: &mut Vec<u8>, rng: &mut Rng) {
    let Ok(reader) = StreamReader::try_new(bytes.as_slice(), None) else {
        return;
    };
    let schema = reader.schema();
    let Some(Ok(batch)) = reader.into_iter().next() else {
        return;
    };
    let rows = batch.num_rows();
    let row = rng.below(rows);
    let col = rng.below(batch.num_columns());
    let column = batch.column(col);
    let replaced: ArrayRef = match column.data_type() {
        DataType::Binary => {
            let a = column
                .as_any()
                .downcast_ref::<BinaryArray>()
                .expect("binary");
            let mut v: Vec<Vec<u8>> = a.iter().map(|k| k.unwrap_or_default().to_vec()).collect();
            match rng.below(3) {
                0 if rows > 1 => {
                    let next = v[(row + 1) % rows].clone();
                    v[row] = next;
                }
                1 => {
                    let n = rng.below(12);
                    v[row] = rng.bytes(n);
                }
                _ => v[row].push(rng.byte()),
            }
            Arc::new(BinaryArray::from_iter_values(v))
        }
        DataType::Int64 => {
            let a = column.as_any().downcast_ref::<Int64Array>().expect("i64");
            let mut v: Vec<Option<i64>> = a.iter().collect();
            let random = rng.next() as i64;
            v[row] = Some(*rng.pick(&[0, 1, -1, i64::MAX, i64::MIN, NOW - TTL_MS, random]));
            Arc::new(Int64Array::from(v))
        }
        DataType::Float64 => {
            let a = column.as_any().downcast_ref::<Float64Array>().expect("f64");
            let mut v: Vec<Option<f64>> = a.iter().collect();
            v[row] = Some(*rng.pick(&[f64::NAN, -0.0, f64::INFINITY, 1e300]));
            Arc::new(Float64Array::from(v))
        }
        DataType::Utf8 => {
            let a = column.as_any().downcast_ref::<StringArray>().expect("utf8");
            let mut v: Vec<Option<String>> = a.iter().map(|s| s.map(str::to_owned)).collect();
            v[row] = match v[row] {
                Some(_) => None,
                None => Some("é-mutated".to_owned()),
            };
            Arc::new(StringArray::from(v))
        }
        _ => Arc::clone(column),
    };
    let mut columns = batch.columns().to_vec();
    columns[col] = replaced;
    let Ok(batch) = RecordBatch::try_new(Arc::clone(&schema), columns) else {
        return;
    };
    let mut w = StreamWriter::try_new(Vec::new(), &schema).expect("writer");
    w.write(&batch).expect("write");
    w.finish().expect("finish");
    *bytes = w.into_inner().expect("bytes");
}

/// Writes `source` into a fresh directory container under `root` (one committed generation).
fn write_dir(source: &MemoryContainer, root: &Path) -> DirContainer {
    let mut dir = DirContainer::open(root).expect("open dir");
    dir.begin_generation().expect("begin");
    for kg in source.key_groups().expect("kgs") {
        let (header, chunks) = stored(source, kg);
        let chunks: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        dir.put_key_group(kg, &header, &chunks).expect("put");
    }
    let manifest = source.get_manifest().expect("get").expect("manifest");
    dir.commit_generation(&manifest).expect("commit");
    dir
}

/// Applies one directory mutation; returns the container to restore from (or the typed
/// error opening it gives).
fn mutate_dir(
    root: &Path,
    dir: &DirContainer,
    other: &MemoryContainer,
    mutation: &str,
    rng: &mut Rng,
) -> Result<DirContainer, sfcs_format::Error> {
    let generation = dir.generation_path().expect("committed generation");
    let kgs = dir.key_groups().expect("kgs");
    let kg = *rng.pick(&kgs);
    let path = dir.key_group_path(kg);
    let write = |p: PathBuf, b: &[u8]| std::fs::write(p, b).expect("write");
    match mutation {
        "dir-stray-temp-files" => {
            write(root.join(format!(".tmp-{}", rng.next())), &rng.bytes(40));
            write(
                generation.join(format!(".tmp-{}", rng.next())),
                &rng.bytes(40),
            );
            write(generation.join("kg-7.sfkg.bak"), b"not a key group");
            let stray_gen = root.join("gen-9999999999");
            std::fs::create_dir_all(&stray_gen).expect("stray generation");
            write(stray_gen.join("MANIFEST"), &rng.bytes(30));
            write(stray_gen.join("kg-00001.sfkg"), &rng.bytes(30));
        }
        "dir-stray-key-group-file" => {
            let free = (0..1000).find(|k| !kgs.contains(k)).expect("free");
            std::fs::copy(&path, dir.key_group_path(free)).expect("copy");
        }
        "dir-delete-file" => std::fs::remove_file(&path).expect("remove"),
        "dir-swap-files" => {
            // Swap with another key group's file (swapping a file with itself is no mutation).
            let others: Vec<u32> = kgs.iter().copied().filter(|&k| k != kg).collect();
            let other_kg = *rng.pick(&others);
            let tmp = root.join("swap.tmp");
            std::fs::rename(&path, &tmp).expect("rename");
            std::fs::rename(dir.key_group_path(other_kg), &path).expect("rename");
            std::fs::rename(&tmp, dir.key_group_path(other_kg)).expect("rename");
        }
        "dir-truncate-file" => {
            let bytes = std::fs::read(&path).expect("read");
            write(path, &bytes[..rng.below(bytes.len())]);
        }
        "dir-flip-file" => {
            let mut bytes = std::fs::read(&path).expect("read");
            let bit = rng.below(bytes.len() * 8);
            bytes[bit / 8] ^= 1 << (bit % 8);
            write(path, &bytes);
        }
        "dir-manifest-damage" => {
            let manifest = dir.manifest_path();
            let mut bytes = std::fs::read(&manifest).expect("read");
            match rng.below(3) {
                0 => std::fs::remove_file(&manifest).expect("remove"),
                1 => write(manifest, &bytes[..rng.below(bytes.len())]),
                _ => {
                    let bit = rng.below(bytes.len() * 8);
                    bytes[bit / 8] ^= 1 << (bit % 8);
                    write(manifest, &bytes);
                }
            }
        }
        "dir-current-damage" => {
            let current = root.join(sfcs_format::CURRENT_FILE);
            let mut bytes = std::fs::read(&current).expect("read");
            match rng.below(3) {
                0 => std::fs::remove_file(&current).expect("remove"),
                1 => write(current, &bytes[..rng.below(bytes.len())]),
                _ => {
                    let bit = rng.below(bytes.len() * 8);
                    bytes[bit / 8] ^= 1 << (bit % 8);
                    write(current, &bytes);
                }
            }
        }
        "dir-interrupted-writer" => {
            let mut writer = DirContainer::open(root).expect("open");
            writer.begin_generation().expect("begin");
            for kg in other
                .key_groups()
                .expect("kgs")
                .into_iter()
                .take(1 + rng.below(8))
            {
                let (h, ch) = stored(other, kg);
                let ch: Vec<&[u8]> = ch.iter().map(Vec::as_slice).collect();
                writer.put_key_group(kg, &h, &ch).expect("put");
            }
        }
        other => panic!("unknown mutation {other}"),
    }
    DirContainer::open_existing(root)
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| {
            let v = v.trim();
            v.strip_prefix("0x")
                .map_or_else(|| v.parse().ok(), |h| u64::from_str_radix(h, 16).ok())
        })
        .unwrap_or(default)
}

/// Seeded corruption campaign (outcome rules in the state-api README): ≥ 10 000 mutations of
/// a two-table canonical snapshot (max parallelism 8, every key group with an envelope,
/// deadlines on some) in a [`MemoryContainer`] plus directory-level mutations of the same
/// snapshot in a [`DirContainer`], each restored into a store holding other state. Prints
/// the counts by mutation and outcome.
///
/// # Panics
/// On any panic, silent difference, or target changed by a failed restore (all listed).
#[allow(
    clippy::too_many_lines,
    reason = "setup, two loops and the report, read top to bottom"
)]
pub fn corruption_campaign<F: StoreFactory>(f: &F) {
    let seed = env_u64("SFSTATE_CAMPAIGN_SEED", 0x5eed_2026);
    let cases = env_u64("SFSTATE_CAMPAIGN_CASES", 10_000);
    let dir_cases = (cases / 100).max(40);
    let started = Instant::now();
    let mp = max_parallelism(8);
    let clock = ManualClock::new(NOW);
    let keys: Vec<Key> = (0..64).map(|i| key(i, mp)).collect();
    let mut source = Target::new(f, &clock, mp);
    source.fill(&keys, 1_000);
    let original = source.snapshot();
    let (original_logical, _) = reference(&original).expect("the pristine snapshot reads");
    let mut target = Target::new(f, &clock, mp);
    target.fill(&keys[..20], -50);
    let before_snapshot = target.snapshot();
    let before_state = target.state(&keys);
    let before = Before {
        snapshot: &before_snapshot,
        keys: &keys,
        state: &before_state,
    };
    let mut other = Target::new(f, &clock, mp);
    other.fill(&keys[10..40], 77);
    let other_snapshot = other.snapshot();

    let mut tally = Tally {
        counts: BTreeMap::new(),
        failures: Vec::new(),
    };
    for case in 0..cases {
        let mut rng = Rng(seed ^ case.wrapping_mul(0x2545_F491_4F6C_DD1D));
        let mutation = *rng.pick(CONTAINER_MUTATIONS);
        let mutated = mutate(&original, mutation, &mut rng, 8);
        let label = format!("seed {seed:#x} case {case}");
        run_case(
            &mut target,
            &before,
            &mutated,
            &original_logical,
            mutation,
            &label,
            &mut tally,
        );
    }
    let container_time = started.elapsed();
    let root = std::env::temp_dir().join(format!(
        "sfstate-campaign-{}-{}",
        std::process::id(),
        seed ^ started.elapsed().as_nanos() as u64
    ));
    for case in 0..dir_cases {
        let mut rng = Rng(!seed ^ case.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mutation = *rng.pick(DIR_MUTATIONS);
        let dir_root = root.join(format!("case-{case}"));
        let dir = write_dir(&original, &dir_root);
        let label = format!("seed {seed:#x} dir case {case}");
        match mutate_dir(&dir_root, &dir, &other_snapshot, mutation, &mut rng) {
            Ok(mutated) => {
                run_case(
                    &mut target,
                    &before,
                    &mutated,
                    &original_logical,
                    mutation,
                    &label,
                    &mut tally,
                );
            }
            Err(err) => tally.record(mutation, format!("refused at open: {}", label_sfcs(&err))),
        }
        let _ = std::fs::remove_dir_all(&dir_root);
    }
    let _ = std::fs::remove_dir_all(&root);

    println!(
        "corruption campaign: seed {seed:#x}, {cases} container cases in {:.1} s, \
         {dir_cases} directory cases in {:.1} s",
        container_time.as_secs_f64(),
        started
            .elapsed()
            .saturating_sub(container_time)
            .as_secs_f64()
    );
    let mut last = "";
    for ((mutation, outcome), n) in &tally.counts {
        if mutation != last {
            println!("  {mutation}");
            last = mutation;
        }
        println!("      {n:>6}  {outcome}");
    }
    let panics: usize = tally
        .counts
        .iter()
        .filter(|((_, o), _)| o.starts_with("PANIC"))
        .map(|(_, n)| n)
        .sum();
    println!("  panics: {panics}, failures: {}", tally.failures.len());
    assert!(
        tally.failures.is_empty(),
        "{} failing cases (first 20):\n{}",
        tally.failures.len(),
        tally
            .failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

fn label_sfcs(err: &sfcs_format::Error) -> String {
    format!("{err:?}")
        .split([' ', '{', '('])
        .next()
        .unwrap_or_default()
        .to_owned()
}
