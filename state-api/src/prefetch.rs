//! The prefetch pipeline of a bundle: the keys `begin_bundle` names, in order, so that get
//! number `n` can ask the CPU for the map slot of key `n + AHEAD` while it serves key `n`.
//! Both backends keep their working state in [`FlatMap`](crate::FlatMap)s, whose slots are
//! known from a key's hash before the lookup, and run this same pipeline.

/// How many gets ahead a get prefetches: far enough that a slot arrives before its get (a
/// miss costs ~100-200 ns on this project's machine, a get ~20-30 ns), near enough that the
/// lines in flight fit the CPU's miss buffers and L1. Measured (a 100,000-key
/// micro-benchmark): 8 ahead 33 ns per get, 16 ahead 24 ns, 32 ahead 25 ns.
pub const PREFETCH_AHEAD: usize = 16;

/// The named keys of the open bundle (whatever a backend needs to prefetch one: a hash, a
/// group and a hash) and how many gets have been served.
///
/// ```
/// use state_api::{BundlePrefetch, PREFETCH_AHEAD};
///
/// let mut ahead = BundlePrefetch::default();
/// ahead.begin();
/// for hash in 0..20_u64 {
///     ahead.push(hash);
/// }
/// assert_eq!(ahead.first().len(), PREFETCH_AHEAD);
/// // Get 0 prefetches key 16, get 3 key 19, get 4 nothing.
/// assert_eq!(ahead.advance(), Some(&16));
/// for _ in 0..3 {
///     ahead.advance();
/// }
/// assert_eq!(ahead.advance(), None);
/// ```
#[derive(Debug, Clone)]
pub struct BundlePrefetch<T> {
    named: Vec<T>,
    /// The named keys' bytes back to back (`key_ends` ends each), when they were named with
    /// [`push_keyed`](Self::push_keyed).
    keys: Vec<u8>,
    key_ends: Vec<usize>,
    served: usize,
    /// The keys [`advance_staged`](Self::advance_staged) prefetched, each due for its second
    /// stage [`PREFETCH_STAGE`] operations later.
    staged: PrefetchStages<T>,
}

impl<T> Default for BundlePrefetch<T> {
    fn default() -> Self {
        Self {
            named: Vec::new(),
            keys: Vec::new(),
            key_ends: Vec::new(),
            served: 0,
            staged: PrefetchStages::default(),
        }
    }
}

impl<T> BundlePrefetch<T> {
    /// Forgets the last bundle's keys (keeping the allocations).
    pub fn begin(&mut self) {
        self.named.clear();
        self.keys.clear();
        self.key_ends.clear();
        self.served = 0;
        self.staged.clear();
    }

    /// Appends the next named key.
    pub fn push(&mut self, key: T) {
        self.named.push(key);
    }

    /// Appends the next named key with its bytes, so that the operation serving it gets
    /// its item back from [`served_item`](Self::served_item) (a hash computed once per
    /// key and bundle, not once more per operation). A bundle names all its keys this way
    /// or none.
    pub fn push_keyed(&mut self, key: &[u8], item: T) {
        self.keys.extend_from_slice(key);
        self.key_ends.push(self.keys.len());
        self.named.push(item);
    }

    /// The item of the key named at the position the last [`advance`](Self::advance)
    /// served, if that key's bytes are `key` (an operation in the order the keys were
    /// named); `None` otherwise (another order, more operations than named keys, keys
    /// named without bytes), and the caller computes what the item holds itself.
    ///
    /// ```
    /// use state_api::BundlePrefetch;
    ///
    /// let mut ahead = BundlePrefetch::default();
    /// ahead.begin();
    /// ahead.push_keyed(b"a", 1_u64);
    /// ahead.push_keyed(b"b", 2);
    /// ahead.advance(); // serving "a"
    /// assert_eq!(ahead.served_item(b"a"), Some(&1));
    /// assert_eq!(ahead.served_item(b"b"), None); // not the key being served
    /// ahead.advance(); // serving "b"
    /// assert_eq!(ahead.served_item(b"b"), Some(&2));
    /// ahead.advance(); // a third operation: nothing named for it
    /// assert_eq!(ahead.served_item(b"b"), None);
    /// ```
    #[inline]
    pub fn served_item(&self, key: &[u8]) -> Option<&T> {
        let at = self.served.checked_sub(1)?;
        if self.key_ends.len() != self.named.len() {
            return None;
        }
        let end = *self.key_ends.get(at)?;
        let start = match at.checked_sub(1) {
            Some(before) => *self.key_ends.get(before)?,
            None => 0,
        };
        let named = self.keys.get(start..end)?;
        if named.len() == key.len() && crate::inline_key::eq_same_len(named, key) {
            self.named.get(at)
        } else {
            None
        }
    }

    /// The first [`PREFETCH_AHEAD`] named keys: `begin_bundle` prefetches them.
    pub fn first(&self) -> &[T] {
        self.named.get(..PREFETCH_AHEAD).unwrap_or(&self.named)
    }

