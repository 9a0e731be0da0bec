//! Key-group math: Flink's `KeyGroupRangeAssignment` with validated newtypes.

use std::fmt;

use crate::error::{Error, Result};
use crate::hash::{JavaHashCode, murmur_hash};
use crate::range::KeyGroupRange;

/// `KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM`: the largest parallelism and max
/// parallelism Flink accepts (`Transformation.UPPER_BOUND_MAX_PARALLELISM`, `1 << 15`).
pub const UPPER_BOUND_MAX_PARALLELISM: i32 = 1 << 15;

/// `KeyGroupRangeAssignment.DEFAULT_LOWER_BOUND_MAX_PARALLELISM`: the smallest max parallelism
/// [`compute_default_max_parallelism`] returns (`1 << 7`).
pub const DEFAULT_LOWER_BOUND_MAX_PARALLELISM: i32 = 1 << 7;

/// `KeyGroupRangeAssignment.checkParallelismPreconditions`: `1 <= value <= 32768`.
fn check_parallelism_preconditions(value: i32) -> Result<i32> {
    if value > 0 && value <= UPPER_BOUND_MAX_PARALLELISM {
        Ok(value)
    } else {
        Err(Error::ParallelismOutOfBounds { parallelism: value })
    }
}

/// The maximum parallelism of a keyed operator, i.e. its number of key groups.
///
/// Invariant: `1 <= value <= 32768` ([`UPPER_BOUND_MAX_PARALLELISM`]), checked once by
/// [`MaxParallelism::new`] exactly as `KeyGroupRangeAssignment.checkParallelismPreconditions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MaxParallelism {
    value: i32,
    /// `u64::MAX / value + 1` (wrapping): the multiplier of Lemire's "faster remainder by
    /// direct computation", so the per-key `% max_parallelism` needs no division instruction.
    /// A function of `value`, so the derived comparisons stay those of `value`.
    remainder_magic: u64,
}

impl MaxParallelism {
    /// Validates a max parallelism.
    ///
    /// # Errors
    /// [`Error::ParallelismOutOfBounds`] (Flink's message `Operator parallelism not within
    /// bounds: <value>`) unless `1 <= value <= 32768`.
    pub fn new(value: i32) -> Result<Self> {
        check_parallelism_preconditions(value).map(Self::from_valid)
    }

    /// A max parallelism already known to be in `1..=32768`.
    fn from_valid(value: i32) -> Self {
        let divisor = u64::from(value.cast_unsigned());
        Self {
            value,
            remainder_magic: (u64::MAX / divisor).wrapping_add(1),
        }
    }

    /// The number of key groups.
    #[inline]
    pub fn get(self) -> i32 {
        self.value
    }

    /// `hash % max_parallelism` for a non-negative `hash`, exactly as Java's `%`, without a
    /// division instruction (Lemire, Kaser, Kurz: "Faster remainder by direct computation",
    /// 2019; exact for every 32-bit dividend and divisor).
    #[inline]
    fn remainder_of(self, hash: u32) -> i32 {
        let low = self.remainder_magic.wrapping_mul(u64::from(hash));
        let divisor = u128::from(self.value.cast_unsigned());
        // The remainder is below the divisor (<= 32768), so it fits an i32.
        i32::try_from((u128::from(low) * divisor) >> 64).unwrap_or_default()
    }

    /// Validates a key-group id against this max parallelism: `0 <= key_group < self`.
    ///
    /// # Errors
    /// [`Error::KeyGroupOutOfRange`] otherwise.
    #[inline]
    pub fn key_group(self, key_group: i32) -> Result<KeyGroup> {
        if (0..self.value).contains(&key_group) {
            Ok(KeyGroup(key_group))
        } else {
            Err(Error::KeyGroupOutOfRange {
                key_group,
                max_parallelism: self.value,
            })
        }
    }

    /// The key-group prefix width of RocksDB keys: 1 byte up to 128 key groups, else 2
    /// (`CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix`).
    pub fn key_group_prefix_bytes(self) -> usize {
        if self.value > 128 { 2 } else { 1 }
    }

    /// All key groups `0..=max_parallelism - 1` as one range.
    pub fn key_groups(self) -> KeyGroupRange {
        KeyGroupRange::of_valid(0, self.value - 1)
    }
}

impl fmt::Display for MaxParallelism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

/// The parallelism of an operator, i.e. its number of subtasks.
///
/// Invariant: `1 <= value <= 32768`, checked once by [`Parallelism::new`] exactly as
/// `KeyGroupRangeAssignment.checkParallelismPreconditions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Parallelism(i32);

