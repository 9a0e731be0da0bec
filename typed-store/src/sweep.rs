//! The bounded TTL sweep of a table's column family, shared by keyed and map tables (both
//! store the 8-byte TTL timestamp first in every value).

use state_api::{Result, SweepProgress, TtlConfig};

use crate::error::rocks_api;
use crate::format::split_value;
use crate::store::Shared;

/// One sweep step over table `table`'s column family: scans at most `4 * max_entries` (at
/// least 64) entries from `cursor` (the first key not yet examined; `None`: the start),
/// deletes the expired ones among them, at most `max_entries`, in one write batch (WAL off),
/// and moves the cursor. `wrapped` when the scan reached the end of the family (the cursor
/// goes back to the start).
pub(crate) fn sweep_column_family(
    shared: &Shared,
    table: &str,
    ttl: &TtlConfig,
    now: i64,
    cursor: &mut Option<Vec<u8>>,
    max_entries: usize,
) -> Result<SweepProgress> {
    let mut progress = SweepProgress::default();
    if max_entries == 0 {
        return Ok(progress);
    }
    let budget = max_entries.saturating_mul(4).max(64) as u64;
    let limit = max_entries as u64;
    let st = shared.read();
    let cf = st.table_cf(table)?;
    let mut batch = rocksdb::WriteBatch::default();
    let mut iter = st.db.raw_iterator_cf(&cf);
    match cursor.as_deref() {
        Some(key) => iter.seek(key),
        None => iter.seek_to_first(),
    }
    let mut next_cursor = None;
    while let Some((key, value)) = iter.item() {
        if progress.scanned >= budget || progress.removed >= limit {
            next_cursor = Some(key.to_vec());
            break;
        }
        progress.scanned += 1;
        if split_value(value).is_some_and(|(ts, _)| ttl.is_expired(ts, now)) {
            batch.delete_cf(&cf, key);
            progress.removed += 1;
        }
        iter.next();
    }
    iter.status().map_err(rocks_api("sweep scan"))?;
    drop(iter);
    if !batch.is_empty() {
        st.db
            .write_opt(batch, &shared.write_options)
            .map_err(rocks_api("sweep"))?;
    }
    progress.wrapped = next_cursor.is_none();
    *cursor = next_cursor;
    Ok(progress)
}
