//! A map table's entries in memory, addressed by (prefix, user key): a hash index of the
//! prefixes in use, each holding its entries ordered by user key.
//!
//! A map table keeps its entries under full keys `prefix ‖ user key`, and one ordered map of
//! full keys per key group answers every operation with a search from its root: two descents
//! per join event over every entry of the key group (the B-tree was a third of a join's
//! time). But an operation always names its prefix, and within a key group the prefixes a
//! caller uses are prefix-free ([`MapTable`](crate::MapTable)'s contract): each full key
//! belongs to exactly one of them. So [`PrefixMap`] finds the prefix in a [`FlatMap`] (one
//! probe) and searches only that prefix's entries, a sorted vector while they are few (a
//! scan reads them contiguously) and a B-tree once they pass [`SMALL_BUCKET_MAX`].
//!
//! Entries whose split is unknown — a canonical snapshot carries full keys only — wait in an
//! ordered map of full keys ([`PrefixMap::insert_unsplit`]). Reads by shared reference
//! ([`get`](PrefixMap::get), [`range`](PrefixMap::range)) find a prefix's waiting entries
//! where they are (a prefix's entries are all in its bucket or all waiting); the first
//! mutable operation that names the prefix moves every waiting entry that starts with it
//! into the prefix's bucket at once.
//! Iteration in full-key order ([`PrefixMap::for_each_ordered`], for exports) merges the
//! prefixes in byte order with the waiting entries: since the prefixes are prefix-free, all
//! of a prefix's full keys sort together and no waiting key falls among them.
//!
//! Memory: a caller charging a pool reserves [`PrefixMap::PREFIX_BYTES`] for each prefix
//! an insert opens ([`VacantPrefixEntry::opens_prefix`]) and for each waiting entry (as if
//! each opened its own prefix); the bytes given back when a prefix's last entry goes or
//! waiting entries share a prefix accumulate in [`PrefixMap::take_released`].

use std::collections::{BTreeMap, btree_map};
use std::ops::Bound;

use crate::byte_keyed::ByteKeyedMap;
use crate::flat_map::{Entry as FlatEntry, FlatMap, VacantEntry as FlatVacant, prefetch_bytes};
use crate::inline_key::{InlineMapKey, cmp_bytes};
use crate::map::{UserKeyRange, full_key_bounds};

/// The most cache lines [`PrefixMap::prefetch_entries`] asks for (a kibibyte: about a dozen
/// small entries, what a join's probe and insert read of a prefix).
pub const PREFETCH_ENTRY_LINES: usize = 16;

/// The most entries a prefix keeps in a sorted vector; its next insert moves them into a
/// B-tree (an insert into the vector moves the entries after it).
pub const SMALL_BUCKET_MAX: usize = 32;

/// The entries of one prefix, ordered by user key.
#[derive(Debug, Clone)]
enum Bucket<V> {
    /// Sorted by user key, at most [`SMALL_BUCKET_MAX`] entries.
    Small(Vec<(InlineMapKey, V)>),
    Large(BTreeMap<InlineMapKey, V>),
}

impl<V> Bucket<V> {
    fn len(&self) -> usize {
        match self {
            Bucket::Small(v) => v.len(),
            Bucket::Large(m) => m.len(),
        }
    }

    fn get(&self, user_key: &[u8]) -> Option<&V> {
        match self {
            Bucket::Small(v) => {
                let i = small_search(v, user_key).ok()?;
                v.get(i).map(|(_, value)| value)
            }
            Bucket::Large(m) => m.get_bytes(user_key),
        }
    }

    fn get_mut(&mut self, user_key: &[u8]) -> Option<&mut V> {
        match self {
            Bucket::Small(v) => {
                let i = small_search(v, user_key).ok()?;
                v.get_mut(i).map(|(_, value)| value)
            }
            Bucket::Large(m) => m.get_bytes_mut(user_key),
        }
    }

    fn remove(&mut self, user_key: &[u8]) -> Option<V> {
        match self {
            Bucket::Small(v) => {
                let i = small_search(v, user_key).ok()?;
                Some(v.remove(i).1)
            }
            Bucket::Large(m) => m.remove_bytes(user_key),
        }
    }

    fn retain(&mut self, mut keep: impl FnMut(&[u8], &mut V) -> bool) {
        match self {
            Bucket::Small(v) => v.retain_mut(|(k, value)| keep(k.as_bytes(), value)),
            Bucket::Large(m) => m.retain(|k, value| keep(k.as_bytes(), value)),
        }
    }
}

