//! The probe of one input row: the other side's records of its join key, from the bundle's
//! probe cache or a prefix scan of the other side's table, each match written to the output.
//!
//! The cache holds, per side and join key of the bundle, the records a scan visited (their
//! bytes in one arena and their counts), charged to the memory pool: the bundle's cache
//! takes at most the probe-cache budget, and a scan whose records do not fit (the budget or
//! the pool refuses) drops what it had cached of that key and goes on lazily, writing each
//! record's matches as it is visited and holding none of them. Only a probe whose key the
//! same side probes again later in the bundle caches: a key probed once would be copied for
//! no reader. A side's entry of a key is dropped when that side's records of the key change;
//! arena bytes stay charged until the bundle ends, reserved from the pool in steps of
//! [`RESERVE_STEP`] within the budget.

use std::ops::{ControlFlow, Range};

use keygroup::{KeyGroup, LogicalType};
use state_api::{I64Codec, MapTable, MemoryReservation, Scalar, ScanDirection, UserKeyRange};

use crate::condition::{JoinCondition, JoinSide};
use crate::error::Result;
use crate::key::RecordEncoder;

use super::bundle::{BundleInput, InputRow, KeyId, RETAINED_BYTES};
use super::output::{Emitter, RecordRef, null_bits};

/// One side's record layout.
pub(super) struct Layout<'a> {
    encoder: &'a RecordEncoder,
    types: &'a [LogicalType],
    null_bits: usize,
}

impl<'a> Layout<'a> {
    /// The layout of records made by `encoder`.
    pub(super) fn of(encoder: &'a RecordEncoder) -> Self {
        let types = encoder.types();
        Self {
            encoder,
            types,
            null_bits: null_bits(types),
        }
    }

    fn record<'b>(&'b self, bytes: &'b [u8]) -> RecordRef<'b> {
        RecordRef::new(bytes, self.types, self.null_bits)
    }
}

/// Bytes charged per cached record beside its own bytes.
const RECORD_OVERHEAD: usize = std::mem::size_of::<(Range<usize>, i64)>();

/// Pool bytes the cache reserves at a time: one pool update per 64 KiB of cached records,
/// not one (an atomic read-modify-write on a shared pool) per record.
const RESERVE_STEP: usize = 64 << 10;

/// The bundle's probe cache (see the module docs).
pub(super) struct ProbeCache {
    bytes: Vec<u8>,
    records: Vec<(Range<usize>, i64)>,
    /// Per side (0 left, 1 right) and key id: the key's records in `records`.
    entries: [Vec<Option<Range<usize>>>; 2],
    used: usize,
    budget: usize,
    reservation: MemoryReservation,
}

fn side_index(left: bool) -> usize {
    usize::from(!left)
}

/// A probe cache's buffers between bundles.
#[derive(Debug, Default)]
pub(super) struct CacheBuffers {
    bytes: Vec<u8>,
    records: Vec<(Range<usize>, i64)>,
    entries: [Vec<Option<Range<usize>>>; 2],
}

impl ProbeCache {
    /// An empty cache for a bundle of `keys` distinct join keys, in `buffers` (emptied).
    pub(super) fn new(
        keys: usize,
        budget: usize,
        reservation: MemoryReservation,
        buffers: CacheBuffers,
    ) -> Self {
        let CacheBuffers {
            mut bytes,
            mut records,
            mut entries,
        } = buffers;
        bytes.clear();
        records.clear();
        for e in &mut entries {
            e.clear();
            e.resize(keys, None);
        }
        Self {
            bytes,
            records,
            entries,
            used: 0,
            budget,
            reservation,
        }
    }

    /// Returns everything to the pool and hands back the buffers, at most
    /// [`RETAINED_BYTES`] of them kept (the cached bytes are not charged between bundles).
    pub(super) fn finish(mut self) -> CacheBuffers {
        self.reservation.free();
        self.bytes.clear();
        self.bytes.shrink_to(RETAINED_BYTES);
        self.records.clear();
        self.records.shrink_to(RETAINED_BYTES / RECORD_OVERHEAD);
        for e in &mut self.entries {
            e.clear();
        }
        CacheBuffers {
            bytes: self.bytes,
            records: self.records,
            entries: self.entries,
        }
    }

    fn entry(&self, left: bool, key: KeyId) -> Option<Range<usize>> {
        self.entries
            .get(side_index(left))
            .and_then(|e| e.get(key))
            .cloned()
            .flatten()
    }

    /// Drops the cached records of `key` of the left (`left`) or right side.
    pub(super) fn invalidate(&mut self, left: bool, key: KeyId) {
        if let Some(e) = self
            .entries
            .get_mut(side_index(left))
            .and_then(|e| e.get_mut(key))
        {
            *e = None;
        }
    }

