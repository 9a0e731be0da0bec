//! State time-to-live with Flink's `StateTtlConfig` semantics, and the injectable clock.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of the current time in epoch milliseconds (Flink's `TtlTimeProvider`).
pub trait Clock: Send + Sync + Debug {
    /// The current time, in milliseconds since the Unix epoch.
    fn now_millis(&self) -> i64;
}

/// The system wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_millis(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

/// A clock that moves only when told to; clones share one time.
///
/// ```
/// use state_api::{Clock, ManualClock};
///
/// let clock = ManualClock::new(1_000);
/// let shared = clock.clone();
/// clock.advance(500);
/// assert_eq!(shared.now_millis(), 1_500);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now: Arc<AtomicI64>,
}

impl ManualClock {
    /// A clock reading `now_millis`.
    pub fn new(now_millis: i64) -> Self {
        Self {
            now: Arc::new(AtomicI64::new(now_millis)),
        }
    }

    /// Sets the time.
    pub fn set(&self, now_millis: i64) {
        self.now.store(now_millis, Ordering::SeqCst);
    }

    /// Moves the time by `millis` (saturating).
    pub fn advance(&self, millis: i64) {
        let now = self.now.load(Ordering::SeqCst);
        self.now.store(now.saturating_add(millis), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_millis(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }
}

/// When an entry's last-access timestamp is refreshed (`StateTtlConfig.UpdateType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TtlUpdateType {
    /// Refreshed on creation and on every write (`OnCreateAndWrite`, Flink's default).
    #[default]
    OnCreateAndWrite,
    /// Refreshed on creation, every write and every read of an unexpired entry
    /// (`OnReadAndWrite`); the refresh is a write, committed with the bundle.
    OnReadAndWrite,
}

/// Whether an expired entry not yet cleaned up may be returned
/// (`StateTtlConfig.StateVisibility`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TtlVisibility {
    /// An expired entry is never returned (`NeverReturnExpired`, Flink's default).
    #[default]
    NeverReturnExpired,
    /// An expired entry that is still stored is returned by the read that finds it, which
    /// also clears it (`ReturnExpiredIfNotCleanedUp`): later reads see nothing.
    ReturnExpiredIfNotCleanedUp,
}

/// A table's TTL settings (`StateTtlConfig`).
///
/// Expiry is Flink's `TtlUtils.expired`: an entry written (or, with
/// [`TtlUpdateType::OnReadAndWrite`], read) at `t` is expired at `now` when
/// `t + ttl <= now`, where the sum saturates at `i64::MAX` for positive `t` (see
/// [`expiration_timestamp`]).
///
/// ```
/// use std::time::Duration;
/// use state_api::{TtlConfig, TtlUpdateType, TtlVisibility};
///
/// let ttl = TtlConfig::new(Duration::from_secs(60))
///     .with_update_type(TtlUpdateType::OnReadAndWrite)
///     .with_visibility(TtlVisibility::ReturnExpiredIfNotCleanedUp);
/// assert_eq!(ttl.ttl_millis(), 60_000);
/// assert!(!ttl.is_expired(0, 59_999));
/// assert!(ttl.is_expired(0, 60_000));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TtlConfig {
    ttl_millis: i64,
    /// When the last-access timestamp is refreshed.
    pub update_type: TtlUpdateType,
    /// Whether expired entries may be returned.
    pub visibility: TtlVisibility,
}

impl TtlConfig {
    /// A TTL of `ttl` (whole milliseconds; durations beyond `i64::MAX` ms saturate) with
    /// [`TtlUpdateType::OnCreateAndWrite`] and [`TtlVisibility::NeverReturnExpired`].
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl_millis: i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX),
            update_type: TtlUpdateType::default(),
            visibility: TtlVisibility::default(),
        }
    }

    /// Sets the update type. Defaults to [`TtlUpdateType::OnCreateAndWrite`].
    #[must_use]
    pub fn with_update_type(mut self, update_type: TtlUpdateType) -> Self {
        self.update_type = update_type;
        self
    }

    /// Sets the visibility. Defaults to [`TtlVisibility::NeverReturnExpired`].
    #[must_use]
    pub fn with_visibility(mut self, visibility: TtlVisibility) -> Self {
        self.visibility = visibility;
        self
    }

    /// The time to live in milliseconds.
    pub fn ttl_millis(&self) -> i64 {
        self.ttl_millis
    }

    /// Whether an entry last accessed at `last_access` is expired at `now`.
    #[inline]
    pub fn is_expired(&self, last_access: i64, now: i64) -> bool {
        is_expired(last_access, self.ttl_millis, now)
    }
}

/// What a point read of a stored entry must do under Flink's TTL rules
/// (`AbstractTtlDecorator.getWithTtlCheckAndUpdate`): the one read rule every backend applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtlRead {
    /// Not expired (or no TTL): return it, unchanged.
    Live,
    /// Not expired, `OnReadAndWrite`: return it and refresh its timestamp to now (a write).
    LiveRefresh,
    /// Expired, `ReturnExpiredIfNotCleanedUp`: return it once and clear it (a delete).
    ExpiredReturn,
    /// Expired, `NeverReturnExpired`: return nothing and clear it (a delete).
    ExpiredHidden,
}

impl TtlRead {
    /// Whether the read returns the value.
    pub fn returns_value(self) -> bool {
        !matches!(self, TtlRead::ExpiredHidden)
    }

    /// Whether the read clears the entry.
    pub fn clears(self) -> bool {
        matches!(self, TtlRead::ExpiredReturn | TtlRead::ExpiredHidden)
    }
}

