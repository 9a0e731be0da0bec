//! Flink SQL's stateful operators as state machines over the `state-api` traits.
//!
//! Each operator takes changelog bundles ([`ChangelogBatch`]: an Arrow record batch plus a
//! Flink [`RowKind`] per row), keeps its state in tables of any backend that implements
//! [`state_api::KeyedStateStore`] + [`state_api::MapStateStore`], and emits the changelog
//! Flink 2.3.0 emits for the same input. No SQL parsing: an operator is configured by a
//! spec a planner would hand it.
//!
//! - [`GroupAggregate`]: non-windowed GROUP BY (`GroupAggFunction`; mini-batch
//!   local-global and one-phase).
//! - [`Top1`]: `ROW_NUMBER() = 1` on insert-only input (`AppendFastStrategy`).
//! - [`InnerJoin`]: regular INNER equi-join on record state (`StreamingJoinOperator`,
//!   both sides without a unique key).
//!
//! Keys are Flink `BinaryRowData` rows of the key columns in the key groups Flink's SQL key
//! selector assigns ([`KeyEncoder`]); every operator snapshots into canonical sections and
//! restores from them at any parallelism. The crate README lists exactly which Flink SQL
//! shapes each operator reproduces.
//!
//! # Example
//!
//! ```
//! use arrow_schema::{DataType, Field, Fields};
//! use keygroup::{MaxParallelism, Parallelism};
//! use memory_store::MemoryStore;
//! use operators::{AggCall, AggFunction, ChangelogBatch, GroupAggSpec, GroupAggregate, RowKind};
//! use state_api::{Scalar, StoreConfig};
//!
//! let input = Fields::from(vec![
//!     Field::new("k", DataType::Utf8, false),
//!     Field::new("v", DataType::Int64, true),
//! ]);
//! // SELECT k, COUNT(*), MAX(v) FROM input GROUP BY k, on a retracting input.
//! let spec = GroupAggSpec::new(
//!     input.clone(),
//!     vec![0],
//!     vec![AggCall::new(AggFunction::CountStar, vec![]), AggCall::new(AggFunction::Max, vec![1])],
//!     false,
//! );
//! let mp = MaxParallelism::new(128)?;
//! let mut store = MemoryStore::new(StoreConfig::for_subtask(mp, Parallelism::new(1)?, 0)?);
//! let mut agg = GroupAggregate::try_new("agg-1", spec, &mut store)?;
//!
//! let row = |k: &str, v: i64| vec![Scalar::Utf8(k.into()), Scalar::Int64(v)];
//! let bundle = ChangelogBatch::from_rows(
//!     &operators::schema_of(&input),
//!     &[(RowKind::Insert, row("a", 5)), (RowKind::Insert, row("a", 9)), (RowKind::Delete, row("a", 9))],
//! )?;
//! let out = agg.process_bundle(&bundle)?;
//! let kinds: Vec<&str> = out.kinds().iter().map(|k| operators::short_string(*k)).collect();
//! assert_eq!(kinds, ["+I", "-U", "+U", "-U", "+U"]);
//! // The last change: MAX back to 5 after its retraction (one ordered seek).
//! assert_eq!(out.to_rows()?[4].1, [Scalar::Utf8("a".into()), Scalar::Int64(1), Scalar::Int64(5)]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Features
//!
//! None.

#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::indexing_slicing))]

mod changelog;
mod companion_key;
mod condition;
mod driver;
mod error;
mod group_agg;
mod join;
mod key;
mod spec;
mod top1;
mod topn;
mod value;
mod window;

pub use changelog::{
    ChangelogBatch, is_accumulate, kinds_from_bytes, parse_row_kind, schema_of, short_string,
};
pub use condition::{JoinCondition, JoinSide};
pub use driver::{OneInputOperator, StatefulOperator, TwoInputOperator, run_bundles};
pub use error::{Error, Result};
pub use group_agg::{GROUP_AGG_STATE_VERSION, GroupAggregate};
pub use join::{DEFAULT_PROBE_CACHE_BYTES, InnerJoin, JOIN_STATE_VERSION};
pub use key::{KeyEncoder, RecordEncoder, logical_type_of};
pub use keygroup::RowKind;
pub use spec::{
    AggCall, AggFunction, ChangelogMode, GroupAggSpec, JoinSpec, MiniBatch, SortColumn, Top1Spec,
};
pub use top1::{DEFAULT_WINNER_CACHE_BYTES, TOP1_STATE_VERSION, Top1};
pub use topn::{RankFunction, TOPN_STATE_VERSION, TopN, TopNSpec};
pub use window::{
    AggPhases, ShiftZone, WINDOW_AGG_STATE_VERSION, WindowAggSpec, WindowAggregate, WindowKind,
};
