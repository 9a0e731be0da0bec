//! Map tables: ordered entries per prefix (Flink's `MapState`, one backend key per entry).

use std::ops::{Bound, ControlFlow};

use keygroup::{KeyGroup, KeyGroupRange};

use crate::codec::ValueCodec;
use crate::error::Result;
use crate::snapshot::CanonicalTable;
use crate::sweep::SweepProgress;
use crate::table::{KeyedStateStore, TableStats};
use crate::ttl::TtlConfig;

/// The value type of a map table's codec.
pub type MapValueOf<T> = <<T as MapTable>::Codec as ValueCodec>::Value;

/// The visitor of [`MapTable::scan`]: gets each entry's user key and value, returns
/// [`ControlFlow::Break`] to stop.
pub type ScanVisitor<'v, V> = dyn FnMut(&[u8], &V) -> ControlFlow<()> + 'v;

/// A range of user keys inside one prefix, by bytes. Both ends may be unbounded, inclusive or
/// exclusive. A range whose start lies after its end is empty (not an error).
///
/// ```
/// use std::ops::Bound;
/// use state_api::UserKeyRange;
///
/// let r = UserKeyRange::new(Bound::Included(b"b"), Bound::Excluded(b"d"));
/// assert!(r.contains(b"b") && r.contains(b"c\xff") && !r.contains(b"d"));
/// assert!(UserKeyRange::all().contains(b""));
/// assert!(UserKeyRange::new(Bound::Included(b"x"), Bound::Excluded(b"a")).is_empty());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserKeyRange<'a> {
    start: Bound<&'a [u8]>,
    end: Bound<&'a [u8]>,
}

impl<'a> UserKeyRange<'a> {
    /// Every user key of the prefix.
    pub const fn all() -> Self {
        Self {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
        }
    }

    /// The user keys between `start` and `end`.
    pub const fn new(start: Bound<&'a [u8]>, end: Bound<&'a [u8]>) -> Self {
        Self { start, end }
    }

    /// User keys `>= start`.
    pub const fn from(start: &'a [u8]) -> Self {
        Self::new(Bound::Included(start), Bound::Unbounded)
    }

    /// User keys `< end`.
    pub const fn before(end: &'a [u8]) -> Self {
        Self::new(Bound::Unbounded, Bound::Excluded(end))
    }

    /// The lower bound.
    pub const fn start(&self) -> Bound<&'a [u8]> {
        self.start
    }

    /// The upper bound.
    pub const fn end(&self) -> Bound<&'a [u8]> {
        self.end
    }

    /// Whether `user_key` lies in the range.
    pub fn contains(&self, user_key: &[u8]) -> bool {
        let above = match self.start {
            Bound::Unbounded => true,
            Bound::Included(s) => user_key >= s,
            Bound::Excluded(s) => user_key > s,
        };
        let below = match self.end {
            Bound::Unbounded => true,
            Bound::Included(e) => user_key <= e,
            Bound::Excluded(e) => user_key < e,
        };
        above && below
    }

    /// Whether no user key can lie in the range.
    pub fn is_empty(&self) -> bool {
        match (self.start, self.end) {
            (Bound::Included(s), Bound::Included(e)) => s > e,
            (Bound::Included(s) | Bound::Excluded(s), Bound::Excluded(e))
            | (Bound::Excluded(s), Bound::Included(e)) => s >= e,
            _ => false,
        }
    }
}

/// The order in which [`MapTable::scan`] visits entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScanDirection {
    /// Ascending user-key bytes.
    #[default]
    Forward,
    /// Descending user-key bytes.
    Reverse,
}

/// What a bundle of a [`MapTable`] hydrates: whole prefixes and single entries.
#[derive(Debug, Clone, Copy, Default)]
pub struct MapHydration<'a> {
    /// Prefixes whose every entry the bundle will read or scan (one seek per prefix on a
    /// persistent backend, then served from memory for the bundle).
    pub prefixes: &'a [(KeyGroup, &'a [u8])],
    /// Single entries `(key group, prefix, user key)` the bundle will read.
    pub entries: &'a [(KeyGroup, &'a [u8], &'a [u8])],
}

impl<'a> MapHydration<'a> {
    /// Hydrates nothing.
    pub const fn none() -> Self {
        Self {
            prefixes: &[],
            entries: &[],
        }
    }

