//! The in-memory store: opens [`MemoryKeyedTable`]s.

use std::collections::HashSet;

use state_api::{Error, KeyedStateStore, Result, StoreConfig, TtlConfig, ValueCodec};

use crate::table::MemoryKeyedTable;

/// The in-memory backend's store: one per operator subtask. Opens tables that share its
/// key-group range, clock and memory pool; each name can be opened once.
#[derive(Debug)]
pub struct MemoryStore {
    config: StoreConfig,
    names: HashSet<String>,
}

impl MemoryStore {
    /// A store with `config`.
    pub fn new(config: StoreConfig) -> Self {
        Self {
            config,
            names: HashSet::new(),
        }
    }
}

impl KeyedStateStore for MemoryStore {
    type Table<C: ValueCodec> = MemoryKeyedTable<C>;

    fn config(&self) -> &StoreConfig {
        &self.config
    }

    fn open_table<C: ValueCodec>(
        &mut self,
        name: &str,
        codec: C,
        ttl: Option<TtlConfig>,
    ) -> Result<MemoryKeyedTable<C>> {
        if !self.names.insert(name.to_owned()) {
            return Err(Error::TableExists {
                name: name.to_owned(),
            });
        }
        Ok(MemoryKeyedTable::new(name, codec, ttl, &self.config))
    }
}
