//! Where a table's state lives so that its store can reach it: a *home* slot the store holds
//! weakly, out of which the table checks its state for the length of a bundle.
//!
//! A table of this backend is an owned value handed to the operator, but its store must be
//! able to take a native snapshot of every table as one unit, and to restore them all or
//! none ([`NativeSnapshot`](state_api::NativeSnapshot) on [`MemoryStore`](crate::MemoryStore)).
//! So each table's state (its *core*) is boxed in an `Arc<Mutex<Option<Box<core>>>>`:
//!
//! - while no bundle is open the core sits in the slot; the table's operations lock the
//!   slot (uncontended: one atomic swap each way), and the store can lock it too;
//! - [`begin_bundle`](state_api::KeyedTable::begin_bundle) moves the box out of the slot
//!   into the table ([`Checkout::check_out`]), so the bundle's point operations and scans
//!   touch the core directly (no lock, references into it borrow the table) and
//!   [`commit_bundle`](state_api::KeyedTable::commit_bundle) moves it back
//!   ([`Checkout::check_in`]). An empty slot is how the store sees an open bundle (or a timer
//!   table's uncommitted changes): it refuses a native snapshot or restore then.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use crate::native::NativeTable;

/// The slot a table's core lives in between bundles.
pub(crate) type Home<T> = Mutex<Option<Box<T>>>;

/// A table's core and its home: exactly one of them holds the core at any time.
#[derive(Debug)]
pub(crate) struct Checkout<T> {
    home: Arc<Home<T>>,
    held: Option<Box<T>>,
}

fn lock<T>(home: &Home<T>) -> MutexGuard<'_, Option<Box<T>>> {
    home.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<T> Checkout<T> {
    /// `core` in its home.
    pub(crate) fn new(core: T) -> Self {
        Self {
            home: Arc::new(Mutex::new(Some(Box::new(core)))),
            held: None,
        }
    }

    /// The core, while checked out.
    pub(crate) fn held(&mut self) -> Option<&mut T> {
        self.held.as_deref_mut()
    }

    /// Whether the table holds the core (a bundle is open).
    pub(crate) fn is_held(&self) -> bool {
        self.held.is_some()
    }

    /// Moves the core out of its home into the table (a no-op when held already).
    pub(crate) fn check_out(&mut self) {
        if self.held.is_none() {
            self.held = lock(&self.home).take();
        }
    }

    /// Moves the core back into its home (a no-op when not held).
    pub(crate) fn check_in(&mut self) {
        if let Some(core) = self.held.take() {
            *lock(&self.home) = Some(core);
        }
    }

    /// Opens a bundle: checks the core out and runs `begin` on it. A failed `begin` puts the
    /// core back unless a bundle was open already (it stays open).
    ///
    /// # Errors
    /// What `begin` returns.
    pub(crate) fn begin_bundle(
        &mut self,
        begin: impl FnOnce(&mut T) -> state_api::Result<()>,
    ) -> state_api::Result<()> {
        let was_held = self.is_held();
        self.check_out();
        let Some(core) = self.held() else {
            return Err(lost("begin_bundle"));
        };
        let outcome = begin(core);
        if outcome.is_err() && !was_held {
            self.check_in();
        }
        outcome
    }

    /// The core while a bundle holds it.
    ///
    /// # Errors
    /// [`Error::BundleState`](state_api::Error::BundleState) (a bundle is required) for
    /// `operation` when no bundle is open.
    pub(crate) fn in_bundle(&mut self, operation: &'static str) -> state_api::Result<&mut T> {
        self.held().ok_or_else(|| state_api::Error::BundleState {
            operation,
            requires_open: true,
        })
    }

    /// Commits the bundle: runs `commit` on the held core and, when it succeeds, checks the
    /// core back in (a failed commit leaves the bundle open).
    ///
    /// # Errors
    /// [`Error::BundleState`](state_api::Error::BundleState) when no bundle is open; what
    /// `commit` returns.
    pub(crate) fn commit_bundle(
        &mut self,
        commit: impl FnOnce(&mut T) -> state_api::Result<()>,
    ) -> state_api::Result<()> {
        commit(self.in_bundle("commit_bundle")?)?;
        self.check_in();
        Ok(())
    }

    /// Runs `f` on the core wherever it is. `None` only if the core were lost, which the
    /// two moves above never do.
    pub(crate) fn with_mut<R>(&mut self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        if let Some(core) = self.held.as_deref_mut() {
            return Some(f(core));
        }
        lock(&self.home).as_deref_mut().map(f)
    }

    /// Runs `f` on the core wherever it is (see [`with_mut`](Self::with_mut)).
    pub(crate) fn with<R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        if let Some(core) = self.held.as_deref() {
            return Some(f(core));
        }
        lock(&self.home).as_deref().map(f)
    }
}

