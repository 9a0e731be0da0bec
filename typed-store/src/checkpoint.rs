//! Native snapshots: RocksDB checkpoints, their verification before use, and the native
//! restore that swaps a verified copy in.
//!
//! The granularity is the store's ([`state_api::NativeSnapshot`]): one checkpoint holds every
//! table of the store (keyed, map and timer tables, each a column family) at one sequence
//! number, and a restore replaces them all or none.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};

use rocksdb::ReadOptions;
use rocksdb::checkpoint::Checkpoint;
use state_api::NativeSnapshot;

use crate::error::{Error, Result};
use crate::format::{META_TABLE_CF_PREFIX, META_TABLE_COLUMNS_PREFIX, TABLE_CF_PREFIX};
use crate::live::{live_dirs, read_live_pointer, write_live_pointer};
use crate::manifest::CheckpointManifest;
use crate::metadata::{get_meta, put_meta};
use crate::store::{DbState, OpenMode, RocksStore, open_db};
use crate::timer::TimerState;
use crate::ttl_filter::TtlCell;

/// Metadata key (default column family) written into every checkpoint: the key-group range
/// of the store that took it, start and end as two `i32` big-endian (8 bytes). A restore
/// refuses a checkpoint without it or of another range.
pub(crate) const META_CHECKPOINT_KEY_GROUPS_KEY: &[u8] =
    b"sfstate.typed-store.checkpoint-key-groups";

/// Refuses (`InvalidCheckpoint`) a checkpoint in `db` whose recorded key-group range is not
/// `range` (or that records none: an older binary's).
pub(crate) fn check_checkpoint_key_groups(
    db: &crate::store::Db,
    range: keygroup::KeyGroupRange,
    path: &Path,
) -> Result<()> {
    let recorded = get_meta(db, META_CHECKPOINT_KEY_GROUPS_KEY)?;
    if recorded.as_deref() == Some(&key_groups_value(range)[..]) {
        Ok(())
    } else {
        Err(Error::InvalidCheckpoint {
            path: path.to_owned(),
            reason: "taken from a store owning other key groups (or by an older binary)",
        })
    }
}

/// The value of [`META_CHECKPOINT_KEY_GROUPS_KEY`] for `range`.
fn key_groups_value(range: keygroup::KeyGroupRange) -> [u8; 8] {
    let mut value = [0; 8];
    let (start, end) = value.split_at_mut(4);
    start.copy_from_slice(&range.start().to_be_bytes());
    end.copy_from_slice(&range.end().to_be_bytes());
    value
}

/// A native snapshot of a [`RocksStore`]: a RocksDB checkpoint directory (SST files hard-linked
/// where the file system allows, so consecutive checkpoints share unchanged SST files).
/// Belongs to the binary (on-disk format) that wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RocksCheckpoint {
    pub(crate) dir: PathBuf,
}

impl RocksCheckpoint {
    /// A checkpoint in `dir` (as written by [`RocksStore::checkpoint_to`]).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The checkpoint's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Reads every entry of every table, verifying block checksums and without filling the
/// cache, so that a damaged checkpoint is refused before it replaces anything.
pub(crate) fn verify_tables(state: &DbState) -> Result<()> {
    for cf_name in state.cf_of.values() {
        let cf = state
            .db
            .cf_handle(cf_name)
            .ok_or_else(|| Error::InvalidCheckpoint {
                path: state.dir.clone(),
                reason: "a table's column family is missing",
            })?;
        let mut read = ReadOptions::default();
        read.fill_cache(false);
        read.set_verify_checksums(true);
        let mut it = state.db.raw_iterator_cf_opt(&cf, read);
        it.seek_to_first();
        while it.valid() {
            it.next();
        }
        it.status().map_err(Error::rocks("verify checkpoint"))?;
    }
    Ok(())
}

/// Copies a checkpoint into `target`: SST files (immutable) hard-linked when possible, the
/// rest (manifest, options, CURRENT) copied.
pub(crate) fn materialise_checkpoint(checkpoint: &Path, target: &Path) -> Result<()> {
    fs::create_dir_all(target).map_err(Error::io(target))?;
    for entry in fs::read_dir(checkpoint).map_err(Error::io(checkpoint))? {
        let entry = entry.map_err(Error::io(checkpoint))?;
        let from = entry.path();
        let to = target.join(entry.file_name());
        let is_sst = from.extension().is_some_and(|e| e == "sst");
        if !(is_sst && fs::hard_link(&from, &to).is_ok()) {
            fs::copy(&from, &to).map_err(Error::io(&from))?;
        }
    }
    Ok(())
}

impl RocksStore {
    /// [`state_api::Error::BundleState`] while any table has an open bundle or any open timer
    /// table has uncommitted changes: a native snapshot or restore holds committed state
    /// only.
    fn check_committed(&self, operation: &'static str) -> state_api::Result<()> {
        let refused = state_api::Error::BundleState {
            operation,
            requires_open: false,
        };
        if self.shared.open_bundles.load(Ordering::SeqCst) > 0 {
            return Err(refused);
        }
        let timers = self
            .shared
            .timer_tables
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for weak in timers.values() {
            if let Some(cell) = weak.upgrade()
                && cell
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .has_pending()
            {
                return Err(refused);
            }
        }
        Ok(())
    }

