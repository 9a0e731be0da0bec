//! Append Top-1: `ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..) = 1` on insert-only input
//! (Flink's `Rank` with `AppendFastStrategy`, rank range 1..1).

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, SchemaRef};
use keygroup::{KeyGroup, RowKind};
use sfcs_format::Container;
use state_api::{
    CanonicalTable, KeyedStateStore, KeyedTable, MemoryPool, MemoryReservation, RestoreSummary,
    Row, RowCodec, Scalar, SnapshotSummary, restore_canonical_snapshot, write_canonical_snapshot,
};

use crate::changelog::{ChangelogBatch, FlatRows, schema_of, short_string, validated_reader};
use crate::error::{Error, Result};
use crate::key::KeyEncoder;
use crate::spec::{ChangelogMode, SortColumn, Top1Spec};
use crate::value::sql_cmp;

/// The state format version of [`Top1`]: one winner row (the input columns) per partition
/// key.
pub const TOP1_STATE_VERSION: u32 = 1;

/// Default byte budget of the winner cache: 64 MiB.
pub const DEFAULT_WINNER_CACHE_BYTES: usize = 64 << 20;

/// Clean decoded winners kept across bundles, charged to the host memory pool.
struct WinnerCache {
    winners: HashMap<Vec<u8>, Row>,
    reservation: MemoryReservation,
    budget: usize,
}

impl WinnerCache {
    fn entry_size(key: &[u8], row: &Row) -> usize {
        key.len()
            + std::mem::size_of::<Row>()
            + row.capacity() * std::mem::size_of::<Scalar>()
            + row.iter().map(Scalar::heap_size).sum::<usize>()
    }

    /// Admits `key` unless the budget or the pool refuses it (nothing is evicted: the store
    /// always holds the winner, so a miss only costs a read).
    fn admit(&mut self, key: &[u8], row: Row) {
        let size = Self::entry_size(key, &row);
        if self.reservation.size() + size > self.budget || self.reservation.try_grow(size).is_err()
        {
            return;
        }
        if let Some(old) = self.winners.insert(key.to_vec(), row) {
            self.reservation.shrink(Self::entry_size(key, &old));
        }
    }

    /// Replaces a cached winner (same key, new row), keeping the charge right.
    fn replace(&mut self, key: &[u8], row: &Row) {
        let Some(slot) = self.winners.get_mut(key) else {
            return;
        };
        let old = Self::entry_size(key, slot);
        let new = Self::entry_size(key, row);
        if new > old && self.reservation.try_grow(new - old).is_err() {
            self.winners.remove(key);
            self.reservation.shrink(old);
            return;
        }
        if old > new {
            self.reservation.shrink(old - new);
        }
        slot.clone_from(row);
    }

    fn clear(&mut self) {
        self.winners.clear();
        self.reservation.free();
    }
}

/// Append Top-1 over a store `S` (see the crate docs for the reproduced semantics).
pub struct Top1<S: KeyedStateStore> {
    operator_id: String,
    spec: Top1Spec,
    keys: KeyEncoder,
    winners: S::Table<RowCodec>,
    cache: WinnerCache,
    output: SchemaRef,
    update_before: bool,
    pool: Arc<dyn MemoryPool>,
}

impl<S: KeyedStateStore> Top1<S> {
    /// Opens the winner table `<operator_id>.winners` in `store`; the winner cache gets
    /// [`DEFAULT_WINNER_CACHE_BYTES`] of the store's pool.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] (no order, a column outside the input); a store error.
    pub fn try_new(operator_id: &str, spec: Top1Spec, store: &mut S) -> Result<Self> {
        if spec.order_by.is_empty() {
            return Err(Error::spec("Top-1 without ORDER BY"));
        }
        if let Some(c) = spec.order_by.iter().find(|c| c.column >= spec.input.len()) {
            return Err(Error::spec(format!(
                "order column {} outside the input",
                c.column
            )));
        }
        let keys = KeyEncoder::try_new(
            &spec.input,
            &spec.partition_by,
            store.config().max_parallelism(),
        )?;
        let winners = store.open_table(
            &format!("{operator_id}.winners"),
            RowCodec::try_new(spec.input.clone())?,
            None,
        )?;
        let mut fields: Vec<Field> = spec.input.iter().map(|f| f.as_ref().clone()).collect();
        if spec.output_rank_number {
            fields.push(Field::new("rn", DataType::Int64, false));
        }
        // Flink 2.1+: only an ORDER BY of exactly one DESC column is planned with updates
        // (I,UB,UA,D); any other order is declared insert-only, so no update-before.
        let one_desc = matches!(
            spec.order_by.as_slice(),
            [SortColumn {
                descending: true,
                ..
            }]
        );
        let update_before = one_desc && spec.changelog_mode == ChangelogMode::All;
        let pool = Arc::clone(store.config().memory_pool());
        Ok(Self {
            operator_id: operator_id.to_owned(),
            keys,
            winners,
            cache: WinnerCache {
                winners: HashMap::new(),
                reservation: MemoryReservation::new(Arc::clone(&pool)),
                budget: DEFAULT_WINNER_CACHE_BYTES,
            },
            output: schema_of(&Fields::from(fields)),
            update_before,
            spec,
            pool,
        })
    }

    /// Sets the winner cache's byte budget (0 disables it). Defaults to
    /// [`DEFAULT_WINNER_CACHE_BYTES`].
    #[must_use]
    pub fn with_winner_cache_bytes(mut self, bytes: usize) -> Self {
        self.cache.budget = bytes;
        if self.cache.reservation.size() > bytes {
            self.cache.clear();
        }
        self
    }

