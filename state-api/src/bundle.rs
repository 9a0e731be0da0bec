//! The bundle state machine every backend's table runs: the one place that decides which
//! operations a closed or an open bundle allows.

use crate::error::{Error, Result};

/// Whether a table's bundle is open, and the checks of the bundle contract
/// ([`KeyedTable`](crate::KeyedTable), [`MapTable`](crate::MapTable)): point operations and
/// commits need an open bundle, `begin_bundle`, snapshots, restores and sweeps a closed one,
/// and a refused call is [`Error::BundleState`] naming the operation.
///
/// ```
/// use state_api::{BundlePhase, Error};
///
/// let mut phase = BundlePhase::default();
/// assert!(matches!(phase.require_open("get"), Err(Error::BundleState { operation: "get", .. })));
/// phase.begin("begin_bundle")?;
/// assert!(phase.begin("begin_bundle").is_err());
/// phase.require_open("get")?;
/// phase.end("commit_bundle")?;
/// phase.require_closed("export_key_group")?;
/// # Ok::<(), state_api::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BundlePhase {
    open: bool,
}

impl BundlePhase {
    /// Whether a bundle is open.
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// `Ok` when a bundle is open.
    ///
    /// # Errors
    /// [`Error::BundleState`] (`requires_open: true`).
    pub fn require_open(&self, operation: &'static str) -> Result<()> {
        self.require(operation, true)
    }

    /// `Ok` when no bundle is open.
    ///
    /// # Errors
    /// [`Error::BundleState`] (`requires_open: false`).
    pub fn require_closed(&self, operation: &'static str) -> Result<()> {
        self.require(operation, false)
    }

    /// Checks that no bundle is open, without opening one: `begin_bundle` calls this before
    /// its fallible hydration and [`begin`](BundlePhase::begin) after it succeeded.
    ///
    /// # Errors
    /// [`Error::BundleState`].
    pub fn check_begin(&self, operation: &'static str) -> Result<()> {
        self.require_closed(operation)
    }

    /// Opens a bundle.
    ///
    /// # Errors
    /// [`Error::BundleState`] when one is open (nothing changes).
    pub fn begin(&mut self, operation: &'static str) -> Result<()> {
        self.require_closed(operation)?;
        self.open = true;
        Ok(())
    }

    /// Closes the open bundle.
    ///
    /// # Errors
    /// [`Error::BundleState`] when none is open.
    pub fn end(&mut self, operation: &'static str) -> Result<()> {
        self.require_open(operation)?;
        self.open = false;
        Ok(())
    }

    fn require(self, operation: &'static str, requires_open: bool) -> Result<()> {
        if self.open == requires_open {
            Ok(())
        } else {
            Err(Error::BundleState {
                operation,
                requires_open,
            })
        }
    }
}
