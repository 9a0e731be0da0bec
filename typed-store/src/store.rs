//! The RocksDB store: one database per operator subtask, one column family per table, and
//! the open-once table registry. Metadata, the live-directory pointer and native checkpoints
//! live in `metadata.rs`, `live.rs` and `checkpoint.rs`.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use rocksdb::{
    BoundColumnFamily, ColumnFamilyDescriptor, DBCompressionType, DBWithThreadMode,
    DEFAULT_COLUMN_FAMILY_NAME, MultiThreaded, Options, WriteOptions,
};
use state_api::{Clock, KeyedStateStore, StoreConfig, TableRegistry, TtlConfig, ValueCodec};

use crate::checkpoint::{
    RocksCheckpoint, check_checkpoint_key_groups, materialise_checkpoint, verify_tables,
};
use crate::error::{Error, Result};
use crate::format::{
    META_FORMAT_KEY, META_TABLE_CF_PREFIX, META_TABLE_COLUMNS_PREFIX, RowCodec, TABLE_CF_PREFIX,
    describe_fields,
};
use crate::live::{
    LIVE_POINTER_FILE, live_dirs, read_live_pointer, remove_stale_live_dirs, write_live_pointer,
};
use crate::manifest::CheckpointManifest;
use crate::metadata::{check_metadata, get_meta, put_meta};
use crate::slot::RocksSlot;
use crate::table::{PendingWrites, RocksKeyedTable, TableCore};
use crate::timer::TimerState;
use crate::ttl_filter::{TtlCell, TtlFilterFactory};

/// Write-buffer size of the default (metadata) column family.
const METADATA_WRITE_BUFFER_BYTES: usize = 64 << 10;

/// Arena block size of the default (metadata) column family.
const METADATA_ARENA_BLOCK_BYTES: usize = 4 << 10;

/// The RocksDB handle type of a store.
pub(crate) type Db = DBWithThreadMode<MultiThreaded>;

/// The open database and its table-to-column-family map.
pub(crate) struct DbState {
    pub(crate) db: Db,
    pub(crate) dir: PathBuf,
    /// Table name -> column family name.
    pub(crate) cf_of: HashMap<String, String>,
    /// Column family name -> its TTL cell (read by its compaction filters).
    pub(crate) ttl_cells: HashMap<String, Arc<TtlCell>>,
    pub(crate) next_cf: u64,
}

impl DbState {
    /// The column family holding `table`.
    pub(crate) fn table_cf(&self, table: &str) -> state_api::Result<Arc<BoundColumnFamily<'_>>> {
        self.cf_of
            .get(table)
            .and_then(|cf| self.db.cf_handle(cf))
            .ok_or_else(|| {
                Error::CorruptMetadata {
                    key: format!("{META_TABLE_CF_PREFIX}{table}"),
                }
                .into()
            })
    }

    /// Whether `table`'s column family holds no key at all.
    pub(crate) fn table_is_empty(&self, table: &str) -> state_api::Result<bool> {
        let cf = self.table_cf(table)?;
        let mut it = self.db.raw_iterator_cf(&cf);
        it.seek_to_first();
        it.status().map_err(Error::rocks("emptiness check"))?;
        Ok(!it.valid())
    }

    /// The name of the column family holding `table`, if the table exists.
    pub(crate) fn cf_of_table(&self, table: &str) -> Option<&str> {
        self.cf_of.get(table).map(String::as_str)
    }

    /// The name of the column family holding `table`.
    pub(crate) fn table_cf_name(&self, table: &str) -> state_api::Result<String> {
        self.cf_of_table(table).map(str::to_owned).ok_or_else(|| {
            Error::CorruptMetadata {
                key: format!("{META_TABLE_CF_PREFIX}{table}"),
            }
            .into()
        })
    }

    /// The column family named `name`.
    pub(crate) fn cf(&self, name: &str) -> state_api::Result<Arc<BoundColumnFamily<'_>>> {
        self.db.cf_handle(name).ok_or_else(|| {
            Error::CorruptMetadata {
                key: name.to_owned(),
            }
            .into()
        })
    }
}