    /// Hydrates whole `prefixes`.
    pub const fn prefixes(prefixes: &'a [(KeyGroup, &'a [u8])]) -> Self {
        Self {
            prefixes,
            entries: &[],
        }
    }

    /// Hydrates single `entries`.
    pub const fn entries(entries: &'a [(KeyGroup, &'a [u8], &'a [u8])]) -> Self {
        Self {
            prefixes: &[],
            entries,
        }
    }
}

/// A table of entries addressed by (key group, prefix, user key), ordered by user-key bytes
/// within a prefix, used in bundles. The model is Flink's `MapState`: the prefix is the
/// operator's key ‖ namespace (as `keygroup::CompositeKeyBuilder` builds it), the user key is
/// the map key, and every entry is one backend key `key-group prefix ‖ prefix ‖ user key`.
///
/// # Prefixes
///
/// Within one key group, no prefix may be a proper prefix of another prefix the caller uses
/// (Flink's composite keys guarantee this: serializers are self-delimiting or carry a length
/// suffix). A prefix scan returns every entry whose backend key starts with the prefix, so
/// overlapping prefixes would see each other's entries.
///
/// # Bundle contract
///
/// - [`begin_bundle`](MapTable::begin_bundle) opens a bundle and hydrates what it names:
///   every entry of each named prefix, and each named single entry (a persistent backend
///   uses one seek per prefix and one batched read for the entries). Naming twice is
///   allowed.
/// - Point operations, [`scan`](MapTable::scan), [`remove_range`](MapTable::remove_range)
///   and [`commit_bundle`](MapTable::commit_bundle) outside a bundle, and `begin_bundle`
///   inside one, return [`Error::BundleState`](crate::Error::BundleState) and change
///   nothing. Canonical snapshot and restore require a closed bundle.
/// - Every read sees the committed state **merged with the bundle's own uncommitted writes,
///   removes and range removes**; entries not hydrated are still served correctly (read
///   from the backend, counted in [`TableStats::point_hydrations`]).
/// - `commit_bundle` writes each dirty entry once (its last value, or a delete) and closes
///   the bundle; on a backend failure the bundle stays open with its writes pending.
/// - A key group outside [`key_groups`](MapTable::key_groups) is
///   [`Error::KeyGroupOutOfRange`](crate::Error::KeyGroupOutOfRange) and changes nothing;
///   a failed `put` (e.g. [`Error::MemoryExhausted`](crate::Error::MemoryExhausted)) leaves
///   the entry as it was.
///
/// # Scans
///
/// [`scan`](MapTable::scan) visits the entries of one prefix inside a [`UserKeyRange`] in
/// ascending or descending user-key order and stops when the visitor returns
/// [`ControlFlow::Break`]. The visitor receives the user key (without the prefix) and the
/// value; a backend allocates nothing per visited entry beyond decoding it.
///
/// # TTL
///
/// With a [`TtlConfig`], each entry carries its own last-access timestamp, set on `put`
/// and `update` (and, under `OnReadAndWrite`, on every point read), with Flink's rule
/// ([`TtlConfig::is_expired`]): a point read of an expired entry clears it (and returns it
/// only under `ReturnExpiredIfNotCleanedUp`). Scans skip expired entries under
/// `NeverReturnExpired` and return them under `ReturnExpiredIfNotCleanedUp`; they neither
/// refresh nor clear entries.
pub trait MapTable {
    /// The table's value codec.
    type Codec: ValueCodec;

    /// The table's name (its canonical section name).
    fn name(&self) -> &str;

    /// The key groups this table may hold.
    fn key_groups(&self) -> KeyGroupRange;