/// The position of `user_key` in a sorted small bucket: `Ok` where it is, `Err` where it
/// would go.
/// Compares word-wise inline (no `memcmp` call per probe).
#[inline]
fn small_search<V>(entries: &[(InlineMapKey, V)], user_key: &[u8]) -> Result<usize, usize> {
    entries.binary_search_by(|(k, _)| cmp_bytes(k.as_bytes(), user_key))
}

/// Whether `key` lies at or after `lower`.
fn above(key: &[u8], lower: Bound<&[u8]>) -> bool {
    match lower {
        Bound::Included(l) => cmp_bytes(key, l).is_ge(),
        Bound::Excluded(l) => cmp_bytes(key, l).is_gt(),
        Bound::Unbounded => true,
    }
}

/// Whether `key` lies at or before `upper`.
fn below(key: &[u8], upper: Bound<&[u8]>) -> bool {
    match upper {
        Bound::Included(u) => cmp_bytes(key, u).is_le(),
        Bound::Excluded(u) => cmp_bytes(key, u).is_lt(),
        Bound::Unbounded => true,
    }
}

fn borrowed(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    bound.as_ref().map(Vec::as_slice)
}

/// Whether no key lies within `bounds` (a `BTreeMap` range over them would panic).
fn bounds_empty((lower, upper): (Bound<&[u8]>, Bound<&[u8]>)) -> bool {
    match (lower, upper) {
        (Bound::Included(l), Bound::Included(u)) => l > u,
        (Bound::Included(l) | Bound::Excluded(l), Bound::Excluded(u))
        | (Bound::Excluded(l), Bound::Included(u)) => l >= u,
        _ => false,
    }
}

/// The index range of a sorted small bucket inside `bounds` (empty when they are).
fn small_range<V>(
    entries: &[(InlineMapKey, V)],
    (lower, upper): (Bound<&[u8]>, Bound<&[u8]>),
) -> std::ops::Range<usize> {
    // An unbounded end (a whole-prefix scan) needs no search.
    let start = match lower {
        Bound::Unbounded => 0,
        _ => entries.partition_point(|(k, _)| !above(k.as_bytes(), lower)),
    };
    let end = match upper {
        Bound::Unbounded => entries.len(),
        _ => entries.partition_point(|(k, _)| below(k.as_bytes(), upper)),
    };
    start..end.max(start)
}

/// Entries addressed by (prefix, user key), one ordered bucket per prefix (see the module
/// docs).
///
/// ```
/// use std::ops::Bound;
/// use state_api::{InlineMapKey, PrefixEntry, PrefixMap};
///
/// let mut map = PrefixMap::new();
/// for (prefix, user_key, value) in [(&b"a"[..], &b"2"[..], 2), (b"a", b"1", 1), (b"b", b"1", 3)] {
///     match map.entry(prefix, user_key) {
///         PrefixEntry::Vacant(vacant) => {
///             vacant.insert(value);
///         }
///         PrefixEntry::Occupied(value) => *value += 10,
///     }
/// }
/// let a: Vec<i32> = map.range(b"a", (Bound::Unbounded, Bound::Unbounded)).map(|(_, v)| *v).collect();
/// assert_eq!(a, [1, 2]);
/// // A restored entry (its split unknown) joins its prefix when an operation names it.
/// map.insert_unsplit(InlineMapKey::from(&b"c9"[..]), 9);
/// assert_eq!(map.get_mut(b"c", b"9"), Some(&mut 9));
/// let mut keys = Vec::new();
/// map.for_each_ordered(|head, tail, _| keys.push([head, tail].concat()));
/// assert_eq!(keys, [b"a1".to_vec(), b"a2".to_vec(), b"b1".to_vec(), b"c9".to_vec()]);
/// ```
#[derive(Debug, Clone)]
pub struct PrefixMap<V> {
    buckets: FlatMap<Bucket<V>>,
    /// Entries whose prefix no operation has named yet, by full key.
    unsplit: BTreeMap<InlineMapKey, V>,
    len: usize,
    released: usize,
}

impl<V> Default for PrefixMap<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> PrefixMap<V> {
    /// Bytes to charge per prefix in use (and per waiting entry): its slot in the prefix
    /// index at the index's highest load, and its bucket's header.
    pub const PREFIX_BYTES: usize = FlatMap::<Bucket<V>>::ENTRY_BYTES;

