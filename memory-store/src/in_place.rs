//! The reservation of a value replacing another, shared by the keyed and the map table (an
//! in-place update is state-api's `change_in_place`, shared with typed-store).

use state_api::{MemoryReservation, Result, ValueCodec};

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