    /// The operator id (the snapshot's operator id).
    pub fn operator_id(&self) -> &str {
        &self.operator_id
    }

    /// The output schema: the input columns (+ `rn`, BIGINT, when requested).
    pub fn output_schema(&self) -> &SchemaRef {
        &self.output
    }

    /// Winners held by the cache.
    pub fn cached_winners(&self) -> usize {
        self.cache.winners.len()
    }

    /// Appends the `kind` output row of `row` (with its rank, 1, when the output has one).
    fn push_output(&self, out: &mut FlatRows, kind: RowKind, row: &[Scalar]) {
        let cells = out.row(kind);
        cells.extend_from_slice(row);
        if self.spec.output_rank_number {
            cells.push(Scalar::Int64(1));
        }
    }

    /// Processes one bundle of insert-only rows.
    ///
    /// # Errors
    /// Input errors (also [`Error::RowKind`] for anything but `+I`) before any state
    /// changes; a store error.
    pub fn process_bundle(&mut self, input: &ChangelogBatch) -> Result<ChangelogBatch> {
        // Rows are read from the columns as each is needed.
        let rows = validated_reader(&self.spec.input, input)?;
        if let Some((row, kind)) = input
            .kinds()
            .iter()
            .enumerate()
            .find(|(_, k)| **k != RowKind::Insert)
        {
            return Err(Error::RowKind {
                row,
                kind: short_string(*kind).to_owned(),
                reason: "append Top-1 takes insert-only input",
            });
        }
        let batch_keys = self.keys.encode_batch(&rows)?;
        let keys = batch_keys.keys();
        let named: Vec<(KeyGroup, &[u8])> = keys
            .iter()
            .filter(|(_, k)| !self.cache.winners.contains_key(*k))
            .copied()
            .collect();
        self.winners.begin_bundle(&named)?;
        let mut out = FlatRows::default();
        // Winners read from the store (they existed before this bundle): cache candidates.
        // Fresh keys are not admitted.
        let mut candidates: HashMap<&[u8], Row> = HashMap::new();
        let mut fresh: HashSet<&[u8]> = HashSet::new();
        let mut row = Vec::new();
        for (i, &(kg, key)) in keys.iter().enumerate() {
            rows.read_into(i, &mut row)?;
            // The winner is compared where it is (cache or store), copied only when needed.
            let cached = self.cache.winners.get(key);
            let from_store = cached.is_none();
            let winner = match cached {
                Some(w) => Some(w),
                None => self.winners.get(kg, key)?,
            };
            let Some(w) = winner else {
                self.winners.put(kg, key, row.clone())?;
                fresh.insert(key);
                self.push_output(&mut out, RowKind::Insert, &row);
                continue;
            };
            let replaced = better(&self.spec.order_by, &row, w);
            let old = (replaced && self.update_before).then(|| w.clone());
            let candidate = (from_store && !fresh.contains(key))
                .then(|| if replaced { row.clone() } else { w.clone() });
            if replaced {
                self.winners.put(kg, key, row.clone())?;
                self.cache.replace(key, &row);
                if let Some(old) = &old {
                    self.push_output(&mut out, RowKind::UpdateBefore, old);
                }
                self.push_output(&mut out, RowKind::UpdateAfter, &row);
            }
            if let Some(current) = candidate {
                candidates
                    .entry(key)
                    .and_modify(|c| c.clone_from(&current))
                    .or_insert(current);
            }
        }
        self.winners.commit_bundle()?;
        if self.cache.budget > 0 {
            for (key, winner) in candidates {
                self.cache.admit(key, winner);
            }
        }
        out.finish(&self.output)
    }

    /// Writes the canonical snapshot of the winner table into `container`.
    ///
    /// # Errors
    /// A state-api error.
    pub fn snapshot(&self, container: &mut dyn Container) -> Result<SnapshotSummary> {
        let tables: [&dyn CanonicalTable; 1] = [&self.winners];
        Ok(write_canonical_snapshot(
            &self.operator_id,
            None,
            &tables,
            container,
            &self.pool,
        )?)
    }

    /// Replaces the state with this store's key groups from `sources`; clears the cache.
    ///
    /// # Errors
    /// A state-api error; on error the state is unchanged.
    pub fn restore(&mut self, sources: &[&dyn Container]) -> Result<RestoreSummary> {
        let summary = restore_canonical_snapshot(
            &self.operator_id,
            sources,
            &mut [&mut self.winners],
            &self.pool,
        )?;
        self.cache.clear();
        Ok(summary)
    }
}

/// Whether `row` sorts strictly before `winner` under `order_by` (ties keep the winner): per
/// order column, nulls first/last as written, then SQL `<`/`>` (a NaN is equal to
/// everything).
fn better(order_by: &[SortColumn], row: &[Scalar], winner: &[Scalar]) -> bool {
    for c in order_by {
        let a = row.get(c.column).unwrap_or(&Scalar::Null);
        let b = winner.get(c.column).unwrap_or(&Scalar::Null);
        let ord = match (a.is_null(), b.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => {
                if c.nulls_last {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            (false, true) => {
                if c.nulls_last {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (false, false) => {
                let o = sql_cmp(a, b).unwrap_or(Ordering::Equal);
                if c.descending { o.reverse() } else { o }
            }
        };
        match ord {
            Ordering::Less => return true,
            Ordering::Greater => return false,
            Ordering::Equal => {}
        }
    }
    false
}
