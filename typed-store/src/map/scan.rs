//! Scans of the map table: RocksDB bounds of a user-key range, the batched reads of
//! committed entries, and their merge with the bundle's working set.

use std::ops::{Bound, ControlFlow};

use rocksdb::ReadOptions;
use state_api::{
    PrefixRange, Result, ScanDirection, UserKeyRange, ValueCodec, full_key_bounds, ttl_scan_visible,
};

use crate::error::rocks_api;
use crate::format::split_value;

use super::{Entry, RocksMapTable};

/// Committed entries a scan decodes at once, first and at most: a scan starts with one
/// entry (so `first` decodes one value) and grows the batch sixteenfold up to the maximum
/// (1, 16, 256, 256, ...: a 100-entry scan decodes in three calls, not five).
const SCAN_BATCH_FIRST: usize = 1;
const SCAN_BATCH_GROWTH: usize = 16;
const SCAN_BATCH_MAX: usize = 256;

/// Inclusive lower and exclusive upper bound (`None`: unbounded) over full RocksDB keys of
/// `range` inside `full_prefix` (key-group prefix ‖ prefix), or `None` when it is empty.
pub(super) fn rocks_bounds(
    full_prefix: &[u8],
    range: UserKeyRange<'_>,
) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    if range.is_empty() {
        return None;
    }
    let (lo, hi) = full_key_bounds(full_prefix, range);
    // The successor of `k` among byte strings is `k ‖ 0x00`.
    let successor = |mut k: Vec<u8>| {
        k.push(0);
        k
    };
    let lo = match lo {
        Bound::Included(k) => k,
        Bound::Excluded(k) => successor(k),
        Bound::Unbounded => full_prefix.to_vec(),
    };
    let hi = match hi {
        Bound::Included(k) => Some(successor(k)),
        Bound::Excluded(k) => Some(k),
        Bound::Unbounded => None,
    };
    if hi.as_ref().is_some_and(|hi| *hi <= lo) {
        return None;
    }
    Some((lo, hi))
}

/// Committed entries read from RocksDB for one scan step: keys and stored values in flat
/// buffers (no allocation per entry), decoded together.
#[derive(Debug, Default)]
pub(super) struct ReadBatch {
    keys: Vec<u8>,
    key_ends: Vec<usize>,
    values: Vec<u8>,
    value_ends: Vec<usize>,
}

impl ReadBatch {
    pub(super) fn clear(&mut self) {
        self.keys.clear();
        self.key_ends.clear();
        self.values.clear();
        self.value_ends.clear();
    }

    pub(super) fn push(&mut self, key: &[u8], value: &[u8]) {
        self.keys.extend_from_slice(key);
        self.key_ends.push(self.keys.len());
        self.values.extend_from_slice(value);
        self.value_ends.push(self.values.len());
    }

    pub(super) fn len(&self) -> usize {
        self.key_ends.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.key_ends.is_empty()
    }

    fn slices<'a>(buf: &'a [u8], ends: &'a [usize]) -> impl ExactSizeIterator<Item = &'a [u8]> {
        ends.iter().enumerate().map(move |(i, &end)| {
            let start = if i == 0 {
                0
            } else {
                ends.get(i - 1).copied().unwrap_or(0)
            };
            buf.get(start..end).unwrap_or_default()
        })
    }

    pub(super) fn keys(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        Self::slices(&self.keys, &self.key_ends)
    }

    /// The bytes of every value pushed.
    pub(super) fn value_bytes(&self) -> usize {
        self.values.len()
    }

    pub(super) fn values(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        Self::slices(&self.values, &self.value_ends)
    }
}

impl<C: ValueCodec> RocksMapTable<C> {
    /// The merge of [`MapTable::scan`]: the working set's entries of `range` inside
    /// `full_prefix` with the committed ones (unless the prefix is hydrated), read through
    /// `batch`.
    pub(super) fn scan_merged<F>(
        &mut self,
        full_prefix: &[u8],
        batch: &mut ReadBatch,
        range: UserKeyRange<'_>,
        direction: ScanDirection,
        visit: &mut F,
    ) -> Result<()>
    where
        F: FnMut(&[u8], &C::Value) -> ControlFlow<()> + ?Sized,
    {
        if range.is_empty() {
            return Ok(());
        }
        if self.prefix_resident(full_prefix) {
            self.scan_hydrated(full_prefix, range, direction, visit);
            return Ok(());
        }
        let now = self.now();
        let ttl = self.ttl;
        let skip = full_prefix.len();
        let Some((lo, hi)) = rocks_bounds(full_prefix, range) else {
            return Ok(());
        };
        let forward = direction == ScanDirection::Forward;
        let in_range = self
            .entries
            .range(full_prefix, (range.start(), range.end()));
        let ordered: OverlayIter<'_, C::Value> = if forward {
            OverlayIter::Forward(in_range)
        } else {
            OverlayIter::Reverse(in_range.rev())
        };
        let mut overlay: Overlay<'_, C::Value> = ordered.peekable();
        let visible =
            |e: &Entry<C::Value>| e.live && ttl_scan_visible(ttl.as_ref(), e.last_access, now);