    /// Opens a bundle and hydrates `hydrate`.
    ///
    /// # Errors
    /// [`Error::BundleState`](crate::Error::BundleState) when a bundle is open;
    /// [`Error::KeyGroupOutOfRange`](crate::Error::KeyGroupOutOfRange); a backend read or
    /// decode failure. On error no bundle is open.
    fn begin_bundle(&mut self, hydrate: MapHydration<'_>) -> Result<()>;

    /// The value of `(prefix, user_key)`, if present and visible.
    ///
    /// # Errors
    /// Bundle state, key-group range, or a backend read failure.
    fn get(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
    ) -> Result<Option<&<Self::Codec as ValueCodec>::Value>>;

    /// Sets the value of `(prefix, user_key)`.
    ///
    /// # Errors
    /// Bundle state, key-group range, [`Error::MemoryExhausted`](crate::Error::MemoryExhausted).
    fn put(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
        value: <Self::Codec as ValueCodec>::Value,
    ) -> Result<()>;

    /// Applies `f` in place to the visible value of `(prefix, user_key)` and marks it written
    /// (TTL timestamp refreshed); returns `None` without calling `f` when there is no visible
    /// value. The value is neither cloned nor re-put, except that a backend with a bounded
    /// memory pool keeps a copy to restore when the pool refuses the value's growth.
    ///
    /// # Errors
    /// Bundle state, key-group range, a backend read failure, or
    /// [`Error::MemoryExhausted`](crate::Error::MemoryExhausted) when the value grew beyond
    /// the pool (the value is then as it was before `f`).
    fn update<R>(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
        f: impl FnOnce(&mut <Self::Codec as ValueCodec>::Value) -> R,
    ) -> Result<Option<R>>;

    /// Applies `f` in place to the visible value of `(prefix, user_key)` as
    /// [`update`](MapTable::update) does, or, when there is no visible value, sets it to
    /// `insert()` as [`put`](MapTable::put) does; returns `true` when it updated and `false`
    /// when it inserted. Counting state (a join's record counts, a multiset) is one upsert
    /// per record. The default is `update`, then `put` when that found nothing; a backend may
    /// override it to find the entry once.
    ///
    /// # Errors
    /// As `update` and `put`; on error the entry is as it was.
    fn upsert(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        user_key: &[u8],
        insert: impl FnOnce() -> <Self::Codec as ValueCodec>::Value,
        f: impl FnOnce(&mut <Self::Codec as ValueCodec>::Value),
    ) -> Result<bool> {
        if self.update(key_group, prefix, user_key, f)?.is_some() {
            return Ok(true);
        }
        self.put(key_group, prefix, user_key, insert())?;
        Ok(false)
    }

    /// Removes `(prefix, user_key)` (a no-op for an absent entry).
    ///
    /// # Errors
    /// Bundle state, key-group range, a backend failure.
    fn remove(&mut self, key_group: KeyGroup, prefix: &[u8], user_key: &[u8]) -> Result<()>;

    /// Removes every entry of `prefix` inside `range` (`UserKeyRange::all()`: Flink's
    /// `MapState.clear()`); returns how many visible entries it removed.
    ///
    /// # Errors
    /// Bundle state, key-group range, a backend failure. On error nothing is removed.
    fn remove_range(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        range: UserKeyRange<'_>,
    ) -> Result<u64>;

    /// A hint that an operation on `prefix` of `key_group` follows a few operations later
    /// (an operator that knows its bundle's order names each prefix about
    /// [`PREFETCH_AHEAD`](crate::PREFETCH_AHEAD) operations ahead): a backend may start
    /// bringing the prefix's entries into the CPU cache. It reads and changes nothing
    /// observable and never fails (a key group outside the table is ignored); the default
    /// does nothing.
    fn prefetch(&mut self, key_group: KeyGroup, prefix: &[u8]) {
        let _ = (key_group, prefix);
    }

    /// Visits the visible entries of `prefix` inside `range` in `direction` order until the
    /// visitor breaks.
    ///
    /// The visitor is generic (a closure is called directly, inlined into the backend's
    /// loop); a `&mut` [`ScanVisitor`] trait object is accepted too.
    ///
    /// # Errors
    /// Bundle state, key-group range, a backend read or decode failure.
    fn scan<F>(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        range: UserKeyRange<'_>,
        direction: ScanDirection,
        visit: &mut F,
    ) -> Result<()>
    where
        F: FnMut(&[u8], &<Self::Codec as ValueCodec>::Value) -> ControlFlow<()> + ?Sized;

    /// The first (smallest user key) visible entry of `prefix` inside `range`.
    ///
    /// # Errors
    /// As [`scan`](MapTable::scan).
    fn first(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        range: UserKeyRange<'_>,
    ) -> Result<Option<(Vec<u8>, MapValueOf<Self>)>>
    where
        Self: Sized,
    {
        edge(self, key_group, prefix, range, ScanDirection::Forward)
    }

    /// The last (largest user key) visible entry of `prefix` inside `range`.
    ///
    /// # Errors
    /// As [`scan`](MapTable::scan).
    fn last(
        &mut self,
        key_group: KeyGroup,
        prefix: &[u8],
        range: UserKeyRange<'_>,
    ) -> Result<Option<(Vec<u8>, MapValueOf<Self>)>>
    where
        Self: Sized,
    {
        edge(self, key_group, prefix, range, ScanDirection::Reverse)
    }

    /// Writes every dirty entry once and closes the bundle.
    ///
    /// # Errors
    /// [`Error::BundleState`](crate::Error::BundleState) when no bundle is open; a backend
    /// write failure (the bundle stays open, writes pending).
    fn commit_bundle(&mut self) -> Result<()>;

    /// One bounded step of the sweep of expired entries, resuming where the previous call
    /// stopped; the contract is [`SweepProgress`]'s. Outside a bundle only.
    ///
    /// # Errors
    /// [`Error::BundleState`](crate::Error::BundleState) when a bundle is open; a backend
    /// failure.
    fn sweep_expired(&mut self, max_entries: usize) -> Result<SweepProgress>;

    /// The table's counters.
    fn stats(&self) -> TableStats;
}

fn edge<T: MapTable>(
    table: &mut T,
    key_group: KeyGroup,
    prefix: &[u8],
    range: UserKeyRange<'_>,
    direction: ScanDirection,
) -> Result<Option<(Vec<u8>, MapValueOf<T>)>> {
    let mut found = None;
    table.scan(key_group, prefix, range, direction, &mut |k, v| {
        found = Some((k.to_vec(), v.clone()));
        ControlFlow::Break(())
    })?;
    Ok(found)
}

/// A store that opens [`MapTable`]s next to its keyed tables (one name registry for all
/// table kinds of the store).
pub trait MapStateStore: KeyedStateStore {
    /// The backend's map table type for codec `C`.
    type MapTable<C: ValueCodec>: MapTable<Codec = C> + CanonicalTable;

