//! The event source of the W1 / W4 runs: one thread that generates the events, writes their
//! BIGINT key rows, computes their key groups and routes each event to the subtask owning
//! its key group, as Flink's harness does (one source subtask, `keyBy` to P subtasks).
//!
//! The stream is cut into chunks of `bundle` events; each chunk becomes one [`Bundle`] per
//! subtask (its share of the chunk, possibly empty), so a subtask's bundles are the same
//! whatever thread made them. Bundles travel over bounded channels (at most
//! [`IN_FLIGHT`] per subtask ahead of it) and come back empty to be refilled: the source
//! allocates nothing once the pipeline is full.

use std::sync::mpsc::{Receiver, RecvError, Sender, SyncSender, TryRecvError};
use std::time::Instant;

use indicatif::ProgressBar;
use state_api::keygroup::{BinaryRowWriter, KeyGroup, MaxParallelism};

use crate::e2e::{MAX_PARALLELISM, key_row, millis, owner_of, thread_cpu_ms};
use crate::error::{BenchError, BenchResult};
use crate::workload::{key, value};

/// Bundles a subtask may have queued ahead of it.
pub(crate) const IN_FLIGHT: usize = 4;

/// One event as a subtask sees it.
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
    /// The key row's bytes in [`Bundle::rows`].
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// One subtask's share of one chunk of the stream.
#[derive(Debug, Default)]
pub(crate) struct Bundle {
    /// The events, in stream order.
    pub(crate) events: Vec<Event>,
    /// Their key rows, back to back.
    pub(crate) rows: Vec<u8>,
}

impl Bundle {
    /// The key row of `event`.
    pub(crate) fn row(&self, event: &Event) -> &[u8] {
        self.rows.get(event.start..event.end).unwrap_or_default()
    }

    fn clear(&mut self) {
        self.events.clear();
        self.rows.clear();
    }
}

/// What the source thread measured.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SourceTimes {
    /// Wall time spent generating and routing (not waiting for a full channel).
    pub(crate) generate_ms: f64,
    /// CPU time of the source thread.
    pub(crate) cpu_ms: f64,
}

/// A subtask's end of the source: bundles in, empty bundles back.
pub(crate) struct Inlet {
    bundles: Receiver<Bundle>,
    recycle: Sender<Bundle>,
}

impl Inlet {
    /// The next bundle, `None` once the stream has ended.
    pub(crate) fn next(&self) -> Option<Bundle> {
        self.bundles.recv().map_err(|RecvError| ()).ok()
    }

    /// Hands a processed bundle back to be refilled.
    pub(crate) fn give_back(&self, bundle: Bundle) {
        // The source may be gone already (the stream ended): the bundle is simply dropped.
        let _ = self.recycle.send(bundle);
    }
}

/// The source's ends of the channels to `parallelism` subtasks.
pub(crate) struct Outlets {
    bundles: Vec<SyncSender<Bundle>>,
    recycled: Receiver<Bundle>,
}

/// Channels between one source and `parallelism` subtasks.
pub(crate) fn channels(parallelism: usize) -> (Outlets, Vec<Inlet>) {
    let (recycle, recycled) = std::sync::mpsc::channel();
    let mut bundles = Vec::with_capacity(parallelism);
    let mut inlets = Vec::with_capacity(parallelism);
    for _ in 0..parallelism {
        let (tx, rx) = std::sync::mpsc::sync_channel(IN_FLIGHT);
        bundles.push(tx);
        inlets.push(Inlet {
            bundles: rx,
            recycle: recycle.clone(),
        });
    }
    (Outlets { bundles, recycled }, inlets)
}

