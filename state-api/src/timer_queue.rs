//! The in-memory timer queue both backends keep: one ordered set per key group and an index
//! of the groups' earliest timestamps (Flink's `KeyGroupPartitionedPriorityQueue` shape).

use std::collections::BTreeSet;

use keygroup::{KeyGroup, KeyGroupRange};

use crate::error::Result;
use crate::key_groups::{key_group_at, key_group_offset};
use crate::timer::Timer;

/// One timer of a key group's set: (timestamp, key, namespace).
type Entry = (i64, Box<[u8]>, Box<[u8]>);

/// Timers of a key-group range, held in memory: per key group a `BTreeSet` ordered by
/// (timestamp, key, namespace), plus a `BTreeSet` of `(earliest timestamp, key-group offset)`
/// over the non-empty groups (the heads index), so [`next_timestamp`](Self::next_timestamp)
/// is one lookup and [`pop_due`](Self::pop_due) is `O(log n)`. Timers pop in [`Timer`]'s
/// order: timestamp, then key group, then key and namespace.
///
/// Backend-independent: memory accounting and persistence stay with the backend's timer
/// table.
///
/// ```
/// use state_api::TimerQueue;
/// use state_api::keygroup::{KeyGroup, KeyGroupRange};
///
/// let mut q = TimerQueue::new(KeyGroupRange::new(0, 7)?);
/// let (a, b) = (KeyGroup::new(1)?, KeyGroup::new(6)?);
/// assert!(q.insert(b, 10, b"k", b"")?);
/// assert!(q.insert(a, 10, b"k", b"")?);
/// assert!(!q.insert(a, 10, b"k", b"")?, "present already");
/// assert_eq!(q.next_timestamp(), Some(10));
/// assert_eq!(q.pop_due(9), None);
/// assert_eq!(q.pop_due(10).map(|t| t.key_group), Some(a));
/// assert_eq!(q.pop_due(10).map(|t| t.key_group), Some(b));
/// assert!(q.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct TimerQueue {
    key_groups: KeyGroupRange,
    sets: Vec<BTreeSet<Entry>>,
    heads: BTreeSet<(i64, usize)>,
    len: usize,
}

impl TimerQueue {
    /// An empty queue for `key_groups`.
    pub fn new(key_groups: KeyGroupRange) -> Self {
        Self {
            key_groups,
            sets: vec![BTreeSet::new(); key_groups.len()],
            heads: BTreeSet::new(),
            len: 0,
        }
    }

    /// The key groups the queue holds.
    pub fn key_groups(&self) -> KeyGroupRange {
        self.key_groups
    }

    /// Timers held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no timer is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the timer is held.
    ///
    /// # Errors
    /// [`Error::KeyGroupOutOfRange`](crate::Error::KeyGroupOutOfRange).
    pub fn contains(
        &self,
        key_group: KeyGroup,
        timestamp: i64,
        key: &[u8],
        namespace: &[u8],
    ) -> Result<bool> {
        let index = key_group_offset(self.key_groups, key_group)?;
        let entry: Entry = (timestamp, key.into(), namespace.into());
        Ok(self.sets.get(index).is_some_and(|set| set.contains(&entry)))
    }

    /// Adds a timer; `false` (nothing changes) when it is held already.
    ///
    /// # Errors
    /// [`Error::KeyGroupOutOfRange`](crate::Error::KeyGroupOutOfRange) (nothing changes).
    pub fn insert(
        &mut self,
        key_group: KeyGroup,
        timestamp: i64,
        key: &[u8],
        namespace: &[u8],
    ) -> Result<bool> {
        let index = key_group_offset(self.key_groups, key_group)?;
        let Some(set) = self.sets.get_mut(index) else {
            return Ok(false);
        };
        let old = set.first().map(|e| e.0);
        if !set.insert((timestamp, key.into(), namespace.into())) {
            return Ok(false);
        }
        self.len += 1;
        self.reindex(index, old);
        Ok(true)
    }