    /// Opens (creates) the map table `name`.
    ///
    /// # Errors
    /// [`Error::TableExists`](crate::Error::TableExists) when `name` is open in this store
    /// (as any kind of table); a backend failure.
    fn open_map_table<C: ValueCodec>(
        &mut self,
        name: &str,
        codec: C,
        ttl: Option<TtlConfig>,
    ) -> Result<Self::MapTable<C>>;
}

/// The backend key bytes of `(prefix, user_key)` without the key-group prefix, written into
/// `buf` (cleared first): `prefix ‖ user_key`. The canonical `key` column of a map table
/// holds exactly these bytes.
#[inline]
pub fn map_entry_key<'b>(buf: &'b mut Vec<u8>, prefix: &[u8], user_key: &[u8]) -> &'b [u8] {
    buf.clear();
    buf.reserve(prefix.len() + user_key.len());
    buf.extend_from_slice(prefix);
    buf.extend_from_slice(user_key);
    buf
}

/// The smallest byte string greater than every string starting with `prefix`, or `None`
/// when there is none (`prefix` empty or all `0xff`).
///
/// ```
/// assert_eq!(state_api::prefix_successor(b"ab"), Some(b"ac".to_vec()));
/// assert_eq!(state_api::prefix_successor(b"a\xff"), Some(b"b".to_vec()));
/// assert_eq!(state_api::prefix_successor(b"\xff\xff"), None);
/// ```
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut out = prefix.get(..=last)?.to_vec();
    if let Some(b) = out.last_mut() {
        *b += 1;
    }
    Some(out)
}

/// The bounds, over full entry keys `prefix ‖ user_key`, of `range` inside `prefix`: what a
/// backend hands its ordered structure (a `BTreeMap` range, a RocksDB iterator's lower and
/// upper bound). Returns `(lower, upper)` as owned bounds.
pub fn full_key_bounds(prefix: &[u8], range: UserKeyRange<'_>) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let join = |k: &[u8]| {
        let mut v = Vec::with_capacity(prefix.len() + k.len());
        v.extend_from_slice(prefix);
        v.extend_from_slice(k);
        v
    };
    let lower = match range.start() {
        Bound::Unbounded => Bound::Included(prefix.to_vec()),
        Bound::Included(s) => Bound::Included(join(s)),
        Bound::Excluded(s) => Bound::Excluded(join(s)),
    };
    let upper = match range.end() {
        Bound::Unbounded => prefix_successor(prefix).map_or(Bound::Unbounded, Bound::Excluded),
        Bound::Included(e) => Bound::Included(join(e)),
        Bound::Excluded(e) => Bound::Excluded(join(e)),
    };
    (lower, upper)
}

