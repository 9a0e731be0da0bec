//! Seeded SIGKILL campaign: a child process runs a retracting `GroupAggregate` (COUNT(*),
//! SUM, MAX and MIN with retraction, so a keyed table and a map table) over a typed-store
//! `RocksStore` through a seeded schedule of events (bundles, native checkpoints, canonical
//! snapshots into one `DirContainer` directory, restores from the last snapshot and from the
//! last checkpoint) and is killed with `SIGKILL` at a seeded moment inside a chosen event.
//!
//! The parent replays the same seeded schedule on a memory-store model and, after the kill:
//! - restores the last **acknowledged** native checkpoint (the child prints `END <event>`
//!   after a checkpoint completes) into a fresh `RocksStore` and finds exactly the model's
//!   state at that event;
//! - opens the snapshot directory: `CURRENT` names the acknowledged generation, or the next
//!   one when the kill came after its commit but before the acknowledgement; restored into a
//!   fresh `RocksStore`, it holds exactly the model's state of that generation;
//! - forges a `CURRENT` naming any other generation directory left behind (a half-written
//!   snapshot) and restores it: refused with a typed error, or (the write had finished)
//!   exactly that generation's state — never a mix;
//! - opens a checkpoint directory the kill left behind: refused, or exactly its state.
//!
//! States are compared as canonical snapshots (manifest bytes and every key group's payload),
//! which are byte-identical across the two backends.
//!
//! Env: `CRASH_TRIALS` (default 50), `CRASH_SEED` (first seed, default 1; trial `i` uses seed
//! `CRASH_SEED + i`). Each trial prints its seed, the event it aimed at, where the kill
//! landed and the outcome; the end prints counts by kill phase × outcome.
//!
//! The child is this test binary re-executed on the ignored test `crash_child` with
//! `CRASH_CHILD_DIR` and `CRASH_CHILD_SEED` set; it never runs on its own.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::too_many_lines,
    reason = "test code"
)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use memory_store::MemoryStore;
use sfcs_format::{CURRENT_FILE, Container, DirContainer, MemoryContainer, read_envelope};
use typed_store::{RocksCheckpoint, RocksSlot, RocksStore};

const ENV_DIR: &str = "CRASH_CHILD_DIR";
const ENV_SEED: &str = "CRASH_CHILD_SEED";
/// The marker in front of every protocol line (libtest may print in front of the first).
const MARK: &str = "@@ ";
const SLOT_BYTES: u64 = 16 << 20;

mod crash_workload;

use crash_workload::{Event, Input, OPERATOR_ID, Rng, config, operator, schedule};

// ---------------------------------------------------------------------------------------
// The child.

fn say(out: &mut impl Write, line: &str) {
    writeln!(out, "{MARK}{line}").unwrap();
    out.flush().unwrap();
}

