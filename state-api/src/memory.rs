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

/// Bytes held from a [`MemoryPool`]; grows and shrinks, and returns everything on drop.
#[derive(Debug)]
pub struct MemoryReservation {
    pool: Arc<dyn MemoryPool>,
    size: usize,
}

impl MemoryReservation {
    /// An empty reservation against `pool`.
    pub fn new(pool: Arc<dyn MemoryPool>) -> Self {
        Self { pool, size: 0 }
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
    pub fn try_grow(&mut self, bytes: usize) -> Result<()> {
        self.pool.try_acquire(bytes)?;
        self.size += bytes;
        Ok(())
    }

    /// Returns `bytes` (at most everything held) to the pool.
    pub fn shrink(&mut self, bytes: usize) {
        let bytes = bytes.min(self.size);
        self.pool.release(bytes);
        self.size -= bytes;
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

    /// Returns everything held to the pool.
    pub fn free(&mut self) {
        self.shrink(self.size);
    }

    /// Moves everything held into a new reservation (for handing staged memory over).
    #[must_use]
    pub fn take(&mut self) -> MemoryReservation {
        let size = std::mem::take(&mut self.size);
        MemoryReservation {
            pool: Arc::clone(&self.pool),
            size,
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
            assert_eq!(pool.used(), 5);
        }
        assert_eq!(pool.used(), 0);
        assert_eq!(pool.capacity(), None);
    }
}
