//! Changing a stored value in place, charged to the memory pool: the logic every backend's
//! `update` and `upsert` share (memory-store's keyed and map tables, typed-store's keyed
//! and map tables).
//!
//! An update runs the operator's closure on the resident value itself, not on a copy that a
//! put then writes back. What the change costs is the difference of the value's heap bytes
//! ([`ValueCodec::heap_size`]) before and after: a fixed-width value (a count, a sum, an
//! accumulator of numbers) costs nothing and touches no pool; a value that grew must have
//! its growth reserved, and when the pool refuses, the update must not stay half-applied.
//! Under a bounded pool [`change_in_place`] therefore keeps a copy of the value first (an
//! unbounded pool refuses only a byte count that would overflow `usize`, so none is kept
//! there), and [`InPlaceChange::charge`] or [`InPlaceChange::undo`] put it back.

use crate::codec::ValueCodec;
use crate::error::Result;
use crate::memory::MemoryReservation;

/// A value changed in place by [`change_in_place`]: what the closure returned, the value's
/// heap bytes before and after, and, under a bounded pool, a copy of the value as it was.
///
/// Settle it with [`charge`](Self::charge) (reserve the growth or return the shrink; a
/// refusal puts the value back), with [`undo`](Self::undo) (put the value back and take
/// the changed one out, for a backend that makes room before it tries again), or, when the
/// caller charged the difference itself, with [`into_output`](Self::into_output).
#[derive(Debug)]
#[must_use = "an in-place change is charged to the pool or undone"]
pub struct InPlaceChange<V, R> {
    output: R,
    heap_before: usize,
    heap_after: usize,
    copy: Option<V>,
}

/// Applies `f` to `value` in place and measures its heap bytes before and after; with
/// `bounded_pool` a copy of `value` is kept first, to put back if the pool refuses the
/// growth.
///
/// ```
/// use std::sync::Arc;
/// use state_api::{BoundedMemoryPool, I64F64StrCodec, MemoryReservation, change_in_place};
///
/// let pool = Arc::new(BoundedMemoryPool::new(4));
/// let mut reservation = MemoryReservation::new(pool);
/// let codec = I64F64StrCodec;
/// let mut value = (1, 0.5, Some(String::from("ab")));
///
/// // A change that grows the string by 2 bytes fits in the pool.
/// let change = change_in_place(&codec, true, &mut value, |v| v.2 = Some("abcd".into()));
/// assert_eq!(change.growth(), 2);
/// change.charge(&mut reservation, &mut value)?;
/// assert_eq!((value.2.as_deref(), reservation.size()), (Some("abcd"), 2));
///
/// // One that grows it by 4 more does not: the pool refuses and the value is as it was.
/// let change = change_in_place(&codec, true, &mut value, |v| v.2 = Some("abcdefgh".into()));
/// assert!(change.charge(&mut reservation, &mut value).is_err());
/// assert_eq!((value.2.as_deref(), reservation.size()), (Some("abcd"), 2));
/// # Ok::<(), state_api::Error>(())
/// ```
#[inline]
pub fn change_in_place<C: ValueCodec, R>(
    codec: &C,
    bounded_pool: bool,
    value: &mut C::Value,
    f: impl FnOnce(&mut C::Value) -> R,
) -> InPlaceChange<C::Value, R> {
    let heap_before = codec.heap_size(value);
    let copy = bounded_pool.then(|| value.clone());
    let output = f(value);
    InPlaceChange {
        output,
        heap_before,
        heap_after: codec.heap_size(value),
        copy,
    }
}

impl<V, R> InPlaceChange<V, R> {
    /// Heap bytes the value grew by (0 when it kept its size or shrank).
    pub fn growth(&self) -> usize {
        self.heap_after.saturating_sub(self.heap_before)
    }

    /// Heap bytes the value shrank by (0 when it kept its size or grew).
    pub fn shrinkage(&self) -> usize {
        self.heap_before.saturating_sub(self.heap_after)
    }

    /// Charges the change to `reservation`: the growth reserved, a shrink returned, a value
    /// of unchanged size nothing. Returns what the closure returned.
    ///
    /// # Errors
    /// [`Error::MemoryExhausted`](crate::Error::MemoryExhausted) when the pool refuses the
    /// growth; `value` (the value the change was made to) is then put back from the copy,
    /// as it was, and the reservation is unchanged.
    pub fn charge(self, reservation: &mut MemoryReservation, value: &mut V) -> Result<R> {
        if let Err(refused) = reservation.try_replace(self.heap_before, self.heap_after) {
            if let Some(copy) = self.copy {
                *value = copy;
            }
            return Err(refused);
        }
        Ok(self.output)
    }