impl Parallelism {
    /// Validates a parallelism.
    ///
    /// # Errors
    /// [`Error::ParallelismOutOfBounds`] (Flink's message `Operator parallelism not within
    /// bounds: <value>`) unless `1 <= value <= 32768`.
    pub fn new(value: i32) -> Result<Self> {
        check_parallelism_preconditions(value).map(Self)
    }

    /// The number of subtasks.
    #[inline]
    pub fn get(self) -> i32 {
        self.0
    }

    /// Validates an operator (subtask) index against this parallelism: `0 <= index < self`.
    ///
    /// # Errors
    /// [`Error::OperatorIndexOutOfRange`] otherwise.
    pub fn check_operator_index(self, operator_index: i32) -> Result<i32> {
        if (0..self.0).contains(&operator_index) {
            Ok(operator_index)
        } else {
            Err(Error::OperatorIndexOutOfRange {
                operator_index,
                parallelism: self.0,
            })
        }
    }
}

impl fmt::Display for Parallelism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A key-group id: Flink's `int` key group, never negative.
///
/// Invariant: `value >= 0`. Key groups that come from a key ([`assign_to_key_group`]) or
/// from [`MaxParallelism::key_group`] are also below their max parallelism. A range from
/// [`compute_key_group_range_for_operator_index`] with an operator index `>= parallelism` can
/// reach past the max parallelism, exactly as in Flink, so the type itself does not promise
/// that.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyGroup(i32);

impl KeyGroup {
    /// Validates a key-group id.
    ///
    /// # Errors
    /// [`Error::NegativeKeyGroup`] when `value < 0`.
    pub fn new(value: i32) -> Result<Self> {
        if value >= 0 {
            Ok(Self(value))
        } else {
            Err(Error::NegativeKeyGroup { key_group: value })
        }
    }

    /// A key group known to be non-negative (crate-internal).
    pub(crate) const fn new_unchecked(value: i32) -> Self {
        Self(value)
    }

    /// The key-group id as Flink's `int`.
    #[inline]
    pub fn get(self) -> i32 {
        self.0
    }

    /// The key-group id as an index (e.g. into a per-key-group table).
    #[inline]
    pub fn index(self) -> usize {
        // Lossless: the invariant says 0 <= self.0 <= i32::MAX.
        usize::try_from(self.0).unwrap_or_default()
    }
}

impl fmt::Display for KeyGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// `KeyGroupRangeAssignment.computeKeyGroupForKeyHash(keyHash, maxParallelism)`:
/// `MathUtils.murmurHash(key_hash) % max_parallelism`.
///
/// Preconditions: none beyond a valid [`MaxParallelism`] (Flink checks none).
///
/// ```
/// use keygroup::{compute_key_group_for_key_hash, MaxParallelism};
///
/// let kg = compute_key_group_for_key_hash(0, MaxParallelism::new(128)?);
/// assert_eq!(kg.get(), 94);
/// # Ok::<(), keygroup::Error>(())
/// ```
#[inline]
#[must_use]
pub fn compute_key_group_for_key_hash(key_hash: i32, max_parallelism: MaxParallelism) -> KeyGroup {
    // murmur_hash is never negative and max_parallelism is positive: the remainder is a valid
    // key group below max_parallelism.
    KeyGroup(max_parallelism.remainder_of(murmur_hash(key_hash).cast_unsigned()))
}

/// `KeyGroupRangeAssignment.assignToKeyGroup(key, maxParallelism)`:
/// [`compute_key_group_for_key_hash`] of the key's Java `hashCode()`.
///
/// Preconditions: none beyond a valid [`MaxParallelism`].
///
/// ```
/// use keygroup::{assign_to_key_group, MaxParallelism};
///
/// let mp = MaxParallelism::new(128)?;
/// assert_eq!(assign_to_key_group(&0_i32, mp).get(), 94);
/// assert_eq!(assign_to_key_group("a", mp).get(), 81);
/// # Ok::<(), keygroup::Error>(())
/// ```
#[inline]
#[must_use]
pub fn assign_to_key_group<K: JavaHashCode + ?Sized>(
    key: &K,
    max_parallelism: MaxParallelism,
) -> KeyGroup {
    compute_key_group_for_key_hash(key.java_hash_code(), max_parallelism)
}

/// `KeyGroupRangeAssignment.assignKeyToParallelOperator(key, maxParallelism, parallelism)`:
/// the subtask a key is routed to.
///
/// Preconditions: none beyond valid newtypes; like Flink, `parallelism <= max_parallelism` is
/// not checked here (the arithmetic is still exact).
#[must_use]
pub fn assign_key_to_parallel_operator<K: JavaHashCode + ?Sized>(
    key: &K,
    max_parallelism: MaxParallelism,
    parallelism: Parallelism,
) -> i32 {
    compute_operator_index_for_key_group(
        max_parallelism,
        parallelism,
        assign_to_key_group(key, max_parallelism),
    )
}

