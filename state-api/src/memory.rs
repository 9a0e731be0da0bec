//! The host memory pool and RAII reservations.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{Error, Result};

/// Memory the host grants to state backends: caches, pending writes, restore staging and
/// canonical materialisation reserve from it through a [`MemoryReservation`].
///
/// Contract: [`try_acquire`](MemoryPool::try_acquire) either grants all `bytes` or returns
/// [`Error::MemoryExhausted`] and grants nothing; [`release`](MemoryPool::release) returns
/// bytes acquired before (reservations guarantee this). Implementations are thread-safe.
pub trait MemoryPool: Send + Sync + Debug {
    /// Takes `bytes` from the pool.
    ///
    /// # Errors
    /// [`Error::MemoryExhausted`] when fewer than `bytes` are free; nothing is taken.
    fn try_acquire(&self, bytes: usize) -> Result<()>;

    /// Returns `bytes` to the pool.
    fn release(&self, bytes: usize);

    /// Bytes currently acquired.
    fn used(&self) -> usize;

    /// The pool's capacity, or `None` when unbounded.
    fn capacity(&self) -> Option<usize>;
}

/// A pool of fixed capacity.
///
/// ```
/// use std::sync::Arc;
/// use state_api::{BoundedMemoryPool, MemoryPool, MemoryReservation};
///
/// let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(100));
/// let mut r = MemoryReservation::new(pool.clone());
/// r.try_grow(60)?;
/// assert!(r.try_grow(60).is_err()); // only 40 left; nothing taken
/// assert_eq!(pool.used(), 60);
/// drop(r);
/// assert_eq!(pool.used(), 0);
/// # Ok::<(), state_api::Error>(())
/// ```
#[derive(Debug)]
pub struct BoundedMemoryPool {
    capacity: usize,
    used: UsedBytes,
}

impl BoundedMemoryPool {
    /// A pool of `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            used: UsedBytes::default(),
        }
    }
}

impl MemoryPool for BoundedMemoryPool {
    fn try_acquire(&self, bytes: usize) -> Result<()> {
        self.used.acquire_within(bytes, self.capacity)
    }

    fn release(&self, bytes: usize) {
        self.used.release(bytes);
    }

    fn used(&self) -> usize {
        self.used.get()
    }

    fn capacity(&self) -> Option<usize> {
        Some(self.capacity)
    }
}

/// A pool without a limit that still counts what is acquired.
#[derive(Debug, Default)]
pub struct UnboundedMemoryPool {
    used: UsedBytes,
}

impl UnboundedMemoryPool {
    /// An empty unbounded pool.
    pub fn new() -> Self {
        Self::default()
    }
}

impl MemoryPool for UnboundedMemoryPool {
    fn try_acquire(&self, bytes: usize) -> Result<()> {
        // Only a count that would overflow `usize` is refused.
        self.used.acquire_within(bytes, usize::MAX)
    }

    fn release(&self, bytes: usize) {
        self.used.release(bytes);
    }

    fn used(&self) -> usize {
        self.used.get()
    }

    fn capacity(&self) -> Option<usize> {
        None
    }
}

/// The acquired-bytes counter both pools share.
#[derive(Debug, Default)]
struct UsedBytes(AtomicUsize);

impl UsedBytes {
    /// Adds `bytes` if the total stays at most `limit`; all or nothing.
    fn acquire_within(&self, bytes: usize, limit: usize) -> Result<()> {
        self.0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(bytes).filter(|&n| n <= limit)
            })
            .map(|_| ())
            .map_err(|used| Error::MemoryExhausted {
                requested: bytes,
                available: limit.saturating_sub(used),
            })
    }

    /// Subtracts `bytes`, saturating at zero.
    fn release(&self, bytes: usize) {
        let _ = self
            .0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                Some(used.saturating_sub(bytes))
            });
    }

    fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// An unbounded pool is charged in steps of this many bytes per reservation: a reservation
/// touches the pool's shared counter once per step, not once per entry.
const UNBOUNDED_STEP: usize = 64 << 10;

/// Bytes held from a [`MemoryPool`]; grows and shrinks, and returns everything on drop.
///
/// Against a bounded pool every change is exact (the pool can refuse any byte). Against an
/// unbounded pool ([`MemoryPool::capacity`] `None`, which refuses nothing but an overflow)
/// the reservation counts locally and charges the pool in whole steps of 64 KiB: the
/// pool's [`used`](MemoryPool::used) then over-reports by less than two steps per
/// reservation, and the hot path of a table (a put, a cache admission) does no atomic
/// operation at all.
#[derive(Debug)]
pub struct MemoryReservation {
    pool: Arc<dyn MemoryPool>,
    size: usize,
    /// Bytes taken from the pool: `size` for a bounded pool, `size` rounded up to a step
    /// (and at most one step more) for an unbounded one.
    granted: usize,
    unbounded: bool,
}

/// `bytes` rounded up to a whole step (saturating).
fn round_up_step(bytes: usize) -> usize {
    bytes
        .div_ceil(UNBOUNDED_STEP)
        .saturating_mul(UNBOUNDED_STEP)
        .max(bytes)
}

impl MemoryReservation {
    /// An empty reservation against `pool`.
    pub fn new(pool: Arc<dyn MemoryPool>) -> Self {
        let unbounded = pool.capacity().is_none();
        Self {
            pool,
            size: 0,
            granted: 0,
            unbounded,
        }
    }

