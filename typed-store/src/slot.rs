//! Slot resources: one LRU block cache and one write-buffer manager per slot, sized with
//! Flink 2.3.0's `RocksDBMemoryControllerUtils` formulas and shared by every store of the slot.

use rocksdb::{BlockBasedOptions, Cache, Options, WriteBufferManager};

use crate::error::{Error, Result};

/// Flink's default write-buffer ratio (`state.backend.rocksdb.memory.write-buffer-ratio`).
pub const DEFAULT_WRITE_BUFFER_RATIO: f64 = 0.5;

/// RocksDB's default write-buffer (memtable) size, 64 MiB.
pub const DEFAULT_WRITE_BUFFER_SIZE: u64 = 64 << 20;

/// RocksDB's smallest write-buffer size: it raises a smaller `write_buffer_size` to this.
pub const MIN_WRITE_BUFFER_SIZE: i64 = 64 << 10;

/// The default write-behind limit of a keyed table ([`RocksSlot::with_write_behind`]):
/// 32 MiB of committed values buffered per table before they are written to RocksDB.
pub const DEFAULT_WRITE_BEHIND_BYTES: usize = 32 << 20;

/// `RocksDBMemoryControllerUtils.calculateActualCacheCapacity(totalMemorySize,
/// writeBufferRatio)`: `(long) ((3 - writeBufferRatio) * totalMemorySize / 3)` in Java double
/// arithmetic, the cast truncating toward zero (and saturating, as Java's does).
#[expect(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    reason = "Java's long-to-double promotion and truncating double-to-long cast, on purpose"
)]
pub fn calculate_actual_cache_capacity(total_memory: i64, write_buffer_ratio: f64) -> i64 {
    ((3.0 - write_buffer_ratio) * total_memory as f64 / 3.0) as i64
}

/// `RocksDBMemoryControllerUtils.calculateWriteBufferManagerCapacity(totalMemorySize,
/// writeBufferRatio)`: `(long) (2 * totalMemorySize * writeBufferRatio / 3)`, where
/// `2 * totalMemorySize` is Java `long` arithmetic (wrapping) before the double multiply.
#[expect(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    reason = "Java's long-to-double promotion and truncating double-to-long cast, on purpose"
)]
pub fn calculate_write_buffer_manager_capacity(total_memory: i64, write_buffer_ratio: f64) -> i64 {
    (2_i64.wrapping_mul(total_memory) as f64 * write_buffer_ratio / 3.0) as i64
}

/// `RocksDBMemoryControllerUtils.calculateRocksDBDefaultArenaBlockSize(writeBufferSize)`:
/// `((writeBufferSize / 8) + 4095) / 4096 * 4096` (RocksDB's default: an eighth of the write
/// buffer, rounded up to 4 KiB).
pub fn calculate_default_arena_block_size(write_buffer_size: i64) -> i64 {
    (write_buffer_size / 8 + 4095) / 4096 * 4096
}

/// `RocksDBMemoryControllerUtils.calculateRocksDBMutableLimit(bufferSize)`:
/// `bufferSize * 7 / 8` (Java `long`, wrapping) — the write-buffer manager flushes once the
/// mutable memtables exceed it.
pub fn calculate_mutable_limit(buffer_size: i64) -> i64 {
    buffer_size.wrapping_mul(7) / 8
}

/// `RocksDBMemoryControllerUtils.validateArenaBlockSize(arenaBlockSize, mutableLimit)`:
/// `arenaBlockSize <= mutableLimit` (otherwise the manager would flush on every arena
/// allocation).
pub fn validate_arena_block_size(arena_block_size: i64, mutable_limit: i64) -> bool {
    arena_block_size <= mutable_limit
}

/// The memory split of one slot, computed with Flink's formulas.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct SlotMemory {
    /// The slot's state-memory budget in bytes.
    pub total_memory: i64,
    /// The share of the budget for write buffers (memtables).
    pub write_buffer_ratio: f64,
    /// The LRU block-cache capacity ([`calculate_actual_cache_capacity`]).
    pub cache_capacity: i64,
    /// The write-buffer-manager capacity ([`calculate_write_buffer_manager_capacity`]); the
    /// manager charges memtable memory to the block cache, so the cache capacity bounds both.
    pub write_buffer_manager_capacity: i64,
    /// The write-buffer size every column family is opened with.
    pub write_buffer_size: i64,
    /// The arena block size: [`calculate_default_arena_block_size`] of the smaller of the
    /// write-buffer size and the manager's capacity.
    pub arena_block_size: i64,
    /// [`calculate_mutable_limit`] of the manager's capacity.
    pub mutable_limit: i64,
}