/// What the store remembers of an open table: its column description (metadata) and TTL.
#[derive(Debug, Clone)]
pub(crate) struct TableInfo {
    pub(crate) columns: String,
    pub(crate) ttl_millis: Option<i64>,
}

/// What every table and the store share.
pub(crate) struct Shared {
    state: RwLock<DbState>,
    pub(crate) root: PathBuf,
    pub(crate) slot: RocksSlot,
    pub(crate) clock: Arc<dyn Clock>,
    /// Tables opened in this store (re-created and re-configured after a native restore).
    pub(crate) tables: Mutex<HashMap<String, TableInfo>>,
    /// The in-memory timer sets of the open timer tables, reloaded by a native restore.
    pub(crate) timer_tables: Mutex<HashMap<String, Weak<Mutex<TimerState>>>>,
    /// Bundles currently open over all tables.
    pub(crate) open_bundles: AtomicUsize,
    pub(crate) checkpoints: AtomicU64,
    /// Bumped when the database is replaced (native restore): tables drop their caches.
    pub(crate) generation: AtomicU64,
    pub(crate) write_options: WriteOptions,
    /// Options of the SST files a large canonical restore writes (the tables' compression).
    pub(crate) sst_options: Options,
    /// The pending writes of every keyed table (its state slot) and map table (its
    /// write-behind buffer) opened in this store, by table name (held
    /// weakly: a dropped table writes its own pending entries), so that the store's flush
    /// points reach the pending writes of every table.
    pub(crate) write_behind: Mutex<HashMap<String, Weak<dyn PendingWrites>>>,
}

impl Shared {
    /// Records the pending writes of table `table` (a keyed table's state slot, a map
    /// table's write-behind buffer).
    pub(crate) fn register_pending(&self, table: &str, slot: Weak<dyn PendingWrites>) {
        self.write_behind
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(table.to_owned(), slot);
    }

