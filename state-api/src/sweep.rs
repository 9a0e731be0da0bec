//! The progress report of the bounded sweeps of expired entries ([`KeyedTable`] and
//! [`MapTable`] alike).
//!
//! [`KeyedTable`]: crate::KeyedTable
//! [`MapTable`]: crate::MapTable

/// How far one bounded step of a sweep of expired entries got
/// ([`KeyedTable::sweep_expired`](crate::KeyedTable::sweep_expired),
/// [`MapTable::sweep_expired`](crate::MapTable::sweep_expired)).
///
/// # Sweep contract
///
/// - A step examines a bounded amount of state from a cursor the table keeps, removes the
///   committed entries it finds expired at the store clock's now (Flink's rule,
///   [`TtlConfig::is_expired`](crate::TtlConfig::is_expired)) and reports what it did.
/// - `removed` never exceeds the step's `max_entries`; a step with `max_entries == 0` does
///   nothing and reports nothing (`wrapped` false).
/// - `wrapped` is true when the step reached the end of the table and its cursor went back
///   to the start. The steps from one wrap to the next form a **pass**: an entry expired when
///   the pass began and untouched during it is gone when the pass ends. Every pass ends: steps
///   with `max_entries >= 1` reach `wrapped` after a bounded number of calls. A table
///   without TTL expires nothing (a step may still purge entries removed earlier and not
///   yet reclaimed).
/// - A step that removed nothing is not the end of a pass (it may have examined only live
///   entries); only `wrapped` says a pass is complete.
///
/// ```
/// use state_api::SweepProgress;
///
/// let done = SweepProgress::default();
/// assert_eq!((done.removed, done.scanned, done.wrapped), (0, 0, false));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SweepProgress {
    /// Entries removed because they were expired (or already removed and not yet purged).
    pub removed: u64,
    /// Entries examined.
    pub scanned: u64,
    /// Whether the step reached the end of the table and its cursor went back to the start
    /// (a full pass completed since the previous wrap).
    pub wrapped: bool,
}

impl SweepProgress {
    /// The report of a step of a table that has nothing to sweep (no TTL, nothing to
    /// reclaim): a whole pass, nothing examined.
    pub fn nothing_to_sweep() -> Self {
        Self {
            wrapped: true,
            ..Self::default()
        }
    }
}
