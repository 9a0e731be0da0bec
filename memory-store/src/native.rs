//! Native snapshots of a whole [`MemoryStore`]: every table of the store (keyed, map and
//! timer tables) copied at one point and restored all or nothing, the same granularity as a
//! RocksDB checkpoint of a typed-store store.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt::{self, Debug};
use std::sync::Arc;

use arrow_schema::SchemaRef;

use keygroup::{KeyGroupRange, MaxParallelism};
use state_api::{Error, KeyedStateStore, NativeSnapshot, Result};

use crate::checkout::{LockedSlot, Slot};
use crate::store::MemoryStore;

/// Why a [`MemoryStoreSnapshot`] was refused (the `source` of
/// [`Error::InvalidNativeSnapshot`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NativeSnapshotError {
    /// The snapshot was taken from a store of another max parallelism.
    #[error("snapshot of max parallelism {found}, the store has {expected}")]
    MaxParallelism {
        /// The store's max parallelism.
        expected: i32,
        /// The snapshot's.
        found: i32,
    },
    /// The snapshot was taken from a store owning other key groups.
    #[error("snapshot of key groups {found:?}, the store owns {expected:?}")]
    KeyGroups {
        /// The store's key groups.
        expected: KeyGroupRange,
        /// The snapshot's.
        found: KeyGroupRange,
    },
    /// A table of the snapshot is of another kind than the open table of that name.
    #[error("table `{table}` is a {found} table in the snapshot, a {expected} table here")]
    TableKind {
        /// The table.
        table: String,
        /// The kind of the open table.
        expected: &'static str,
        /// The kind in the snapshot.
        found: &'static str,
    },
    /// A table of the snapshot holds values of another type or schema than the open table.
    #[error("table `{table}` has another value type or schema in the snapshot")]
    TableSchema {
        /// The table.
        table: String,
    },
}

/// `err` as [`Error::InvalidNativeSnapshot`].
pub(crate) fn invalid(err: NativeSnapshotError) -> Error {
    Error::InvalidNativeSnapshot {
        source: Box::new(err),
    }
}

/// One table's share of a [`MemoryStoreSnapshot`].
pub(crate) trait NativePart: Any + Send + Debug {
    /// The kind of table that wrote it (`keyed`, `map`, `event-time timer`, ...).
    fn kind(&self) -> &'static str;

    /// A copy.
    fn clone_part(&self) -> Box<dyn NativePart>;

    /// For the downcast of [`part_as`].
    fn as_any(&self) -> &dyn Any;
}

/// `part` as the concrete part type `P` of a table of kind `expected`.
///
/// # Errors
/// [`Error::InvalidNativeSnapshot`] ([`NativeSnapshotError::TableKind`] or
/// [`NativeSnapshotError::TableSchema`]) when `part` is not a `P`.
pub(crate) fn part_as<'p, P: 'static>(
    table: &str,
    part: &'p dyn NativePart,
    expected: &'static str,
) -> Result<&'p P> {
    if part.kind() != expected {
        return Err(invalid(NativeSnapshotError::TableKind {
            table: table.to_owned(),
            expected,
            found: part.kind(),
        }));
    }
    part.as_any().downcast_ref::<P>().ok_or_else(|| {
        invalid(NativeSnapshotError::TableSchema {
            table: table.to_owned(),
        })
    })
}

/// The part of a keyed or map table: its committed live entries (expired ones included, as
/// they are stored) as `(key-group offset, key, last access, value)`, in the table's
/// order, and the schema they were written with.
#[derive(Clone)]
pub(crate) struct RowsPart<V> {
    kind: &'static str,
    schema: SchemaRef,
    pub(crate) rows: Vec<(usize, Box<[u8]>, i64, V)>,
}

impl<V> fmt::Debug for RowsPart<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowsPart")
            .field("kind", &self.kind)
            .field("rows", &self.rows.len())
            .finish_non_exhaustive()
    }
}

