//! Tombstones and the bounded TTL sweep of the in-memory keyed table.

use state_api::FlatMap;
use state_api::{Result, SweepProgress, ValueCodec, ttl_exported};

use super::{KeyedCore, LIVE, entry_size, is_live};

/// The tombstone bookkeeping of a table: counts per group and the groups to look at on
/// commit, each listed once.
pub(super) struct Tombstones<'a> {
    pub(super) counts: &'a mut [usize],
    pub(super) groups: &'a mut Vec<usize>,
    pub(super) listed: &'a mut [bool],
}

impl Tombstones<'_> {
    /// Turns the live entry whose slot word is `word` into a tombstone of group `index`.
    pub(super) fn bury(&mut self, word: &mut u32, index: usize) {
        *word &= !LIVE;
        if let Some(count) = self.counts.get_mut(index) {
            *count += 1;
        }
        if let Some(listed) = self.listed.get_mut(index)
            && !*listed
        {
            *listed = true;
            self.groups.push(index);
        }
    }
}

impl<C: ValueCodec> KeyedCore<C> {
    /// Removes tombstones (and, when `now` is given, expired entries) from group `index`,
    /// at most `limit` entries; returns how many were removed and how many bytes they held.
    pub(super) fn purge_group(&mut self, index: usize, now: Option<i64>, limit: usize) -> usize {
        let (Some(group), Some(tombstones)) =
            (self.groups.get_mut(index), self.tombstones.get_mut(index))
        else {
            return 0;
        };
        let ttl = self.ttl;
        let codec = &self.codec;
        let mut removed = 0;
        let mut bytes = 0;
        group.retain_with_word(|key, word, entry| {
            if removed >= limit {
                return true;
            }
            let expired =
                now.is_some_and(|now| !ttl_exported(ttl.as_ref(), entry.last_access, now));
            let live = is_live(*word);
            if live && !expired {
                return true;
            }
            if !live {
                *tombstones -= 1;
            }
            removed += 1;
            bytes += entry_size::<C::Value>(key.as_bytes().len(), codec.heap_size(&entry.value));
            false
        });
        self.reservation.shrink(bytes);
        removed
    }

    /// One sweep step (see [`KeyedTable::sweep_expired`]).
    pub(super) fn sweep_step(&mut self, max_entries: usize) -> Result<SweepProgress> {
        self.check_bundle("sweep_expired", false)?;
        let mut progress = SweepProgress::default();
        let groups = self.groups.len();
        if groups == 0 {
            return Ok(SweepProgress::nothing_to_sweep());
        }
        if max_entries == 0 {
            return Ok(progress);
        }
        let now = self.ttl.map(|_| self.clock.now_millis());
        let limit = max_entries as u64;
        for _ in 0..groups {
            let index = self.sweep_cursor % groups;
            progress.scanned += self.groups.get(index).map_or(0, FlatMap::len) as u64;
            let budget = usize::try_from(limit - progress.removed).unwrap_or(usize::MAX);
            progress.removed += self.purge_group(index, now, budget) as u64;
            if progress.removed >= limit {
                break; // resume in this group next time
            }
            self.sweep_cursor = (index + 1) % groups;
            if self.sweep_cursor == 0 {
                progress.wrapped = true;
                break;
            }
            if progress.scanned >= limit {
                break;
            }
        }
        let Self {
            tombstone_groups,
            tombstones,
            listed,
            ..
        } = self;
        tombstone_groups.retain(|&i| {
            let keep = tombstones.get(i).is_some_and(|&c| c > 0);
            if !keep && let Some(l) = listed.get_mut(i) {
                *l = false;
            }
            keep
        });
        Ok(progress)
    }
}
