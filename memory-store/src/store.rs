//! The in-memory store: opens [`MemoryKeyedTable`]s, [`MemoryMapTable`]s and
//! [`MemoryTimerTable`]s.

use state_api::{
    KeyedStateStore, MapStateStore, Result, StoreConfig, TableRegistry, TimeDomain,
    TimerStateStore, TtlConfig, ValueCodec,
};

use crate::map::MemoryMapTable;
use crate::table::MemoryKeyedTable;
use crate::timer::MemoryTimerTable;

/// The in-memory backend's store: one per operator subtask. Opens tables that share its
/// key-group range, clock and memory pool; each name can be opened once, whatever the kind
/// of table.
#[derive(Debug)]
pub struct MemoryStore {
    config: StoreConfig,
    names: TableRegistry,
}

impl MemoryStore {
    /// A store with `config`.
    pub fn new(config: StoreConfig) -> Self {
        Self {
            config,
            names: TableRegistry::default(),
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
        self.names.register(name)?;
        Ok(MemoryKeyedTable::new(name, codec, ttl, &self.config))
    }
}

impl MapStateStore for MemoryStore {
    type MapTable<C: ValueCodec> = MemoryMapTable<C>;

    fn open_map_table<C: ValueCodec>(
        &mut self,
        name: &str,
        codec: C,
        ttl: Option<TtlConfig>,
    ) -> Result<MemoryMapTable<C>> {
        self.names.register(name)?;
        Ok(MemoryMapTable::new(name, codec, ttl, &self.config))
    }
}

impl TimerStateStore for MemoryStore {
    type TimerTable = MemoryTimerTable;

    fn open_timer_table(&mut self, name: &str, domain: TimeDomain) -> Result<MemoryTimerTable> {
        self.names.register(name)?;
        Ok(MemoryTimerTable::new(name, domain, &self.config))
    }
}