impl<V: Clone + Send + 'static> NativePart for RowsPart<V> {
    fn kind(&self) -> &'static str {
        self.kind
    }

    fn clone_part(&self) -> Box<dyn NativePart> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl<V: Clone + Send + 'static> RowsPart<V> {
    /// The part of a table of `kind` with `schema`, boxed.
    pub(crate) fn boxed(
        kind: &'static str,
        schema: &SchemaRef,
        rows: Vec<(usize, Box<[u8]>, i64, V)>,
    ) -> Box<dyn NativePart> {
        Box::new(Self {
            kind,
            schema: Arc::clone(schema),
            rows,
        })
    }

    /// `part` as the rows of a table of `kind` with `schema`.
    ///
    /// # Errors
    /// [`Error::InvalidNativeSnapshot`] for another kind, value type or schema.
    pub(crate) fn of<'p>(
        table: &str,
        part: &'p dyn NativePart,
        kind: &'static str,
        schema: &SchemaRef,
    ) -> Result<&'p Self> {
        let rows = part_as::<Self>(table, part, kind)?;
        if rows.schema != *schema {
            return Err(invalid(NativeSnapshotError::TableSchema {
                table: table.to_owned(),
            }));
        }
        Ok(rows)
    }
}

/// A table's side of the store's native snapshot, implemented by each table's core.
pub(crate) trait NativeTable: Send {
    /// A copy of the table's committed state.
    fn native_part(&self) -> Box<dyn NativePart>;

    /// Prepares the replacement of the table's state by `part` (`None`: empty) without
    /// changing what the table holds; the staged copy is charged to the pool.
    ///
    /// # Errors
    /// [`Error::InvalidNativeSnapshot`] for a part of another kind or schema;
    /// [`Error::MemoryExhausted`]. On error nothing is staged.
    fn stage_native(&mut self, table: &str, part: Option<&dyn NativePart>) -> Result<()>;

    /// Replaces the state by the staged one (infallible).
    fn commit_native(&mut self);

    /// Drops the staged state.
    fn abort_native(&mut self);
}

/// A native snapshot of a [`MemoryStore`]: a copy of the committed state of every table of
/// the store (keyed, map and timer tables, expired entries included, as they are stored),
/// valid only for a store of the same max parallelism and key-group range. Tables that a
/// restore found in the snapshot but that were not open yet are part of the store's next
/// snapshot too.
///
/// The copy holds decoded values and is not charged to the memory pool while it is a
/// snapshot; a restore charges what it installs.
#[derive(Debug)]
pub struct MemoryStoreSnapshot {
    max_parallelism: MaxParallelism,
    key_groups: KeyGroupRange,
    tables: BTreeMap<String, Box<dyn NativePart>>,
}

impl Clone for MemoryStoreSnapshot {
    fn clone(&self) -> Self {
        Self {
            max_parallelism: self.max_parallelism,
            key_groups: self.key_groups,
            tables: self
                .tables
                .iter()
                .map(|(name, part)| (name.clone(), part.clone_part()))
                .collect(),
        }
    }
}

impl MemoryStoreSnapshot {
    /// The names of the tables in the snapshot, in order.
    pub fn table_names(&self) -> impl Iterator<Item = &str> {
        self.tables.keys().map(String::as_str)
    }

    /// The number of tables in the snapshot.
    pub fn len(&self) -> usize {
        self.tables.len()
    }

    /// Whether the snapshot holds no table.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// The key groups of the store it was taken from.
    pub fn key_groups(&self) -> KeyGroupRange {
        self.key_groups
    }
}

fn bundle_open(operation: &'static str) -> Error {
    Error::BundleState {
        operation,
        requires_open: false,
    }
}

impl MemoryStore {
    /// The homes of the tables still open, each locked, in name order; dead ones (dropped
    /// tables) are forgotten.
    fn live_slots(&mut self) -> Vec<(String, Arc<dyn Slot>)> {
        self.slots.retain(|(_, slot)| slot.strong_count() > 0);
        let mut slots: Vec<(String, Arc<dyn Slot>)> = self
            .slots
            .iter()
            .filter_map(|(name, slot)| slot.upgrade().map(|s| (name.clone(), s)))
            .collect();
        slots.sort_by(|a, b| a.0.cmp(&b.0));
        slots
    }
}

