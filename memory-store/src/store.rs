//! The in-memory store: opens [`MemoryKeyedTable`]s, [`MemoryMapTable`]s and
//! [`MemoryTimerTable`]s, and keeps a weak handle on each for the store's native snapshot
//! (`native.rs`).

use std::collections::BTreeMap;
use std::sync::Weak;

use state_api::{
    KeyedStateStore, MapStateStore, Result, StoreConfig, TableRegistry, TimeDomain,
    TimerStateStore, TtlConfig, ValueCodec,
};

use crate::checkout::{Checkout, Slot};
use crate::map::MemoryMapTable;
use crate::native::{NativePart, NativeTable};
use crate::table::MemoryKeyedTable;
use crate::timer::MemoryTimerTable;

/// The in-memory backend's store: one per operator subtask. Opens tables that share its
/// key-group range, clock and memory pool; each name can be opened once, whatever the kind
/// of table. Its native snapshot ([`MemoryStoreSnapshot`](crate::MemoryStoreSnapshot)) covers
/// every table it opened that is still alive.
#[derive(Debug)]
pub struct MemoryStore {
    config: StoreConfig,
    names: TableRegistry,
    /// The homes of the tables opened here (a dropped table's handle is dead).
    pub(crate) slots: Vec<(String, Weak<dyn Slot>)>,
    /// Tables of the last native restore that were not open: installed when opened.
    pub(crate) orphans: BTreeMap<String, Box<dyn NativePart>>,
}

impl MemoryStore {
    /// A store with `config`.
    pub fn new(config: StoreConfig) -> Self {
        Self {
            config,
            names: TableRegistry::default(),
            slots: Vec::new(),
            orphans: BTreeMap::new(),
        }
    }

    /// Registers a new table's home under `name`, first installing the state a native
    /// restore left for that name.
    ///
    /// # Errors
    /// [`Error::TableExists`](state_api::Error::TableExists); as
    /// [`NativeTable::stage_native`]. On error nothing is registered.
    fn adopt<T: NativeTable + 'static>(
        &mut self,
        name: &str,
        cell: &mut Checkout<T>,
    ) -> Result<()> {
        self.names.check_free(name)?;
        if let Some(part) = self.orphans.get(name) {
            cell.with_mut(|core| {
                core.stage_native(name, Some(&**part))?;
                core.commit_native();
                Ok::<(), state_api::Error>(())
            })
            .unwrap_or(Ok(()))?;
            self.orphans.remove(name);
        }
        self.names.register(name)?;
        self.slots.push((name.to_owned(), cell.slot()));
        Ok(())
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
        let mut table = MemoryKeyedTable::new(name, codec, ttl, &self.config);
        self.adopt(name, table.cell())?;
        Ok(table)
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
        let mut table = MemoryMapTable::new(name, codec, ttl, &self.config);
        self.adopt(name, table.cell())?;
        Ok(table)
    }
}

impl TimerStateStore for MemoryStore {
    type TimerTable = MemoryTimerTable;

    fn open_timer_table(&mut self, name: &str, domain: TimeDomain) -> Result<MemoryTimerTable> {
        let mut table = MemoryTimerTable::new(name, domain, &self.config);
        self.adopt(name, table.cell())?;
        Ok(table)
    }
}