fn child(dir: &Path, seed: u64) {
    let slot = RocksSlot::try_new(SLOT_BYTES).unwrap();
    let mut store = RocksStore::open(dir.join("store-0"), config(), &slot).unwrap();
    let mut op = operator(&mut store);
    let mut input = Input::new(seed);
    let mut snap = DirContainer::open(dir.join("snap")).unwrap();
    let mut last_checkpoint = None;
    let mut out = std::io::stdout().lock();
    say(&mut out, "READY");
    for (e, event) in schedule(seed).into_iter().enumerate() {
        say(&mut out, &format!("BEGIN {e} {}", event.name()));
        let mut extra = String::new();
        match event {
            Event::Bundle => {
                op.process_bundle(&input.next_bundle()).unwrap();
            }
            Event::Checkpoint => {
                let path = dir.join(format!("ckpt-{e}"));
                store.checkpoint_to(&path).unwrap();
                last_checkpoint = Some(path);
            }
            Event::Snapshot => {
                op.snapshot(&mut snap).unwrap();
                extra = format!(" gen={}", snap.committed_generation().unwrap());
            }
            Event::RestoreSnapshot => {
                let source = DirContainer::open_existing(dir.join("snap")).unwrap();
                op.restore(&[&source]).unwrap();
            }
            Event::RestoreCheckpoint => {
                drop(op);
                drop(store);
                let checkpoint = RocksCheckpoint::new(last_checkpoint.clone().unwrap());
                store = RocksStore::open_checkpoint(
                    &checkpoint,
                    dir.join(format!("store-{e}")),
                    config(),
                    &slot,
                )
                .unwrap();
                op = operator(&mut store);
            }
        }
        say(&mut out, &format!("END {e} {}{extra}", event.name()));
    }
    say(&mut out, "DONE");
    // The parent kills the child; never exit on its own before that.
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
#[ignore = "helper: runs only as the child process of crash_campaign"]
fn crash_child() {
    if let (Some(dir), Some(seed)) = (std::env::var_os(ENV_DIR), std::env::var_os(ENV_SEED)) {
        child(Path::new(&dir), seed.to_str().unwrap().parse().unwrap());
    }
}

// ---------------------------------------------------------------------------------------
// The parent: model, kill, recovery.

/// The model's canonical snapshot after each checkpoint and snapshot event (by event index).
fn model_states(seed: u64) -> BTreeMap<usize, MemoryContainer> {
    let mut store = MemoryStore::new(config());
    let mut op = operator(&mut store);
    let mut input = Input::new(seed);
    let mut states = BTreeMap::new();
    let (mut last_checkpoint, mut last_snapshot) = (None, None);
    for (e, event) in schedule(seed).into_iter().enumerate() {
        match event {
            Event::Bundle => {
                op.process_bundle(&input.next_bundle()).unwrap();
            }
            Event::Checkpoint | Event::Snapshot => {
                let mut c = MemoryContainer::new();
                op.snapshot(&mut c).unwrap();
                states.insert(e, c);
                if event == Event::Checkpoint {
                    last_checkpoint = Some(e);
                } else {
                    last_snapshot = Some(e);
                }
            }
            Event::RestoreSnapshot => {
                op.restore(&[&states[&last_snapshot.unwrap()]]).unwrap();
            }
            Event::RestoreCheckpoint => {
                op.restore(&[&states[&last_checkpoint.unwrap()]]).unwrap();
            }
        }
    }
    states
}

/// Why two canonical snapshots differ, or `None` when manifests and payloads are equal.
fn difference(expected: &dyn Container, got: &dyn Container) -> Option<String> {
    if expected.get_manifest().unwrap() != got.get_manifest().unwrap() {
        return Some("manifests differ".into());
    }
    let groups = expected.key_groups().unwrap();
    if groups != got.key_groups().unwrap() {
        return Some("key groups differ".into());
    }
    for kg in groups {
        let a = read_envelope(expected, kg, OPERATOR_ID).unwrap();
        let b = read_envelope(got, kg, OPERATOR_ID);
        if b.as_ref().ok() != Some(&a) {
            return Some(format!("key group {kg} differs"));
        }
    }
    None
}

/// The canonical snapshot of an operator restored from a native checkpoint.
fn state_of_checkpoint(
    path: &Path,
    scratch: &Path,
    slot: &RocksSlot,
) -> Result<MemoryContainer, String> {
    let mut store =
        RocksStore::open_checkpoint(&RocksCheckpoint::new(path), scratch, config(), slot)
            .map_err(|e| e.to_string())?;
    let op = operator(&mut store);
    let mut c = MemoryContainer::new();
    op.snapshot(&mut c).unwrap();
    Ok(c)
}

/// The canonical snapshot of an operator (in a fresh memory store: the child restores
/// snapshots into typed-store itself) restored from `snapshot`.
fn state_of_snapshot(snapshot: &dyn Container) -> Result<MemoryContainer, String> {
    let mut store = MemoryStore::new(config());
    let mut op = operator(&mut store);
    op.restore(&[snapshot]).map_err(|e| e.to_string())?;
    let mut c = MemoryContainer::new();
    op.snapshot(&mut c).unwrap();
    Ok(c)
}

/// What the child said before it died.
#[derive(Default)]
struct Transcript {
    begun: Vec<(usize, Event)>,
    ended: Vec<usize>,
}

impl Transcript {
    /// The event the kill landed in (begun, not ended), if any.
    fn interrupted(&self) -> Option<(usize, Event)> {
        self.begun
            .last()
            .copied()
            .filter(|(e, _)| self.ended.last() != Some(e))
    }
    fn last_ended(&self, schedule: &[Event], kind: Event) -> Option<usize> {
        self.ended
            .iter()
            .rev()
            .copied()
            .find(|&e| schedule[e] == kind)
    }
}

struct Trial {
    seed: u64,
    target: usize,
    landed: &'static str,
    outcome: String,
    failures: Vec<String>,
}

/// The generation number of the snapshot taken at event `e` (generations count from 1).
fn generation_of(schedule: &[Event], e: usize) -> u64 {
    schedule[..=e]
        .iter()
        .filter(|&&x| x == Event::Snapshot)
        .count() as u64
}

fn event_of_generation(schedule: &[Event], generation: u64) -> Option<usize> {
    (0..schedule.len())
        .find(|&e| schedule[e] == Event::Snapshot && generation_of(schedule, e) == generation)
}

fn forge_current(root: &Path, generation: u64) {
    let mut bytes = b"SFCG".to_vec();
    bytes.extend_from_slice(&generation.to_be_bytes());
    let crc = crc32c::crc32c(&bytes);
    bytes.extend_from_slice(&crc.to_be_bytes());
    std::fs::write(root.join(CURRENT_FILE), bytes).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            // A file may vanish under a dying writer's rename: a missing file stays missing.
            let _ = std::fs::copy(entry.path(), &target);
        }
    }
}