/// Locks every slot; [`Error::BundleState`] when any table holds its core (an open bundle or
/// a timer table's uncommitted changes).
fn lock_all<'s>(
    slots: &'s [(String, Arc<dyn Slot>)],
    operation: &'static str,
) -> Result<Vec<(&'s str, Box<dyn LockedSlot + 's>)>> {
    let mut locked = Vec::with_capacity(slots.len());
    for (name, slot) in slots {
        let mut guard = slot.lock_slot();
        if guard.table().is_none() {
            return Err(bundle_open(operation));
        }
        locked.push((name.as_str(), guard));
    }
    Ok(locked)
}

impl NativeSnapshot for MemoryStore {
    type Snapshot = MemoryStoreSnapshot;

    /// Copies the committed state of every open table (and of the tables a restore left for
    /// later opens) at one point: every table is locked for the copy.
    ///
    /// # Errors
    /// [`Error::BundleState`] while any table of the store has an open bundle or a timer
    /// table has uncommitted changes.
    fn native_snapshot(&mut self) -> Result<MemoryStoreSnapshot> {
        let slots = self.live_slots();
        let mut locked = lock_all(&slots, "native_snapshot")?;
        let mut tables: BTreeMap<String, Box<dyn NativePart>> = self
            .orphans
            .iter()
            .map(|(name, part)| (name.clone(), part.clone_part()))
            .collect();
        for (name, guard) in &mut locked {
            if let Some(table) = guard.table() {
                tables.insert((*name).to_owned(), table.native_part());
            }
        }
        Ok(MemoryStoreSnapshot {
            max_parallelism: self.config().max_parallelism(),
            key_groups: self.config().key_groups(),
            tables,
        })
    }

    /// Replaces the state of every table of the store with the snapshot's, all or nothing:
    /// every open table is staged first (a table the snapshot does not hold becomes empty),
    /// then all are switched; a table of the snapshot that is not open here is installed
    /// when it is opened.
    ///
    /// # Errors
    /// [`Error::InvalidNativeSnapshot`] for a snapshot of another max parallelism or
    /// key-group range, or whose table of an open name is of another kind or schema;
    /// [`Error::BundleState`] while any table has an open bundle or uncommitted timer
    /// changes; [`Error::MemoryExhausted`] when the pool cannot hold the new state next to
    /// the old. On error nothing changed.
    fn restore_native(&mut self, snapshot: &MemoryStoreSnapshot) -> Result<()> {
        let config = self.config();
        if snapshot.max_parallelism != config.max_parallelism() {
            return Err(invalid(NativeSnapshotError::MaxParallelism {
                expected: config.max_parallelism().get(),
                found: snapshot.max_parallelism.get(),
            }));
        }
        if snapshot.key_groups != config.key_groups() {
            return Err(invalid(NativeSnapshotError::KeyGroups {
                expected: config.key_groups(),
                found: snapshot.key_groups,
            }));
        }
        let slots = self.live_slots();
        let mut locked = lock_all(&slots, "restore_native")?;
        let mut staged = 0;
        let mut failure = None;
        for (name, guard) in &mut locked {
            let Some(table) = guard.table() else { continue };
            let part = snapshot.tables.get(*name).map(|p| &**p);
            if let Err(e) = table.stage_native(name, part) {
                failure = Some(e);
                break;
            }
            staged += 1;
        }
        if let Some(err) = failure {
            for (_, guard) in locked.iter_mut().take(staged) {
                if let Some(table) = guard.table() {
                    table.abort_native();
                }
            }
            return Err(err);
        }
        for (_, guard) in &mut locked {
            if let Some(table) = guard.table() {
                table.commit_native();
            }
        }
        let open: Vec<&str> = locked.iter().map(|(name, _)| *name).collect();
        self.orphans = snapshot
            .tables
            .iter()
            .filter(|(name, _)| !open.contains(&name.as_str()))
            .map(|(name, part)| (name.clone(), part.clone_part()))
            .collect();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use keygroup::KeyGroup;
    use state_api::{
        BoundedMemoryPool, I64Codec, KeyedTable, MapStateStore, MemoryPool, StoreConfig,
        TimeDomain, TimerStateStore, TimerTable,
    };

    use super::*;

    fn config(pool: Arc<dyn MemoryPool>) -> StoreConfig {
        let mp = MaxParallelism::new(8).unwrap();
        StoreConfig::try_new(mp, mp.key_groups())
            .unwrap()
            .with_memory_pool(pool)
    }

    fn kg(v: i32) -> KeyGroup {
        KeyGroup::new(v).unwrap()
    }

    fn put(t: &mut crate::MemoryKeyedTable<I64Codec>, key: &[u8], value: i64) {
        t.begin_bundle(&[]).unwrap();
        t.put(kg(1), key, value).unwrap();
        t.commit_bundle().unwrap();
    }

    fn get(t: &mut crate::MemoryKeyedTable<I64Codec>, key: &[u8]) -> Option<i64> {
        t.begin_bundle(&[]).unwrap();
        let v = t.get(kg(1), key).unwrap().copied();
        t.commit_bundle().unwrap();
        v
    }

    #[test]
    fn store_and_snapshot_are_send() {
        fn send<T: Send>() {}
        send::<MemoryStore>();
        send::<MemoryStoreSnapshot>();
        send::<crate::MemoryKeyedTable<I64Codec>>();
    }

    #[test]
    fn a_restore_the_pool_cannot_hold_changes_no_table() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(1 << 20));
        let mut source = MemoryStore::new(config(Arc::clone(&pool)));
        let mut big = source.open_table("big", I64Codec, None).unwrap();
        big.begin_bundle(&[]).unwrap();
        for i in 0..200_u32 {
            big.put(kg(1), &i.to_be_bytes(), 1).unwrap();
        }
        big.commit_bundle().unwrap();
        let snapshot = source.native_snapshot().unwrap();
        let needed = pool.used();

