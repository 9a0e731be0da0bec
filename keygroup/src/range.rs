//! `KeyGroupRange`: an inclusive range of key groups.

use std::fmt;
use std::iter::FusedIterator;

use crate::assignment::KeyGroup;
use crate::error::{Error, Result};

/// An inclusive range `start..=end` of key groups, or the empty range: Flink's
/// `KeyGroupRange`.
///
/// Invariant (the Java constructor's checks): either empty, or `0 <= start <= end` and the
/// number of key groups `1 + end - start` fits an `i32`. Like Flink's
/// `EMPTY_KEY_GROUP_RANGE`, every empty range is `start = 0, end = -1`, so all empty ranges are
/// equal.
///
/// ```
/// use keygroup::KeyGroupRange;
///
/// let a = KeyGroupRange::new(0, 42)?;
/// let b = KeyGroupRange::new(40, 85)?;
/// assert_eq!(a.intersection(b), KeyGroupRange::new(40, 42)?);
/// assert_eq!(a.intersection(b).iter().map(|kg| kg.get()).collect::<Vec<_>>(), [40, 41, 42]);
/// assert!(a.intersection(KeyGroupRange::new(50, 60)?).is_empty());
/// # Ok::<(), keygroup::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyGroupRange {
    start: i32,
    end: i32,
}

impl KeyGroupRange {
    /// The empty range (`KeyGroupRange.EMPTY_KEY_GROUP_RANGE`): `start = 0`, `end = -1`.
    pub const EMPTY: Self = Self { start: 0, end: -1 };

    /// The `KeyGroupRange(startKeyGroup, endKeyGroup)` constructor: the non-empty range
    /// `start..=end`.
    ///
    /// # Errors
    /// [`Error::InvalidKeyGroupRange`] unless `0 <= start <= end` (Flink throws
    /// `IllegalArgumentException` with no message); [`Error::KeyGroupRangeOverflow`] when
    /// `1 + end - start` overflows an `i32` (`"Potential overflow detected."`).
    pub fn new(start: i32, end: i32) -> Result<Self> {
        if start < 0 || start > end {
            return Err(Error::InvalidKeyGroupRange { start, end });
        }
        if end.wrapping_sub(start).wrapping_add(1) < 0 {
            return Err(Error::KeyGroupRangeOverflow { start, end });
        }
        Ok(Self { start, end })
    }

    /// `KeyGroupRange.of(startKeyGroup, endKeyGroup)`: the range `start..=end`, or
    /// [`KeyGroupRange::EMPTY`] when `start > end`.
    ///
    /// # Errors
    /// As [`KeyGroupRange::new`] when `start <= end`.
    pub fn of(start: i32, end: i32) -> Result<Self> {
        if start <= end {
            Self::new(start, end)
        } else {
            Ok(Self::EMPTY)
        }
    }

    /// A range whose bounds the caller knows to be valid or empty (crate-internal).
    pub(crate) fn of_valid(start: i32, end: i32) -> Self {
        Self::of(start, end).unwrap_or(Self::EMPTY)
    }

    /// `getStartKeyGroup()`: the first key group (0 for the empty range).
    #[inline]
    pub fn start(self) -> i32 {
        self.start
    }

    /// `getEndKeyGroup()`: the last key group, inclusive (-1 for the empty range).
    #[inline]
    pub fn end(self) -> i32 {
        self.end
    }

    /// `getNumberOfKeyGroups()`: `1 + end - start` (0 for the empty range).
    #[inline]
    pub fn number_of_key_groups(self) -> i32 {
        self.end - self.start + 1
    }

    /// The number of key groups as a `usize`.
    #[inline]
    pub fn len(self) -> usize {
        usize::try_from(self.number_of_key_groups()).unwrap_or_default()
    }

    /// Whether the range holds no key group.
    #[inline]
    pub fn is_empty(self) -> bool {
        self.start > self.end
    }

    /// `contains(keyGroup)`: `start <= key_group <= end`.
    #[inline]
    pub fn contains(self, key_group: KeyGroup) -> bool {
        (self.start..=self.end).contains(&key_group.get())
    }

    /// `getIntersection(other)`: the key groups in both ranges, or [`KeyGroupRange::EMPTY`].
    #[must_use]
    pub fn intersection(self, other: Self) -> Self {
        Self::of_valid(self.start.max(other.start), self.end.min(other.end))
    }

    /// The key groups in ascending order.
    pub fn iter(self) -> KeyGroupRangeIter {
        KeyGroupRangeIter {
            next: self.start,
            end: self.end,
        }
    }
}

