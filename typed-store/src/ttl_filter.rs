//! The TTL compaction filter: drops entries whose 8-byte last-access prefix is expired.

use std::ffi::CStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rocksdb::CompactionDecision;
use rocksdb::compaction_filter::CompactionFilter;
use rocksdb::compaction_filter_factory::{CompactionFilterContext, CompactionFilterFactory};
use state_api::{Clock, is_expired};

use crate::format::split_value;

/// The TTL of one column family, settable after the family is opened (a table's TTL is
/// known when the table is opened, which can be after the database is). `NO_TTL` = keep
/// everything.
#[derive(Debug, Default)]
pub(crate) struct TtlCell(AtomicI64);

const NO_TTL: i64 = -1;

impl TtlCell {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self(AtomicI64::new(NO_TTL)))
    }

    pub(crate) fn set(&self, ttl_millis: Option<i64>) {
        self.0.store(ttl_millis.unwrap_or(NO_TTL), Ordering::SeqCst);
    }

    fn get(&self) -> Option<i64> {
        let v = self.0.load(Ordering::SeqCst);
        (v >= 0).then_some(v)
    }
}

/// Makes one [`TtlFilter`] per compaction run (RocksDB calls a factory-made filter from one
/// thread only), so each filter may cache the clock's now for its run.
pub(crate) struct TtlFilterFactory {
    ttl: Arc<TtlCell>,
    clock: Arc<dyn Clock>,
}

impl TtlFilterFactory {
    pub(crate) fn new(ttl: Arc<TtlCell>, clock: Arc<dyn Clock>) -> Self {
        Self { ttl, clock }
    }
}

impl CompactionFilterFactory for TtlFilterFactory {
    type Filter = TtlFilter;

    fn create(&mut self, _context: CompactionFilterContext) -> TtlFilter {
        TtlFilter {
            ttl: self.ttl.get(),
            now: self.clock.now_millis(),
        }
    }

    fn name(&self) -> &CStr {
        c"sfstate.ttl-filter-factory"
    }
}

/// One compaction run's filter: the TTL and the clock's now, read once when the run starts.
pub(crate) struct TtlFilter {
    ttl: Option<i64>,
    now: i64,
}

impl CompactionFilter for TtlFilter {
    fn filter(&mut self, _level: u32, _key: &[u8], value: &[u8]) -> CompactionDecision {
        let Some(ttl) = self.ttl else {
            return CompactionDecision::Keep;
        };
        match split_value(value) {
            Some((last_access, _)) if is_expired(last_access, ttl, self.now) => {
                CompactionDecision::Remove
            }
            _ => CompactionDecision::Keep,
        }
    }

    fn name(&self) -> &CStr {
        c"sfstate.ttl-filter"
    }
}