    /// An empty map; it allocates on the first insert.
    pub fn new() -> Self {
        Self {
            buckets: FlatMap::new(),
            unsplit: BTreeMap::new(),
            len: 0,
            released: 0,
        }
    }

    /// Entries in the map (waiting ones included).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the map holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Prefixes with a bucket (those some operation has named and that hold entries).
    pub fn prefixes(&self) -> usize {
        self.buckets.len()
    }

    /// Entries still waiting for their prefix to be named.
    pub fn unsplit_len(&self) -> usize {
        self.unsplit.len()
    }

    /// Bytes of [`PREFIX_BYTES`](Self::PREFIX_BYTES) charges given back since the last
    /// call: prefixes whose last entry went, waiting entries that joined a prefix with
    /// others, waiting entries removed.
    pub fn take_released(&mut self) -> usize {
        std::mem::take(&mut self.released)
    }

    /// Adds an entry by full key, its split unknown (a restore); it waits until an
    /// operation names its prefix. Returns the value it replaces.
    pub fn insert_unsplit(&mut self, full_key: InlineMapKey, value: V) -> Option<V> {
        let old = self.unsplit.insert(full_key, value);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    /// Moves the waiting entries of `prefix` into its bucket (nothing waits in the steady
    /// state: one check).
    #[inline]
    fn split(&mut self, prefix: &[u8]) {
        if self.unsplit.is_empty() {
            return;
        }
        self.split_slow(prefix);
    }

    #[cold]
    fn split_slow(&mut self, prefix: &[u8]) {
        let keys: Vec<InlineMapKey> = self
            .unsplit
            .range_bytes((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(k, _)| k.as_bytes().starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect();
        if keys.is_empty() {
            return;
        }
        let hash = self.buckets.hash(prefix);
        let opened = self.buckets.get_hashed(hash, prefix).is_none();
        let bucket = self
            .buckets
            .get_or_insert_with_hashed(hash, prefix, || Bucket::Small(Vec::new()));
        // The moved entries are counted already.
        let mut counted = 0;
        for key in &keys {
            let Some(value) = self.unsplit.remove(key) else {
                continue;
            };
            let user_key = key.as_bytes().get(prefix.len()..).unwrap_or_default();
            match entry_in(bucket, &mut counted, user_key) {
                PrefixEntry::Vacant(vacant) => {
                    vacant.insert(value);
                }
                // Not reached while every insert splits its prefix first.
                PrefixEntry::Occupied(old) => {
                    *old = value;
                    self.len -= 1;
                }
            }
        }
        // Each waiting entry was charged a prefix; the bucket needs one (if it is new).
        self.released += (keys.len() - usize::from(opened)) * Self::PREFIX_BYTES;
    }

    /// Asks the CPU for the prefix index slot `prefix` most likely occupies (stage one of a
    /// prefetch, see [`prefetch_entries`](Self::prefetch_entries)); returns the prefix's
    /// hash. A hint: it reads and changes nothing.
    #[inline]
    pub fn prefetch_prefix(&self, prefix: &[u8]) -> u64 {
        let hash = self.buckets.hash(prefix);
        self.buckets.prefetch(hash);
        hash
    }

    /// Asks the CPU for the first [`PREFETCH_ENTRY_LINES`] cache lines of the entries of the
    /// prefix of hash `hash` (from [`prefetch_prefix`](Self::prefetch_prefix) some
    /// operations earlier, so that its slot is cached by now). Found by the hash alone, so a
    /// prefetch stage keeps no key bytes; a prefix sharing the hash may be the one fetched.
    /// A hint: it changes nothing.
    #[inline]
    pub fn prefetch_entries(&self, hash: u64) {
        if let Some(Bucket::Small(v)) = self.buckets.get_by_hash_for_hint(hash) {
            prefetch_bytes(
                v.as_ptr().cast(),
                std::mem::size_of_val(v.as_slice()),
                PREFETCH_ENTRY_LINES,
            );
        }
    }

    /// The value of `(prefix, user_key)`.
    #[inline]
    pub fn get(&self, prefix: &[u8], user_key: &[u8]) -> Option<&V> {
        match self.buckets.get(prefix) {
            Some(bucket) => bucket.get(user_key),
            None if self.unsplit.is_empty() => None,
            None => self.unsplit.get_bytes(&[prefix, user_key].concat()),
        }
    }

    /// Whether `prefix` has entries in a bucket (not counting waiting ones).
    #[inline]
    pub fn has_bucket(&self, prefix: &[u8]) -> bool {
        self.buckets.get(prefix).is_some()
    }

    /// The value of `(prefix, user_key)`, mutable.
    #[inline]
    pub fn get_mut(&mut self, prefix: &[u8], user_key: &[u8]) -> Option<&mut V> {
        self.split(prefix);
        self.buckets.get_mut(prefix)?.get_mut(user_key)
    }

    /// The entry of `(prefix, user_key)`: its value, or the place to insert it (one probe
    /// of the prefix index and one search of the bucket for both).
    #[inline]
    pub fn entry<'a>(&'a mut self, prefix: &'a [u8], user_key: &'a [u8]) -> PrefixEntry<'a, V> {
        self.split(prefix);
        match self.buckets.entry(prefix) {
            FlatEntry::Occupied(occupied) => entry_in(occupied.into_mut(), &mut self.len, user_key),
            FlatEntry::Vacant(vacant) => PrefixEntry::Vacant(VacantPrefixEntry {
                len: &mut self.len,
                user_key,
                at: Vacant::NewPrefix(vacant),
            }),
        }
    }

    /// Removes `(prefix, user_key)`, returning its value; a prefix's last entry takes its
    /// bucket with it.
    pub fn remove(&mut self, prefix: &[u8], user_key: &[u8]) -> Option<V> {
        self.split(prefix);
        let FlatEntry::Occupied(mut occupied) = self.buckets.entry(prefix) else {
            return None;
        };
        let value = occupied.get_mut().remove(user_key)?;
        self.len -= 1;
        if occupied.get_mut().len() == 0 {
            occupied.remove();
            self.released += Self::PREFIX_BYTES;
        }
        Some(value)
    }

    /// The entries of `prefix` whose user keys lie within `bounds`, in user-key order (both
    /// ends: `.rev()` for descending), as (user key, value). Inverted or empty bounds give
    /// nothing.
    pub fn range(&self, prefix: &[u8], bounds: (Bound<&[u8]>, Bound<&[u8]>)) -> PrefixRange<'_, V> {
        let inner = match self.buckets.get(prefix) {
            _ if bounds_empty(bounds) => RangeInner::Empty,
            Some(Bucket::Small(v)) => {
                RangeInner::Small(v.get(small_range(v, bounds)).unwrap_or_default().iter())
            }
            Some(Bucket::Large(m)) => RangeInner::Large(m.range_bytes(bounds)),
            None if self.unsplit.is_empty() => RangeInner::Empty,
            None => {
                let range = UserKeyRange::new(bounds.0, bounds.1);
                let (lower, upper) = full_key_bounds(prefix, range);
                RangeInner::Waiting(
                    self.unsplit
                        .range_bytes((borrowed(&lower), borrowed(&upper))),
                    prefix.len(),
                )
            }
        };
        PrefixRange { inner }
    }

