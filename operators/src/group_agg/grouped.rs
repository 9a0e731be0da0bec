//! A bundle's rows grouped by key: each key's rows in arrival order, the keys in the order
//! of their first row. Two passes over the keys and three flat vectors (no vector per key),
//! hashed with foldhash: the grouping allocated a vector per key and hashed with `SipHash`,
//! ~9 % of a mini-batch aggregate's time on W2.

use std::collections::HashMap;
use std::ops::Range;

use foldhash::fast::RandomState;

/// Rows grouped by key.
#[derive(Debug)]
pub(super) struct Grouped {
    /// Per key, in first-touch order: its first row and its rows' span in `members`.
    groups: Vec<(usize, Range<usize>)>,
    /// Row indices, key by key, each key's in arrival order.
    members: Vec<usize>,
}

impl Grouped {
    /// Groups rows `0..n` by their keys (`keys` yields row `i`'s key bytes at position `i`).
    pub(super) fn of<'a>(keys: impl ExactSizeIterator<Item = &'a [u8]>) -> Self {
        let rows = keys.len();
        let mut index: HashMap<&[u8], usize, RandomState> =
            HashMap::with_capacity_and_hasher(rows, RandomState::default());
        // Pass 1: each row's group, each group's first row and size.
        let mut group_of = Vec::with_capacity(rows);
        let mut firsts: Vec<(usize, usize)> = Vec::new();
        for (i, key) in keys.enumerate() {
            let next = firsts.len();
            let g = *index.entry(key).or_insert(next);
            if g == next {
                firsts.push((i, 0));
            }
            if let Some((_, size)) = firsts.get_mut(g) {
                *size += 1;
            }
            group_of.push(g);
        }
        // Pass 2: spans by prefix sums, then each row into its group's next place.
        let mut groups = Vec::with_capacity(firsts.len());
        let mut start = 0;
        for (first, size) in firsts {
            groups.push((first, start..start + size));
            start += size;
        }
        let mut fill: Vec<usize> = groups.iter().map(|(_, span)| span.start).collect();
        let mut members = vec![0; rows];
        for (i, g) in group_of.into_iter().enumerate() {
            if let Some(at) = fill.get_mut(g) {
                if let Some(slot) = members.get_mut(*at) {
                    *slot = i;
                }
                *at += 1;
            }
        }
        Self { groups, members }
    }

    /// Each key's first row and its rows, keys in first-touch order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (usize, &[usize])> {
        self.groups
            .iter()
            .map(|(first, span)| (*first, self.members.get(span.clone()).unwrap_or_default()))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The same groups, in the same order, as a naive first-touch grouping.
        #[test]
        fn groups_as_first_touch_order(keys in prop::collection::vec(0_u8..6, 0..60)) {
            let bytes: Vec<[u8; 1]> = keys.iter().map(|k| [*k]).collect();
            let grouped = Grouped::of(bytes.iter().map(<[u8; 1]>::as_slice));
            let mut want: Vec<(u8, Vec<usize>)> = Vec::new();
            for (i, k) in keys.iter().enumerate() {
                match want.iter_mut().find(|(key, _)| key == k) {
                    Some((_, rows)) => rows.push(i),
                    None => want.push((*k, vec![i])),
                }
            }
            let got: Vec<(usize, Vec<usize>)> =
                grouped.iter().map(|(first, rows)| (first, rows.to_vec())).collect();
            let want: Vec<(usize, Vec<usize>)> =
                want.into_iter().map(|(_, rows)| (rows[0], rows)).collect();
            prop_assert_eq!(got, want);
        }
    }
}