    /// Bytes currently held.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The pool this reservation draws from.
    pub fn pool(&self) -> &Arc<dyn MemoryPool> {
        &self.pool
    }

    /// Holds `bytes` more.
    ///
    /// # Errors
    /// [`Error::MemoryExhausted`]; the reservation is unchanged.
    #[inline]
    pub fn try_grow(&mut self, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        if !self.unbounded {
            self.pool.try_acquire(bytes)?;
            self.size += bytes;
            self.granted = self.size;
            return Ok(());
        }
        let size = self.size.checked_add(bytes).ok_or(Error::MemoryExhausted {
            requested: bytes,
            available: usize::MAX - self.size,
        })?;
        if size > self.granted {
            let target = round_up_step(size);
            self.pool.try_acquire(target - self.granted)?;
            self.granted = target;
        }
        self.size = size;
        Ok(())
    }

    /// Returns `bytes` (at most everything held) to the pool.
    #[inline]
    pub fn shrink(&mut self, bytes: usize) {
        let bytes = bytes.min(self.size);
        if bytes == 0 {
            return;
        }
        self.size -= bytes;
        if !self.unbounded {
            self.pool.release(bytes);
            self.granted = self.size;
        } else if self.size == 0 || self.granted - self.size >= 2 * UNBOUNDED_STEP {
            let target = if self.size == 0 {
                0
            } else {
                round_up_step(self.size)
            };
            self.pool.release(self.granted - target);
            self.granted = target;
        }
    }

    /// Holds `new - old` bytes more, or returns `old - new` (nothing when they are equal):
    /// the change when something of `old` bytes is replaced by something of `new`.
    ///
    /// # Errors
    /// [`Error::MemoryExhausted`] when growing fails; the reservation is unchanged.
    #[inline]
    pub fn try_replace(&mut self, old: usize, new: usize) -> Result<()> {
        if new > old {
            self.try_grow(new - old)
        } else {
            self.shrink(old - new);
            Ok(())
        }
    }

    /// Grows or shrinks to exactly `bytes`.
    ///
    /// # Errors
    /// [`Error::MemoryExhausted`] when growing fails; the reservation is unchanged.
    pub fn try_resize(&mut self, bytes: usize) -> Result<()> {
        if bytes > self.size {
            self.try_grow(bytes - self.size)
        } else {
            self.shrink(self.size - bytes);
            Ok(())
        }
    }

    /// Returns everything to the pool.
    pub fn free(&mut self) {
        self.shrink(self.size);
        if self.granted > 0 {
            self.pool.release(self.granted);
            self.granted = 0;
        }
    }

    /// Moves everything held into a new reservation (for handing staged memory over).
    #[must_use]
    pub fn take(&mut self) -> MemoryReservation {
        let size = std::mem::take(&mut self.size);
        let granted = std::mem::take(&mut self.granted);
        MemoryReservation {
            pool: Arc::clone(&self.pool),
            size,
            granted,
            unbounded: self.unbounded,
        }
    }
}

impl Drop for MemoryReservation {
    fn drop(&mut self) {
        self.free();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_refuses_over_capacity_and_reports_available() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(10));
        let mut a = MemoryReservation::new(Arc::clone(&pool));
        a.try_grow(7).unwrap();
        let err = a.try_grow(4).unwrap_err();
        assert!(
            matches!(
                err,
                Error::MemoryExhausted {
                    requested: 4,
                    available: 3
                }
            ),
            "{err}"
        );
        assert_eq!(a.size(), 7);
        a.try_resize(2).unwrap();
        assert_eq!(pool.used(), 2);
        a.try_resize(10).unwrap();
        assert!(a.try_resize(11).is_err());
        assert_eq!(pool.used(), 10);
        let b = a.take();
        assert_eq!((a.size(), b.size()), (0, 10));
        drop(b);
        assert_eq!(pool.used(), 0);
        assert_eq!(pool.capacity(), Some(10));
    }

    #[test]
    fn unbounded_counts_and_releases_on_drop() {
        let pool: Arc<dyn MemoryPool> = Arc::new(UnboundedMemoryPool::new());
        {
            let mut r = MemoryReservation::new(Arc::clone(&pool));
            r.try_grow(usize::MAX / 2).unwrap();
            r.shrink(usize::MAX);
            assert_eq!(r.size(), 0);
            r.try_grow(5).unwrap();
            // Charged in whole steps: one step for 5 bytes, no pool traffic until it is used.
            assert_eq!(pool.used(), UNBOUNDED_STEP);
            r.try_grow(UNBOUNDED_STEP - 5).unwrap();
            assert_eq!(pool.used(), UNBOUNDED_STEP);
            r.try_grow(1).unwrap();
            assert_eq!(pool.used(), 2 * UNBOUNDED_STEP);
            // Shrinking releases only once two whole steps are unused.
            r.try_grow(3 * UNBOUNDED_STEP).unwrap();
            r.shrink(3 * UNBOUNDED_STEP);
            assert_eq!(r.size(), UNBOUNDED_STEP + 1);
            assert_eq!(pool.used(), 2 * UNBOUNDED_STEP);
            let moved = r.take();
            assert_eq!((r.size(), moved.size()), (0, UNBOUNDED_STEP + 1));
            drop(moved);
            assert_eq!(pool.used(), 0);
            r.try_grow(7).unwrap();
        }
        assert_eq!(pool.used(), 0);
        assert_eq!(pool.capacity(), None);
    }
}
