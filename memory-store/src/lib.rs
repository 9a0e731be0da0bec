//! The in-memory keyed-state backend.
//!
//! Implements the `state-api` traits with decoded values kept in one hash map per key group:
//! [`MemoryStore`] opens [`MemoryKeyedTable`]s, [`MemoryMapTable`]s (one
//! [`state_api::PrefixMap`] per key group: a hash index of the prefixes, each prefix's entries
//! ordered by user key) and [`MemoryTimerTable`]s; both canonical snapshots (through
//! [`state_api::write_canonical_snapshot`]) and native ones of the whole store
//! ([`MemoryStoreSnapshot`]: every table at one point, restored all or nothing) are
//! supported. The whole `state-api` conformance suite runs against it
//! (`tests/conformance.rs`).
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use keygroup::{MaxParallelism, Parallelism};
//! use memory_store::MemoryStore;
//! use sfcs_format::MemoryContainer;
//! use state_api::{
//!     I64Codec, KeyedStateStore, KeyedTable, ManualClock, StoreConfig, TtlConfig,
//! };
//!
//! let clock = ManualClock::new(1_000);
//! let mp = MaxParallelism::new(128)?;
//! let config = StoreConfig::for_subtask(mp, Parallelism::new(2)?, 0)?
//!     .with_clock(Arc::new(clock.clone()));
//! let mut store = MemoryStore::new(config);
//! let mut counts = store.open_table("counts", I64Codec, Some(TtlConfig::new(Duration::from_secs(60))))?;
//!
//! let kg = mp.key_group(5)?;
//! counts.begin_bundle(&[(kg, b"user-1")])?;
//! let n = counts.get(kg, b"user-1")?.copied().unwrap_or(0);
//! counts.put(kg, b"user-1", n + 1)?;
//! counts.commit_bundle()?;
//!
//! // A canonical snapshot, then a restore into a fresh store of the same subtask.
//! let mut container = MemoryContainer::new();
//! let pool = store.config().memory_pool().clone();
//! state_api::write_canonical_snapshot("agg-1", None, &[&counts], &mut container, &pool)?;
//!
//! let mut restored_store = MemoryStore::new(store.config().clone());
//! let mut restored = restored_store.open_table("counts", I64Codec, Some(TtlConfig::new(Duration::from_secs(60))))?;
//! state_api::restore_canonical_snapshot("agg-1", &[&container], &mut [&mut restored], &pool)?;
//! restored.begin_bundle(&[(kg, b"user-1")])?;
//! assert_eq!(restored.get(kg, b"user-1")?, Some(&1));
//! restored.commit_bundle()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Features
//!
//! | feature     | default | enables                                                         |
//! |-------------|---------|-----------------------------------------------------------------|
//! | `test-util` | no      | `test_util::MemoryFactory` for the `state-api` conformance suite (not API-stable) |

#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::indexing_slicing))]

mod checkout;
mod map;
mod native;
mod store;
mod table;
mod timer;

/// Test support: this backend's conformance-suite factory. **Not API-stable.**
#[cfg(feature = "test-util")]
pub mod test_util;

pub use map::MemoryMapTable;
pub use native::{MemoryStoreSnapshot, NativeSnapshotError};
pub use store::MemoryStore;
pub use table::MemoryKeyedTable;
pub use timer::MemoryTimerTable;
