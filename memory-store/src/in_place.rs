//! In-place value updates charged to the memory pool, shared by the keyed and the map table.

use state_api::{MemoryReservation, Result, ValueCodec};

/// Applies `f` to `value` in place and reserves the growth of its heap bytes (a shrink is
/// returned to the pool). When the pool refuses the growth the value is put back from the
/// copy taken first under a bounded pool (`bounded_pool`; an unbounded pool never refuses,
/// so no copy is taken) and the error returned: the value is then as it was.
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
    if new_heap > old_heap {
        if let Err(err) = reservation.try_grow(new_heap - old_heap) {
            if let Some(old) = backup {
                *value = old;
            }
            return Err(err);
        }
    } else {
        reservation.shrink(old_heap - new_heap);
    }
    Ok(out)
}