/// `KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup(maxParallelism, parallelism,
/// keyGroupId)`: `key_group * parallelism / max_parallelism` in Java `int` arithmetic
/// (wrapping multiplication, truncating division).
///
/// Preconditions (Flink documents them and checks none): `key_group < max_parallelism` and
/// `parallelism <= max_parallelism`; then the result is in `0..parallelism`.
#[must_use]
pub fn compute_operator_index_for_key_group(
    max_parallelism: MaxParallelism,
    parallelism: Parallelism,
    key_group: KeyGroup,
) -> i32 {
    key_group.0.wrapping_mul(parallelism.0) / max_parallelism.value
}

/// `KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism,
/// operatorIndex)`: the inclusive key-group range of one subtask,
/// `start = (i*mp + p - 1) / p`, `end = ((i+1)*mp - 1) / p` in Java `int` arithmetic.
///
/// Preconditions, checked in Flink's order: `parallelism` and `max_parallelism` in
/// `1..=32768` (by their newtypes), then `max_parallelism >= parallelism`, then the
/// `KeyGroupRange` constructor's `0 <= start <= end`. The operator index itself is **not**
/// checked, as in Flink: a negative index usually fails the range check, and an index
/// `>= parallelism` returns a range past `max_parallelism` (mp 128, p 4, index 4 gives
/// `128..=159`). Use [`Parallelism::check_operator_index`] first to reject those.
///
/// # Errors
/// [`Error::MaxParallelismSmallerThanParallelism`], [`Error::InvalidKeyGroupRange`].
///
/// ```
/// use keygroup::{compute_key_group_range_for_operator_index, MaxParallelism, Parallelism};
///
/// let range = compute_key_group_range_for_operator_index(
///     MaxParallelism::new(128)?,
///     Parallelism::new(3)?,
///     1,
/// )?;
/// assert_eq!((range.start(), range.end()), (43, 85));
/// # Ok::<(), keygroup::Error>(())
/// ```
pub fn compute_key_group_range_for_operator_index(
    max_parallelism: MaxParallelism,
    parallelism: Parallelism,
    operator_index: i32,
) -> Result<KeyGroupRange> {
    let (mp, p) = (max_parallelism.value, parallelism.0);
    if mp < p {
        return Err(Error::MaxParallelismSmallerThanParallelism {
            max_parallelism: mp,
            parallelism: p,
        });
    }
    let start = operator_index.wrapping_mul(mp).wrapping_add(p - 1) / p;
    let end = operator_index
        .wrapping_add(1)
        .wrapping_mul(mp)
        .wrapping_sub(1)
        / p;
    KeyGroupRange::new(start, end)
}