        let st = self.shared.read();
        let cf = st.table_cf(&self.name)?;
        let mut options = ReadOptions::default();
        options.set_iterate_lower_bound(lo.clone());
        if let Some(hi) = &hi {
            options.set_iterate_upper_bound(hi.clone());
        }
        let mut iter = st.db.raw_iterator_cf_opt(&cf, options);
        if forward {
            iter.seek(&lo);
        } else {
            iter.seek_to_last();
        }
        let mut batch_size = SCAN_BATCH_FIRST;
        let mut stopped = false;
        while !stopped {
            batch.clear();
            while batch.len() < batch_size {
                let Some((key, value)) = iter.item() else {
                    break;
                };
                let shadowed = self
                    .entries
                    .get(full_prefix, key.get(skip..).unwrap_or_default())
                    .is_some();
                let shown = split_value(value)
                    .is_none_or(|(ts, _)| ttl_scan_visible(ttl.as_ref(), ts, now));
                if !shadowed && shown {
                    batch.push(key, value);
                }
                if forward {
                    iter.next();
                } else {
                    iter.prev();
                }
            }
            let exhausted = !iter.valid();
            if exhausted {
                iter.status().map_err(rocks_api("scan"))?;
            }
            let (_, values) = self.decode(batch.values())?;
            for (key, value) in batch.keys().zip(&values) {
                let user_key = key.get(skip..).unwrap_or_default();
                if drain_overlay(&mut overlay, Some(user_key), forward, &visible, visit).is_break()
                    || visit(user_key, value).is_break()
                {
                    stopped = true;
                    break;
                }
            }
            if exhausted && !stopped {
                let _ = drain_overlay(&mut overlay, None, forward, &visible, visit);
                stopped = true;
            }
            batch_size = (batch_size * SCAN_BATCH_GROWTH).min(SCAN_BATCH_MAX);
        }
        drop(iter);
        drop(cf);
        drop(st);
        drop(overlay);
        self.stats.point_hydrations += 1;
        Ok(())
    }

    /// A scan of a hydrated prefix, served from the working set alone: one probe of the
    /// prefix index, the prefix's entries in order.
    fn scan_hydrated<F>(
        &mut self,
        full_prefix: &[u8],
        range: UserKeyRange<'_>,
        direction: ScanDirection,
        visit: &mut F,
    ) where
        F: FnMut(&[u8], &C::Value) -> ControlFlow<()> + ?Sized,
    {
        let now = self.now();
        let ttl = self.ttl;
        let mut step = |user_key: &[u8], e: &Entry<C::Value>| match &e.value {
            Some(value) if e.live && ttl_scan_visible(ttl.as_ref(), e.last_access, now) => {
                visit(user_key, value)
            }
            _ => ControlFlow::Continue(()),
        };
        let entries = self
            .entries
            .range(full_prefix, (range.start(), range.end()));
        let _ = if direction == ScanDirection::Forward {
            entries.into_iter().try_for_each(|(k, e)| step(k, e))
        } else {
            entries.rev().try_for_each(|(k, e)| step(k, e))
        };
    }

    /// Full keys and timestamps of the committed entries in `[lo, hi)` that the working set
    /// does not hold.
    pub(super) fn committed_keys(
        &self,
        full_prefix: &[u8],
        lo: &[u8],
        hi: Option<&[u8]>,
    ) -> Result<Vec<(Vec<u8>, i64)>> {
        let st = self.shared.read();
        let cf = st.table_cf(&self.name)?;
        let mut options = ReadOptions::default();
        if let Some(hi) = hi {
            options.set_iterate_upper_bound(hi);
        }
        let mut iter = st.db.raw_iterator_cf_opt(&cf, options);
        iter.seek(lo);
        let mut out = Vec::new();
        while let Some((key, value)) = iter.item() {
            let user_key = key.get(full_prefix.len()..).unwrap_or_default();
            if self.entries.get(full_prefix, user_key).is_none() {
                let ts = split_value(value).map_or(0, |(ts, _)| ts);
                out.push((key.to_vec(), ts));
            }
            iter.next();
        }
        iter.status().map_err(rocks_api("range scan"))?;
        Ok(out)
    }
}

/// The working-set entries of a scan's range in scan order (no allocation per scan).
enum OverlayIter<'a, V> {
    Forward(PrefixRange<'a, Entry<V>>),
    Reverse(std::iter::Rev<PrefixRange<'a, Entry<V>>>),
}

impl<'a, V> Iterator for OverlayIter<'a, V> {
    type Item = (&'a [u8], &'a Entry<V>);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Self::Forward(range) => range.next(),
            Self::Reverse(range) => range.next(),
        }
    }
}

/// The working-set side of a merged scan.
type Overlay<'a, V> = std::iter::Peekable<OverlayIter<'a, V>>;

/// Visits the overlay entries before the user key `bound` (all when `None`) in scan order;
/// `Break` when the visitor stopped.
fn drain_overlay<V, F>(
    overlay: &mut Overlay<'_, V>,
    bound: Option<&[u8]>,
    forward: bool,
    visible: &dyn Fn(&Entry<V>) -> bool,
    visit: &mut F,
) -> ControlFlow<()>
where
    F: FnMut(&[u8], &V) -> ControlFlow<()> + ?Sized,
{
    while let Some((key, _)) = overlay.peek() {
        let before = bound.is_none_or(|b| if forward { *key < b } else { *key > b });
        if !before {
            break;
        }
        if let Some((key, entry)) = overlay.next()
            && visible(entry)
            && let Some(value) = &entry.value
        {
            visit(key, value)?;
        }
    }
    ControlFlow::Continue(())
}