    /// Counts one get and returns the key to prefetch for it (the one [`PREFETCH_AHEAD`]
    /// named keys further), `None` past the end. Gets in another order than the keys were
    /// named only make the prefetches useless, never a lookup wrong.
    #[inline]
    pub fn advance(&mut self) -> Option<&T> {
        let at = self.served + PREFETCH_AHEAD;
        self.served += 1;
        self.named.get(at)
    }

    /// [`advance`](Self::advance), and with `staged` a second stage: also the key whose slot
    /// was prefetched [`PREFETCH_STAGE`] operations ago (cached by now), for the backend to
    /// ask for what that slot's value points to (a row's cells, see
    /// [`ValueCodec::PREFETCH_HEAP`](crate::ValueCodec::PREFETCH_HEAP)). Returns `(key to
    /// prefetch, key due for its second stage)`.
    ///
    /// ```
    /// use state_api::{BundlePrefetch, PREFETCH_AHEAD, PREFETCH_STAGE};
    ///
    /// let mut ahead = BundlePrefetch::default();
    /// ahead.begin();
    /// for hash in 0..100_u64 {
    ///     ahead.push(hash);
    /// }
    /// let first = PREFETCH_AHEAD as u64;
    /// for n in 0..PREFETCH_STAGE as u64 {
    ///     assert_eq!(ahead.advance_staged(true), (Some(first + n), None));
    /// }
    /// assert_eq!(ahead.advance_staged(true), (Some(first + PREFETCH_STAGE as u64), Some(first)));
    /// assert_eq!(ahead.advance_staged(false).1, None);
    /// ```
    #[inline]
    pub fn advance_staged(&mut self, staged: bool) -> (Option<T>, Option<T>)
    where
        T: Copy,
    {
        let ahead = self.advance().copied();
        let due = match ahead {
            Some(key) if staged => self.staged.push(key),
            _ => None,
        };
        (ahead, due)
    }
}

/// Hints between the two stages of a [`PrefetchStages`] pipeline (half of
/// [`PREFETCH_AHEAD`]).
pub const PREFETCH_STAGE: usize = PREFETCH_AHEAD / 2;

/// The hints of a two-stage prefetch in flight, for structures where the lines to fetch are
/// known only from lines fetched before (a map table's prefix index slot, then the prefix's
/// entries it points to): a hint's first stage is issued when it arrives, its second
/// [`PREFETCH_STAGE`] hints later, when [`push`](Self::push) hands it back (its first stage
/// has landed by then). Both backends' map tables run it.
///
/// ```
/// use state_api::{PREFETCH_STAGE, PrefetchStages};
///
/// let mut stages = PrefetchStages::default();
/// for hint in 0..PREFETCH_STAGE {
///     assert_eq!(stages.push(hint), None);
/// }
/// assert_eq!(stages.push(100), Some(0));
/// stages.clear();
/// assert_eq!(stages.push(7), None);
/// ```
#[derive(Debug, Clone)]
pub struct PrefetchStages<T> {
    hints: [Option<T>; PREFETCH_STAGE],
    next: usize,
}

impl<T> Default for PrefetchStages<T> {
    fn default() -> Self {
        Self {
            hints: std::array::from_fn(|_| None),
            next: 0,
        }
    }
}

impl<T> PrefetchStages<T> {
    /// Forgets every hint in flight (a new bundle).
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Records `hint`; returns the hint recorded [`PREFETCH_STAGE`] hints earlier, whose
    /// second stage is due.
    #[inline]
    pub fn push(&mut self, hint: T) -> Option<T> {
        let at = self.next;
        self.next = (at + 1) % PREFETCH_STAGE;
        self.hints.get_mut(at).and_then(|slot| slot.replace(hint))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `served_item` answers only for the key being served, byte for byte, in a bundle whose
    /// keys were all named with their bytes.
    #[test]
    fn served_item_matches_only_the_served_key() {
        let mut ahead = BundlePrefetch::default();
        ahead.begin();
        let keys: [&[u8]; 4] = [b"", b"a", b"ab", &[7; 40]];
        for (i, key) in keys.iter().enumerate() {
            ahead.push_keyed(key, i);
        }
        assert_eq!(ahead.served_item(b""), None, "nothing served yet");
        for (i, key) in keys.iter().enumerate() {
            ahead.advance();
            assert_eq!(ahead.served_item(key), Some(&i));
            for (j, other) in keys.iter().enumerate() {
                if j != i {
                    assert_eq!(ahead.served_item(other), None, "{i} served, {j} asked");
                }
            }
            let mut longer = key.to_vec();
            longer.push(0);
            assert_eq!(ahead.served_item(&longer), None);
        }
        // Keys named without their bytes: never an item.
        ahead.begin();
        ahead.push(0);
        ahead.advance();
        assert_eq!(ahead.served_item(b""), None);
        // A new bundle forgets the old keys.
        ahead.begin();
        ahead.push_keyed(b"z", 9);
        ahead.advance();
        assert_eq!(
            (ahead.served_item(b"a"), ahead.served_item(b"z")),
            (None, Some(&9))
        );
    }
}