/// `KeyGroupRangeAssignment.computeDefaultMaxParallelism(operatorParallelism)`:
/// `min(max(roundUpToPowerOfTwo(p + p / 2), 128), 32768)`.
///
/// Preconditions: `1 <= p <= 32768`, guaranteed by [`Parallelism`] (Flink checks it with
/// `checkParallelismPreconditions`).
///
/// ```
/// use keygroup::{compute_default_max_parallelism, Parallelism};
///
/// assert_eq!(compute_default_max_parallelism(Parallelism::new(1)?).get(), 128);
/// assert_eq!(compute_default_max_parallelism(Parallelism::new(86)?).get(), 256);
/// assert_eq!(compute_default_max_parallelism(Parallelism::new(32768)?).get(), 32768);
/// # Ok::<(), keygroup::Error>(())
/// ```
#[must_use]
pub fn compute_default_max_parallelism(parallelism: Parallelism) -> MaxParallelism {
    let p = parallelism.0.cast_unsigned();
    // p <= 32768, so p + p/2 <= 49152 and its power of two (<= 65536) fits easily.
    let rounded = (p + p / 2).next_power_of_two().cast_signed();
    MaxParallelism::from_valid(rounded.clamp(
        DEFAULT_LOWER_BOUND_MAX_PARALLELISM,
        UPPER_BOUND_MAX_PARALLELISM,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mp(v: i32) -> MaxParallelism {
        MaxParallelism::new(v).unwrap()
    }

    fn p(v: i32) -> Parallelism {
        Parallelism::new(v).unwrap()
    }

    #[test]
    fn parallelism_bounds() {
        for bad in [i32::MIN, -1, 0, 32_769, i32::MAX] {
            let err = Parallelism::new(bad).unwrap_err();
            assert!(
                matches!(err, Error::ParallelismOutOfBounds { parallelism } if parallelism == bad)
            );
            assert_eq!(
                err.to_string(),
                format!("Operator parallelism not within bounds: {bad}")
            );
            assert!(matches!(
                MaxParallelism::new(bad),
                Err(Error::ParallelismOutOfBounds { .. })
            ));
        }
        assert_eq!(p(1).get(), 1);
        assert_eq!(mp(32_768).get(), 32_768);
    }

    #[test]
    fn key_group_validation() {
        assert!(matches!(
            KeyGroup::new(-1),
            Err(Error::NegativeKeyGroup { key_group: -1 })
        ));
        assert_eq!(KeyGroup::new(5).unwrap().index(), 5);
        assert!(matches!(
            mp(128).key_group(128),
            Err(Error::KeyGroupOutOfRange {
                key_group: 128,
                max_parallelism: 128
            })
        ));
        assert!(matches!(
            mp(128).key_group(-1),
            Err(Error::KeyGroupOutOfRange { .. })
        ));
        assert_eq!(mp(128).key_group(127).unwrap().get(), 127);
    }

    #[test]
    fn operator_index_validation() {
        assert!(matches!(
            p(4).check_operator_index(4),
            Err(Error::OperatorIndexOutOfRange {
                operator_index: 4,
                parallelism: 4
            })
        ));
        assert!(p(4).check_operator_index(-1).is_err());
        assert_eq!(p(4).check_operator_index(3).unwrap(), 3);
    }

    #[test]
    fn remainder_without_division_matches_java() {
        let dividends = [
            0,
            1,
            2,
            127,
            128,
            129,
            32_767,
            32_768,
            1 << 30,
            i32::MAX.cast_unsigned(),
        ];
        for divisor in (1..=300).chain([4095, 4096, 4097, 32_767, 32_768]) {
            let max = mp(divisor);
            for hash in dividends
                .into_iter()
                .chain((0..2000).map(|i| i * 1_073_741 + 7))
            {
                let java = hash.cast_signed() % divisor;
                assert_eq!(max.remainder_of(hash), java, "{hash} % {divisor}");
            }
        }
    }

    #[test]
    fn prefix_bytes() {
        assert_eq!(mp(1).key_group_prefix_bytes(), 1);
        assert_eq!(mp(128).key_group_prefix_bytes(), 1);
        assert_eq!(mp(129).key_group_prefix_bytes(), 2);
        assert_eq!(mp(32_768).key_group_prefix_bytes(), 2);
    }

    #[test]
    fn range_quirks_match_flink() {
        // Index >= parallelism: a range past max parallelism (README point 9).
        let r = compute_key_group_range_for_operator_index(mp(128), p(4), 4).unwrap();
        assert_eq!((r.start(), r.end()), (128, 159));
        // Negative index: the KeyGroupRange check fails.
        let err = compute_key_group_range_for_operator_index(mp(128), p(4), -1).unwrap_err();
        assert!(matches!(err, Error::InvalidKeyGroupRange { .. }));
        assert_eq!(
            err.flink_exception().as_deref(),
            Some("java.lang.IllegalArgumentException: null")
        );
        // ... but not always: (-5 + 3) / 4 == 0 and (0 - 1) / 4 == 0 in Java.
        let r = compute_key_group_range_for_operator_index(mp(5), p(4), -1).unwrap();
        assert_eq!((r.start(), r.end()), (0, 0));
        // mp < p.
        let err = compute_key_group_range_for_operator_index(mp(128), p(129), 0).unwrap_err();
        assert!(matches!(
            err,
            Error::MaxParallelismSmallerThanParallelism {
                max_parallelism: 128,
                parallelism: 129
            }
        ));
        assert_eq!(
            err.to_string(),
            "Maximum parallelism must not be smaller than parallelism."
        );
    }

    #[test]
    fn default_max_parallelism() {
        assert_eq!(compute_default_max_parallelism(p(85)).get(), 128);
        assert_eq!(compute_default_max_parallelism(p(86)).get(), 256);
        assert_eq!(compute_default_max_parallelism(p(21_845)).get(), 32_768);
        assert_eq!(compute_default_max_parallelism(p(21_846)).get(), 32_768);
    }

    #[test]
    fn operator_index_for_key_group() {
        let kg = KeyGroup::new(127).unwrap();
        assert_eq!(compute_operator_index_for_key_group(mp(128), p(4), kg), 3);
        assert_eq!(assign_key_to_parallel_operator(&0_i32, mp(128), p(96)), 70);
    }
}