    /// Puts `value` (the value the change was made to) back as it was and returns what the
    /// closure returned with the changed value, for a backend that makes room in the pool
    /// and then writes the changed value as a put. `None` for the changed value when no
    /// copy was kept (an unbounded pool): `value` then stays changed.
    pub fn undo(self, value: &mut V) -> (R, Option<V>) {
        let changed = self.copy.map(|copy| std::mem::replace(value, copy));
        (self.output, changed)
    }

    /// What the closure returned, the change accepted as it is (the caller charged
    /// [`growth`](Self::growth) or returned [`shrinkage`](Self::shrinkage) itself).
    pub fn into_output(self) -> R {
        self.output
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::codec::I64F64StrCodec;
    use crate::memory::{BoundedMemoryPool, MemoryPool, UnboundedMemoryPool};

    #[expect(
        clippy::unnecessary_wraps,
        reason = "the codec's string column is nullable"
    )]
    fn text(s: &str) -> Option<String> {
        Some(String::from(s))
    }

    #[test]
    fn fixed_size_change_touches_no_pool_and_keeps_no_copy_when_unbounded() {
        let pool: Arc<dyn MemoryPool> = Arc::new(UnboundedMemoryPool::new());
        let mut reservation = MemoryReservation::new(Arc::clone(&pool));
        let mut value = (1, 2.0, text("abc"));
        let change = change_in_place(&I64F64StrCodec, false, &mut value, |v| {
            v.0 += 1;
            v.0
        });
        assert!(change.copy.is_none());
        assert_eq!((change.growth(), change.shrinkage()), (0, 0));
        assert_eq!(change.charge(&mut reservation, &mut value).unwrap(), 2);
        assert_eq!((value.0, reservation.size(), pool.used()), (2, 0, 0));
    }

    #[test]
    fn shrink_is_returned_and_growth_reserved() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(100));
        let mut reservation = MemoryReservation::new(Arc::clone(&pool));
        reservation.try_grow(10).unwrap();
        let mut value = (0, 0.0, text("0123456789"));
        let change = change_in_place(&I64F64StrCodec, true, &mut value, |v| v.2 = text("0123"));
        assert_eq!((change.growth(), change.shrinkage()), (0, 6));
        change.charge(&mut reservation, &mut value).unwrap();
        assert_eq!((reservation.size(), pool.used()), (4, 4));
        let change = change_in_place(&I64F64StrCodec, true, &mut value, |v| {
            v.2 = text("0123456789ab");
        });
        assert_eq!((change.growth(), change.shrinkage()), (8, 0));
        change.charge(&mut reservation, &mut value).unwrap();
        assert_eq!(
            (value.2.as_deref(), reservation.size()),
            (Some("0123456789ab"), 12)
        );
    }

    #[test]
    fn refused_growth_puts_the_value_back_and_charges_nothing() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(5));
        let mut reservation = MemoryReservation::new(Arc::clone(&pool));
        reservation.try_grow(3).unwrap();
        let mut value = (7, 1.5, text("abc"));
        let change = change_in_place(&I64F64StrCodec, true, &mut value, |v| {
            v.0 = 8;
            v.2 = text("abcdefg");
        });
        assert!(change.charge(&mut reservation, &mut value).is_err());
        assert_eq!(value, (7, 1.5, text("abc")));
        assert_eq!((reservation.size(), pool.used()), (3, 3));
    }

    #[test]
    fn undo_returns_the_changed_value_and_restores_the_copy() {
        let mut value = (7, 1.5, text("abc"));
        let change = change_in_place(&I64F64StrCodec, true, &mut value, |v| {
            v.2 = text("abcd");
            "out"
        });
        let (output, changed) = change.undo(&mut value);
        assert_eq!(output, "out");
        assert_eq!(changed, Some((7, 1.5, text("abcd"))));
        assert_eq!(value, (7, 1.5, text("abc")));

        // Without a copy (unbounded pool) the value stays changed and none is returned.
        let change = change_in_place(&I64F64StrCodec, false, &mut value, |v| v.2 = text("e"));
        assert_eq!(change.undo(&mut value), ((), None));
        assert_eq!(value.2.as_deref(), Some("e"));
    }
}