impl<T: NativeTable + 'static> Checkout<T> {
    /// The home as the store holds it: weakly (a dropped table leaves the store's snapshot)
    /// and type-erased.
    pub(crate) fn slot(&self) -> Weak<dyn Slot> {
        let home: Arc<dyn Slot> = self.home.clone();
        Arc::downgrade(&home)
    }
}

/// A table's home as its store sees it.
pub(crate) trait Slot: Send + Sync {
    /// Locks the home.
    fn lock_slot(&self) -> Box<dyn LockedSlot + '_>;
}

/// A locked home: the core when it is at home (no bundle open).
pub(crate) trait LockedSlot {
    /// The core, or `None` while the table holds it.
    fn table(&mut self) -> Option<&mut dyn NativeTable>;
}

impl<T: NativeTable + 'static> Slot for Home<T> {
    fn lock_slot(&self) -> Box<dyn LockedSlot + '_> {
        Box::new(lock(self))
    }
}

impl<T: NativeTable + 'static> LockedSlot for MutexGuard<'_, Option<Box<T>>> {
    fn table(&mut self) -> Option<&mut dyn NativeTable> {
        self.as_deref_mut().map(|t| t as &mut dyn NativeTable)
    }
}

/// The error of an operation that found no core (never returned: the core is always either
/// at home or held).
pub(crate) fn lost(operation: &'static str) -> state_api::Error {
    state_api::Error::BundleState {
        operation,
        requires_open: false,
    }
}

/// What a table handle keeps outside its core so that `&str` and plain answers need no lock.
#[derive(Debug, Clone)]
pub(crate) struct TableMeta {
    pub(crate) name: String,
    pub(crate) key_groups: keygroup::KeyGroupRange,
    pub(crate) max_parallelism: keygroup::MaxParallelism,
    pub(crate) schema: arrow_schema::SchemaRef,
    pub(crate) has_ttl: bool,
}

impl TableMeta {
    /// The metadata of `core`.
    pub(crate) fn of(core: &impl state_api::CanonicalTable) -> Self {
        Self {
            name: core.table_name().to_owned(),
            key_groups: core.table_key_groups(),
            max_parallelism: core.table_max_parallelism(),
            schema: core.canonical_schema(),
            has_ttl: core.table_has_ttl(),
        }
    }
}

/// Implements `CanonicalTable` for a handle with fields `meta: TableMeta` and
/// `cell: Checkout<core>` by delegating to its core.
macro_rules! delegate_canonical_table {
    ($handle:ident) => {
        impl<C: state_api::ValueCodec> state_api::CanonicalTable for $handle<C> {
            fn table_name(&self) -> &str {
                &self.meta.name
            }

            fn table_key_groups(&self) -> keygroup::KeyGroupRange {
                self.meta.key_groups
            }

            fn canonical_schema(&self) -> arrow_schema::SchemaRef {
                std::sync::Arc::clone(&self.meta.schema)
            }

            fn export_key_group(
                &self,
                key_group: keygroup::KeyGroup,
            ) -> state_api::Result<Option<arrow_array::RecordBatch>> {
                self.cell
                    .with(|core| core.export_key_group(key_group))
                    .unwrap_or_else(|| Err($crate::checkout::lost("export_key_group")))
            }

            fn stage_restore(
                &mut self,
                batches: Vec<(keygroup::KeyGroup, arrow_array::RecordBatch)>,
            ) -> state_api::Result<()> {
                self.cell
                    .with_mut(|core| core.stage_restore(batches))
                    .unwrap_or_else(|| Err($crate::checkout::lost("restore")))
            }

            fn commit_restore(&mut self) {
                self.cell
                    .with_mut(state_api::CanonicalTable::commit_restore);
            }

            fn abort_restore(&mut self) {
                self.cell.with_mut(state_api::CanonicalTable::abort_restore);
            }

            fn table_max_parallelism(&self) -> keygroup::MaxParallelism {
                self.meta.max_parallelism
            }

            fn table_has_ttl(&self) -> bool {
                self.meta.has_ttl
            }
        }
    };
}

pub(crate) use delegate_canonical_table;