impl SlotMemory {
    /// The split of `total_memory` with `write_buffer_ratio`, for column families opened with
    /// `write_buffer_size`.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] unless `total_memory > 0`, `0 < write_buffer_ratio < 1` (Flink's
    /// `RocksDBMemoryConfiguration` checks) and `write_buffer_size > 0`, or when the arena
    /// block size fails [`validate_arena_block_size`].
    pub fn try_new(
        total_memory: i64,
        write_buffer_ratio: f64,
        write_buffer_size: i64,
    ) -> Result<Self> {
        if total_memory <= 0 {
            return Err(Error::InvalidOption {
                option: "total_memory",
                reason: "must be positive",
            });
        }
        if !(write_buffer_ratio > 0.0 && write_buffer_ratio < 1.0) {
            return Err(Error::InvalidOption {
                option: "write_buffer_ratio",
                reason: "must be in (0, 1)",
            });
        }
        if write_buffer_size <= 0 {
            return Err(Error::InvalidOption {
                option: "write_buffer_size",
                reason: "must be positive",
            });
        }
        let cache_capacity = calculate_actual_cache_capacity(total_memory, write_buffer_ratio);
        let write_buffer_manager_capacity =
            calculate_write_buffer_manager_capacity(total_memory, write_buffer_ratio);
        let arena_block_size = calculate_default_arena_block_size(
            write_buffer_size.min(write_buffer_manager_capacity),
        );
        let mutable_limit = calculate_mutable_limit(write_buffer_manager_capacity);
        if !validate_arena_block_size(arena_block_size, mutable_limit) {
            return Err(Error::InvalidOption {
                option: "total_memory",
                reason: "too small: the arena block size exceeds the write-buffer manager's mutable limit",
            });
        }
        Ok(Self {
            total_memory,
            write_buffer_ratio,
            cache_capacity,
            write_buffer_manager_capacity,
            write_buffer_size,
            arena_block_size,
            mutable_limit,
        })
    }
}

impl SlotMemory {
    /// The split of `total_memory` for a slot whose stores hold at most `column_families`
    /// column families with memtables in all (every table of every store, plus the staging
    /// family of each canonical restore in progress): as [`try_new`](Self::try_new), with the
    /// write-buffer size lowered to the manager's capacity shared among them, and the arena
    /// block derived from that size.
    ///
    /// Why: the write-buffer manager does not bound memtable memory by its capacity. RocksDB
    /// checks `WriteBufferManager::ShouldFlush` only on the write path of the database that
    /// is writing and then switches that database's memtables; a memtable of an idle store
    /// stays until that store writes again (or checkpoints, which flushes). Each column
    /// family's active memtable grows until its arena reaches the write-buffer size, in
    /// arena-block steps, so the manager's usage is bounded by column families ×
    /// (write-buffer size + one arena block), not by its capacity: 64 stores with 1 MiB write
    /// buffers in a slot whose manager holds 16 MiB reached 26 MiB. With this split, column
    /// families × write-buffer size fits the manager's capacity.
    ///
    /// # Errors
    /// As [`try_new`](Self::try_new); [`Error::InvalidOption`] for zero column families, or
    /// when the manager's share per column family is below [`MIN_WRITE_BUFFER_SIZE`].
    pub fn for_column_families(
        total_memory: i64,
        write_buffer_ratio: f64,
        write_buffer_size: i64,
        column_families: u32,
    ) -> Result<Self> {
        if column_families == 0 {
            return Err(Error::InvalidOption {
                option: "column_families",
                reason: "must be positive",
            });
        }
        let shared = Self::try_new(total_memory, write_buffer_ratio, write_buffer_size)?;
        let per_family = shared.write_buffer_manager_capacity / i64::from(column_families);
        if per_family < MIN_WRITE_BUFFER_SIZE {
            return Err(Error::InvalidOption {
                option: "total_memory",
                reason: "too small for that many column families: each memtable may grow to \
                         RocksDB's minimum write buffer (64 KiB)",
            });
        }
        Self::try_new(
            total_memory,
            write_buffer_ratio,
            write_buffer_size.min(per_family),
        )
    }
}

/// The RocksDB resources of one slot: one LRU block cache and one write-buffer manager
/// (charging memtables to that cache), shared by every [`RocksStore`](crate::RocksStore)
/// opened with this slot. Clones share the same resources.
///
/// Gap: Flink builds the cache with a high-priority pool ratio (default 0.1) for index and
/// filter blocks. rust-rocksdb 0.25 exposes no setter for it (`LruCacheOptions` has only
/// capacity and shard bits), so RocksDB's default ratio of the LRU cache applies.
#[derive(Clone)]
pub struct RocksSlot {
    memory: SlotMemory,
    cache: Cache,
    write_buffer_manager: WriteBufferManager,
    memtable: MemtableOptions,
    write_behind: usize,
}

