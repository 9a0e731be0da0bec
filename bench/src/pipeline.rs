//! Runs a W1 / W4 run's source and its P subtasks on a pool of worker threads.
//!
//! The dataflow is Flink's harness's: one source makes the stream's chunks in order
//! (`source.rs`), routes each chunk's events by key group, and every subtask takes its
//! bundles in stream order, one at a time. What differs is the threads: instead of one
//! thread per task (P + 1 threads), `workers` threads take whichever task is ready, the
//! next chunk or a subtask's next bundle, as an engine that runs tasks on one thread per
//! core does. With P + 1 threads on fewer cores (three on this project's two at
//! parallelism 2) a core sits idle whenever the thread that would use it waits to be woken
//! (the subtasks then waited for the source ~22 % of the run); with one worker per core a
//! worker that runs out of bundles makes the next chunk itself. With at least P + 1 workers
//! the pool runs every task on a thread of its own again.
//!
//! Rules, under one lock:
//! - A subtask's bundles run in chunk order, never two at once (its `busy` flag).
//! - Chunks are made in order, one at a time, only while every subtask has fewer than
//!   [`IN_FLIGHT`] bundles queued (a slow subtask holds the source back, as Flink's
//!   backpressure does).
//! - A worker makes the next chunk first when some subtask has fewer than [`LOW_WATER`]
//!   bundles queued; otherwise it runs a queued bundle, preferring the subtask it ran last
//!   (its state is in that core's cache), else the longest queue.
//! - The first error (a subtask's, the source's, or a panicking worker) stops every worker.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use indicatif::ProgressBar;
use state_api::keygroup::BinaryRowWriter;

use crate::e2e::{millis, thread_cpu_ms};
use crate::error::{BenchError, BenchResult};
use crate::source::{Bundle, fill};

/// Bundles a subtask may have queued ahead of it.
pub(crate) const IN_FLIGHT: usize = 4;

/// Below this many queued bundles for some subtask, making the next chunk comes first.
const LOW_WATER: usize = 2;

/// The stream a run's source makes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stream<'a> {
    /// Events in the stream.
    pub(crate) events: u64,
    /// Distinct keys.
    pub(crate) keys: u64,
    /// Events per chunk (one bundle per subtask).
    pub(crate) bundle: usize,
    /// The subtask owning each key group.
    pub(crate) owners: &'a [i32],
}

/// What the pool measured.
#[derive(Debug, Clone, Copy, Default)]
#[expect(
    clippy::struct_field_names,
    reason = "milliseconds, named as `Phases` names them"
)]
pub(crate) struct PoolTimes {
    /// Wall time spent making chunks (generating, key rows, key groups, routing).
    pub(crate) generate_ms: f64,
    /// CPU time spent making chunks.
    pub(crate) generate_cpu_ms: f64,
    /// CPU time of all workers, from start to end.
    pub(crate) cpu_ms: f64,
}

/// Workers for a run at `parallelism`: one per core, at most one per task (the source and
/// each subtask).
pub(crate) fn default_workers(parallelism: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    cores.min(parallelism + 1).max(1)
}

/// The scheduler's state.
struct Sched {
    /// The first event of the next chunk.
    next: u64,
    generating: bool,
    queues: Vec<VecDeque<Bundle>>,
    busy: Vec<bool>,
    /// Processed bundles, to be refilled.
    spare: Vec<Bundle>,
    error: Option<BenchError>,
    times: PoolTimes,
}

/// What a worker does next.
enum Task {
    /// Make the events `start..end` into these bundles (one per subtask).
    Generate {
        start: u64,
        end: u64,
        bundles: Vec<Bundle>,
    },
    /// Run subtask `.0`'s bundle.
    Process(usize, Bundle),
    /// Nothing is left for this worker.
    Done,
}

struct Shared<'a, S> {
    sched: Mutex<Sched>,
    changed: Condvar,
    subtasks: Vec<Mutex<&'a mut S>>,
    stream: Stream<'a>,
    progress: Option<&'a ProgressBar>,
}

