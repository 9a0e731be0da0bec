//! The event source of the W1 / W4 runs: it generates the events, writes their BIGINT key
//! rows, computes their key groups and routes each event to the subtask owning its key
//! group, as Flink's harness does (one source subtask, `keyBy` to P subtasks).
//!
//! The stream is cut into chunks of `bundle` events; each chunk becomes one [`Bundle`] per
//! subtask (its share of the chunk, possibly empty), so a subtask's bundles are the same
//! whichever thread made them. `pipeline.rs` runs the source and the subtasks.

use state_api::keygroup::{BinaryRowWriter, KeyGroup, MaxParallelism};

use crate::e2e::{MAX_PARALLELISM, key_row, owner_of};
use crate::error::{BenchError, BenchResult};
use crate::workload::{key, value};

/// Bytes of a BIGINT key row (`BinaryRowWriter` with one field: an 8-byte null bit set and
/// the 8-byte value), the only key the workloads have.
pub(crate) const KEY_ROW_BYTES: usize = 16;

/// One event as a subtask sees it: 48 bytes, its key row inline (one array per bundle, no
/// second buffer to copy the rows into).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Event {
    /// The event's index in the stream.
    pub(crate) i: u64,
    /// Its key.
    pub(crate) key: u64,
    /// Its value.
    pub(crate) value: u64,
    /// The key group of its key row.
    pub(crate) key_group: KeyGroup,
    /// Its BIGINT key row.
    pub(crate) row: [u8; KEY_ROW_BYTES],
}

/// One subtask's share of one chunk of the stream.
#[derive(Debug, Default)]
pub(crate) struct Bundle {
    /// The events, in stream order.
    pub(crate) events: Vec<Event>,
}

/// Fills `bundles` (one per subtask, cleared first) with the events `start..end` of a
/// stream over `keys` keys: each event's BIGINT key row, its key group, and the subtask
/// owning that key group (`owners`), in stream order.
pub(crate) fn fill(
    start: u64,
    end: u64,
    keys: u64,
    owners: &[i32],
    writer: &mut BinaryRowWriter,
    bundles: &mut [Bundle],
) -> BenchResult<()> {
    let mp = MaxParallelism::new(MAX_PARALLELISM)?;
    for b in bundles.iter_mut() {
        b.events.clear();
    }
    for i in start..end {
        let k = key(i, keys);
        let key_group = key_row(writer, k, mp);
        let Some(b) = usize::try_from(owner_of(owners, key_group))
            .ok()
            .and_then(|o| bundles.get_mut(o))
        else {
            continue;
        };
        let row = writer
            .row()
            .try_into()
            .map_err(|_| BenchError::Usage("a BIGINT key row is not 16 bytes".to_owned()))?;
        b.events.push(Event {
            i,
            key: k,
            value: value(i),
            key_group,
            row,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use state_api::keygroup::Parallelism;

    use super::*;
    use crate::e2e::owners;

    /// Every event of the chunk lands once, in stream order, in its owner's bundle, and a
    /// refill starts from empty bundles.
    #[test]
    fn routes_every_event_once_to_its_owner() {
        let mp = MaxParallelism::new(MAX_PARALLELISM).unwrap();
        let owners = owners(mp, Parallelism::new(2).unwrap());
        let mut writer = BinaryRowWriter::new(1);
        let mut bundles = vec![Bundle::default(), Bundle::default()];
        fill(0, 50, 1_000, &owners, &mut writer, &mut bundles).unwrap();
        fill(1_000, 2_000, 1_000, &owners, &mut writer, &mut bundles).unwrap();
        let mut check = BinaryRowWriter::new(1);
        for (index, b) in bundles.iter().enumerate() {
            assert!(!b.events.is_empty());
            let mut last = None;
            for e in &b.events {
                assert!((1_000..2_000).contains(&e.i) && last < Some(e.i));
                last = Some(e.i);
                assert_eq!((e.key, e.value), (key(e.i, 1_000), value(e.i)));
                let kg = key_row(&mut check, e.key, mp);
                assert_eq!((kg, &e.row[..]), (e.key_group, check.row()));
                assert_eq!(usize::try_from(owner_of(&owners, kg)), Ok(index));
            }
        }
        assert_eq!(bundles.iter().map(|b| b.events.len()).sum::<usize>(), 1_000);
    }
}