        let tight: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(needed));
        let mut store = MemoryStore::new(config(Arc::clone(&tight)));
        let mut a = store.open_table("a", I64Codec, None).unwrap();
        let mut big2 = store.open_table("big", I64Codec, None).unwrap();
        put(&mut a, b"a", 1);
        put(&mut big2, b"kept", 2);
        let used = tight.used();
        let err = store.restore_native(&snapshot).unwrap_err();
        assert!(matches!(err, Error::MemoryExhausted { .. }), "{err}");
        assert_eq!(tight.used(), used, "staged reservations released");
        assert_eq!(get(&mut a, b"a"), Some(1));
        assert_eq!(get(&mut big2, b"kept"), Some(2));
        assert_eq!(big2.len(), 1);
    }

    #[test]
    fn a_table_of_another_kind_is_refused_and_a_dropped_table_leaves() {
        let pool: Arc<dyn MemoryPool> = Arc::new(BoundedMemoryPool::new(1 << 20));
        let mut source = MemoryStore::new(config(Arc::clone(&pool)));
        let mut t = source.open_table("t", I64Codec, None).unwrap();
        put(&mut t, b"k", 5);
        let mut timers = source
            .open_timer_table("timers", TimeDomain::EventTime)
            .unwrap();
        timers.register(kg(1), 10, b"k", b"").unwrap();
        timers.commit().unwrap();
        let snapshot = source.native_snapshot().unwrap();
        assert_eq!(snapshot.table_names().collect::<Vec<_>>(), ["t", "timers"]);
        drop(t);
        assert_eq!(source.native_snapshot().unwrap().len(), 1, "t was dropped");

        let mut store = MemoryStore::new(config(Arc::clone(&pool)));
        let _map = store.open_map_table("t", I64Codec, None).unwrap();
        let err = store.restore_native(&snapshot).unwrap_err();
        let Error::InvalidNativeSnapshot { source } = &err else {
            panic!("{err}");
        };
        assert!(source.to_string().contains("keyed"), "{source}");

        let mut other = MemoryStore::new(config(pool));
        let _proc = other
            .open_timer_table("timers", TimeDomain::ProcessingTime)
            .unwrap();
        let err = other.restore_native(&snapshot).unwrap_err();
        assert!(matches!(err, Error::InvalidNativeSnapshot { .. }), "{err}");
        // Installed at open: another kind is refused there too, and the name stays free.
        let mut fresh = MemoryStore::new(config(Arc::new(BoundedMemoryPool::new(1 << 20))));
        fresh.restore_native(&snapshot).unwrap();
        assert!(fresh.open_map_table("t", I64Codec, None).is_err());
        let mut t = fresh.open_table("t", I64Codec, None).unwrap();
        assert_eq!(get(&mut t, b"k"), Some(5));
    }
}
