//! The conformance suite: one generic function per behaviour of the [`KeyedTable`],
//! [`KeyedStateStore`] and canonical-snapshot contracts, instantiated for a backend with
//! [`conformance_tests!`](crate::conformance_tests).
//!
//! **Not API-stable.** Cases are added and changed with the contracts. Each case panics with
//! a message naming the broken expectation.
//!
//! ```text
//! // <backend>/tests/conformance.rs
//! state_api::conformance_tests!(MyFactory);
//! ```

// This is test code: a panic is how a case reports failure, and its small loop counters
// never come near the limits of the casts below.
#![allow(
    clippy::missing_panics_doc,
    clippy::indexing_slicing,
    clippy::cast_possible_wrap,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    clippy::many_single_char_names,
    clippy::option_option,
    reason = "test code: panics are failures; counters are small"
)]

use std::sync::Arc;

use keygroup::{KeyGroup, MaxParallelism, compute_key_group_for_key_hash, murmur_hash_bytes};
use sfcs_format::MemoryContainer;

use crate::snapshot::{CanonicalTable, write_canonical_snapshot};
use crate::table::{KeyedStateStore, KeyedTable, StoreConfig, ValueOf};
use crate::ttl::ManualClock;

mod bundle;
mod campaign;
mod map;
mod map_model;
mod memory;
mod model;
mod native;
mod snapshot;
mod timer;
mod ttl;

pub use bundle::{
    bundle_hydration_and_coalesced_commit, bundle_misuse_is_rejected, get_of_key_not_in_bundle,
    get_put_remove, key_group_out_of_range_is_rejected, open_table_twice_is_rejected,
};
pub use campaign::corruption_campaign;
pub use map::{
    cross_backend_map_and_timer_exchange, map_get_put_update_remove,
    map_memory_exhausted_put_leaves_state_unchanged, map_misuse_is_rejected,
    map_model_based_operations_match_btreemap, map_remove_range_inside_and_across_bundles,
    map_scan_merges_uncommitted_writes, map_scan_order_bounds_and_reverse,
    map_snapshot_restore_and_rescale, map_ttl_expiry, map_upsert_inserts_or_updates,
};
pub use memory::{
    memory_exhausted_put_leaves_state_unchanged, memory_exhausted_restore_leaves_state_unchanged,
    memory_exhausted_snapshot, memory_exhausted_update_leaves_state_unchanged,
    memory_reservation_accounting,
};
pub use model::model_based_operations_match_btreemap;
pub use native::{
    NativeStore, native_restore_refuses_another_config, native_restore_refuses_another_schema,
    native_restore_then_open, native_snapshot_covers_every_table_kind,
    native_snapshot_refused_while_a_bundle_is_open,
};
pub use snapshot::{
    canonical_snapshot_is_byte_identical, canonical_snapshot_round_trip, cross_backend_exchange,
    cross_backend_rescale, multiple_tables_share_one_envelope, rescale_at_max_parallelism_128,
    rescale_at_max_parallelism_32768, restore_rejects_corrupt_chunk,
    restore_rejects_duplicate_key_group, restore_rejects_schema_mismatch,
    restore_rejects_truncated_snapshot, restore_rejects_undecodable_values,
    restore_rejects_unknown_table, restore_rejects_unreadable_section,
    restore_rejects_unsorted_keys, restore_rejects_wrong_operator, restore_rejects_wrong_version,
};
pub use snapshot::{
    dir_container_snapshots_are_atomic, restore_rejects_extra_key_group,
    restore_rejects_incomplete_snapshot, restore_rejects_last_access_without_ttl,
    restore_rejects_missing_key_group, restore_rejects_other_max_parallelism,
    restore_rejects_swapped_or_copied_key_groups, restore_returns_deadlines,
};
pub use timer::{
    timers_delete, timers_fire_in_order_up_to_watermark, timers_misuse_is_rejected,
    timers_registered_while_firing, timers_snapshot_restore_and_rescale,
};
pub use ttl::{
    ttl_expired_rows_leave_snapshots_and_sweeps, ttl_never_return_expired,
    ttl_on_read_and_write_refreshes_on_read, ttl_overflow_never_expires,
    ttl_return_expired_if_not_cleaned_up,
};