    /// The live tables' state slots.
    fn pending_tables(&self) -> Vec<Arc<dyn PendingWrites>> {
        self.write_behind
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// Writes every table's pending writes to RocksDB (before a native checkpoint).
    /// `BundleState` when a table is in an open bundle (the other tables are written).
    ///
    /// Each table writes its own column family, and RocksDB inserts the batches of
    /// concurrent writers into their memtables in parallel, so when several tables have
    /// pending writes the flushes run on up to one thread per core, the calling thread one of
    /// them (scoped threads, joined before this returns; a panic in one is resumed here). With
    /// one such table or none, no thread is started.
    pub(crate) fn flush_write_behind(&self) -> state_api::Result<()> {
        let tables: Vec<_> = self
            .pending_tables()
            .into_iter()
            .filter(|table| table.has_pending())
            .collect();
        let next = AtomicUsize::new(0);
        let work = || -> state_api::Result<()> {
            let mut result = Ok(());
            while let Some(table) = tables.get(next.fetch_add(1, Ordering::Relaxed)) {
                result = result.and(table.flush());
            }
            result
        };
        if tables.len() <= 1 {
            return work();
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, std::num::NonZeroUsize::get)
            .min(tables.len());
        std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
            let mut result = work();
            for helper in helpers {
                match helper.join() {
                    Ok(flushed) => result = result.and(flushed),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            result
        })
    }

    /// Drops every table's pending writes, and the keyed tables' caches (a native restore replaced the
    /// state).
    pub(crate) fn discard_write_behind(&self) {
        for table in self.pending_tables() {
            table.discard();
        }
    }

    pub(crate) fn read(&self) -> RwLockReadGuard<'_, DbState> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current database generation.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// The path of the SST file a restore into staging family `cf` writes.
    pub(crate) fn staging_file(&self, cf: &str) -> PathBuf {
        self.root.join(format!("staging-{cf}.sst"))
    }

    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, DbState> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Column-family options: the slot's sizing and cache, LZ4, and a TTL compaction filter
    /// factory reading `cell`.
    ///
    /// # Errors
    /// As [`RocksSlot::base_options`].
    pub(crate) fn cf_options(&self, cell: &Arc<TtlCell>) -> Result<Options> {
        cf_options(&self.slot, Arc::clone(cell), Arc::clone(&self.clock))
    }

    /// Creates a fresh, empty column family for `table` (not yet mapped) with the table's
    /// TTL; returns its name.
    pub(crate) fn create_table_cf(&self, table: &str) -> Result<String> {
        let ttl = self
            .tables
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(table)
            .and_then(|t| t.ttl_millis);
        self.create_cf(ttl)
    }

    /// Creates a fresh, empty column family whose compaction filter applies `ttl_millis`.
    fn create_cf(&self, ttl_millis: Option<i64>) -> Result<String> {
        let mut st = self.write();
        let name = format!("{TABLE_CF_PREFIX}{}", st.next_cf);
        st.next_cf += 1;
        let cell = TtlCell::new();
        cell.set(ttl_millis);
        st.db
            .create_cf(&name, &self.cf_options(&cell)?)
            .map_err(Error::rocks("create column family"))?;
        st.ttl_cells.insert(name.clone(), cell);
        Ok(name)
    }

    /// Drops a column family (best effort: a failure leaves an unmapped family that the
    /// next open removes).
    pub(crate) fn drop_cf(&self, name: &str) {
        let mut st = self.write();
        let _ = st.db.drop_cf(name);
        st.ttl_cells.remove(name);
    }

    /// Maps `table` to column family `cf` and drops the family it replaces; cannot fail.
    /// The metadata write is repeated before every checkpoint; when it fails here the old
    /// family is kept until the next open (which drops every family the metadata does not
    /// name), so that the metadata never names a dropped family.
    pub(crate) fn swap_table_cf(&self, table: &str, cf: &str) {
        let mut st = self.write();
        let old = st.cf_of.insert(table.to_owned(), cf.to_owned());
        let mapped = put_meta(
            &st.db,
            &self.write_options,
            format!("{META_TABLE_CF_PREFIX}{table}").as_bytes(),
            cf.as_bytes(),
        )
        .is_ok();
        if let Some(old) = old.filter(|o| o != cf && mapped) {
            let _ = st.db.drop_cf(&old);
            st.ttl_cells.remove(&old);
        }
    }
}

impl Drop for Shared {
    /// The last handle of the database is gone (store and tables): pending writes reach
    /// RocksDB before it closes (RocksDB then flushes its memtables to SST files). Best
    /// effort: a failing write here means the database is failing anyway, and the store's
    /// state comes back from its last checkpoint.
    fn drop(&mut self) {
        let _ = self.flush_write_behind();
    }
}

fn cf_options(slot: &RocksSlot, cell: Arc<TtlCell>, clock: Arc<dyn Clock>) -> Result<Options> {
    let mut options = slot.base_options()?;
    slot.apply_cf(&mut options);
    options.set_compression_type(DBCompressionType::Lz4);
    options.set_compaction_filter_factory(TtlFilterFactory::new(cell, clock));
    Ok(options)
}

/// How [`open_db`] treats a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenMode {
    /// A store's live database: created when missing.
    CreateIfMissing,
    /// A copy of a native checkpoint: must be a complete sfstate database (never created),
    /// and every table is read back, block checksums verified, before it is used.
    Checkpoint,
}