/// Runs `stream` through `subtasks` (subtask `i` gets the events whose key group
/// `stream.owners` gives to `i`) on `workers` threads; `process` runs one bundle of a
/// subtask.
///
/// # Errors
/// The first error of `process` or of the source; [`BenchError::Thread`] when a worker
/// panicked.
pub(crate) fn run<S: Send>(
    stream: Stream<'_>,
    subtasks: &mut [S],
    workers: usize,
    progress: Option<&ProgressBar>,
    process: &(dyn Fn(&mut S, &Bundle) -> BenchResult<()> + Sync),
) -> BenchResult<PoolTimes> {
    let count = subtasks.len();
    let shared = Shared {
        sched: Mutex::new(Sched {
            next: 0,
            generating: false,
            queues: (0..count).map(|_| VecDeque::new()).collect(),
            busy: vec![false; count],
            spare: Vec::new(),
            error: None,
            times: PoolTimes::default(),
        }),
        changed: Condvar::new(),
        subtasks: subtasks.iter_mut().map(Mutex::new).collect(),
        stream,
        progress,
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers.max(1))
            .map(|_| scope.spawn(|| worker(&shared, process)))
            .collect();
        for handle in handles {
            if handle.join().is_err() {
                shared.fail(BenchError::Thread);
            }
        }
    });
    let sched = shared
        .sched
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    match sched.error {
        Some(e) => Err(e),
        None => Ok(sched.times),
    }
}

impl<S> Shared<'_, S> {
    fn lock(&self) -> MutexGuard<'_, Sched> {
        self.sched.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records the first error and wakes every worker to stop.
    fn fail(&self, error: BenchError) {
        let mut sched = self.lock();
        sched.error.get_or_insert(error);
        drop(sched);
        self.changed.notify_all();
    }

    /// The next task for a worker that last ran subtask `last`, waiting until there is one.
    fn next_task(&self, last: Option<usize>) -> Task {
        let mut sched = self.lock();
        loop {
            if sched.error.is_some() {
                return Task::Done;
            }
            let more = sched.next < self.stream.events;
            let may_generate =
                more && !sched.generating && sched.queues.iter().all(|q| q.len() < IN_FLIGHT);
            let low = sched.queues.iter().any(|q| q.len() < LOW_WATER);
            if may_generate && low {
                return self.take_chunk(&mut sched);
            }
            if let Some(index) = pick(&sched, last)
                && let Some(bundle) = sched.queues[index].pop_front()
            {
                sched.busy[index] = true;
                return Task::Process(index, bundle);
            }
            if may_generate {
                return self.take_chunk(&mut sched);
            }
            if !more && !sched.generating && sched.queues.iter().all(VecDeque::is_empty) {
                return Task::Done;
            }
            sched = self
                .changed
                .wait(sched)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn take_chunk(&self, sched: &mut Sched) -> Task {
        sched.generating = true;
        let start = sched.next;
        let chunk = self.stream.bundle.max(1) as u64;
        sched.next = (start + chunk).min(self.stream.events);
        let bundles = (0..self.subtasks.len())
            .map(|_| sched.spare.pop().unwrap_or_default())
            .collect();
        Task::Generate {
            start,
            end: sched.next,
            bundles,
        }
    }
}

/// The subtask a worker that last ran `last` runs next: one not running, with a bundle
/// queued; `last` if it qualifies, else the longest queue.
fn pick(sched: &Sched, last: Option<usize>) -> Option<usize> {
    let ready = |i: usize| !sched.busy[i] && !sched.queues[i].is_empty();
    if let Some(i) = last.filter(|&i| ready(i)) {
        return Some(i);
    }
    (0..sched.queues.len())
        .filter(|&i| ready(i))
        .max_by_key(|&i| sched.queues[i].len())
}

/// Marks a worker's run as failed if the worker unwinds (the others would wait forever).
struct PanicGuard<'s, 'a, S>(&'s Shared<'a, S>);

impl<S> Drop for PanicGuard<'_, '_, S> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.fail(BenchError::Thread);
        }
    }
}

fn worker<S>(
    shared: &Shared<'_, S>,
    process: &(dyn Fn(&mut S, &Bundle) -> BenchResult<()> + Sync),
) {
    let _guard = PanicGuard(shared);
    let cpu_start = thread_cpu_ms();
    let mut writer = BinaryRowWriter::new(1);
    let mut last = None;
    loop {
        match shared.next_task(last) {
            Task::Done => break,
            Task::Generate {
                start,
                end,
                mut bundles,
            } => {
                let (t0, c0) = (Instant::now(), thread_cpu_ms());
                let stream = shared.stream;
                let made = fill(
                    start,
                    end,
                    stream.keys,
                    stream.owners,
                    &mut writer,
                    &mut bundles,
                );
                let (wall, cpu) = (millis(t0.elapsed()), thread_cpu_ms() - c0);
                let mut sched = shared.lock();
                sched.generating = false;
                sched.times.generate_ms += wall;
                sched.times.generate_cpu_ms += cpu;
                match made {
                    Ok(()) => {
                        for (queue, bundle) in sched.queues.iter_mut().zip(bundles) {
                            queue.push_back(bundle);
                        }
                    }
                    Err(e) => {
                        sched.error.get_or_insert(e);
                    }
                }
                drop(sched);
                shared.changed.notify_all();
                if let Some(bar) = shared.progress {
                    bar.inc(end - start);
                }
            }
            Task::Process(index, bundle) => {
                let done = match shared.subtasks.get(index) {
                    Some(slot) => {
                        let mut subtask = slot.lock().unwrap_or_else(PoisonError::into_inner);
                        process(&mut subtask, &bundle)
                    }
                    None => Err(BenchError::Thread),
                };
                let mut sched = shared.lock();
                sched.busy[index] = false;
                sched.spare.push(bundle);
                if let Err(e) = done {
                    sched.error.get_or_insert(e);
                }
                drop(sched);
                shared.changed.notify_all();
                last = Some(index);
            }
        }
    }
    let cpu = thread_cpu_ms() - cpu_start;
    shared.lock().times.cpu_ms += cpu;
}