impl fmt::Debug for KeyGroupRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Flink's `toString()`: `KeyGroupRange{startKeyGroup=0, endKeyGroup=42}`.
impl fmt::Display for KeyGroupRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "KeyGroupRange{{startKeyGroup={}, endKeyGroup={}}}",
            self.start, self.end
        )
    }
}

impl IntoIterator for KeyGroupRange {
    type Item = KeyGroup;
    type IntoIter = KeyGroupRangeIter;

    fn into_iter(self) -> KeyGroupRangeIter {
        self.iter()
    }
}

/// Iterator over the key groups of a [`KeyGroupRange`], ascending.
#[derive(Debug, Clone)]
pub struct KeyGroupRangeIter {
    /// Next key group to yield.
    next: i32,
    /// Last key group to yield, inclusive.
    end: i32,
}

impl Iterator for KeyGroupRangeIter {
    type Item = KeyGroup;

    fn next(&mut self) -> Option<KeyGroup> {
        if self.next > self.end {
            return None;
        }
        let current = self.next;
        // At end == i32::MAX there is no successor: mark the iterator exhausted instead.
        match current.checked_add(1) {
            Some(next) => self.next = next,
            None => self.end = current - 1,
        }
        // Ranges start at >= 0, so every yielded value is a valid key group.
        Some(KeyGroup::new_unchecked(current))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let remaining =
            usize::try_from(i64::from(self.end) - i64::from(self.next) + 1).unwrap_or_default();
        (remaining, Some(remaining))
    }
}

impl ExactSizeIterator for KeyGroupRangeIter {}
impl FusedIterator for KeyGroupRangeIter {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructor_checks() {
        assert!(matches!(
            KeyGroupRange::new(-1, 3),
            Err(Error::InvalidKeyGroupRange { start: -1, end: 3 })
        ));
        assert!(matches!(
            KeyGroupRange::new(4, 3),
            Err(Error::InvalidKeyGroupRange { .. })
        ));
        let err = KeyGroupRange::new(0, i32::MAX).unwrap_err();
        assert!(matches!(
            err,
            Error::KeyGroupRangeOverflow {
                start: 0,
                end: i32::MAX
            }
        ));
        assert_eq!(
            err.flink_exception().as_deref(),
            Some("java.lang.IllegalArgumentException: Potential overflow detected.")
        );
        assert_eq!(
            KeyGroupRange::new(1, i32::MAX)
                .unwrap()
                .number_of_key_groups(),
            i32::MAX
        );
    }

    #[test]
    fn of_and_empty() {
        assert_eq!(KeyGroupRange::of(5, 4).unwrap(), KeyGroupRange::EMPTY);
        assert!(KeyGroupRange::EMPTY.is_empty());
        assert_eq!(KeyGroupRange::EMPTY.len(), 0);
        assert_eq!(KeyGroupRange::EMPTY.iter().count(), 0);
        assert!(KeyGroupRange::of(-2, -1).is_err());
        assert_eq!(KeyGroupRange::of(3, 3).unwrap().len(), 1);
    }

    #[test]
    fn iteration_and_contains() {
        let r = KeyGroupRange::new(3, 6).unwrap();
        let all: Vec<i32> = r.into_iter().map(KeyGroup::get).collect();
        assert_eq!(all, [3, 4, 5, 6]);
        assert_eq!(r.iter().len(), 4);
        assert!(r.contains(KeyGroup::new(3).unwrap()));
        assert!(r.contains(KeyGroup::new(6).unwrap()));
        assert!(!r.contains(KeyGroup::new(7).unwrap()));
        assert!(!KeyGroupRange::EMPTY.contains(KeyGroup::new(0).unwrap()));
    }

    #[test]
    fn iteration_ends_at_i32_max() {
        let r = KeyGroupRange::new(i32::MAX - 1, i32::MAX).unwrap();
        let mut it = r.iter();
        assert_eq!(it.next().map(KeyGroup::get), Some(i32::MAX - 1));
        assert_eq!(it.next().map(KeyGroup::get), Some(i32::MAX));
        assert_eq!(it.next(), None);
        assert_eq!(it.next(), None);
        assert_eq!(it.len(), 0);
    }

    #[test]
    fn display_like_flink() {
        assert_eq!(
            KeyGroupRange::new(0, 42).unwrap().to_string(),
            "KeyGroupRange{startKeyGroup=0, endKeyGroup=42}"
        );
        assert_eq!(
            format!("{:?}", KeyGroupRange::EMPTY),
            "KeyGroupRange{startKeyGroup=0, endKeyGroup=-1}"
        );
    }
}
