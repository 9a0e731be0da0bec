//! The open-once table registry every backend's store uses.

use std::collections::HashSet;

use crate::error::{Error, Result};

/// The names of the tables open in one store, of every kind (keyed, map, timer): a name can
/// be opened once per store.
///
/// ```
/// use state_api::{Error, TableRegistry};
///
/// let mut names = TableRegistry::default();
/// names.register("counts")?;
/// assert!(matches!(names.register("counts"), Err(Error::TableExists { .. })));
/// assert!(names.contains("counts"));
/// # Ok::<(), state_api::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct TableRegistry {
    names: HashSet<String>,
}

impl TableRegistry {
    /// Checks that `name` is free, without registering it: a store calls this before any
    /// fallible work of opening a table, and [`register`](TableRegistry::register) once the
    /// table exists.
    ///
    /// # Errors
    /// [`Error::TableExists`].
    pub fn check_free(&self, name: &str) -> Result<()> {
        if self.names.contains(name) {
            Err(Error::TableExists {
                name: name.to_owned(),
            })
        } else {
            Ok(())
        }
    }

    /// Registers `name`.
    ///
    /// # Errors
    /// [`Error::TableExists`] when it is registered already (nothing changes).
    pub fn register(&mut self, name: &str) -> Result<()> {
        self.check_free(name)?;
        self.names.insert(name.to_owned());
        Ok(())
    }

    /// Whether `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }
}