    /// [`range`](Self::range) with mutable values.
    pub fn range_mut(
        &mut self,
        prefix: &[u8],
        bounds: (Bound<&[u8]>, Bound<&[u8]>),
    ) -> PrefixRangeMut<'_, V> {
        self.split(prefix);
        if bounds_empty(bounds) {
            return PrefixRangeMut {
                inner: RangeMutInner::Empty,
            };
        }
        let inner = match self.buckets.get_mut(prefix) {
            None => RangeMutInner::Empty,
            Some(Bucket::Small(v)) => {
                let range = small_range(v, bounds);
                RangeMutInner::Small(v.get_mut(range).unwrap_or_default().iter_mut())
            }
            Some(Bucket::Large(m)) => RangeMutInner::Large(m.range_bytes_mut(bounds)),
        };
        PrefixRangeMut { inner }
    }

    /// Every value, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        let split = self.buckets.iter().flat_map(|(_, b)| match b {
            Bucket::Small(v) => BucketValues::Small(v.iter()),
            Bucket::Large(m) => BucketValues::Large(m.values()),
        });
        split.chain(self.unsplit.values())
    }

    /// Calls `visit(head, tail, value)` for every entry in full-key order (`head ‖ tail`
    /// is the full key: prefix and user key, or a waiting entry's full key and nothing).
    pub fn for_each_ordered<'a>(&'a self, mut visit: impl FnMut(&'a [u8], &'a [u8], &'a V)) {
        let mut prefixes: Vec<(&'a [u8], &'a Bucket<V>)> = self
            .buckets
            .iter()
            .map(|(k, b)| (k.as_bytes(), b))
            .collect();
        prefixes.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut waiting = self.unsplit.iter().peekable();
        for (prefix, bucket) in prefixes {
            // A waiting key sorts before every full key of `prefix` exactly when it sorts
            // before `prefix` itself (it does not start with it).
            while let Some((k, v)) = waiting.next_if(|(k, _)| k.as_bytes() < prefix) {
                visit(k.as_bytes(), &[], v);
            }
            match bucket {
                Bucket::Small(entries) => {
                    for (k, v) in entries {
                        visit(prefix, k.as_bytes(), v);
                    }
                }
                Bucket::Large(m) => {
                    for (k, v) in m {
                        visit(prefix, k.as_bytes(), v);
                    }
                }
            }
        }
        for (k, v) in waiting {
            visit(k.as_bytes(), &[], v);
        }
    }

    /// Keeps the entries for which `keep(head, tail, value)` is true (arguments as in
    /// [`for_each_ordered`](Self::for_each_ordered), in no particular order); returns how
    /// many it removed.
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8], &[u8], &mut V) -> bool) -> usize {
        let before = self.len;
        let mut kept = 0;
        let mut emptied = 0;
        self.buckets.retain(|prefix, bucket| {
            bucket.retain(|user_key, value| keep(prefix.as_bytes(), user_key, value));
            kept += bucket.len();
            let keep_bucket = bucket.len() > 0;
            emptied += usize::from(!keep_bucket);
            keep_bucket
        });
        let waiting_before = self.unsplit.len();
        self.unsplit.retain(|k, v| keep(k.as_bytes(), &[], v));
        let waiting_removed = waiting_before - self.unsplit.len();
        self.len = kept + self.unsplit.len();
        self.released += (emptied + waiting_removed) * Self::PREFIX_BYTES;
        before - self.len
    }
}