/// Generates `events` events over `keys` keys in chunks of `bundle`, routes them by key
/// group (`owners`) and sends each subtask its share of every chunk; returns when the
/// stream has ended (dropping the senders ends the subtasks' loops).
///
/// # Errors
/// [`BenchError::Thread`] when a subtask stopped taking bundles (it failed; its own error
/// is the one to report).
pub(crate) fn run_source(
    outlets: Outlets,
    events: u64,
    keys: u64,
    bundle: usize,
    owners: &[i32],
    progress: Option<&ProgressBar>,
) -> BenchResult<SourceTimes> {
    let mp = MaxParallelism::new(MAX_PARALLELISM)?;
    let Outlets { bundles, recycled } = outlets;
    let cpu_start = thread_cpu_ms();
    let mut times = SourceTimes::default();
    let mut writer = BinaryRowWriter::new(1);
    let chunk = bundle.max(1) as u64;
    let share = bundle / bundles.len().max(1) + 64;
    let mut fill: Vec<Bundle> = Vec::with_capacity(bundles.len());
    let mut start = 0;
    while start < events {
        let end = (start + chunk).min(events);
        let t0 = Instant::now();
        fill.clear();
        for _ in 0..bundles.len() {
            let mut b = match recycled.try_recv() {
                Ok(b) => b,
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => Bundle {
                    events: Vec::with_capacity(share),
                    rows: Vec::with_capacity(share * 16),
                },
            };
            b.clear();
            fill.push(b);
        }
        for i in start..end {
            let k = key(i, keys);
            let key_group = key_row(&mut writer, k, mp);
            let Some(b) = usize::try_from(owner_of(owners, key_group))
                .ok()
                .and_then(|o| fill.get_mut(o))
            else {
                continue;
            };
            let at = b.rows.len();
            b.rows.extend_from_slice(writer.row());
            b.events.push(Event {
                i,
                key: k,
                value: value(i),
                key_group,
                start: at,
                end: b.rows.len(),
            });
        }
        times.generate_ms += millis(t0.elapsed());
        for (tx, b) in bundles.iter().zip(fill.drain(..)) {
            tx.send(b).map_err(|_| BenchError::Thread)?;
        }
        if let Some(bar) = progress {
            bar.inc(end - start);
        }
        start = end;
    }
    times.cpu_ms = thread_cpu_ms() - cpu_start;
    Ok(times)
}

#[cfg(test)]
mod tests {
    use state_api::keygroup::Parallelism;

    use super::*;
    use crate::e2e::owners;

    /// Every event reaches exactly the subtask owning its key group, in stream order, in
    /// one bundle per chunk and subtask.
    #[test]
    fn routes_every_event_once_to_its_owner() {
        let mp = MaxParallelism::new(MAX_PARALLELISM).unwrap();
        let owners = owners(mp, Parallelism::new(2).unwrap());
        let (outlets, inlets) = channels(2);
        let (events, keys, bundle) = (10_000, 1_000, 1_000);
        let got: Vec<Vec<Bundle>> = std::thread::scope(|s| {
            let source =
                s.spawn(|| run_source(outlets, events, keys, bundle, &owners, None).unwrap());
            let takers: Vec<_> = inlets
                .into_iter()
                .map(|inlet| s.spawn(move || std::iter::from_fn(|| inlet.next()).collect()))
                .collect();
            source.join().unwrap();
            takers.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let mut writer = BinaryRowWriter::new(1);
        let mut seen = 0;
        for (index, bundles) in got.iter().enumerate() {
            assert_eq!(bundles.len(), 10, "one bundle per chunk");
            let mut last = None;
            for (chunk, b) in bundles.iter().enumerate() {
                for e in &b.events {
                    assert_eq!(usize::try_from(e.i / 1_000), Ok(chunk));
                    assert!(last < Some(e.i));
                    last = Some(e.i);
                    assert_eq!((e.key, e.value), (key(e.i, keys), value(e.i)));
                    let kg = key_row(&mut writer, e.key, mp);
                    assert_eq!((kg, b.row(e)), (e.key_group, writer.row()));
                    assert_eq!(usize::try_from(owner_of(&owners, kg)), Ok(index));
                    seen += 1;
                }
            }
        }
        assert_eq!(seen, events);
    }
}
