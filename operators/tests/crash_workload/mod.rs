//! The seeded workload of the crash campaign and the slot-memory test: a retracting
//! `GroupAggregate` (COUNT(*), SUM, MAX and MIN with retraction: a keyed table and a map
//! table) fed seeded bundles, and a seeded schedule of bundles, checkpoints, snapshots and
//! restores.

#![allow(
    dead_code,
    unreachable_pub,
    reason = "test support shared by two test binaries"
)]

use arrow_schema::{DataType, Field, Fields};
use keygroup::{MaxParallelism, Parallelism};
use operators::{
    AggCall, AggFunction, ChangelogBatch, GroupAggSpec, GroupAggregate, RowKind, schema_of,
};
use state_api::{MapStateStore, Scalar, StoreConfig};

pub const GROUPS: u64 = 200;
pub const ROWS_PER_BUNDLE: usize = 120;
pub const EVENTS: usize = 24;
pub const OPERATOR_ID: &str = "agg";
/// Small, so a canonical snapshot (one file per key group) stays quick in a debug build.
pub const MAX_PARALLELISM: i32 = 32;

// ---------------------------------------------------------------------------------------
// The seeded workload (computed identically by child and parent).

/// `SplitMix64`: a fixed generator, so a seed means the same workload in every build.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn unit(&mut self) -> f64 {
        #[allow(clippy::cast_precision_loss, reason = "53 random bits: exact")]
        let (x, scale) = ((self.next() >> 11) as f64, (1u64 << 53) as f64);
        x / scale
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// One bundle through the operator (its commit is the phase "commit").
    Bundle,
    /// A native RocksDB checkpoint into `ckpt-<event>`.
    Checkpoint,
    /// A canonical snapshot into the `snap` directory (a new generation).
    Snapshot,
    /// The operator's state replaced from the committed snapshot in `snap`.
    RestoreSnapshot,
    /// The store and operator reopened from the last checkpoint.
    RestoreCheckpoint,
}

impl Event {
    pub fn name(self) -> &'static str {
        match self {
            Event::Bundle => "commit",
            Event::Checkpoint => "checkpoint",
            Event::Snapshot => "snapshot",
            Event::RestoreSnapshot => "restore-snapshot",
            Event::RestoreCheckpoint => "restore-checkpoint",
        }
    }
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Event::Bundle,
            Event::Checkpoint,
            Event::Snapshot,
            Event::RestoreSnapshot,
            Event::RestoreCheckpoint,
        ]
        .into_iter()
        .find(|e| e.name() == name)
    }
}

/// Blocks of two bundles and one seeded other event (restores only once there is something
/// to restore from).
pub fn schedule(seed: u64) -> Vec<Event> {
    let mut rng = Rng(seed ^ 0x5EED_0F5C_4ED0_1E00);
    let mut out = Vec::with_capacity(EVENTS);
    let (mut checkpoints, mut snapshots) = (0, 0);
    while out.len() < EVENTS {
        out.push(Event::Bundle);
        out.push(Event::Bundle);
        let mut choices = vec![Event::Checkpoint, Event::Snapshot];
        if snapshots > 0 {
            choices.push(Event::RestoreSnapshot);
        }
        if checkpoints > 0 {
            choices.push(Event::RestoreCheckpoint);
        }
        let e = choices[usize::try_from(rng.below(choices.len() as u64)).unwrap()];
        match e {
            Event::Checkpoint => checkpoints += 1,
            Event::Snapshot => snapshots += 1,
            _ => {}
        }
        out.push(e);
    }
    out.truncate(EVENTS);
    out
}

pub fn fields() -> Fields {
    Fields::from(vec![
        Field::new("k", DataType::Int32, true),
        Field::new("v", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ])
}

pub fn spec() -> GroupAggSpec {
    GroupAggSpec::new(
        fields(),
        vec![0],
        vec![
            AggCall::new(AggFunction::CountStar, vec![]),
            AggCall::new(AggFunction::Sum, vec![1]),
            AggCall::new(AggFunction::Max, vec![1]),
            AggCall::new(AggFunction::Min, vec![2]),
        ],
        false,
    )
}

/// The input bundles in order: mostly inserts, a quarter retractions of earlier inserts.
pub struct Input {
    rng: Rng,
    inserted: Vec<(i32, i64, String)>,
}

impl Input {
    pub fn new(seed: u64) -> Self {
        Self {
            rng: Rng(seed),
            inserted: Vec::new(),
        }
    }
    pub fn next_bundle(&mut self) -> ChangelogBatch {
        let mut rows = Vec::with_capacity(ROWS_PER_BUNDLE);
        for _ in 0..ROWS_PER_BUNDLE {
            let retract = !self.inserted.is_empty() && self.rng.below(4) == 0;
            if retract {
                let i = usize::try_from(self.rng.below(self.inserted.len() as u64)).unwrap();
                let (k, v, s) = self.inserted.swap_remove(i);
                rows.push((
                    RowKind::Delete,
                    vec![Scalar::Int32(k), Scalar::Int64(v), Scalar::Utf8(s)],
                ));
            } else {
                let k = i32::try_from(self.rng.below(GROUPS)).unwrap();
                let v = i64::try_from(self.rng.below(2_000)).unwrap() - 1_000;
                let s = format!("s{:0>width$}", self.rng.below(997), width = 3);
                self.inserted.push((k, v, s.clone()));
                rows.push((
                    RowKind::Insert,
                    vec![Scalar::Int32(k), Scalar::Int64(v), Scalar::Utf8(s)],
                ));
            }
        }
        ChangelogBatch::from_rows(&schema_of(&fields()), &rows).unwrap()
    }
}

/// The store config of every store (one subtask of [`MAX_PARALLELISM`]).
pub fn config() -> StoreConfig {
    StoreConfig::for_subtask(
        MaxParallelism::new(MAX_PARALLELISM).unwrap(),
        Parallelism::new(1).unwrap(),
        0,
    )
    .unwrap()
}

/// The campaign's operator over `store`.
pub fn operator<S: MapStateStore>(store: &mut S) -> GroupAggregate<S> {
    GroupAggregate::try_new(OPERATOR_ID, spec(), store).unwrap()
}