/// [`full_key_bounds`] without allocating: the bounds borrow `prefix` or `buf` (cleared
/// first, reused across calls), so a backend's scan builds its bounds with no allocation
/// once `buf` has grown.
///
/// ```
/// use std::ops::Bound;
/// use state_api::{UserKeyRange, full_key_bounds_in};
///
/// let mut buf = Vec::new();
/// let (lo, hi) = full_key_bounds_in(&mut buf, b"p", UserKeyRange::from(b"b"));
/// assert_eq!((lo, hi), (Bound::Included(&b"pb"[..]), Bound::Excluded(&b"q"[..])));
/// ```
pub fn full_key_bounds_in<'a>(
    buf: &'a mut Vec<u8>,
    prefix: &'a [u8],
    range: UserKeyRange<'_>,
) -> (Bound<&'a [u8]>, Bound<&'a [u8]>) {
    buf.clear();
    let lower = match range.start() {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(s) => {
            buf.extend_from_slice(prefix);
            buf.extend_from_slice(s);
            Bound::Included(())
        }
        Bound::Excluded(s) => {
            buf.extend_from_slice(prefix);
            buf.extend_from_slice(s);
            Bound::Excluded(())
        }
    };
    let mid = buf.len();
    let upper = match range.end() {
        Bound::Unbounded => match prefix.iter().rposition(|&b| b != 0xff) {
            Some(last) => {
                buf.extend_from_slice(prefix.get(..=last).unwrap_or_default());
                if let Some(b) = buf.last_mut() {
                    *b += 1;
                }
                Bound::Excluded(())
            }
            None => Bound::Unbounded,
        },
        Bound::Included(e) => {
            buf.extend_from_slice(prefix);
            buf.extend_from_slice(e);
            Bound::Included(())
        }
        Bound::Excluded(e) => {
            buf.extend_from_slice(prefix);
            buf.extend_from_slice(e);
            Bound::Excluded(())
        }
    };
    let (low, high) = buf.split_at(mid);
    let lower = match lower {
        Bound::Unbounded => Bound::Included(prefix),
        Bound::Included(()) => Bound::Included(low),
        Bound::Excluded(()) => Bound::Excluded(low),
    };
    (lower, upper.map(|()| high))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_in_a_buffer_equal_the_owned_bounds() {
        let ends = [
            Bound::Unbounded,
            Bound::Included(&b""[..]),
            Bound::Included(&b"1"[..]),
            Bound::Excluded(&b"1"[..]),
            Bound::Excluded(&b"\xff2"[..]),
        ];
        let mut buf = Vec::new();
        for prefix in [&b""[..], b"p", b"p\xff", b"\xff\xff", b"ab\xffc"] {
            for start in ends {
                for end in ends {
                    let range = UserKeyRange::new(start, end);
                    let (lo, hi) = full_key_bounds(prefix, range);
                    let (lo_in, hi_in) = full_key_bounds_in(&mut buf, prefix, range);
                    assert_eq!(
                        lo.as_ref().map(Vec::as_slice),
                        lo_in,
                        "{prefix:?} {range:?}"
                    );
                    assert_eq!(
                        hi.as_ref().map(Vec::as_slice),
                        hi_in,
                        "{prefix:?} {range:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn range_contains_and_empty() {
        let r = UserKeyRange::new(Bound::Excluded(b"a"), Bound::Included(b"c"));
        assert!(!r.contains(b"a") && r.contains(b"a\0") && r.contains(b"c") && !r.contains(b"c\0"));
        assert!(UserKeyRange::new(Bound::Excluded(b"a"), Bound::Excluded(b"a")).is_empty());
        assert!(UserKeyRange::new(Bound::Included(b"a"), Bound::Excluded(b"a")).is_empty());
        assert!(!UserKeyRange::new(Bound::Included(b"a"), Bound::Included(b"a")).is_empty());
        assert!(!UserKeyRange::from(b"z").is_empty());
    }

    #[test]
    fn bounds_cover_exactly_the_prefix() {
        let (lo, hi) = full_key_bounds(b"p\xff", UserKeyRange::all());
        assert_eq!(lo, Bound::Included(b"p\xff".to_vec()));
        assert_eq!(hi, Bound::Excluded(b"q".to_vec()));
        let (_, hi) = full_key_bounds(b"\xff", UserKeyRange::all());
        assert_eq!(hi, Bound::Unbounded);
        let (lo, hi) = full_key_bounds(
            b"p",
            UserKeyRange::new(Bound::Excluded(b"1"), Bound::Included(b"2")),
        );
        assert_eq!(
            (lo, hi),
            (
                Bound::Excluded(b"p1".to_vec()),
                Bound::Included(b"p2".to_vec())
            )
        );
        assert_eq!(prefix_successor(b""), None);
    }
}
