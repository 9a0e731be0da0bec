//! Value changes charged to the memory pool, shared by the keyed and the map table: an
//! in-place update, and the reservation of a value replacing another.

use state_api::{MemoryReservation, Result, ValueCodec};

/// Applies `f` to `value` in place and reserves the growth of its heap bytes (a shrink is
/// returned to the pool). When the pool refuses the growth the value is put back from the
/// copy taken first under a bounded pool (`bounded_pool`; an unbounded pool never refuses,
/// so no copy is taken) and the error returned: the value is then as it was.
#[inline]
pub(crate) fn update_in_place<C: ValueCodec, R>(
    codec: &C,
    reservation: &mut MemoryReservation,
    bounded_pool: bool,
    value: &mut C::Value,
    f: impl FnOnce(&mut C::Value) -> R,
) -> Result<R> {
    let old_heap = codec.heap_size(value);
    let backup = bounded_pool.then(|| value.clone());
    let out = f(value);
    let new_heap = codec.heap_size(value);
    if let Err(err) = resize(reservation, old_heap, new_heap) {
        if let Some(old) = backup {
            *value = old;
        }
        return Err(err);
    }
    Ok(out)
}

/// Reserves the growth of the heap bytes when `new` replaces `old` (a shrink is returned to
/// the pool); refused, nothing is charged and the caller leaves `old` in place.
pub(crate) fn reserve_replacement<C: ValueCodec>(
    codec: &C,
    reservation: &mut MemoryReservation,
    old: &C::Value,
    new: &C::Value,
) -> Result<()> {
    resize(reservation, codec.heap_size(old), codec.heap_size(new))
}

/// Grows `reservation` by `new - old` bytes or shrinks it by `old - new` (nothing when they
/// are equal: a fixed-size value's update).
#[inline]
fn resize(reservation: &mut MemoryReservation, old: usize, new: usize) -> Result<()> {
    match new.cmp(&old) {
        std::cmp::Ordering::Greater => reservation.try_grow(new - old),
        std::cmp::Ordering::Equal => Ok(()),
        std::cmp::Ordering::Less => {
            reservation.shrink(old - new);
            Ok(())
        }
    }
}