    /// Caches one record of the scan in progress; `false` when the budget or the pool
    /// refuses it.
    fn admit(&mut self, record: &[u8], count: i64) -> bool {
        let bytes = record.len() + RECORD_OVERHEAD;
        let need = self.used + bytes;
        if need > self.budget || !self.reserve(need) {
            return false;
        }
        self.used = need;
        let start = self.bytes.len();
        self.bytes.extend_from_slice(record);
        self.records.push((start..self.bytes.len(), count));
        true
    }

    /// Makes the reservation cover `need` bytes (at most the budget): a step of
    /// [`RESERVE_STEP`] when the pool grants it, else exactly what is missing.
    fn reserve(&mut self, need: usize) -> bool {
        let reserved = self.reservation.size();
        if need <= reserved {
            return true;
        }
        let short = need - reserved;
        let step = short.max(RESERVE_STEP.min(self.budget.saturating_sub(reserved)));
        self.reservation.try_grow(step).is_ok()
            || (step > short && self.reservation.try_grow(short).is_ok())
    }

    /// Drops what the scan in progress cached since `mark` (its reserved bytes stay reserved
    /// for the bundle's next records).
    fn rollback(&mut self, mark: Mark) {
        self.used = mark.used;
        self.bytes.truncate(mark.bytes);
        self.records.truncate(mark.records);
    }

    fn mark(&self) -> Mark {
        Mark {
            bytes: self.bytes.len(),
            records: self.records.len(),
            used: self.used,
        }
    }
}

/// Where a scan's caching started.
#[derive(Debug, Clone, Copy)]
struct Mark {
    bytes: usize,
    records: usize,
    used: usize,
}

/// What every probe of a bundle shares.
pub(super) struct Probe<'a> {
    pub(super) condition: Option<&'a JoinCondition>,
    pub(super) input: &'a BundleInput,
    pub(super) left: Layout<'a>,
    pub(super) right: Layout<'a>,
}

/// One probing row: its record and, with a condition, its values.
struct Probing<'a> {
    row: &'a InputRow,
    is_left: bool,
    own: RecordRef<'a>,
    values: Option<Vec<Scalar>>,
    condition: Option<&'a JoinCondition>,
    theirs: &'a Layout<'a>,
}

impl Probing<'_> {
    /// Writes the match of this row with the other side's `record` (`count` copies) when
    /// the condition holds.
    fn emit(&self, out: &mut Emitter<'_>, record: &[u8], count: i64) -> Result<()> {
        if let (Some(c), Some(own)) = (self.condition, &self.values) {
            let other = self.theirs.encoder.decode(record)?;
            let holds = if self.is_left {
                c.eval(own, &other)
            } else {
                c.eval(&other, own)
            };
            if !holds {
                return Ok(());
            }
        }
        let other = self.theirs.record(record);
        let (l, r) = if self.is_left {
            (&self.own, &other)
        } else {
            (&other, &self.own)
        };
        out.push(self.row.kind, l, r, count)
    }
}

impl Probe<'_> {
    /// Writes the matches of `row` (join key `prefix` of `key_group`) with the records of
    /// `other`, the other side's table, with `row`'s kind.
    ///
    /// # Errors
    /// A store error, a record that does not decode, the sink's error.
    pub(super) fn run<M: MapTable<Codec = I64Codec>>(
        &self,
        row: &InputRow,
        key_group: KeyGroup,
        prefix: &[u8],
        other: &mut M,
        cache: &mut ProbeCache,
        out: &mut Emitter<'_>,
    ) -> Result<()> {
        let is_left = row.side == JoinSide::Left;
        let (mine, theirs) = if is_left {
            (&self.left, &self.right)
        } else {
            (&self.right, &self.left)
        };
        let own_bytes = self.input.slice(&row.record);
        let probing = Probing {
            row,
            is_left,
            own: mine.record(own_bytes),
            values: match self.condition {
                Some(_) => Some(mine.encoder.decode(own_bytes)?),
                None => None,
            },
            condition: self.condition,
            theirs,
        };
        if let Some(range) = cache.entry(!is_left, row.key) {
            for (bytes, count) in cache.records.get(range).unwrap_or_default() {
                let record = cache.bytes.get(bytes.clone()).unwrap_or_default();
                probing.emit(out, record, *count)?;
            }
            return Ok(());
        }
        let mark = cache.mark();
        let mut caching = row.probed_again;
        let mut failure = None;
        other.scan(
            key_group,
            prefix,
            UserKeyRange::all(),
            ScanDirection::Forward,
            &mut |record, count| {
                if caching && !cache.admit(record, *count) {
                    caching = false;
                    cache.rollback(mark);
                }
                match probing.emit(out, record, *count) {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(e) => {
                        failure = Some(e);
                        ControlFlow::Break(())
                    }
                }
            },
        )?;
        if let Some(e) = failure {
            cache.rollback(mark);
            return Err(e);
        }
        if caching
            && let Some(e) = cache
                .entries
                .get_mut(side_index(!is_left))
                .and_then(|e| e.get_mut(row.key))
        {
            *e = Some(mark.records..cache.records.len());
        }
        Ok(())
    }
}
