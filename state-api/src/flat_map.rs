//! The backends' hash map from key bytes to values: open addressing with linear probing,
//! each slot holding the key's hash, the key ([`InlineKey`], inline up to 22 bytes) and the
//! value side by side, so a lookup touches one slot (one or two cache lines) and the slots a
//! key most likely occupies are known before the lookup: [`FlatMap::prefetch`] asks the CPU
//! for them.
//!
//! Why not hashbrown: a hashbrown lookup reads a control-byte group and then a bucket whose
//! position depends on those bytes, and the bucket cannot be prefetched. Measured on this
//! project's machine (100,000 keys in 128 maps, random order, `[i64; 3]` values): hashbrown
//! 158-241 ns per get-and-update, this layout 81 ns, and 24-33 ns when the key 16 lookups
//! ahead is prefetched (`memory-store`'s bundle does that with the keys `begin_bundle` names).
//!
//! Layout and rules:
//! - `slots.len()` is 0 or a power of two; a key's home is `hash & (len - 1)` and its slot is
//!   the first one at or after home (wrapping) in an unbroken run of occupied slots.
//! - The load stays at most 3/4, or 1/2 for a map made with [`MaxLoad::Half`] (the capacity
//!   doubles before an insert would pass it), so at least one slot is empty and every probe
//!   ends.
//! - Removal shifts the run after the hole back (no tombstones), so probe runs stay short
//!   under churn.
//! - The hash function is foldhash with a per-map random seed; slots keep the hash's low 32
//!   bits, from which the home is taken too, so growth moves slots without rehashing keys and
//!   a probe compares key bytes only when those bits are equal.
//! - Beside the stored hash each slot has one 32-bit word the map never reads (0 unless its
//!   owner sets it, through the `*_word` methods): room for per-entry flags in bytes a
//!   64-bit hash would otherwise leave as padding. memory-store keeps an entry's tombstone
//!   bit and dirty epoch there, so a 32-byte value's slot is exactly 64 bytes.
//! - `A` ([`SlotAlignment`]) aligns the slots: [`CacheLineAligned`] puts a slot of at most
//!   64 bytes on exactly one cache line (an unaligned 64-byte slot spans two lines 7 times
//!   in 8, and a lookup then waits for both).

use std::fmt;
use std::hash::BuildHasher;
use std::mem::size_of;

use foldhash::fast::RandomState;

use crate::InlineKey;

/// One occupied slot.
#[derive(Clone)]
struct Slot<V, A> {
    /// Zero bytes of `A`: the slot's alignment.
    _align: [A; 0],
    /// The key's hash, low 32 bits.
    hash: u32,
    /// The owner's word (see the module docs).
    word: u32,
    key: InlineKey,
    value: V,
}

impl<V, A> Slot<V, A> {
    fn new(hash: u64, word: u32, key: InlineKey, value: V) -> Self {
        Self {
            _align: [],
            hash: stored(hash),
            word,
            key,
            value,
        }
    }
}

/// The bits of a hash a slot keeps.
#[inline]
#[expect(
    clippy::cast_possible_truncation,
    reason = "the low 32 bits are what a slot keeps"
)]
fn stored(hash: u64) -> u32 {
    hash as u32
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Unaligned {}
    impl Sealed for super::CacheLineAligned {}
}

/// How a [`FlatMap`]'s slots are aligned (sealed: [`Unaligned`] or [`CacheLineAligned`]).
pub trait SlotAlignment: Copy + fmt::Debug + sealed::Sealed {}

/// Slots at the alignment of their fields (the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct Unaligned;

/// Slots aligned to a 64-byte cache line: a slot of at most 64 bytes is one line (larger
/// ones round up to a multiple of 64 bytes).
#[derive(Debug, Clone, Copy, Default)]
#[repr(align(64))]
pub struct CacheLineAligned;

impl SlotAlignment for Unaligned {}
impl SlotAlignment for CacheLineAligned {}

/// A hash map from key bytes to `V` laid out for prefetching (see the module docs).
///
/// ```
/// use state_api::{FlatMap, InlineKey};
///
/// let mut map = FlatMap::new();
/// assert_eq!(map.insert(InlineKey::from(&b"a"[..]), 1), None);
/// *map.entry(b"b").or_insert_with(|| 0) += 5;
/// let hash = map.hash(b"b");
/// map.prefetch(hash); // a hint: the lookup below is correct with or without it
/// assert_eq!(map.get_hashed(hash, b"b"), Some(&5));
/// assert_eq!(map.remove(b"a"), Some(1));
/// assert_eq!(map.len(), 1);
/// ```
#[derive(Clone)]
pub struct FlatMap<V, A: SlotAlignment = Unaligned> {
    slots: Vec<Option<Slot<V, A>>>,
    len: usize,
    hasher: RandomState,
    max_load: MaxLoad,
}