/// Memtable settings of every column family of a slot (RocksDB options beyond Flink's
/// formulas; the defaults were chosen by measurement, see the crate README).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct MemtableOptions {
    /// Update a key's memtable entry in place when the new value is not larger
    /// (`inplace_update_support`; needs `allow_concurrent_memtable_write` off, which this
    /// sets). Keeps one version per key in the memtable instead of one per bundle. Defaults
    /// to off.
    pub inplace_updates: bool,
    /// `memtable_prefix_bloom_size_ratio` with whole-key filtering: a bloom filter over the
    /// memtable's keys that lets a read of an absent key skip the skip-list search. 0 turns
    /// it off. Defaults to 0.
    pub bloom_ratio: f64,
    /// Inserts continue from where the previous insert into the memtable ended
    /// (`memtable_insert_with_hint_prefix_extractor` = `rocksdb.FixedPrefix.0`: one insert
    /// hint per memtable, which RocksDB's skip list fixes up partially, climbing only as many
    /// levels as separate the new key from the previous one). Without it a key that does not
    /// land in the previous key's gap searches the list from the top. Every write of this
    /// crate's tables comes in ascending key order (a commit, a write-behind flush, a
    /// restore), where the partial fix-up pays; measured in the crate README. Defaults to
    /// on.
    pub sequential_insert_hint: bool,
}

impl Default for MemtableOptions {
    fn default() -> Self {
        Self {
            inplace_updates: false,
            bloom_ratio: 0.0,
            sequential_insert_hint: true,
        }
    }
}

/// The option string of [`MemtableOptions::sequential_insert_hint`]: a prefix of no bytes,
/// so every key shares the memtable's one hint. (The C API has no setter for it; the option
/// parser builds RocksDB's own `FixedPrefix` transform.)
const SEQUENTIAL_INSERT_HINT: &str =
    "memtable_insert_with_hint_prefix_extractor=rocksdb.FixedPrefix.0";

impl std::fmt::Debug for RocksSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksSlot")
            .field("memory", &self.memory)
            .finish_non_exhaustive()
    }
}

impl RocksSlot {
    /// The resources of a slot with a state-memory budget of `total_memory` bytes, Flink's
    /// default write-buffer ratio (0.5) and RocksDB's default write-buffer size (64 MiB).
    ///
    /// # Errors
    /// See [`SlotMemory::try_new`].
    pub fn try_new(total_memory: u64) -> Result<Self> {
        Self::with_memory(SlotMemory::try_new(
            i64::try_from(total_memory).unwrap_or(i64::MAX),
            DEFAULT_WRITE_BUFFER_RATIO,
            i64::try_from(DEFAULT_WRITE_BUFFER_SIZE).unwrap_or(i64::MAX),
        )?)
    }

    /// The resources for an explicit memory split.
    ///
    /// # Errors
    /// Never at present; fallible for future checks.
    pub fn with_memory(memory: SlotMemory) -> Result<Self> {
        let cache = Cache::new_lru_cache(usize::try_from(memory.cache_capacity).unwrap_or(0));
        let write_buffer_manager = WriteBufferManager::new_write_buffer_manager_with_cache(
            usize::try_from(memory.write_buffer_manager_capacity).unwrap_or(0),
            false,
            cache.clone(),
        );
        Ok(Self {
            memory,
            cache,
            write_buffer_manager,
            memtable: MemtableOptions::default(),
            write_behind: DEFAULT_WRITE_BEHIND_BYTES,
        })
    }

    /// Sets the memtable options of the slot's column families.
    #[must_use]
    pub fn with_memtable(mut self, memtable: MemtableOptions) -> Self {
        self.memtable = memtable;
        self
    }

    /// The memtable options.
    pub fn memtable(&self) -> &MemtableOptions {
        &self.memtable
    }

    /// Sets the write-behind limit of every keyed table, and of every complete map table
    /// (whose buffer holds encoded writes, `RocksMapTable`), of the slot's stores: committed
    /// values are buffered in host memory (charged to the store's memory pool) up to `bytes`
    /// per table and written to RocksDB when the buffer is full, the pool refuses its growth
    /// or is left more than half used by a commit, or something reads RocksDB as a whole
    /// (native checkpoint, canonical export, TTL sweep, closing the store). A key committed in many bundles is written once per flush instead
    /// of once per bundle. `0` writes every commit through to RocksDB (one `WriteBatch` per
    /// bundle). Defaults to [`DEFAULT_WRITE_BEHIND_BYTES`]. See the crate README for
    /// measurements.
    #[must_use]
    pub fn with_write_behind(mut self, bytes: usize) -> Self {
        self.write_behind = bytes;
        self
    }

    /// The write-behind limit per keyed table, in bytes (`0`: write-through).
    pub fn write_behind(&self) -> usize {
        self.write_behind
    }