/// The read rule for an entry last accessed at `last_access`, read at `now`, in a table
/// with `ttl` (`None`: no TTL, always [`TtlRead::Live`]).
///
/// ```
/// use std::time::Duration;
/// use state_api::{TtlConfig, TtlRead, TtlUpdateType, ttl_read};
///
/// let ttl = TtlConfig::new(Duration::from_millis(10));
/// assert_eq!(ttl_read(None, 0, 1_000), TtlRead::Live);
/// assert_eq!(ttl_read(Some(&ttl), 100, 109), TtlRead::Live);
/// assert_eq!(ttl_read(Some(&ttl), 100, 110), TtlRead::ExpiredHidden);
/// let refresh = ttl.with_update_type(TtlUpdateType::OnReadAndWrite);
/// assert_eq!(ttl_read(Some(&refresh), 100, 105), TtlRead::LiveRefresh);
/// ```
#[inline]
pub fn ttl_read(ttl: Option<&TtlConfig>, last_access: i64, now: i64) -> TtlRead {
    let Some(ttl) = ttl else {
        return TtlRead::Live;
    };
    match (
        ttl.is_expired(last_access, now),
        ttl.visibility,
        ttl.update_type,
    ) {
        (false, _, TtlUpdateType::OnCreateAndWrite) => TtlRead::Live,
        (false, _, TtlUpdateType::OnReadAndWrite) => TtlRead::LiveRefresh,
        (true, TtlVisibility::ReturnExpiredIfNotCleanedUp, _) => TtlRead::ExpiredReturn,
        (true, TtlVisibility::NeverReturnExpired, _) => TtlRead::ExpiredHidden,
    }
}

/// Whether a scan (which neither refreshes nor clears) shows an entry last accessed at
/// `last_access`: unexpired entries always, expired ones only under
/// `ReturnExpiredIfNotCleanedUp`.
#[inline]
pub fn ttl_scan_visible(ttl: Option<&TtlConfig>, last_access: i64, now: i64) -> bool {
    ttl.is_none_or(|ttl| {
        !ttl.is_expired(last_access, now)
            || ttl.visibility == TtlVisibility::ReturnExpiredIfNotCleanedUp
    })
}

/// The time a table with `ttl` stamps and checks entries with: the clock's now with TTL,
/// `0` without (no clock read: timestamps of a table without TTL are 0).
#[inline]
pub fn ttl_now(ttl: Option<&TtlConfig>, clock: &dyn Clock) -> i64 {
    if ttl.is_some() { clock.now_millis() } else { 0 }
}

/// The export filter of canonical snapshots: an entry is exported when it is not expired at
/// the snapshot's `now` (every entry of a table without TTL).
#[inline]
pub fn ttl_exported(ttl: Option<&TtlConfig>, last_access: i64, now: i64) -> bool {
    ttl.is_none_or(|ttl| !ttl.is_expired(last_access, now))
}

/// Flink's `TtlUtils.getExpirationTimestamp(ts, ttl)`: `ts + ttl`, where for `ts > 0` the
/// ttl is first cut to `i64::MAX - ts` so the sum cannot overflow (for `ts <= 0` Java's plain
/// `long` addition is kept, wrapping as Java does).
#[inline]
pub fn expiration_timestamp(last_access: i64, ttl_millis: i64) -> i64 {
    let ttl_without_overflow = if last_access > 0 {
        ttl_millis.min(i64::MAX - last_access)
    } else {
        ttl_millis
    };
    last_access.wrapping_add(ttl_without_overflow)
}

/// Flink's `TtlUtils.expired(ts, ttl, now)`: `expiration_timestamp(ts, ttl) <= now`.
#[inline]
pub fn is_expired(last_access: i64, ttl_millis: i64, now: i64) -> bool {
    expiration_timestamp(last_access, ttl_millis) <= now
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_boundary_is_inclusive() {
        assert!(!is_expired(100, 10, 109));
        assert!(is_expired(100, 10, 110));
        assert!(is_expired(100, 10, 111));
    }

    #[test]
    fn expiration_saturates_for_positive_timestamps() {
        assert_eq!(expiration_timestamp(10, i64::MAX), i64::MAX);
        assert!(!is_expired(10, i64::MAX, i64::MAX - 1));
        assert!(is_expired(10, i64::MAX, i64::MAX));
        assert_eq!(expiration_timestamp(i64::MAX, 5), i64::MAX);
    }

    #[test]
    fn non_positive_timestamps_add_plainly() {
        assert_eq!(expiration_timestamp(0, 7), 7);
        assert_eq!(expiration_timestamp(-10, 7), -3);
        // Java's long addition wraps; so does ours.
        assert_eq!(expiration_timestamp(-1, i64::MIN), i64::MAX);
    }

    #[test]
    fn config_defaults_match_flink() {
        let c = TtlConfig::new(Duration::from_millis(5));
        assert_eq!(c.update_type, TtlUpdateType::OnCreateAndWrite);
        assert_eq!(c.visibility, TtlVisibility::NeverReturnExpired);
        assert_eq!(TtlConfig::new(Duration::MAX).ttl_millis(), i64::MAX);
    }

    #[test]
    fn manual_clock_is_shared_and_saturates() {
        let c = ManualClock::new(i64::MAX - 1);
        let d = c.clone();
        c.advance(10);
        assert_eq!(d.now_millis(), i64::MAX);
        assert!(SystemClock.now_millis() > 1_600_000_000_000);
    }
}
