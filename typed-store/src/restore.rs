//! Bulk loading of a canonical restore into a staging column family (map and timer tables):
//! large write batches, or one SST file ingested when the rows are many and sorted.

use std::path::PathBuf;
use std::sync::Arc;

use rocksdb::{BoundColumnFamily, IngestExternalFileOptions, SstFileWriter, WriteBatch};
use state_api::Result;

use crate::error::rocks_api;
use crate::store::{DbState, Shared};

/// Bytes of one restore write batch before it is written (bounded staging memory).
const RESTORE_BATCH_BYTES: usize = 8 << 20;

/// Restores of at least this many rows whose keys arrive in ascending order are bulk-loaded
/// by writing one SST file and ingesting it (the keyed table's measured threshold, see the
/// README's `restore_load` figures); others use write batches.
const RESTORE_SST_MIN_ROWS: usize = 10_000;

/// Where a restore hands each `(RocksDB key, stored value)` of a staging column family.
pub(crate) type Sink<'a> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'a;

/// The bulk loader of one staging column family.
enum Loader<'o> {
    /// Large write batches, WAL off.
    Batch(WriteBatch),
    /// One SST file (keys strictly ascending), ingested (moved) at the end.
    Sst {
        writer: SstFileWriter<'o>,
        path: PathBuf,
    },
}

/// Loads `rows` entries into the (empty) staging column family `cf_name`: `fill` hands every
/// `(key, value)` to the sink it is given, in strictly ascending key order when `sorted`.
/// On error nothing of an SST file stays behind; the caller drops the staging family.
///
/// # Errors
/// A RocksDB failure, or the first error of `fill` or of the sink.
pub(crate) fn load_staging(
    shared: &Shared,
    cf_name: &str,
    rows: usize,
    sorted: bool,
    fill: impl FnOnce(&mut Sink<'_>) -> Result<()>,
) -> Result<()> {
    let st = shared.read();
    let cf = st.cf(cf_name)?;
    let mut loader = if sorted && rows >= RESTORE_SST_MIN_ROWS {
        let path = shared.staging_file(cf_name);
        let writer = SstFileWriter::create(&shared.sst_options);
        writer.open(&path).map_err(rocks_api("restore SST open"))?;
        Loader::Sst { writer, path }
    } else {
        Loader::Batch(WriteBatch::default())
    };
    let filled = fill(&mut |key, value| loader.put(&st, &cf, shared, key, value));
    match filled {
        Ok(()) => loader.finish(&st, &cf, shared),
        Err(e) => {
            loader.discard();
            Err(e)
        }
    }
}

impl Loader<'_> {
    fn put(
        &mut self,
        st: &DbState,
        cf: &Arc<BoundColumnFamily<'_>>,
        shared: &Shared,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        match self {
            Loader::Batch(batch) => {
                batch.put_cf(cf, key, value);
                if batch.size_in_bytes() >= RESTORE_BATCH_BYTES {
                    st.db
                        .write_opt(std::mem::take(batch), &shared.write_options)
                        .map_err(rocks_api("restore load"))?;
                }
                Ok(())
            }
            Loader::Sst { writer, .. } => writer.put(key, value).map_err(rocks_api("restore SST")),
        }
    }

    fn finish(self, st: &DbState, cf: &Arc<BoundColumnFamily<'_>>, shared: &Shared) -> Result<()> {
        match self {
            Loader::Batch(batch) => {
                if !batch.is_empty() {
                    st.db
                        .write_opt(batch, &shared.write_options)
                        .map_err(rocks_api("restore load"))?;
                }
                Ok(())
            }
            Loader::Sst { mut writer, path } => {
                let result = writer
                    .finish()
                    .map_err(rocks_api("restore SST finish"))
                    .and_then(|()| {
                        let mut options = IngestExternalFileOptions::default();
                        options.set_move_files(true);
                        st.db
                            .ingest_external_file_cf_opts(cf, &options, vec![&path])
                            .map_err(rocks_api("restore SST ingest"))
                    });
                let _ = std::fs::remove_file(&path);
                result
            }
        }
    }

    fn discard(self) {
        if let Loader::Sst { path, writer } = self {
            drop(writer);
            let _ = std::fs::remove_file(path);
        }
    }
}