/// How full a [`FlatMap`] may get before it doubles: memory per entry against the slots a
/// lookup reads.
///
/// At 3/4 (the default) a map holds between 3/8 and 3/4 of its slots, and a key is often
/// one slot past its home, so [`FlatMap::prefetch`] asks for two slots. At 1/2 it holds
/// between 1/4 and 1/2 (half again the memory per entry on average) and a key is mostly at
/// home: the prefetch asks for one slot, and a lookup bound by cache misses in flight gets
/// faster. Measured (`sfstate-bench`, memory-store's value tables, p 1, alternating binaries,
/// medians of 6-7): W1 23.41M -> 24.85M and 23.79M -> 24.96M events/s, W4 26.20M -> 28.12M and
/// 26.86M -> 28.29M; typed-store's working map showed no difference, so it keeps 3/4. Half
/// with two slots prefetched was no faster than 3/4 with two.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MaxLoad {
    /// At most 3/4 full; prefetch two slots.
    #[default]
    ThreeQuarters,
    /// At most 1/2 full; prefetch one slot.
    Half,
}

impl MaxLoad {
    /// Whether `capacity` slots may hold `len` entries.
    fn fits(self, len: usize, capacity: usize) -> bool {
        match self {
            MaxLoad::ThreeQuarters => len.saturating_mul(4) <= capacity.saturating_mul(3),
            MaxLoad::Half => len.saturating_mul(2) <= capacity,
        }
    }

    /// Slots a prefetch asks for (the home and the ones after it).
    fn prefetch_slots(self) -> usize {
        match self {
            MaxLoad::ThreeQuarters => 2,
            MaxLoad::Half => 1,
        }
    }

    /// Slots charged per entry: about the mean of what an entry occupies between two
    /// growths (4/3 to 8/3 slots at 3/4, 2 to 4 at 1/2).
    const fn charged_slots(self) -> usize {
        match self {
            MaxLoad::ThreeQuarters => 2,
            MaxLoad::Half => 3,
        }
    }
}

impl<V, A: SlotAlignment> Default for FlatMap<V, A> {
    fn default() -> Self {
        Self::with_hasher(RandomState::default())
    }
}

impl<V: fmt::Debug, A: SlotAlignment> fmt::Debug for FlatMap<V, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<V> FlatMap<V> {
    /// An empty map of [`Unaligned`] slots; it allocates on the first insert (for another
    /// alignment: `FlatMap::<V, A>::default()` or [`with_hasher`](Self::with_hasher)).
    pub fn new() -> Self {
        Self::with_hasher(RandomState::default())
    }
}

impl<V, A: SlotAlignment> FlatMap<V, A> {
    /// An empty map hashing with `hasher` (maps sharing a hasher give a key the same hash).
    pub fn with_hasher(hasher: RandomState) -> Self {
        Self {
            slots: Vec::new(),
            len: 0,
            hasher,
            max_load: MaxLoad::default(),
        }
    }

    /// The map, growing at `max_load` from its next insert on (see [`MaxLoad`]).
    #[must_use]
    pub fn with_max_load(mut self, max_load: MaxLoad) -> Self {
        self.max_load = max_load;
        self
    }

    /// How full the map may get before it doubles.
    pub fn max_load(&self) -> MaxLoad {
        self.max_load
    }

    /// Bytes of one slot: what the map allocates per slot of capacity. At the default
    /// [`MaxLoad`] the map holds between 3/8 and 3/4 of its capacity once it has grown, so
    /// an entry costs 4/3 to 8/3 slots; [`FlatMap::ENTRY_BYTES`] charges 2.
    pub const SLOT_BYTES: usize = size_of::<Option<Slot<V, A>>>();

    /// The bytes a backend charges per entry for the table itself at the default
    /// [`MaxLoad`] (two slots: the mean of the 4/3 to 8/3 slots an entry occupies between
    /// growths), key heap bytes and value heap bytes not included.
    pub const ENTRY_BYTES: usize = Self::entry_bytes(MaxLoad::ThreeQuarters);

    /// The bytes a backend charges per entry for the table itself at `max_load` (two slots
    /// at 3/4, three at 1/2).
    pub const fn entry_bytes(max_load: MaxLoad) -> usize {
        max_load.charged_slots() * Self::SLOT_BYTES
    }