    /// Removes a timer; `false` when it is not held.
    ///
    /// # Errors
    /// [`Error::KeyGroupOutOfRange`](crate::Error::KeyGroupOutOfRange) (nothing changes).
    pub fn remove(
        &mut self,
        key_group: KeyGroup,
        timestamp: i64,
        key: &[u8],
        namespace: &[u8],
    ) -> Result<bool> {
        let index = key_group_offset(self.key_groups, key_group)?;
        let Some(set) = self.sets.get_mut(index) else {
            return Ok(false);
        };
        let old = set.first().map(|e| e.0);
        if !set.remove(&(timestamp, key.into(), namespace.into())) {
            return Ok(false);
        }
        self.len -= 1;
        self.reindex(index, old);
        Ok(true)
    }

    /// The earliest timestamp of all held timers.
    pub fn next_timestamp(&self) -> Option<i64> {
        self.heads.first().map(|h| h.0)
    }

    /// Removes and returns the first timer (in [`Timer`]'s order) whose timestamp is
    /// `<= up_to`, if any.
    pub fn pop_due(&mut self, up_to: i64) -> Option<Timer> {
        let &(ts, index) = self.heads.first()?;
        if ts > up_to {
            return None;
        }
        let key_group = key_group_at(self.key_groups, index)?;
        let (timestamp, key, namespace) = self.sets.get_mut(index)?.pop_first()?;
        self.len -= 1;
        self.reindex(index, Some(ts));
        Some(Timer {
            timestamp,
            key_group,
            key: key.into_vec(),
            namespace: namespace.into_vec(),
        })
    }

    /// The timers of `key_group` as `(timestamp, key, namespace)`, in order.
    ///
    /// # Errors
    /// [`Error::KeyGroupOutOfRange`](crate::Error::KeyGroupOutOfRange).
    pub fn key_group_timers(
        &self,
        key_group: KeyGroup,
    ) -> Result<impl Iterator<Item = (i64, &[u8], &[u8])> + '_> {
        let index = key_group_offset(self.key_groups, key_group)?;
        Ok(self
            .sets
            .get(index)
            .into_iter()
            .flatten()
            .map(|(ts, k, n)| (*ts, &**k, &**n)))
    }

    /// Every held timer as `(key group, timestamp, key, namespace)`, by key group, then in
    /// order.
    pub fn iter(&self) -> impl Iterator<Item = (KeyGroup, i64, &[u8], &[u8])> + '_ {
        let range = self.key_groups;
        self.sets.iter().enumerate().flat_map(move |(index, set)| {
            let key_group = key_group_at(range, index);
            set.iter()
                .filter_map(move |(ts, k, n)| Some((key_group?, *ts, &**k, &**n)))
        })
    }

    /// Re-indexes group `index` after its earliest timestamp was `old`.
    fn reindex(&mut self, index: usize, old: Option<i64>) {
        let new = self.sets.get(index).and_then(BTreeSet::first).map(|e| e.0);
        if old != new {
            if let Some(ts) = old {
                self.heads.remove(&(ts, index));
            }
            if let Some(ts) = new {
                self.heads.insert((ts, index));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kg(v: i32) -> KeyGroup {
        KeyGroup::new(v).unwrap()
    }

    #[test]
    fn pops_in_timer_order_across_key_groups() {
        let mut q = TimerQueue::new(KeyGroupRange::new(10, 13).unwrap());
        for (g, ts, k) in [
            (13, 5, "a"),
            (10, 7, "b"),
            (11, 5, "c"),
            (11, 5, "a"),
            (12, 1, "z"),
        ] {
            assert!(q.insert(kg(g), ts, k.as_bytes(), b"").unwrap());
        }
        assert!(q.insert(kg(9), 1, b"x", b"").is_err());
        assert!(q.remove(kg(12), 1, b"z", b"").unwrap());
        assert!(!q.remove(kg(12), 1, b"z", b"").unwrap());
        assert_eq!(q.iter().count(), 4);
        let order: Vec<(i32, i64, Vec<u8>)> = std::iter::from_fn(|| q.pop_due(i64::MAX))
            .map(|t| (t.key_group.get(), t.timestamp, t.key))
            .collect();
        assert_eq!(
            order,
            [
                (11, 5, b"a".to_vec()),
                (11, 5, b"c".to_vec()),
                (13, 5, b"a".to_vec()),
                (10, 7, b"b".to_vec())
            ]
        );
        assert_eq!((q.len(), q.next_timestamp()), (0, None));
    }
}