/// The entry of `user_key` in `bucket`.
fn entry_in<'a, V>(
    bucket: &'a mut Bucket<V>,
    len: &'a mut usize,
    user_key: &'a [u8],
) -> PrefixEntry<'a, V> {
    // The small search first, under a shared borrow (its result decides what to borrow).
    let small = match &*bucket {
        Bucket::Small(v) => Some(small_search(v, user_key)),
        Bucket::Large(_) => None,
    };
    let at = match (small, bucket) {
        (Some(Ok(i)), Bucket::Small(v)) => match v.get_mut(i) {
            Some((_, value)) => return PrefixEntry::Occupied(value),
            None => unreachable!("a found index is in bounds"),
        },
        (Some(Err(i)), bucket) => Vacant::Small(bucket, i),
        (_, Bucket::Large(m)) => match m.entry(InlineMapKey::from(user_key)) {
            btree_map::Entry::Occupied(o) => return PrefixEntry::Occupied(o.into_mut()),
            btree_map::Entry::Vacant(v) => Vacant::Large(v),
        },
        (None, Bucket::Small(_)) => unreachable!("a small bucket was searched"),
    };
    PrefixEntry::Vacant(VacantPrefixEntry { len, user_key, at })
}

/// An entry of a [`PrefixMap`]: its value, or the place to insert it.
pub enum PrefixEntry<'a, V> {
    /// The entry is present.
    Occupied(&'a mut V),
    /// It is not.
    Vacant(VacantPrefixEntry<'a, V>),
}

/// Where a vacant entry goes.
enum Vacant<'a, V> {
    NewPrefix(FlatVacant<'a, Bucket<V>>),
    /// A small bucket and the index the entry takes.
    Small(&'a mut Bucket<V>, usize),
    Large(btree_map::VacantEntry<'a, InlineMapKey, V>),
}

/// An absent entry of a [`PrefixMap`] and where its search ended.
pub struct VacantPrefixEntry<'a, V> {
    len: &'a mut usize,
    user_key: &'a [u8],
    at: Vacant<'a, V>,
}

impl<'a, V> VacantPrefixEntry<'a, V> {
    /// Whether inserting opens a prefix (charge [`PrefixMap::PREFIX_BYTES`] for it).
    pub fn opens_prefix(&self) -> bool {
        matches!(self.at, Vacant::NewPrefix(_))
    }

    /// Inserts `value`; returns it.
    pub fn insert(self, value: V) -> &'a mut V {
        *self.len += 1;
        let key = InlineMapKey::from(self.user_key);
        match self.at {
            Vacant::NewPrefix(vacant) => {
                let bucket = vacant.insert(Bucket::Small(vec![(key, value)]));
                match bucket {
                    Bucket::Small(v) => match v.first_mut() {
                        Some((_, value)) => value,
                        None => unreachable!("the bucket was made with the entry"),
                    },
                    Bucket::Large(_) => unreachable!("a new bucket is small"),
                }
            }
            Vacant::Small(bucket, index) => {
                if bucket.len() >= SMALL_BUCKET_MAX {
                    let Bucket::Small(v) = bucket else {
                        unreachable!("a vacant small position is in a small bucket");
                    };
                    let m: BTreeMap<InlineMapKey, V> = std::mem::take(v).into_iter().collect();
                    *bucket = Bucket::Large(m);
                    let Bucket::Large(m) = bucket else {
                        unreachable!("just made large");
                    };
                    return m.entry(key).or_insert(value);
                }
                let Bucket::Small(v) = bucket else {
                    unreachable!("a vacant small position is in a small bucket");
                };
                v.insert(index, (key, value));
                match v.get_mut(index) {
                    Some((_, value)) => value,
                    None => unreachable!("just inserted"),
                }
            }
            Vacant::Large(vacant) => vacant.insert(value),
        }
    }
}

/// The values of one bucket.
enum BucketValues<'a, V> {
    Small(std::slice::Iter<'a, (InlineMapKey, V)>),
    Large(btree_map::Values<'a, InlineMapKey, V>),
}

impl<'a, V> Iterator for BucketValues<'a, V> {
    type Item = &'a V;

    fn next(&mut self) -> Option<&'a V> {
        match self {
            BucketValues::Small(i) => i.next().map(|(_, v)| v),
            BucketValues::Large(i) => i.next(),
        }
    }
}

enum RangeInner<'a, V> {
    Empty,
    Small(std::slice::Iter<'a, (InlineMapKey, V)>),
    Large(btree_map::Range<'a, InlineMapKey, V>),
    /// Waiting entries by full key, and the prefix length to strip.
    Waiting(btree_map::Range<'a, InlineMapKey, V>, usize),
}

/// Entries of one prefix within bounds, in user-key order, as (user key, value): see
/// [`PrefixMap::range`].
pub struct PrefixRange<'a, V> {
    inner: RangeInner<'a, V>,
}

/// An entry as (user key, value), a waiting one's full key cut after `skip` bytes.
#[inline]
fn user_entry<'a, V>((k, v): (&'a InlineMapKey, &'a V), skip: usize) -> (&'a [u8], &'a V) {
    (k.as_bytes().get(skip..).unwrap_or_default(), v)
}

impl<'a, V> Iterator for PrefixRange<'a, V> {
    type Item = (&'a [u8], &'a V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            RangeInner::Empty => None,
            RangeInner::Small(i) => i.next().map(|(k, v)| (k.as_bytes(), v)),
            RangeInner::Large(i) => i.next().map(|e| user_entry(e, 0)),
            RangeInner::Waiting(i, skip) => i.next().map(|e| user_entry(e, *skip)),
        }
    }
}