    /// Entries in the map.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the map holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slots allocated (0 or a power of two).
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The hash of `key` in this map (pass it to the `*_hashed` methods and
    /// [`prefetch`](Self::prefetch) to hash once).
    #[inline]
    pub fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    /// The index mask, `None` while nothing is allocated.
    #[inline]
    fn mask(&self) -> Option<usize> {
        self.slots.len().checked_sub(1)
    }

    /// The home slot of `hash`: the low bits of the 32 a slot keeps, so that a probe (from
    /// the full hash) and a growth (from the stored bits) agree at any capacity (past 2^32
    /// slots the homes would only cover the first 2^32).
    #[inline]
    fn home(hash: u64, mask: usize) -> usize {
        stored(hash) as usize & mask
    }

    /// Probes for `key`: `Ok(slot)` where it is, `Err(slot)` of the empty slot ending its
    /// run (`Err(0)` when nothing is allocated).
    #[inline]
    fn probe(&self, hash: u64, key: &[u8]) -> Result<usize, usize> {
        let Some(mask) = self.mask() else {
            return Err(0);
        };
        let mut index = Self::home(hash, mask);
        // At least a quarter of the slots is empty, so this ends before `len` steps; the
        // bound only keeps a broken invariant from looping.
        for _ in 0..self.slots.len() {
            match self.slots.get(index) {
                Some(Some(slot)) if slot.hash == stored(hash) && slot.key.eq_bytes(key) => {
                    return Ok(index);
                }
                Some(Some(_)) => index = (index + 1) & mask,
                _ => return Err(index),
            }
        }
        Err(index)
    }

    /// The value of the first key of hash `hash` on its probe run, without comparing keys:
    /// for hints only (a prefetch of what the value points to), since two keys may share a
    /// hash. Needs no key bytes, so a prefetch stage keeps just the hash.
    #[inline]
    pub fn get_by_hash_for_hint(&self, hash: u64) -> Option<&V> {
        let mask = self.mask()?;
        let mut index = Self::home(hash, mask);
        for _ in 0..self.slots.len() {
            match self.slots.get(index) {
                Some(Some(slot)) if slot.hash == stored(hash) => return Some(&slot.value),
                Some(Some(_)) => index = (index + 1) & mask,
                _ => return None,
            }
        }
        None
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.get_hashed(self.hash(key), key)
    }

    /// The value of `key`, whose hash is `hash`.
    #[inline]
    pub fn get_hashed(&self, hash: u64, key: &[u8]) -> Option<&V> {
        let index = self.probe(hash, key).ok()?;
        self.slots.get(index)?.as_ref().map(|s| &s.value)
    }

    /// The value of `key`, mutably.
    #[inline]
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        self.get_mut_hashed(self.hash(key), key)
    }

    /// The value of `key`, whose hash is `hash`, mutably.
    #[inline]
    pub fn get_mut_hashed(&mut self, hash: u64, key: &[u8]) -> Option<&mut V> {
        self.get_mut_with_word_hashed(hash, key)
            .map(|(_, value)| value)
    }

    /// The owner's word and the value of `key`, both mutably.
    #[inline]
    pub fn get_mut_with_word(&mut self, key: &[u8]) -> Option<(&mut u32, &mut V)> {
        self.get_mut_with_word_hashed(self.hash(key), key)
    }

    /// The owner's word and the value of `key`, whose hash is `hash`, both mutably.
    #[inline]
    pub fn get_mut_with_word_hashed(
        &mut self,
        hash: u64,
        key: &[u8],
    ) -> Option<(&mut u32, &mut V)> {
        let index = self.probe(hash, key).ok()?;
        self.slots
            .get_mut(index)?
            .as_mut()
            .map(|s| (&mut s.word, &mut s.value))
    }

    /// The entry of `key`: found, or the place to insert it (one probe for both).
    #[inline]
    pub fn entry<'a>(&'a mut self, key: &'a [u8]) -> Entry<'a, V, A> {
        let hash = self.hash(key);
        self.entry_hashed(hash, key)
    }

    /// The entry of `key`, whose hash is `hash`.
    #[inline]
    pub fn entry_hashed<'a>(&'a mut self, hash: u64, key: &'a [u8]) -> Entry<'a, V, A> {
        match self.probe(hash, key) {
            Ok(index) => Entry::Occupied(OccupiedEntry { map: self, index }),
            Err(index) => Entry::Vacant(VacantEntry {
                map: self,
                hash,
                key,
                index,
            }),
        }
    }

    /// The value of `key` (hash `hash`), inserting `make()` first when it is absent (the
    /// key copied only then); one probe either way.
    #[inline]
    pub fn get_or_insert_with_hashed(
        &mut self,
        hash: u64,
        key: &[u8],
        make: impl FnOnce() -> V,
    ) -> &mut V {
        let index = match self.probe(hash, key) {
            Ok(index) => index,
            Err(index) => self.place(index, Slot::new(hash, 0, InlineKey::from(key), make())),
        };
        match self.slots.get_mut(index) {
            Some(Some(slot)) => &mut slot.value,
            _ => unreachable!("the slot was found or just filled"),
        }
    }

    /// Inserts `value` for `key` (its word 0); returns the value it replaces.
    pub fn insert(&mut self, key: InlineKey, value: V) -> Option<V> {
        self.insert_with_word(key, 0, value)
    }

    /// Inserts `value` for `key` with the owner's word `word`; returns the value it
    /// replaces (whose word is replaced too).
    pub fn insert_with_word(&mut self, key: InlineKey, word: u32, value: V) -> Option<V> {
        let hash = self.hash(key.as_bytes());
        match self.probe(hash, key.as_bytes()) {
            Ok(index) => self
                .slots
                .get_mut(index)
                .and_then(Option::as_mut)
                .map(|slot| {
                    slot.word = word;
                    std::mem::replace(&mut slot.value, value)
                }),
            Err(index) => {
                self.place(index, Slot::new(hash, word, key, value));
                None
            }
        }
    }