    /// Writes a RocksDB checkpoint of the committed state of every table into `dir` (which
    /// must not exist).
    ///
    /// # Errors
    /// [`state_api::Error::BundleState`] while any table has an open bundle or a timer table
    /// uncommitted changes; RocksDB and I/O failures.
    pub fn checkpoint_to(&self, dir: impl AsRef<Path>) -> state_api::Result<RocksCheckpoint> {
        self.check_committed("native_snapshot")?;
        let dir = dir.as_ref();
        // Committed values still pending in the keyed tables go first.
        self.shared.flush_write_behind()?;
        let st = self.shared.read();
        put_meta(
            &st.db,
            &self.shared.write_options,
            META_CHECKPOINT_KEY_GROUPS_KEY,
            &key_groups_value(self.config.key_groups()),
        )?;
        // Re-write the table map so the checkpoint holds it even if a best-effort write after
        // a restore failed.
        for (table, cf) in &st.cf_of {
            put_meta(
                &st.db,
                &self.shared.write_options,
                format!("{META_TABLE_CF_PREFIX}{table}").as_bytes(),
                cf.as_bytes(),
            )?;
        }
        if let Some(parent) = dir.parent() {
            fs::create_dir_all(parent).map_err(Error::io(parent))?;
        }
        // Commits need `&mut` tables of this store: nothing writes between here and the
        // checkpoint, so this is the checkpoint's sequence number.
        let sequence = st.db.latest_sequence_number();
        // With the WAL off, the checkpoint flushes the memtables (log_size_for_flush = 0).
        Checkpoint::new(&st.db)
            .and_then(|c| c.create_checkpoint(dir))
            .map_err(crate::error::rocks_api("checkpoint"))?;
        // Written last: a checkpoint without its manifest is incomplete and refused.
        CheckpointManifest::of_dir(dir, sequence)?.write(dir)?;
        Ok(RocksCheckpoint {
            dir: dir.to_owned(),
        })
    }
}

impl NativeSnapshot for RocksStore {
    type Snapshot = RocksCheckpoint;

    /// A RocksDB checkpoint of every table's committed state in
    /// `<root>/checkpoints/chk-<n>/`.
    fn native_snapshot(&mut self) -> state_api::Result<RocksCheckpoint> {
        let n = self.shared.checkpoints.fetch_add(1, Ordering::SeqCst);
        let dir = self
            .shared
            .root
            .join("checkpoints")
            .join(format!("chk-{n}"));
        self.checkpoint_to(dir)
    }

