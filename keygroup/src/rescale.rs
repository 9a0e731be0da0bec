//! Rescaling: which old subtasks' key groups each new subtask restores.

use crate::assignment::{
    KeyGroup, MaxParallelism, Parallelism, compute_key_group_range_for_operator_index,
    compute_operator_index_for_key_group,
};
use crate::error::{Error, Result};
use crate::range::KeyGroupRange;

/// One old subtask's share of a new subtask's key groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RescaleSource {
    /// The old subtask whose snapshot must be read.
    pub old_operator_index: i32,
    /// The key groups to take from it: the intersection of its old range with the new
    /// subtask's range (never empty).
    pub key_groups: KeyGroupRange,
}

/// What one new subtask restores after a rescale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RescaleTarget {
    /// The new subtask.
    pub new_operator_index: i32,
    /// Its whole key-group range under the new parallelism.
    pub key_groups: KeyGroupRange,
    /// The old subtasks to read, in ascending order; their `key_groups` are disjoint and
    /// together cover `key_groups` exactly.
    pub sources: Vec<RescaleSource>,
}

fn check_max_parallelism(max_parallelism: MaxParallelism, parallelism: Parallelism) -> Result<()> {
    if max_parallelism.get() < parallelism.get() {
        Err(Error::MaxParallelismSmallerThanParallelism {
            max_parallelism: max_parallelism.get(),
            parallelism: parallelism.get(),
        })
    } else {
        Ok(())
    }
}

/// The old subtasks whose snapshots new subtask `new_operator_index` must read when an
/// operator with max parallelism `max_parallelism` goes from `old_parallelism` to
/// `new_parallelism` subtasks, each with the key groups to take from it.
///
/// This is the key-group intersection Flink's `StateAssignmentOperation` performs on restore:
/// the new range ([`compute_key_group_range_for_operator_index`]) runs from the old subtask
/// owning its first key group to the old subtask owning its last
/// ([`compute_operator_index_for_key_group`]), and each is cut to the intersection. The max
/// parallelism cannot change across a rescale (Flink refuses to restore keyed state
/// otherwise).
///
/// # Errors
/// [`Error::MaxParallelismSmallerThanParallelism`] if either parallelism exceeds the max
/// parallelism; [`Error::OperatorIndexOutOfRange`] unless
/// `0 <= new_operator_index < new_parallelism`.
///
/// ```
/// use keygroup::{rescale_sources, MaxParallelism, Parallelism};
///
/// // 128 key groups, 2 subtasks -> 3 subtasks: new subtask 1 owns 43..=85, which was split
/// // between old subtask 0 (0..=63) and old subtask 1 (64..=127).
/// let sources = rescale_sources(MaxParallelism::new(128)?, Parallelism::new(2)?, Parallelism::new(3)?, 1)?;
/// let parts: Vec<_> = sources
///     .iter()
///     .map(|s| (s.old_operator_index, s.key_groups.start(), s.key_groups.end()))
///     .collect();
/// assert_eq!(parts, [(0, 43, 63), (1, 64, 85)]);
/// # Ok::<(), keygroup::Error>(())
/// ```
pub fn rescale_sources(
    max_parallelism: MaxParallelism,
    old_parallelism: Parallelism,
    new_parallelism: Parallelism,
    new_operator_index: i32,
) -> Result<Vec<RescaleSource>> {
    check_max_parallelism(max_parallelism, old_parallelism)?;
    let index = new_parallelism.check_operator_index(new_operator_index)?;
    let target =
        compute_key_group_range_for_operator_index(max_parallelism, new_parallelism, index)?;
    // A valid index under mp >= p owns at least one key group, all below mp.
    let owner = |kg: i32| {
        compute_operator_index_for_key_group(
            max_parallelism,
            old_parallelism,
            KeyGroup::new_unchecked(kg),
        )
    };
    let mut sources = Vec::new();
    for old_operator_index in owner(target.start())..=owner(target.end()) {
        let old_range = compute_key_group_range_for_operator_index(
            max_parallelism,
            old_parallelism,
            old_operator_index,
        )?;
        let key_groups = target.intersection(old_range);
        if !key_groups.is_empty() {
            sources.push(RescaleSource {
                old_operator_index,
                key_groups,
            });
        }
    }
    Ok(sources)
}

/// The whole rescale plan: [`rescale_sources`] for every new subtask, in index order.
///
/// # Errors
/// [`Error::MaxParallelismSmallerThanParallelism`] if either parallelism exceeds the max
/// parallelism.
pub fn rescale_plan(
    max_parallelism: MaxParallelism,
    old_parallelism: Parallelism,
    new_parallelism: Parallelism,
) -> Result<Vec<RescaleTarget>> {
    check_max_parallelism(max_parallelism, new_parallelism)?;
    (0..new_parallelism.get())
        .map(|new_operator_index| {
            Ok(RescaleTarget {
                new_operator_index,
                key_groups: compute_key_group_range_for_operator_index(
                    max_parallelism,
                    new_parallelism,
                    new_operator_index,
                )?,
                sources: rescale_sources(
                    max_parallelism,
                    old_parallelism,
                    new_parallelism,
                    new_operator_index,
                )?,
            })
        })
        .collect()
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
    fn scale_up_and_down() {
        let plan = rescale_plan(mp(128), p(2), p(4)).unwrap();
        assert_eq!(plan.len(), 4);
        for target in &plan {
            assert_eq!(target.sources.len(), 1);
            assert_eq!(target.sources[0].key_groups, target.key_groups);
        }
        let plan = rescale_plan(mp(128), p(4), p(1)).unwrap();
        assert_eq!(plan.len(), 1);
        let olds: Vec<i32> = plan[0]
            .sources
            .iter()
            .map(|s| s.old_operator_index)
            .collect();
        assert_eq!(olds, [0, 1, 2, 3]);
    }

    #[test]
    fn same_parallelism_is_identity() {
        for target in rescale_plan(mp(7), p(7), p(7)).unwrap() {
            assert_eq!(target.sources.len(), 1);
            assert_eq!(
                target.sources[0].old_operator_index,
                target.new_operator_index
            );
        }
    }

    #[test]
    fn errors() {
        assert!(matches!(
            rescale_plan(mp(4), p(5), p(2)),
            Err(Error::MaxParallelismSmallerThanParallelism { .. })
        ));
        assert!(matches!(
            rescale_plan(mp(4), p(2), p(5)),
            Err(Error::MaxParallelismSmallerThanParallelism { .. })
        ));
        assert!(matches!(
            rescale_sources(mp(4), p(2), p(2), 2),
            Err(Error::OperatorIndexOutOfRange { .. })
        ));
    }
}