    /// Puts `slot` (a key the map lacks) at `index`, the empty slot its probe ended on, or
    /// grows first and finds its slot again; returns where it went.
    fn place(&mut self, index: usize, slot: Slot<V, A>) -> usize {
        let index = if self.max_load.fits(self.len + 1, self.slots.len()) {
            index
        } else {
            self.grow();
            self.empty_slot_for(u64::from(slot.hash))
        };
        if let Some(free) = self.slots.get_mut(index) {
            *free = Some(slot);
            self.len += 1;
        }
        index
    }

    /// The first empty slot at or after `hash`'s home (the map has room).
    fn empty_slot_for(&self, hash: u64) -> usize {
        let Some(mask) = self.mask() else {
            return 0;
        };
        let mut index = Self::home(hash, mask);
        while matches!(self.slots.get(index), Some(Some(_))) {
            index = (index + 1) & mask;
        }
        index
    }

    /// Doubles the capacity (8 slots at first) in place, moving slots by their stored hash.
    ///
    /// The slot vector grows by its upper half (a reallocation that keeps the lower half's
    /// pages, where allocating a new vector touched twice the final size in fresh memory:
    /// ~15 % of memory-store's W1 run at 2,000,000 events was growth), then:
    ///
    /// 1. The run at the front (slots `0..w` up to the first empty slot `w`: a run that may
    ///    have wrapped around from the end) is taken out and set aside.
    /// 2. Slots `w..old` are taken out and put back one by one, in order, each into the
    ///    first empty slot at or after its new home (its old home `h`, or `h + old`), never
    ///    past the end: one that would wrap is set aside. A slot going back to its lower
    ///    home `h` lands at or before the slot it was taken from, as every slot between its
    ///    run's start and there is already done; one going up lands among done slots only.
    ///    So no slot still to do sits between a done slot's home and the done slot: taking
    ///    later slots out never breaks a done slot's run.
    /// 3. The slots set aside are inserted as any insert is, into a map now valid.
    fn grow(&mut self) {
        let old = self.slots.len();
        let capacity = (2 * old).max(8);
        let mask = capacity - 1;
        let front = self.slots.iter().position(Option::is_none).unwrap_or(old);
        let mut aside: Vec<Slot<V, A>> = self
            .slots
            .get_mut(..front)
            .into_iter()
            .flatten()
            .filter_map(Option::take)
            .collect();
        self.slots.resize_with(capacity, || None);
        for at in front..old {
            let Some(slot) = self.slots.get_mut(at).and_then(Option::take) else {
                continue;
            };
            let mut index = Self::home(u64::from(slot.hash), mask);
            while let Some(Some(_)) = self.slots.get(index) {
                index += 1;
            }
            match self.slots.get_mut(index) {
                Some(free) => *free = Some(slot),
                None => aside.push(slot),
            }
        }
        for slot in aside {
            let index = self.empty_slot_for(u64::from(slot.hash));
            if let Some(free) = self.slots.get_mut(index) {
                *free = Some(slot);
            }
        }
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        let index = self.probe(self.hash(key), key).ok()?;
        self.remove_at(index).map(|slot| slot.value)
    }

    /// Empties slot `hole` and shifts the rest of its run back over it: a slot moves into
    /// the hole when the hole lies between the slot's home and where it is.
    fn remove_at(&mut self, mut hole: usize) -> Option<Slot<V, A>> {
        let mask = self.mask()?;
        let removed = self.slots.get_mut(hole)?.take()?;
        self.len -= 1;
        let mut next = (hole + 1) & mask;
        while let Some(Some(slot)) = self.slots.get(next) {
            let origin = Self::home(u64::from(slot.hash), mask);
            if next.wrapping_sub(hole) & mask <= next.wrapping_sub(origin) & mask {
                self.slots.swap(hole, next);
                hole = next;
            }
            next = (next + 1) & mask;
        }
        Some(removed)
    }

    /// Keeps the entries for which `keep` is true, calling it once per entry.
    pub fn retain(&mut self, mut keep: impl FnMut(&InlineKey, &mut V) -> bool) {
        self.retain_with_word(|key, _, value| keep(key, value));
    }

    /// Keeps the entries for which `keep` (given each entry's word) is true, calling it
    /// once per entry.
    pub fn retain_with_word(&mut self, mut keep: impl FnMut(&InlineKey, &mut u32, &mut V) -> bool) {
        let (Some(mask), Some(start)) = (self.mask(), self.slots.iter().position(Option::is_none))
        else {
            return;
        };
        // From an empty slot once around: a removal shifts only slots of the run ahead (which
        // ends before `start`, an empty slot) back into the hole, which is looked at again.
        let mut index = (start + 1) & mask;
        let mut visited = 1;
        while visited < self.slots.len() {
            let drop = match self.slots.get_mut(index) {
                Some(Some(slot)) => !keep(&slot.key, &mut slot.word, &mut slot.value),
                _ => false,
            };
            if drop {
                self.remove_at(index);
            } else {
                index = (index + 1) & mask;
                visited += 1;
            }
        }
    }