#[cfg(test)]
mod tests {
    use state_api::keygroup::{MaxParallelism, Parallelism};

    use super::*;
    use crate::e2e::{MAX_PARALLELISM, key_row, owner_of, owners};
    use crate::workload::key;

    /// The owners of the key groups at `parallelism`.
    fn owners_at(parallelism: i32) -> Vec<i32> {
        let mp = MaxParallelism::new(MAX_PARALLELISM).unwrap();
        owners(mp, Parallelism::new(parallelism).unwrap())
    }

    /// A stream of `events` over 1,000 keys in chunks of 1,000.
    fn stream(events: u64, owners: &[i32]) -> Stream<'_> {
        Stream {
            events,
            keys: 1_000,
            bundle: 1_000,
            owners,
        }
    }

    /// Runs a stream through `parallelism` collecting subtasks on `workers` workers.
    fn collect(parallelism: i32, workers: usize) -> Vec<Vec<(u64, usize)>> {
        let owners = owners_at(parallelism);
        let mut got: Vec<Vec<(u64, usize)>> =
            vec![Vec::new(); usize::try_from(parallelism).unwrap()];
        let times = run(
            stream(10_500, &owners),
            &mut got,
            workers,
            None,
            &|seen, bundle| {
                seen.extend(bundle.events.iter().map(|e| (e.i, bundle.events.len())));
                Ok(())
            },
        )
        .unwrap();
        assert!(times.cpu_ms >= times.generate_cpu_ms);
        got
    }

    /// Every event reaches exactly its owner, in stream order, whatever the worker count.
    #[test]
    fn every_event_reaches_its_owner_in_order() {
        let mp = MaxParallelism::new(MAX_PARALLELISM).unwrap();
        for parallelism in [1, 2, 3] {
            let owners = owners_at(parallelism);
            let mut writer = BinaryRowWriter::new(1);
            for workers in [1, 2, 4] {
                let got = collect(parallelism, workers);
                let mut all = 0;
                for (index, seen) in got.iter().enumerate() {
                    assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "stream order");
                    for &(i, _) in seen {
                        let kg = key_row(&mut writer, key(i, 1_000), mp);
                        assert_eq!(usize::try_from(owner_of(&owners, kg)), Ok(index));
                    }
                    all += seen.len();
                }
                assert_eq!(all, 10_500, "p {parallelism}, {workers} workers");
            }
        }
    }

    /// A panicking subtask fails the run with [`BenchError::Thread`]; no worker is left
    /// waiting.
    #[test]
    fn a_panicking_subtask_fails_the_run() {
        let owners = owners_at(2);
        // Whichever worker draws the panic, the others must stop (without the guard a worker
        // joined before the panicking one waits forever).
        for _ in 0..10 {
            let mut subtasks = [(0, 0_usize), (1, 0)];
            let result = run(
                stream(100_000, &owners),
                &mut subtasks,
                4,
                None,
                &|(index, n), _| {
                    *n += 1;
                    assert!(*index == 0 || *n < 3, "subtask 1 fails");
                    Ok(())
                },
            );
            assert!(matches!(result, Err(BenchError::Thread)));
        }
    }

    /// A subtask's error stops the run and is the error returned.
    #[test]
    fn the_first_error_stops_every_worker() {
        let owners = owners_at(2);
        let mut bundles_seen = [0_usize, 0];
        let result = run(
            stream(1_000_000, &owners),
            &mut bundles_seen,
            2,
            None,
            &|seen, _| {
                *seen += 1;
                if *seen == 3 {
                    Err(BenchError::Usage("stop".to_owned()))
                } else {
                    Ok(())
                }
            },
        );
        assert!(matches!(result, Err(BenchError::Usage(m)) if m == "stop"));
        assert!(bundles_seen.iter().all(|&n| n <= 3 + IN_FLIGHT));
    }
}
