//! Key-group offsets inside a store's range: the index of a key group's per-group structure,
//! shared by every backend.

use keygroup::{KeyGroup, KeyGroupRange};

use crate::error::{Error, Result};

/// The offset of `key_group` in `range` (`key_group - range.start()`): the index of its
/// per-key-group structure in a backend.
///
/// ```
/// use state_api::{Error, key_group_at, key_group_offset};
/// use state_api::keygroup::{KeyGroup, KeyGroupRange};
///
/// let range = KeyGroupRange::new(43, 85)?;
/// assert_eq!(key_group_offset(range, KeyGroup::new(45)?)?, 2);
/// assert_eq!(key_group_at(range, 2), Some(KeyGroup::new(45)?));
/// assert!(matches!(
///     key_group_offset(range, KeyGroup::new(86)?),
///     Err(Error::KeyGroupOutOfRange { key_group: 86, .. })
/// ));
/// assert_eq!(key_group_at(range, 43), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::KeyGroupOutOfRange`] when `key_group` is not in `range`.
#[inline]
pub fn key_group_offset(range: KeyGroupRange, key_group: KeyGroup) -> Result<usize> {
    let out_of_range = || Error::KeyGroupOutOfRange {
        key_group: key_group.get(),
        range,
    };
    if !range.contains(key_group) {
        return Err(out_of_range());
    }
    usize::try_from(key_group.get() - range.start()).map_err(|_| out_of_range())
}

/// The key group at `offset` in `range`, or `None` past its end (the inverse of
/// [`key_group_offset`]).
pub fn key_group_at(range: KeyGroupRange, offset: usize) -> Option<KeyGroup> {
    if offset >= range.len() {
        return None;
    }
    let offset = i32::try_from(offset).ok()?;
    KeyGroup::new(range.start().checked_add(offset)?).ok()
}