    /// The memory split.
    pub fn memory(&self) -> &SlotMemory {
        &self.memory
    }

    /// Bytes in the shared block cache, including the memtable memory the write-buffer
    /// manager charges to it (RocksDB's `Cache::GetUsage`).
    pub fn cache_usage(&self) -> usize {
        self.cache.get_usage()
    }

    /// Bytes of cache entries pinned by readers.
    pub fn cache_pinned_usage(&self) -> usize {
        self.cache.get_pinned_usage()
    }

    /// Memtable bytes the shared write-buffer manager accounts for.
    pub fn write_buffer_manager_usage(&self) -> usize {
        self.write_buffer_manager.get_usage()
    }

    /// The write-buffer manager's capacity as RocksDB reports it.
    pub fn write_buffer_manager_capacity(&self) -> usize {
        self.write_buffer_manager.get_buffer_size()
    }

    /// Applies the slot's shared resources to DB options.
    pub(crate) fn apply_db(&self, options: &mut Options) {
        options.set_write_buffer_manager(&self.write_buffer_manager);
        if self.memtable.inplace_updates {
            options.set_allow_concurrent_memtable_write(false);
        }
    }

    /// The options every column family (and the database) starts from: RocksDB's defaults,
    /// with the memtable insert hint when [`MemtableOptions::sequential_insert_hint`] is on.
    /// Built first, before anything else is set, because the option parser returns new
    /// options (the settings made through the Rust API would not carry over).
    ///
    /// # Errors
    /// [`Error::Rocks`] if RocksDB refuses the option string.
    pub(crate) fn base_options(&self) -> Result<Options> {
        if !self.memtable.sequential_insert_hint {
            return Ok(Options::default());
        }
        Options::default()
            .get_options_from_string(SEQUENTIAL_INSERT_HINT)
            .map_err(Error::rocks("memtable insert hint option"))
    }

    /// Applies the slot's sizing and block cache to column-family options (as Flink does with
    /// shared memory: index and filter blocks live in the cache, top-level ones pinned).
    pub(crate) fn apply_cf(&self, options: &mut Options) {
        options.set_write_buffer_size(usize::try_from(self.memory.write_buffer_size).unwrap_or(0));
        options.set_arena_block_size(usize::try_from(self.memory.arena_block_size).unwrap_or(0));
        if self.memtable.inplace_updates {
            options.set_inplace_update_support(true);
        }
        if self.memtable.bloom_ratio > 0.0 {
            options.set_memtable_prefix_bloom_ratio(self.memtable.bloom_ratio);
            options.set_memtable_whole_key_filtering(true);
        }
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&self.cache);
        table.set_cache_index_and_filter_blocks(true);
        table.set_cache_index_and_filter_blocks_with_high_priority(true);
        table.set_pin_top_level_index_and_filter(true);
        table.set_bloom_filter(10.0, false);
        options.set_block_based_table_factory(&table);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flink_defaults_split_the_budget() {
        let m = SlotMemory::try_new(300 << 20, 0.5, 64 << 20).unwrap();
        assert_eq!(m.cache_capacity, 250 << 20);
        assert_eq!(m.write_buffer_manager_capacity, 100 << 20);
        assert_eq!(m.arena_block_size, 8 << 20);
        assert_eq!(m.mutable_limit, (100 << 20) * 7 / 8);
        let small = SlotMemory::try_new(3 << 20, 0.5, 64 << 20).unwrap();
        assert_eq!(
            small.arena_block_size,
            calculate_default_arena_block_size(1 << 20)
        );
        assert!(SlotMemory::try_new(0, 0.5, 1).is_err());
        // 192 column families share a 16 MiB manager: 85 KiB write buffers, 12 KiB arenas.
        let shared = SlotMemory::for_column_families(48 << 20, 0.5, 1 << 20, 192).unwrap();
        assert_eq!(shared.write_buffer_manager_capacity, 16 << 20);
        assert_eq!(shared.write_buffer_size, (16 << 20) / 192);
        assert_eq!(shared.arena_block_size, 12 << 10);
        assert!(shared.write_buffer_size * 192 <= shared.write_buffer_manager_capacity);
        // Few families keep the requested size; a share below RocksDB's minimum is refused.
        let few = SlotMemory::for_column_families(48 << 20, 0.5, 1 << 20, 4).unwrap();
        assert_eq!(few.write_buffer_size, 1 << 20);
        assert!(SlotMemory::for_column_families(48 << 20, 0.5, 1 << 20, 257).is_err());
        assert!(SlotMemory::for_column_families(48 << 20, 0.5, 1 << 20, 256).is_ok());
        assert!(SlotMemory::for_column_families(48 << 20, 0.5, 1 << 20, 0).is_err());
        assert!(SlotMemory::try_new(1, 1.0, 1).is_err());
    }
}