    /// The entries, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (&InlineKey, &V)> {
        self.slots
            .iter()
            .filter_map(|slot| slot.as_ref().map(|s| (&s.key, &s.value)))
    }

    /// The entries with mutable values, in slot order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&InlineKey, &mut V)> {
        self.slots
            .iter_mut()
            .filter_map(|slot| slot.as_mut().map(|s| (&s.key, &mut s.value)))
    }

    /// The entries with their words, in slot order.
    pub fn iter_with_word(&self) -> impl Iterator<Item = (&InlineKey, u32, &V)> {
        self.slots
            .iter()
            .filter_map(|slot| slot.as_ref().map(|s| (&s.key, s.word, &s.value)))
    }

    /// The owners' words of every entry, mutably, in slot order.
    pub fn words_mut(&mut self) -> impl Iterator<Item = &mut u32> {
        self.slots
            .iter_mut()
            .filter_map(|slot| slot.as_mut().map(|s| &mut s.word))
    }

    /// Removes every entry and frees the slots.
    pub fn clear(&mut self) {
        self.slots = Vec::new();
        self.len = 0;
    }

    /// Asks the CPU to bring the slots a key of hash `hash` most likely occupies into the
    /// cache, so that a lookup a few operations later finds them there: its home and, at a
    /// [`MaxLoad`] of 3/4, the slot after it. Only a hint: it reads nothing and changes
    /// nothing; on targets without a prefetch instruction it does nothing.
    ///
    /// Two slots at 3/4, because at that load a key is often one slot past its home (linear
    /// probing), and a lookup that then misses the cache waits for the whole trip. Measured
    /// (`sfstate-bench`, memory-store, alternating binaries, medians of 5): W1 22.96M ->
    /// 23.71M events/s, W4 25.25M -> 26.98M with the second slot. A second stage that reads
    /// the home slot a few operations later and asks for the next one only when the home
    /// holds another key was slower (W1 24.5M -> 22.2M): the read waits for the first
    /// stage's line. At 1/2 a key is mostly at home and one slot is asked for.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        let Some(mask) = self.mask() else {
            return;
        };
        if let Some(home) = self.slots.get(Self::home(hash, mask)) {
            // Exactly the lines the home slot (and at 3/4 the next) span: one or two for
            // cache-line-aligned slots of 64 bytes, up to four for 80-byte ones (past the
            // last slot the lines hold nothing; a prefetch never faults).
            let bytes = self.max_load.prefetch_slots() * Self::SLOT_BYTES;
            prefetch_bytes(std::ptr::from_ref(home).cast(), bytes, usize::MAX);
        }
    }
}

/// Bytes per cache line (`x86_64`).
const CACHE_LINE: usize = 64;

/// Prefetches the lines of `bytes` bytes from `start`, at most `max_lines` of them (a hint:
/// the pointers are only computed, never dereferenced).
#[inline]
pub(crate) fn prefetch_bytes(start: *const u8, bytes: usize, max_lines: usize) {
    let offset = start.addr() % CACHE_LINE;
    let mut line = start.wrapping_sub(offset);
    let lines = (offset + bytes).div_ceil(CACHE_LINE).min(max_lines);
    for _ in 0..lines {
        prefetch_line(line);
        line = line.wrapping_add(CACHE_LINE);
    }
}

/// Prefetches the cache line holding `at` into all cache levels.
#[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
#[inline]
#[allow(unsafe_code)]
fn prefetch_line(at: *const u8) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    // SAFETY: `_mm_prefetch` is unsafe only because it is a `#[target_feature(enable =
    // "sse")]` function, and this function is compiled only where SSE is enabled (the cfg
    // above; it is part of every x86_64 target). A prefetch is a hint: it does not
    // dereference `at` in the language's sense, cannot fault and writes nothing, so any
    // address, even one past an allocation, is sound.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast()) }
}

/// No prefetch instruction on this target: a prefetch does nothing.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
#[inline]
fn prefetch_line(_at: *const u8) {}

/// An entry of a [`FlatMap`]: occupied or vacant.
pub enum Entry<'a, V, A: SlotAlignment = Unaligned> {
    /// The key is in the map.
    Occupied(OccupiedEntry<'a, V, A>),
    /// The key is not; inserting puts it where the probe ended.
    Vacant(VacantEntry<'a, V, A>),
}

impl<'a, V, A: SlotAlignment> Entry<'a, V, A> {
    /// The value, inserting `make()` first when the key is absent.
    pub fn or_insert_with(self, make: impl FnOnce() -> V) -> &'a mut V {
        match self {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => entry.insert(make()),
        }
    }
}

/// A key found in a [`FlatMap`].
pub struct OccupiedEntry<'a, V, A: SlotAlignment = Unaligned> {
    map: &'a mut FlatMap<V, A>,
    index: usize,
}

impl<'a, V, A: SlotAlignment> OccupiedEntry<'a, V, A> {
    /// The value.
    pub fn get_mut(&mut self) -> &mut V {
        self.get_mut_with_word().1
    }