/// Creates the backend's stores. The factory may own resources (temporary directories);
/// every store it creates must be independent of the others.
pub trait StoreFactory {
    /// The backend's store.
    type Store: KeyedStateStore;

    /// A new, empty store with `config`.
    fn create(&self, config: StoreConfig) -> Self::Store;
}

/// One bundle key, owned.
pub(crate) type Key = (KeyGroup, Vec<u8>);

pub(crate) fn max_parallelism(value: i32) -> MaxParallelism {
    MaxParallelism::new(value).expect("valid max parallelism")
}

/// The key group of `key`: Flink's murmur hash of the key bytes' hash.
pub(crate) fn key_group_of(key: &[u8], mp: MaxParallelism) -> KeyGroup {
    compute_key_group_for_key_hash(murmur_hash_bytes(key), mp)
}

pub(crate) fn key(i: usize, mp: MaxParallelism) -> Key {
    let bytes = format!("key-{i:05}").into_bytes();
    (key_group_of(&bytes, mp), bytes)
}

/// A config owning every key group of `mp`, with `clock`.
pub(crate) fn full_config(mp: MaxParallelism, clock: &ManualClock) -> StoreConfig {
    StoreConfig::try_new(mp, mp.key_groups())
        .expect("full range")
        .with_clock(Arc::new(clock.clone()))
}

pub(crate) fn bundle_keys(keys: &[Key]) -> Vec<(KeyGroup, &[u8])> {
    keys.iter().map(|(kg, k)| (*kg, k.as_slice())).collect()
}

/// Reads `keys` in one bundle naming them all.
pub(crate) fn read_all<T: KeyedTable>(table: &mut T, keys: &[Key]) -> Vec<Option<ValueOf<T>>> {
    table
        .begin_bundle(&bundle_keys(keys))
        .expect("begin_bundle");
    let values = keys
        .iter()
        .map(|(kg, k)| table.get(*kg, k).expect("get").cloned())
        .collect();
    table.commit_bundle().expect("commit_bundle");
    values
}

/// Writes (`Some`) or removes (`None`) in one bundle naming every key.
pub(crate) fn write_all<T: KeyedTable>(table: &mut T, rows: &[(Key, Option<ValueOf<T>>)]) {
    let keys: Vec<Key> = rows.iter().map(|(k, _)| k.clone()).collect();
    table
        .begin_bundle(&bundle_keys(&keys))
        .expect("begin_bundle");
    for ((kg, k), value) in rows {
        match value {
            Some(v) => table.put(*kg, k, v.clone()).expect("put"),
            None => table.remove(*kg, k).expect("remove"),
        }
    }
    table.commit_bundle().expect("commit_bundle");
}

/// A canonical snapshot of `tables` into a fresh container.
pub(crate) fn snapshot_of<S: KeyedStateStore>(
    store: &S,
    operator_id: &str,
    tables: &[&dyn CanonicalTable],
) -> MemoryContainer {
    let mut container = MemoryContainer::new();
    write_canonical_snapshot(
        operator_id,
        None,
        tables,
        &mut container,
        store.config().memory_pool(),
    )
    .expect("canonical snapshot");
    container
}

/// Instantiates every conformance case (keyed, map and timer tables, native snapshots) as a
/// `#[test]` for a backend's [`StoreFactory`](crate::conformance::StoreFactory) expression
/// (evaluated once per test). The store must implement `MapStateStore`, `TimerStateStore`
/// and `NativeSnapshot`; a backend without them can use
/// [`keyed_conformance_tests!`](crate::keyed_conformance_tests) alone.
#[macro_export]
macro_rules! conformance_tests {
    ($factory:expr) => {
        $crate::keyed_conformance_tests!($factory);
        $crate::map_conformance_tests!($factory);
        $crate::timer_conformance_tests!($factory);
        $crate::native_conformance_tests!($factory);
    };
    (@cases $factory:expr; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::conformance::$case(&$factory);
            }
        )*
    };
}