/// Opens the database in `dir` (see [`OpenMode`]): every existing column family, the
/// metadata checks, and removal of column families no table maps to (leftover staging).
pub(crate) fn open_db(
    dir: &Path,
    slot: &RocksSlot,
    clock: &Arc<dyn Clock>,
    config: &StoreConfig,
    mode: OpenMode,
) -> Result<DbState> {
    let checkpoint = mode == OpenMode::Checkpoint;
    if checkpoint && !dir.join("CURRENT").is_file() {
        return Err(Error::InvalidCheckpoint {
            path: dir.to_owned(),
            reason: "no CURRENT file: not a complete RocksDB checkpoint",
        });
    }
    let mut db_options = cf_options(slot, TtlCell::new(), Arc::clone(clock))?;
    // The default family holds only a few metadata entries: a small memtable and arena, so
    // an idle store charges next to nothing to the slot's write-buffer manager.
    db_options.set_write_buffer_size(METADATA_WRITE_BUFFER_BYTES);
    db_options.set_arena_block_size(METADATA_ARENA_BLOCK_BYTES);
    db_options.create_if_missing(!checkpoint);
    db_options.create_missing_column_families(true);
    slot.apply_db(&mut db_options);
    let existing = if dir.join("CURRENT").exists() {
        Db::list_cf(&db_options, dir).map_err(Error::rocks("list column families"))?
    } else {
        Vec::new()
    };
    let mut ttl_cells = HashMap::new();
    let mut descriptors = Vec::new();
    for name in existing.iter().filter(|n| *n != DEFAULT_COLUMN_FAMILY_NAME) {
        let cell = TtlCell::new();
        descriptors.push(ColumnFamilyDescriptor::new(
            name,
            cf_options(slot, Arc::clone(&cell), Arc::clone(clock))?,
        ));
        ttl_cells.insert(name.clone(), cell);
    }
    // A checkpoint copy is opened only when its manifest vouches for every file.
    let manifest = if checkpoint {
        Some(CheckpointManifest::verify_dir(dir)?)
    } else {
        None
    };
    let db = Db::open_cf_descriptors(&db_options, dir, descriptors)
        .map_err(Error::rocks("open database"))?;
    if manifest.is_some_and(|m| m.sequence != db.latest_sequence_number()) {
        return Err(Error::InvalidCheckpoint {
            path: dir.to_owned(),
            reason: "sequence number differs from the checkpoint manifest (stale MANIFEST)",
        });
    }
    let mut write_options = WriteOptions::default();
    write_options.disable_wal(true);

    if checkpoint && get_meta(&db, META_FORMAT_KEY)?.is_none() {
        return Err(Error::InvalidCheckpoint {
            path: dir.to_owned(),
            reason: "no sfstate format metadata",
        });
    }
    check_metadata(&db, &write_options, config)?;

    // Table map.
    let mut cf_of = HashMap::new();
    let mut iter = db.raw_iterator();
    iter.seek(META_TABLE_CF_PREFIX.as_bytes());
    while let Some((key, value)) = iter.item() {
        let Some(table) = key.strip_prefix(META_TABLE_CF_PREFIX.as_bytes()) else {
            break;
        };
        let corrupt = || Error::CorruptMetadata {
            key: String::from_utf8_lossy(key).into_owned(),
        };
        let table = std::str::from_utf8(table).map_err(|_| corrupt())?;
        let cf = std::str::from_utf8(value).map_err(|_| corrupt())?;
        if !ttl_cells.contains_key(cf) {
            return Err(corrupt());
        }
        cf_of.insert(table.to_owned(), cf.to_owned());
        iter.next();
    }
    iter.status().map_err(Error::rocks("read metadata"))?;
    drop(iter);
    let mapped: HashSet<&String> = cf_of.values().collect();
    let unmapped: Vec<String> = ttl_cells
        .keys()
        .filter(|cf| !mapped.contains(cf))
        .cloned()
        .collect();
    for cf in &unmapped {
        db.drop_cf(cf).map_err(Error::rocks("drop column family"))?;
        ttl_cells.remove(cf);
    }
    let next_cf = existing
        .iter()
        .filter_map(|n| n.strip_prefix(TABLE_CF_PREFIX)?.parse::<u64>().ok())
        .max()
        .map_or(0, |n| n + 1);
    let state = DbState {
        db,
        dir: dir.to_owned(),
        cf_of,
        ttl_cells,
        next_cf,
    };
    if checkpoint {
        verify_tables(&state)?;
    }
    Ok(state)
}