    /// Opens the checkpoint as a new live database (`live-<n+1>/`), checks that it was taken
    /// from a store of this max parallelism and key-group range and that every table open
    /// here has the checkpoint's columns (else `InvalidNativeSnapshot`), re-creates the tables
    /// the checkpoint does not hold (empty), reloads every timer table's timers from it, points
    /// `LIVE` at it and only then swaps it in; every table of this store then reads the
    /// checkpoint's state. All or nothing: on any error the new directory is removed and the
    /// old database stays (and stays the one `LIVE` names).
    fn restore_native(&mut self, snapshot: &RocksCheckpoint) -> state_api::Result<()> {
        self.check_committed("restore_native")?;
        let root = self.shared.root.clone();
        let next = live_dirs(&root)?.last().map_or(0, |(n, _)| n + 1);
        let name = format!("live-{next}");
        let dir = root.join(&name);
        let old_name = self
            .shared
            .read()
            .dir
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_owned);
        let prepared = self.prepare_restore(snapshot, &dir).and_then(|prepared| {
            write_live_pointer(&root, &name)
                .map_err(state_api::Error::from)
                .map(|()| prepared)
        });
        let (fresh, timers) = match prepared {
            Ok(prepared) => prepared,
            Err(err) => {
                // `LIVE` may have been renamed before a failed directory fsync: point it
                // back before the new directory goes.
                if read_live_pointer(&root).ok().flatten().as_deref() == Some(name.as_str())
                    && let Some(old) = &old_name
                {
                    let _ = write_live_pointer(&root, old);
                }
                let _ = fs::remove_dir_all(&dir);
                return Err(err);
            }
        };
        let old = std::mem::replace(&mut *self.shared.write(), fresh);
        for (cell, state) in timers {
            *cell.lock().unwrap_or_else(PoisonError::into_inner) = state;
        }
        // The restored state replaces what the keyed tables had not yet written.
        self.shared.discard_write_behind();
        self.shared.generation.fetch_add(1, Ordering::SeqCst);
        let old_dir = old.dir.clone();
        drop(old);
        let _ = fs::remove_dir_all(old_dir);
        Ok(())
    }
}

/// A restored database and the timer sets loaded from it, ready to be swapped in.
type PreparedRestore = (DbState, Vec<(Arc<Mutex<TimerState>>, TimerState)>);

impl RocksStore {
    /// Every fallible step of a native restore into `dir`; on error the caller removes `dir`
    /// (the database opened here is closed when the error returns).
    fn prepare_restore(
        &self,
        snapshot: &RocksCheckpoint,
        dir: &Path,
    ) -> state_api::Result<PreparedRestore> {
        let invalid = |e: Error| state_api::Error::InvalidNativeSnapshot {
            source: Box::new(e),
        };
        materialise_checkpoint(&snapshot.dir, dir).map_err(invalid)?;
        let mut fresh = open_db(
            dir,
            &self.shared.slot,
            &self.shared.clock,
            &self.config,
            OpenMode::Checkpoint,
        )
        .map_err(invalid)?;
        check_checkpoint_key_groups(&fresh.db, self.config.key_groups(), &snapshot.dir)
            .map_err(invalid)?;
        let tables = self
            .shared
            .tables
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        // Tables opened after the checkpoint get an empty family; every table gets its TTL.
        for (table, info) in &tables {
            let cf = if let Some(cf) = fresh.cf_of.get(table) {
                let key = format!("{META_TABLE_COLUMNS_PREFIX}{table}");
                match get_meta(&fresh.db, key.as_bytes()).map_err(invalid)? {
                    Some(found) if found != info.columns.as_bytes() => {
                        return Err(invalid(Error::TableSchemaMismatch {
                            table: table.clone(),
                            expected: info.columns.clone(),
                            found: String::from_utf8_lossy(&found).into_owned(),
                        }));
                    }
                    _ => {}
                }
                cf.clone()
            } else {
                let name = format!("{TABLE_CF_PREFIX}{}", fresh.next_cf);
                fresh.next_cf += 1;
                let cell = TtlCell::new();
                fresh
                    .db
                    .create_cf(&name, &self.shared.cf_options(&cell)?)
                    .map_err(Error::rocks("create column family"))?;
                fresh.ttl_cells.insert(name.clone(), cell);
                put_meta(
                    &fresh.db,
                    &self.shared.write_options,
                    format!("{META_TABLE_COLUMNS_PREFIX}{table}").as_bytes(),
                    info.columns.as_bytes(),
                )?;
                put_meta(
                    &fresh.db,
                    &self.shared.write_options,
                    format!("{META_TABLE_CF_PREFIX}{table}").as_bytes(),
                    name.as_bytes(),
                )?;
                fresh.cf_of.insert(table.clone(), name.clone());
                name
            };
            if let Some(cell) = fresh.ttl_cells.get(&cf) {
                cell.set(info.ttl_millis);
            }
        }
        let open_timers: Vec<(String, Arc<Mutex<TimerState>>)> = self
            .shared
            .timer_tables
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter_map(|(name, weak)| weak.upgrade().map(|cell| (name.clone(), cell)))
            .collect();
        let mut timers = Vec::with_capacity(open_timers.len());
        for (table, cell) in open_timers {
            let loaded = {
                let current = cell.lock().unwrap_or_else(PoisonError::into_inner);
                TimerState::load_like(&current, &fresh, &table)?
            };
            timers.push((cell, loaded));
        }
        Ok((fresh, timers))
    }
}