    /// The owner's word and the value, both mutably.
    pub fn get_mut_with_word(&mut self) -> (&mut u32, &mut V) {
        match self.map.slots.get_mut(self.index) {
            Some(Some(slot)) => (&mut slot.word, &mut slot.value),
            // The entry was made from an occupied slot and holds the map mutably.
            _ => unreachable!("an occupied entry's slot is occupied"),
        }
    }

    /// The value, for the map's lifetime.
    pub fn into_mut(self) -> &'a mut V {
        match self.map.slots.get_mut(self.index) {
            Some(Some(slot)) => &mut slot.value,
            _ => unreachable!("an occupied entry's slot is occupied"),
        }
    }

    /// Removes the entry; returns its value.
    pub fn remove(self) -> V {
        match self.map.remove_at(self.index) {
            Some(slot) => slot.value,
            None => unreachable!("an occupied entry's slot is occupied"),
        }
    }
}

/// A key absent from a [`FlatMap`] and the slot its probe ended on.
pub struct VacantEntry<'a, V, A: SlotAlignment = Unaligned> {
    map: &'a mut FlatMap<V, A>,
    hash: u64,
    key: &'a [u8],
    index: usize,
}

impl<'a, V, A: SlotAlignment> VacantEntry<'a, V, A> {
    /// Inserts `value` (copying the key, inline when short; growing the map when it is
    /// full), its word 0; returns it.
    pub fn insert(self, value: V) -> &'a mut V {
        self.insert_with_word(0, value)
    }

    /// Inserts `value` with the owner's word `word`; returns the value.
    pub fn insert_with_word(self, word: u32, value: V) -> &'a mut V {
        let slot = Slot::new(self.hash, word, InlineKey::from(self.key), value);
        let index = self.map.place(self.index, slot);
        match self.map.slots.get_mut(index) {
            Some(Some(slot)) => &mut slot.value,
            _ => unreachable!("the slot was just filled"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    fn key(i: u32) -> Vec<u8> {
        i.to_be_bytes().to_vec()
    }

    /// Every entry is reachable from its home without crossing an empty slot.
    fn assert_invariants<V>(map: &FlatMap<V>) {
        assert_eq!(map.iter().count(), map.len());
        assert!(map.capacity() == 0 || map.capacity().is_power_of_two());
        assert!(map.max_load().fits(map.len(), map.capacity()));
        for (k, _) in map.iter() {
            assert!(map.probe(map.hash(k.as_bytes()), k.as_bytes()).is_ok());
        }
    }

    /// At 1/2 the map doubles before it is more than half full, and charges three slots an
    /// entry (two at the default 3/4).
    #[test]
    fn half_load_map_stays_at_most_half_full() {
        let mut map = FlatMap::new().with_max_load(MaxLoad::Half);
        for i in 0..10_000 {
            assert_eq!(map.insert(InlineKey::from(key(i).as_slice()), i), None);
            assert!(2 * map.len() <= map.capacity());
        }
        assert_invariants(&map);
        assert_eq!(map.capacity(), 32_768);
        assert!((0..10_000).all(|i| map.get(&key(i)) == Some(&i)));
        let charged = (
            FlatMap::<[u64; 4], CacheLineAligned>::ENTRY_BYTES,
            FlatMap::<[u64; 4], CacheLineAligned>::entry_bytes(MaxLoad::Half),
        );
        assert_eq!(charged, (128, 192));
    }

    #[test]
    fn grows_removes_and_keeps_every_key_reachable() {
        let mut map = FlatMap::new();
        for i in 0..10_000 {
            assert_eq!(map.insert(InlineKey::from(key(i).as_slice()), i), None);
        }
        assert_invariants(&map);
        assert_eq!(map.capacity(), 16_384);
        for i in (0..10_000).step_by(3) {
            assert_eq!(map.remove(&key(i)), Some(i));
            assert_eq!(map.remove(&key(i)), None);
        }
        assert_invariants(&map);
        for i in 0..10_000 {
            assert_eq!(map.get(&key(i)).copied(), (i % 3 != 0).then_some(i));
        }
        map.retain(|_, v| *v % 2 == 0);
        assert_invariants(&map);
        assert!(map.iter().all(|(_, v)| v % 2 == 0 && v % 3 != 0));
        assert_eq!(
            map.len(),
            (0..10_000).filter(|i| i % 2 == 0 && i % 3 != 0).count()
        );
        map.clear();
        assert!(map.is_empty());
        assert_eq!(map.get(&key(2)), None);
        map.prefetch(1); // on an empty map: nothing to prefetch
    }

    /// Inserts `key` with a chosen hash (its slot is found by that hash, as by the real one).
    fn insert_with_hash(map: &mut FlatMap<u32>, hash: u64, key: &[u8], value: u32) {
        if let Err(index) = map.probe(hash, key) {
            map.place(index, Slot::new(hash, 0, InlineKey::from(key), value));
        }
    }

    proptest! {
        /// Growth in place keeps every entry reachable from its home, also when runs wrap
        /// around the end before the growth and would wrap after it (hashes crowded at the
        /// ends of every capacity the map passes), with removals between the growths.
        #[test]
        fn growth_in_place_keeps_crowded_and_wrapped_runs_reachable(
            homes in prop::collection::vec((0_u64..6, 0_u64..4, any::<u16>()), 1..600),
            half in any::<bool>(),
        ) {
            let load = if half { MaxLoad::Half } else { MaxLoad::ThreeQuarters };
            let mut map = FlatMap::new().with_max_load(load);
            let mut hashes = BTreeMap::new();
            for (n, &(end, bits, salt)) in homes.iter().enumerate() {
                // Low bits at the end or the start of some capacity (8 .. 1024), high bits
                // free: such keys fill the last slots and wrap to the first.
                let cap = 8_u64 << (bits * 2);
                let low = if end < 3 { cap - 1 - end } else { end - 3 };
                let hash = (u64::from(salt) << 32) | low;
                let k = u32::try_from(n).unwrap();
                insert_with_hash(&mut map, hash, &key(k), k);
                hashes.insert(k, hash);
                if salt % 7 == 0 {
                    let gone = k / 2;
                    if let Some(h) = hashes.remove(&gone) {
                        let index = map.probe(h, &key(gone)).unwrap();
                        prop_assert_eq!(map.remove_at(index).map(|s| s.value), Some(gone));
                    }
                }
                prop_assert_eq!(map.len(), hashes.len());
                for (&k, &h) in &hashes {
                    let index = map.probe(h, &key(k));
                    prop_assert!(index.is_ok(), "key {} lost (capacity {})", k, map.capacity());
                }
            }
        }
    }

    #[test]
    fn long_keys_and_entries() {
        let mut map = FlatMap::new();
        let long = [7_u8; 40];
        *map.entry(&long).or_insert_with(|| 5) += 1;
        assert_eq!(map.get(&long), Some(&6));
        assert_eq!(*map.entry(&long).or_insert_with(|| 0), 6);
        match map.entry(&long) {
            Entry::Occupied(mut entry) => {
                *entry.get_mut() = 9;
                assert_eq!(entry.remove(), 9);
            }
            Entry::Vacant(_) => panic!("the key is in the map"),
        }
        assert!(map.is_empty());
        assert_eq!(map.insert(InlineKey::from(&long[..]), 1), None);
        assert_eq!(map.insert(InlineKey::from(&long[..]), 2), Some(1));
        for hash in [0, 1, u64::MAX, map.hash(&long)] {
            map.prefetch(hash); // any hash, any capacity: a hint, never a fault
        }
        assert_eq!(
            format!("{map:?}"),
            format!("{{InlineKey({:?}): 2}}", &long[..])
        );
    }

    #[test]
    fn a_hint_lookup_by_hash_finds_the_keys_of_that_hash_and_nothing_else() {
        let mut map = FlatMap::new();
        assert_eq!(map.get_by_hash_for_hint(7), None, "nothing allocated");
        for i in 0..5_000 {
            map.insert(InlineKey::from(key(i).as_slice()), i);
        }
        for i in (0..5_000).step_by(2) {
            map.remove(&key(i));
        }
        // 64-bit hashes of 5,000 keys do not collide: the hint finds each key's own value.
        for i in 0..5_000 {
            let hint = map.get_by_hash_for_hint(map.hash(&key(i))).copied();
            assert_eq!(hint, (i % 2 == 1).then_some(i), "key {i}");
        }
        // A hash no key has ends at the empty slot of its run.
        let absent = (5_000..6_000)
            .map(|i| map.hash(&key(i)))
            .filter(|h| map.get_by_hash_for_hint(*h).is_some())
            .count();
        assert_eq!(absent, 0);
    }

    #[test]
    fn shared_hashers_hash_alike() {
        let hasher = RandomState::default();
        let a: FlatMap<u8> = FlatMap::with_hasher(hasher.clone());
        let b: FlatMap<u8> = FlatMap::with_hasher(hasher);
        assert_eq!(a.hash(b"k"), b.hash(b"k"));
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u8, u32),
        Entry(u8, u32),
        GetOrInsert(u8, u32),
        Remove(u8),
        Retain(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (any::<u8>(), any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
            2 => (any::<u8>(), any::<u32>()).prop_map(|(k, v)| Op::Entry(k, v)),
            2 => (any::<u8>(), any::<u32>()).prop_map(|(k, v)| Op::GetOrInsert(k, v)),
            3 => any::<u8>().prop_map(Op::Remove),
            1 => (1..8_u8).prop_map(Op::Retain),
        ]
    }

    proptest! {
        /// The map behaves as a `BTreeMap` over any sequence of operations (keys from a
        /// small space so that runs collide, wrap and shift).
        #[test]
        fn behaves_as_a_map(ops in prop::collection::vec(op(), 0..400), half in any::<bool>()) {
            let load = if half { MaxLoad::Half } else { MaxLoad::ThreeQuarters };
            let mut map = FlatMap::new().with_max_load(load);
            let mut model = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Insert(k, v) => {
                        let k = vec![k % 64; usize::from(k % 3) * 12 + 1];
                        prop_assert_eq!(map.insert(InlineKey::from(k.as_slice()), v), model.insert(k, v));
                    }
                    Op::Entry(k, v) => {
                        let k = vec![k % 64; usize::from(k % 3) * 12 + 1];
                        let got = *map.entry(&k).or_insert_with(|| v);
                        prop_assert_eq!(got, *model.entry(k).or_insert(v));
                    }
                    Op::GetOrInsert(k, v) => {
                        let k = vec![k % 64; usize::from(k % 3) * 12 + 1];
                        let hash = map.hash(&k);
                        map.prefetch(hash);
                        let got = map.get_or_insert_with_hashed(hash, &k, || v);
                        *got = got.wrapping_add(1);
                        let want = model.entry(k).or_insert(v);
                        *want = want.wrapping_add(1);
                    }
                    Op::Remove(k) => {
                        let k = vec![k % 64; usize::from(k % 3) * 12 + 1];
                        prop_assert_eq!(map.remove(&k), model.remove(&k));
                    }
                    Op::Retain(m) => {
                        let mut calls = 0;
                        map.retain(|_, v| { calls += 1; *v % u32::from(m) != 0 });
                        prop_assert_eq!(calls, model.len());
                        model.retain(|_, v| *v % u32::from(m) != 0);
                    }
                }
                assert_invariants(&map);
                let mut got: Vec<_> = map.iter().map(|(k, v)| (k.as_bytes().to_vec(), *v)).collect();
                got.sort();
                let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
                prop_assert_eq!(got, want);
            }
        }
    }

    /// A 32-byte value's slot is one cache line when aligned, and the slots start on one.
    #[test]
    fn cache_line_aligned_slots_are_one_line_each() {
        assert_eq!(FlatMap::<[u64; 4], CacheLineAligned>::SLOT_BYTES, 64);
        assert_eq!(FlatMap::<[u64; 4]>::SLOT_BYTES, 64);
        assert_eq!(FlatMap::<[u64; 5], CacheLineAligned>::SLOT_BYTES, 128);
        let mut map = FlatMap::<[u64; 4], CacheLineAligned>::default();
        for i in 0..100 {
            map.insert(InlineKey::from(key(i).as_slice()), [u64::from(i); 4]);
        }
        assert_eq!(map.slots.as_ptr().addr() % 64, 0);
        assert_eq!(map.get(&key(7)), Some(&[7; 4]));
    }

    proptest! {
        /// Each entry's word goes wherever the entry goes (growth, the shifts after a
        /// removal) and is what the last write of it set, on an aligned map.
        #[test]
        fn words_travel_with_their_entries(ops in prop::collection::vec(op(), 0..300)) {
            let mut map = FlatMap::<u32, CacheLineAligned>::default();
            let mut model: BTreeMap<Vec<u8>, (u32, u32)> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Insert(k, v) => {
                        let k = vec![k % 64; usize::from(k % 3) * 12 + 1];
                        let old = map.insert_with_word(InlineKey::from(k.as_slice()), !v, v);
                        prop_assert_eq!(old, model.insert(k, (!v, v)).map(|(_, v)| v));
                    }
                    Op::Entry(k, v) | Op::GetOrInsert(k, v) => {
                        let k = vec![k % 64; usize::from(k % 3) * 12 + 1];
                        let hash = map.hash(&k);
                        match map.entry_hashed(hash, &k) {
                            Entry::Occupied(mut o) => {
                                let (word, value) = o.get_mut_with_word();
                                *word = word.wrapping_add(v);
                                let m = model.get_mut(&k).unwrap();
                                m.0 = m.0.wrapping_add(v);
                                prop_assert_eq!(*value, m.1);
                            }
                            Entry::Vacant(vacant) => {
                                vacant.insert_with_word(v, v);
                                model.insert(k.clone(), (v, v));
                            }
                        }
                        if let Some((word, _)) = map.get_mut_with_word_hashed(hash, &k) {
                            *word ^= 1;
                        }
                        if let Some(m) = model.get_mut(&k) {
                            m.0 ^= 1;
                        }
                    }
                    Op::Remove(k) => {
                        let k = vec![k % 64; usize::from(k % 3) * 12 + 1];
                        prop_assert_eq!(map.remove(&k), model.remove(&k).map(|(_, v)| v));
                    }
                    Op::Retain(m) => {
                        map.retain_with_word(|_, word, _| *word % u32::from(m) != 0);
                        model.retain(|_, (word, _)| *word % u32::from(m) != 0);
                        for word in map.words_mut() {
                            *word = word.rotate_left(1);
                        }
                        for (word, _) in model.values_mut() {
                            *word = word.rotate_left(1);
                        }
                    }
                }
                prop_assert_eq!(map.slots.as_ptr().addr() % 64, 0);
                let mut got: Vec<_> = map
                    .iter_with_word()
                    .map(|(k, w, v)| (k.as_bytes().to_vec(), (w, *v)))
                    .collect();
                got.sort();
                let want: Vec<_> = model.iter().map(|(k, wv)| (k.clone(), *wv)).collect();
                prop_assert_eq!(got, want);
            }
        }
    }
}