fn generation_dirs(root: &Path) -> Vec<u64> {
    let mut out: Vec<u64> = std::fs::read_dir(root)
        .map(|it| {
            it.filter_map(|e| {
                e.ok()?
                    .file_name()
                    .to_str()?
                    .strip_prefix("gen-")?
                    .parse()
                    .ok()
            })
            .collect()
        })
        .unwrap_or_default();
    out.sort_unstable();
    out
}

/// A scratch directory under `CRASH_DIR`, else `/dev/shm` when present (a `SIGKILL` keeps
/// the page cache, so a memory file system shows the same crash states, without the disk's
/// sync latency), else the system temp directory.
fn scratch_dir() -> tempfile::TempDir {
    let base = std::env::var_os("CRASH_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| Some(Path::new("/dev/shm").to_owned()).filter(|p| p.is_dir()))
        .unwrap_or_else(std::env::temp_dir);
    tempfile::Builder::new()
        .prefix("sfstate-crash-")
        .tempdir_in(base)
        .unwrap()
}

fn run_trial(seed: u64, slot: &RocksSlot) -> Trial {
    let schedule = schedule(seed);
    let mut rng = Rng(seed.wrapping_mul(0xA24B_AED4_963E_E407));
    // Aim at a phase (cycling through the four by seed), at one of its later occurrences.
    let phase = seed % 4;
    let candidates: Vec<usize> = (3..schedule.len())
        .filter(|&e| match phase {
            0 => schedule[e] == Event::Bundle,
            1 => schedule[e] == Event::Checkpoint,
            2 => schedule[e] == Event::Snapshot,
            _ => matches!(
                schedule[e],
                Event::RestoreSnapshot | Event::RestoreCheckpoint
            ),
        })
        .collect();
    let candidates = if candidates.is_empty() {
        (3..schedule.len()).collect()
    } else {
        candidates
    };
    let target = candidates[usize::try_from(rng.below(candidates.len() as u64)).unwrap()];
    let fraction = rng.unit();

    let dir = scratch_dir();
    let mut process = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ENV_DIR, dir.path())
        .env(ENV_SEED, seed.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(process.stdout.take().unwrap()).lines();
    let mut transcript = Transcript::default();
    // How long each kind of event took in this child so far (the kill delay's scale).
    let mut took: BTreeMap<&'static str, Duration> = BTreeMap::new();
    let mut begun_at = Instant::now();
    let started = Instant::now();
    let parse = |line: &str, transcript: &mut Transcript| -> Option<(bool, usize, Event)> {
        let rest = &line[line.find(MARK)? + MARK.len()..];
        let mut words = rest.split(' ');
        let begin = match words.next()? {
            "BEGIN" => true,
            "END" => false,
            _ => return None,
        };
        let e: usize = words.next()?.parse().ok()?;
        let event = Event::from_name(words.next()?)?;
        if begin {
            transcript.begun.push((e, event));
        } else {
            transcript.ended.push(e);
        }
        Some((begin, e, event))
    };
    loop {
        let Some(Ok(line)) = lines.next() else {
            panic!("seed {seed}: child exited before the target event {target}");
        };
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "seed {seed}: child too slow"
        );
        match parse(&line, &mut transcript) {
            Some((true, e, event)) => {
                begun_at = Instant::now();
                if e == target {
                    let scale = took
                        .get(event.name())
                        .copied()
                        .unwrap_or(Duration::from_millis(20));
                    std::thread::sleep(scale.mul_f64(fraction * 1.1));
                    break;
                }
            }
            Some((false, _, event)) => {
                took.insert(event.name(), begun_at.elapsed());
            }
            None => {}
        }
    }
    process.kill().unwrap();
    process.wait().unwrap();
    for line in lines.map_while(Result::ok) {
        parse(&line, &mut transcript);
    }

    let models = model_states(seed);
    let scratch = scratch_dir();
    let mut failures = Vec::new();
    let mut outcome = Vec::new();
    let interrupted = transcript.interrupted();
    let landed = interrupted.map_or("between events", |(_, e)| e.name());

    // 1. The last acknowledged checkpoint restores exactly.
    if let Some(e) = transcript.last_ended(&schedule, Event::Checkpoint) {
        match state_of_checkpoint(
            &dir.path().join(format!("ckpt-{e}")),
            &scratch.path().join("c"),
            slot,
        ) {
            Ok(got) => {
                if let Some(d) = difference(&models[&e], &got) {
                    failures.push(format!("acknowledged checkpoint {e}: {d}"));
                }
            }
            Err(err) => failures.push(format!("acknowledged checkpoint {e} refused: {err}")),
        }
        outcome.push("ckpt-exact");
    }
    // 2. A checkpoint the kill interrupted (RocksDB builds it in `<dir>.tmp` and renames it;
    // typed-store then writes its manifest): refused, or complete and exact.
    if let Some((e, Event::Checkpoint)) = interrupted {
        let paths = [format!("ckpt-{e}"), format!("ckpt-{e}.tmp")].map(|p| dir.path().join(p));
        let left: Vec<_> = paths.iter().filter(|p| p.exists()).collect();
        if left.is_empty() {
            outcome.push("half-ckpt-absent");
        }
        for (i, path) in left.into_iter().enumerate() {
            match state_of_checkpoint(path, &scratch.path().join(format!("h{i}")), slot) {
                Ok(got) => {
                    if let Some(d) = difference(&models[&e], &got) {
                        failures.push(format!(
                            "interrupted checkpoint {} opened with {d}",
                            path.display()
                        ));
                    }
                    outcome.push("half-ckpt-complete");
                }
                Err(_) => outcome.push("half-ckpt-refused"),
            }
        }
    }
    // 3. The snapshot directory: CURRENT names the acknowledged or the completed next one.
    let snap = dir.path().join("snap");
    let acked = transcript.last_ended(&schedule, Event::Snapshot);
    let committed = DirContainer::open_existing(&snap)
        .ok()
        .and_then(|c| Some((c.committed_generation()?, c)));
    if let Some((generation, container)) = &committed {
        let generation = *generation;
        let allowed = match (acked, interrupted) {
            (Some(a), _) if generation == generation_of(&schedule, a) => true,
            (_, Some((i, Event::Snapshot))) => generation == generation_of(&schedule, i),
            _ => false,
        };
        match event_of_generation(&schedule, generation).filter(|_| allowed) {
            None => failures.push(format!(
                "CURRENT names generation {generation}; acknowledged {acked:?}, interrupted \
                 {interrupted:?}"
            )),
            Some(e) => {
                outcome.push(if Some(e) == acked {
                    "snap-acked-exact"
                } else {
                    "snap-unacked-complete"
                });
                match state_of_snapshot(container) {
                    Ok(got) => {
                        if let Some(d) = difference(&models[&e], &got) {
                            failures.push(format!("snapshot generation {generation}: {d}"));
                        }
                    }
                    Err(err) => {
                        failures.push(format!("snapshot generation {generation} refused: {err}"));
                    }
                }
            }
        }
    } else if acked.is_some() {
        failures.push(format!("acknowledged snapshot {acked:?} lost: no CURRENT"));
    }
    // 4. Any other generation left behind (half-written, or an old one being removed), forced
    // into CURRENT: refused, or exactly the state of the snapshot that wrote it.
    let current = committed.map(|(g, _)| g);
    for other in generation_dirs(&snap)
        .into_iter()
        .filter(|&g| Some(g) != current)
    {
        let copy = scratch.path().join(format!("forged-{other}"));
        copy_dir(&snap, &copy);
        forge_current(&copy, other);
        let restored = DirContainer::open_existing(&copy)
            .map_err(|e| e.to_string())
            .and_then(|c| state_of_snapshot(&c));
        match (restored, event_of_generation(&schedule, other)) {
            (Err(_), _) => outcome.push("half-snap-refused"),
            (Ok(got), Some(e)) => {
                if let Some(d) = difference(&models[&e], &got) {
                    failures.push(format!("leftover generation {other}: {d}"));
                }
                outcome.push("half-snap-complete");
            }
            (Ok(_), None) => failures.push(format!("generation {other} was never written")),
        }
    }
    if outcome.is_empty() {
        outcome.push("nothing-acknowledged");
    }
    Trial {
        seed,
        target,
        landed,
        outcome: outcome.join("+"),
        failures,
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().map_or(default, |v| {
        v.parse().unwrap_or_else(|_| panic!("{name}={v}"))
    })
}

#[test]
fn crash_campaign() {
    let trials = env_u64("CRASH_TRIALS", 50);
    let first = env_u64("CRASH_SEED", 1);
    let slot = RocksSlot::try_new(SLOT_BYTES).unwrap();
    let started = Instant::now();
    let mut counts: BTreeMap<(&'static str, String), usize> = BTreeMap::new();
    let mut failed = Vec::new();
    for seed in first..first + trials {
        let t = run_trial(seed, &slot);
        println!(
            "seed {}: aimed at event {} ({}), killed in {}: {}{}",
            t.seed,
            t.target,
            schedule(t.seed)[t.target].name(),
            t.landed,
            t.outcome,
            if t.failures.is_empty() {
                String::new()
            } else {
                format!(" FAILED: {}", t.failures.join("; "))
            }
        );
        *counts.entry((t.landed, t.outcome)).or_default() += 1;
        if !t.failures.is_empty() {
            failed.push(t.seed);
        }
    }
    let mut table = String::new();
    for ((landed, outcome), n) in &counts {
        writeln!(table, "  {landed:<20} {outcome:<50} {n}").unwrap();
    }
    println!(
        "crash campaign: {trials} trials (seeds {first}..{}), {:.1} s, {} failed\n  kill phase × outcome:\n{table}",
        first + trials,
        started.elapsed().as_secs_f64(),
        failed.len()
    );
    assert!(failed.is_empty(), "failed seeds: {failed:?}");
}