impl<V> DoubleEndedIterator for PrefixRange<'_, V> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            RangeInner::Empty => None,
            RangeInner::Small(i) => i.next_back().map(|(k, v)| (k.as_bytes(), v)),
            RangeInner::Large(i) => i.next_back().map(|e| user_entry(e, 0)),
            RangeInner::Waiting(i, skip) => i.next_back().map(|e| user_entry(e, *skip)),
        }
    }
}

enum RangeMutInner<'a, V> {
    Empty,
    Small(std::slice::IterMut<'a, (InlineMapKey, V)>),
    Large(btree_map::RangeMut<'a, InlineMapKey, V>),
}

/// Entries of one prefix within bounds, as (user key, mutable value): see
/// [`PrefixMap::range_mut`].
pub struct PrefixRangeMut<'a, V> {
    inner: RangeMutInner<'a, V>,
}

impl<'a, V> Iterator for PrefixRangeMut<'a, V> {
    type Item = (&'a [u8], &'a mut V);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            RangeMutInner::Empty => None,
            RangeMutInner::Small(i) => i.next().map(|(k, v)| (k.as_bytes(), v)),
            RangeMutInner::Large(i) => i.next().map(|(k, v)| (k.as_bytes(), v)),
        }
    }
}

impl<V> DoubleEndedIterator for PrefixRangeMut<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            RangeMutInner::Empty => None,
            RangeMutInner::Small(i) => i.next_back().map(|(k, v)| (k.as_bytes(), v)),
            RangeMutInner::Large(i) => i.next_back().map(|(k, v)| (k.as_bytes(), v)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The model: one ordered map of full keys.
    type Model = BTreeMap<Vec<u8>, u32>;

    #[derive(Debug, Clone)]
    enum Op {
        Upsert(usize, Vec<u8>, u32),
        Remove(usize, Vec<u8>),
        Get(usize, Vec<u8>),
        /// A shared-reference get (waiting entries stay where they are).
        Peek(usize, Vec<u8>),
        Range(usize, Option<Vec<u8>>, Option<Vec<u8>>, bool),
        Restore(Vec<(usize, Vec<u8>, u32)>),
        Retain(u32),
    }

    /// Prefix-free prefixes of different lengths (none a prefix of another).
    const PREFIXES: [&[u8]; 5] = [
        b"\x00",
        b"\x01a",
        b"\x01b\x00",
        b"\x02\x00\x00\x00",
        b"\x03",
    ];

    fn user_key() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(0_u8..4, 0..5)
    }

    fn op() -> impl Strategy<Value = Op> {
        // One prefix takes most operations, so that its bucket passes the small limit.
        let p = prop_oneof![3 => Just(0), 2 => 0..PREFIXES.len()];
        prop_oneof![
            24 => (p.clone(), user_key(), any::<u32>()).prop_map(|(p, k, v)| Op::Upsert(p, k, v)),
            4 => (p.clone(), user_key()).prop_map(|(p, k)| Op::Remove(p, k)),
            6 => (p.clone(), user_key()).prop_map(|(p, k)| Op::Get(p, k)),
            4 => (p.clone(), user_key()).prop_map(|(p, k)| Op::Peek(p, k)),
            4 => (p.clone(), prop::option::of(user_key()), prop::option::of(user_key()), any::<bool>())
                .prop_map(|(p, l, u, rev)| Op::Range(p, l, u, rev)),
            2 => prop::collection::vec((p, user_key(), any::<u32>()), 0..40).prop_map(Op::Restore),
            1 => (1_u32..5).prop_map(Op::Retain),
        ]
    }

    fn full(p: usize, k: &[u8]) -> Vec<u8> {
        [PREFIXES[p], k].concat()
    }

    fn ordered(map: &PrefixMap<u32>) -> Vec<(Vec<u8>, u32)> {
        let mut out = Vec::new();
        map.for_each_ordered(|h, t, v| out.push(([h, t].concat(), *v)));
        out
    }

    /// Checks the map's charge accounting: prefixes and waiting entries charged, what was
    /// released given back.
    fn charged(map: &PrefixMap<u32>) -> usize {
        (map.prefixes() + map.unsplit_len()) * PrefixMap::<u32>::PREFIX_BYTES
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn behaves_as_one_ordered_map_of_full_keys(ops in prop::collection::vec(op(), 1..300)) {
            let mut map = PrefixMap::new();
            let mut model = Model::new();
            // Bytes charged by the rules of the module docs.
            let mut charge = 0_usize;
            for op in ops {
                match op {
                    Op::Upsert(p, k, v) => {
                        match map.entry(PREFIXES[p], &k) {
                            PrefixEntry::Occupied(value) => *value = v,
                            PrefixEntry::Vacant(vacant) => {
                                if vacant.opens_prefix() {
                                    charge += PrefixMap::<u32>::PREFIX_BYTES;
                                }
                                vacant.insert(v);
                            }
                        }
                        model.insert(full(p, &k), v);
                    }
                    Op::Remove(p, k) => {
                        prop_assert_eq!(map.remove(PREFIXES[p], &k), model.remove(&full(p, &k)));
                    }
                    Op::Peek(p, k) => {
                        prop_assert_eq!(map.get(PREFIXES[p], &k).copied(), model.get(&full(p, &k)).copied());
                    }
                    Op::Get(p, k) => {
                        prop_assert_eq!(map.get_mut(PREFIXES[p], &k).copied(), model.get(&full(p, &k)).copied());
                    }
                    Op::Range(p, l, u, rev) => {
                        let lower = l.as_deref().map_or(Bound::Unbounded, Bound::Included);
                        let upper = u.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
                        let got: Vec<(Vec<u8>, u32)> = if rev {
                            map.range(PREFIXES[p], (lower, upper)).rev().map(|(k, v)| (k.to_vec(), *v)).collect()
                        } else {
                            map.range(PREFIXES[p], (lower, upper)).map(|(k, v)| (k.to_vec(), *v)).collect()
                        };
                        let mut want: Vec<(Vec<u8>, u32)> = model
                            .iter()
                            .filter_map(|(fk, v)| fk.strip_prefix(PREFIXES[p]).map(|uk| (uk.to_vec(), *v)))
                            .filter(|(uk, _)| above(uk, lower) && below(uk, upper))
                            .collect();
                        if rev {
                            want.reverse();
                        }
                        prop_assert_eq!(&got, &want);
                        // The mutable range visits the same entries.
                        let n = map.range_mut(PREFIXES[p], (lower, upper)).count();
                        prop_assert_eq!(n, want.len());
                    }
                    Op::Restore(entries) => {
                        map = PrefixMap::new();
                        model.clear();
                        charge = 0;
                        for (p, k, v) in entries {
                            if map.insert_unsplit(InlineMapKey::from(&full(p, &k)[..]), v).is_none() {
                                charge += PrefixMap::<u32>::PREFIX_BYTES;
                            }
                            model.insert(full(p, &k), v);
                        }
                    }
                    Op::Retain(m) => {
                        let removed = map.retain(|_, _, v| *v % m != 0);
                        let before = model.len();
                        model.retain(|_, v| *v % m != 0);
                        prop_assert_eq!(removed, before - model.len());
                    }
                }
                charge -= map.take_released();
                prop_assert_eq!(charge, charged(&map));
                prop_assert_eq!(map.len(), model.len());
                let want: Vec<(Vec<u8>, u32)> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
                prop_assert_eq!(ordered(&map), want);
                prop_assert_eq!(map.values().count(), model.len());
            }
        }
    }

    #[test]
    fn a_bucket_turns_into_a_btree_past_the_small_limit_and_keeps_its_order() {
        let mut map = PrefixMap::new();
        let n = u32::try_from(SMALL_BUCKET_MAX).unwrap() * 3;
        for i in (0..n).rev() {
            let k = i.to_be_bytes();
            if let PrefixEntry::Vacant(v) = map.entry(b"p", &k) {
                v.insert(i);
            }
        }
        let all: Vec<u32> = map
            .range(b"p", (Bound::Unbounded, Bound::Unbounded))
            .map(|(_, v)| *v)
            .collect();
        assert_eq!(all, (0..n).collect::<Vec<_>>());
        let lo = 5_u32.to_be_bytes();
        let hi = 9_u32.to_be_bytes();
        let mid: Vec<u32> = map
            .range(b"p", (Bound::Excluded(&lo[..]), Bound::Included(&hi[..])))
            .rev()
            .map(|(_, v)| *v)
            .collect();
        assert_eq!(mid, [9, 8, 7, 6]);
        // Point operations in the B-tree.
        assert_eq!(map.get_mut(b"p", &lo), Some(&mut 5));
        match map.entry(b"p", &lo) {
            PrefixEntry::Occupied(v) => *v = 50,
            PrefixEntry::Vacant(_) => panic!("present"),
        }
        assert_eq!(map.remove(b"p", &lo), Some(50));
        assert_eq!(map.get_mut(b"p", &lo), None);
        assert_eq!(map.len(), usize::try_from(n).unwrap() - 1);
        // Inverted bounds are empty, not a panic.
        assert_eq!(
            map.range(b"p", (Bound::Included(&hi[..]), Bound::Excluded(&lo[..])))
                .count(),
            0
        );
        assert_eq!(
            map.range(b"p", (Bound::Excluded(&lo[..]), Bound::Excluded(&lo[..])))
                .count(),
            0
        );
    }

    #[test]
    fn long_keys_and_prefixes_are_kept_whole() {
        let mut map = PrefixMap::new();
        let prefix = vec![7_u8; 40];
        let long = vec![9_u8; 100];
        if let PrefixEntry::Vacant(v) = map.entry(&prefix, &long) {
            assert!(v.opens_prefix());
            v.insert(1);
        }
        assert_eq!(map.get_mut(&prefix, &long), Some(&mut 1));
        let mut keys = Vec::new();
        map.for_each_ordered(|h, t, _| keys.push([h, t].concat()));
        assert_eq!(keys, [[prefix.clone(), long.clone()].concat()]);
        assert_eq!(map.remove(&prefix, &long), Some(1));
        assert_eq!(
            (map.prefixes(), map.take_released()),
            (0, PrefixMap::<u32>::PREFIX_BYTES)
        );
    }
}