/// The map-table cases of [`conformance_tests!`](crate::conformance_tests).
#[macro_export]
macro_rules! map_conformance_tests {
    ($factory:expr) => {
        $crate::conformance_tests!(@cases $factory;
            map_get_put_update_remove,
            map_upsert_inserts_or_updates,
            map_scan_order_bounds_and_reverse,
            map_scan_merges_uncommitted_writes,
            map_remove_range_inside_and_across_bundles,
            map_misuse_is_rejected,
            map_snapshot_restore_and_rescale,
            map_ttl_expiry,
            map_memory_exhausted_put_leaves_state_unchanged,
            map_model_based_operations_match_btreemap,
        );
    };
}

/// The timer-table cases of [`conformance_tests!`](crate::conformance_tests).
#[macro_export]
macro_rules! timer_conformance_tests {
    ($factory:expr) => {
        $crate::conformance_tests!(@cases $factory;
            timers_fire_in_order_up_to_watermark,
            timers_delete,
            timers_registered_while_firing,
            timers_snapshot_restore_and_rescale,
            timers_misuse_is_rejected,
        );
    };
}

/// The native-snapshot cases of [`conformance_tests!`](crate::conformance_tests): one
/// snapshot per store, every table kind, all or nothing.
#[macro_export]
macro_rules! native_conformance_tests {
    ($factory:expr) => {
        $crate::conformance_tests!(@cases $factory;
            native_snapshot_covers_every_table_kind,
            native_snapshot_refused_while_a_bundle_is_open,
            native_restore_then_open,
            native_restore_refuses_another_config,
            native_restore_refuses_another_schema,
        );
    };
}

/// The keyed-table (point access) cases of [`conformance_tests!`](crate::conformance_tests).
#[macro_export]
macro_rules! keyed_conformance_tests {
    ($factory:expr) => {
        $crate::conformance_tests!(@cases $factory;
            bundle_hydration_and_coalesced_commit,
            get_put_remove,
            get_of_key_not_in_bundle,
            bundle_misuse_is_rejected,
            key_group_out_of_range_is_rejected,
            open_table_twice_is_rejected,
            ttl_never_return_expired,
            ttl_on_read_and_write_refreshes_on_read,
            ttl_return_expired_if_not_cleaned_up,
            ttl_overflow_never_expires,
            ttl_expired_rows_leave_snapshots_and_sweeps,
            canonical_snapshot_round_trip,
            canonical_snapshot_is_byte_identical,
            multiple_tables_share_one_envelope,
            rescale_at_max_parallelism_128,
            rescale_at_max_parallelism_32768,
            restore_rejects_corrupt_chunk,
            restore_rejects_truncated_snapshot,
            restore_rejects_wrong_operator,
            restore_rejects_wrong_version,
            restore_rejects_unreadable_section,
            restore_rejects_schema_mismatch,
            restore_rejects_unsorted_keys,
            restore_rejects_unknown_table,
            restore_rejects_duplicate_key_group,
            restore_rejects_undecodable_values,
            restore_rejects_missing_key_group,
            restore_rejects_swapped_or_copied_key_groups,
            restore_rejects_extra_key_group,
            restore_rejects_incomplete_snapshot,
            restore_rejects_other_max_parallelism,
            restore_returns_deadlines,
            restore_rejects_last_access_without_ttl,
            dir_container_snapshots_are_atomic,
            corruption_campaign,
            memory_reservation_accounting,
            memory_exhausted_put_leaves_state_unchanged,
            memory_exhausted_update_leaves_state_unchanged,
            memory_exhausted_restore_leaves_state_unchanged,
            memory_exhausted_snapshot,
            model_based_operations_match_btreemap,
        );
    };
}