/// The RocksDB backend's store: one RocksDB database for one operator subtask, opened in a
/// root directory with a [`RocksSlot`]'s shared cache and write-buffer manager.
///
/// Directory layout under the root:
///
/// | path | what |
/// |---|---|
/// | `LIVE` | the name of the live database directory (`live-<n>` and a newline), replaced atomically (written to `LIVE.tmp`, fsynced, renamed, directory fsynced) |
/// | `live-<n>/` | the database `LIVE` names; a native restore opens a new `live-<n+1>/` and switches `LIVE` to it only once it is complete |
/// | `checkpoints/chk-<m>/` | checkpoints taken by [`native_snapshot`](state_api::NativeSnapshot::native_snapshot) |
///
/// Opening reads `LIVE` and removes every other `live-*` directory (the leftovers of an
/// interrupted restore). A root without `LIVE` (a store written before the pointer existed)
/// opens its highest-numbered `live-*` directory and gets a `LIVE` file.
///
/// Each table is one column family (see the crate docs); a name is opened once per store,
/// whatever the table kind ([`TableRegistry`]).
pub struct RocksStore {
    pub(crate) config: StoreConfig,
    pub(crate) shared: Arc<Shared>,
    pub(crate) names: TableRegistry,
}

impl std::fmt::Debug for RocksStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksStore")
            .field("root", &self.shared.root)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl RocksStore {
    /// Opens the store in `root` (creating it if missing) for `config`, using `slot`'s shared
    /// resources.
    ///
    /// # Errors
    /// [`Error::FormatVersionMismatch`] for a store written with another on-disk format or
    /// arrow-row version; [`Error::MaxParallelismMismatch`]; RocksDB and I/O failures.
    pub fn open(root: impl AsRef<Path>, config: StoreConfig, slot: &RocksSlot) -> Result<Self> {
        Self::open_with(root.as_ref(), config, slot, OpenMode::CreateIfMissing)
    }

    fn open_with(
        root: &Path,
        config: StoreConfig,
        slot: &RocksSlot,
        mode: OpenMode,
    ) -> Result<Self> {
        fs::create_dir_all(root).map_err(Error::io(root))?;
        let pointer = read_live_pointer(root)?;
        let name = match &pointer {
            Some(name) => name.clone(),
            None => live_dirs(root)?
                .pop()
                .map_or_else(|| "live-0".to_owned(), |(n, _)| format!("live-{n}")),
        };
        let dir = root.join(&name);
        if pointer.is_some() && !dir.join("CURRENT").is_file() {
            return Err(Error::InvalidCheckpoint {
                path: dir,
                reason: "the LIVE file names a directory without a database",
            });
        }
        let state = open_db(&dir, slot, config.clock(), &config, mode)?;
        if pointer.is_none() {
            write_live_pointer(root, &name)?;
        }
        remove_stale_live_dirs(root, &name);
        let mut write_options = WriteOptions::default();
        write_options.disable_wal(true);
        let checkpoints = Self::next_checkpoint_number(root)?;
        Ok(Self {
            shared: Arc::new(Shared {
                state: RwLock::new(state),
                root: root.to_owned(),
                slot: slot.clone(),
                clock: Arc::clone(config.clock()),
                tables: Mutex::new(HashMap::new()),
                timer_tables: Mutex::new(HashMap::new()),
                open_bundles: AtomicUsize::new(0),
                checkpoints: AtomicU64::new(checkpoints),
                generation: AtomicU64::new(0),
                write_options,
                sst_options: {
                    let mut options = Options::default();
                    options.set_compression_type(DBCompressionType::Lz4);
                    options
                },
                write_behind: Mutex::new(HashMap::new()),
            }),
            config,
            names: TableRegistry::default(),
        })
    }

    /// Opens a new store in `root` (which must not hold a store) from `checkpoint`: the way
    /// back after a crash (with the WAL off, a crashed store's directory is discarded).
    ///
    /// # Errors
    /// As [`open`](Self::open); I/O failures copying the checkpoint; [`Error::InvalidCheckpoint`]
    /// for a checkpoint taken by a store of another key-group range (or by an older binary).
    pub fn open_checkpoint(
        checkpoint: &RocksCheckpoint,
        root: impl AsRef<Path>,
        config: StoreConfig,
        slot: &RocksSlot,
    ) -> Result<Self> {
        let root = root.as_ref();
        if !live_dirs(root)?.is_empty() || root.join(LIVE_POINTER_FILE).exists() {
            return Err(Error::InvalidOption {
                option: "root",
                reason: "already holds a store",
            });
        }
        let live = root.join("live-0");
        let opened = materialise_checkpoint(&checkpoint.dir, &live)
            .and_then(|()| Self::open_with(root, config, slot, OpenMode::Checkpoint))
            .and_then(|store| {
                // A checkpoint of another key-group range would hold keys this store never
                // reads: refused, as `restore_native` does.
                check_checkpoint_key_groups(
                    &store.shared.read().db,
                    store.config.key_groups(),
                    &checkpoint.dir,
                )?;
                Ok(store)
            });
        if opened.is_err() {
            // Nothing of a refused checkpoint stays behind to be opened later as a store.
            let _ = fs::remove_dir_all(&live);
            let _ = fs::remove_file(root.join(LIVE_POINTER_FILE));
        }
        opened
    }

    fn next_checkpoint_number(root: &Path) -> Result<u64> {
        let dir = root.join("checkpoints");
        if !dir.exists() {
            return Ok(0);
        }
        let mut next = 0;
        for entry in fs::read_dir(&dir).map_err(Error::io(&dir))? {
            let entry = entry.map_err(Error::io(&dir))?;
            if let Some(n) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.strip_prefix("chk-"))
                .and_then(|n| n.parse::<u64>().ok())
            {
                next = next.max(n + 1);
            }
        }
        Ok(next)
    }

    /// The store's root directory.
    pub fn root(&self) -> &Path {
        &self.shared.root
    }

    /// The directory of the live database.
    pub fn db_dir(&self) -> PathBuf {
        self.shared.read().dir.clone()
    }

    /// The slot this store draws memory from.
    pub fn slot(&self) -> &RocksSlot {
        &self.shared.slot
    }

    /// A RocksDB integer property summed over every column family (e.g.
    /// `rocksdb.cur-size-all-mem-tables`, `rocksdb.estimate-num-keys`), or, for DB-wide
    /// properties such as `rocksdb.block-cache-usage`, the value of the default family.
    ///
    /// # Errors
    /// A RocksDB failure.
    pub fn property_sum(&self, name: &str, per_family: bool) -> Result<u64> {
        let st = self.shared.read();
        let mut total = st
            .db
            .property_int_value(name)
            .map_err(Error::rocks("read property"))?
            .unwrap_or(0);
        if per_family {
            for cf_name in st.cf_of.values() {
                let Some(cf) = st.db.cf_handle(cf_name) else {
                    continue;
                };
                total += st
                    .db
                    .property_int_value_cf(&cf, name)
                    .map_err(Error::rocks("read property"))?
                    .unwrap_or(0);
            }
        }
        Ok(total)
    }

    /// Compacts the whole column family of `table` now (the TTL filter drops expired
    /// entries), after writing the table's pending writes. RocksDB compacts on its own;
    /// this is for tests and tools.
    ///
    /// # Errors
    /// RocksDB failures; [`Error::CorruptMetadata`] for a table never opened.
    pub fn compact_table(&self, table: &str) -> state_api::Result<()> {
        self.flush_pending(table)?;
        let st = self.shared.read();
        let cf = st.table_cf(table)?;
        st.db.compact_range_cf(&cf, None::<&[u8]>, None::<&[u8]>);
        Ok(())
    }

    /// Writes every table's pending writes (the keyed tables' write-behind slots and the
    /// complete map tables' buffers) to RocksDB's memtables now, without flushing them to SST
    /// files: what a native checkpoint does first. For callers that want every committed
    /// change in RocksDB at a point of their choosing (a benchmark's end of the timed part).
    ///
    /// # Errors
    /// RocksDB failures; `BundleState` while a keyed table is in an open bundle.
    pub fn write_pending(&self) -> state_api::Result<()> {
        self.shared.flush_write_behind()
    }

    /// Writes the table's pending writes and flushes the memtables of `table` to an SST
    /// file (for tests and tools; the store itself never forces flushes).
    ///
    /// # Errors
    /// RocksDB failures.
    pub fn flush_table(&self, table: &str) -> state_api::Result<()> {
        self.flush_pending(table)?;
        let st = self.shared.read();
        let cf = st.table_cf(table)?;
        st.db
            .flush_cf(&cf)
            .map_err(crate::error::rocks_api("flush"))
    }

    /// Writes the pending writes of table `table` (if open) to RocksDB (`BundleState` while
    /// a keyed table is in a bundle; a map table's buffer holds committed writes only and
    /// is written at any time).
    fn flush_pending(&self, table: &str) -> state_api::Result<()> {
        let slot = self
            .shared
            .write_behind
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(table)
            .and_then(Weak::upgrade);
        match slot {
            Some(slot) => slot.flush(),
            None => Ok(()),
        }
    }

    /// Records table `name` (column description `columns`, `ttl`) in the store: checks an
    /// existing table's stored columns **before** recording anything, or creates its column
    /// family and metadata (the family is dropped again when the metadata write fails).
    ///
    /// # Errors
    /// [`Error::TableSchemaMismatch`]; RocksDB failures. On error nothing is recorded.
    pub(crate) fn register_table(
        &self,
        name: &str,
        columns: &str,
        ttl: Option<TtlConfig>,
    ) -> Result<()> {
        let ttl_millis = ttl.map(|t| t.ttl_millis());
        let columns_key = format!("{META_TABLE_COLUMNS_PREFIX}{name}");
        let existing = self.shared.read().cf_of.get(name).cloned();
        if let Some(cf) = existing {
            let st = self.shared.read();
            match get_meta(&st.db, columns_key.as_bytes())? {
                Some(found) if found != columns.as_bytes() => {
                    return Err(Error::TableSchemaMismatch {
                        table: name.to_owned(),
                        expected: columns.to_owned(),
                        found: String::from_utf8_lossy(&found).into_owned(),
                    });
                }
                Some(_) => {}
                None => put_meta(
                    &st.db,
                    &self.shared.write_options,
                    columns_key.as_bytes(),
                    columns.as_bytes(),
                )?,
            }
            if let Some(cell) = st.ttl_cells.get(&cf) {
                cell.set(ttl_millis);
            }
        } else {
            let cf = self.shared.create_cf(ttl_millis)?;
            let mut st = self.shared.write();
            let written = put_meta(
                &st.db,
                &self.shared.write_options,
                columns_key.as_bytes(),
                columns.as_bytes(),
            )
            .and_then(|()| {
                put_meta(
                    &st.db,
                    &self.shared.write_options,
                    format!("{META_TABLE_CF_PREFIX}{name}").as_bytes(),
                    cf.as_bytes(),
                )
            });
            if let Err(e) = written {
                drop(st);
                self.shared.drop_cf(&cf);
                return Err(e);
            }
            st.cf_of.insert(name.to_owned(), cf);
        }
        self.shared
            .tables
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                name.to_owned(),
                TableInfo {
                    columns: columns.to_owned(),
                    ttl_millis,
                },
            );
        Ok(())
    }
}

impl KeyedStateStore for RocksStore {
    type Table<C: ValueCodec> = RocksKeyedTable<C>;

    fn config(&self) -> &StoreConfig {
        &self.config
    }

    fn open_table<C: ValueCodec>(
        &mut self,
        name: &str,
        codec: C,
        ttl: Option<TtlConfig>,
    ) -> state_api::Result<RocksKeyedTable<C>> {
        self.names.check_free(name)?;
        let fields = codec.fields();
        // Every fallible step of the table itself before the store records it.
        RowCodec::try_new(name, &fields)?;
        self.register_table(name, &describe_fields(&fields), ttl)?;
        let core = TableCore::new(name, codec, ttl, &self.config, Arc::clone(&self.shared))?;
        self.names.register(name)?;
        let table = RocksKeyedTable::new(core);
        self.shared.register_pending(name, table.pending_writes());
        Ok(table)
    }
}
