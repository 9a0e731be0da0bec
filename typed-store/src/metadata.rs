//! The store's metadata in the default column family: the format and max-parallelism
//! checks at open, and the raw metadata reads and writes.

use rocksdb::WriteOptions;
use state_api::StoreConfig;

use crate::error::{Error, Result};
use crate::format::{FORMAT_VERSION, META_FORMAT_KEY, META_MAX_PARALLELISM_KEY};
use crate::store::Db;

pub(crate) fn put_meta(
    db: &Db,
    write_options: &WriteOptions,
    key: &[u8],
    value: &[u8],
) -> Result<()> {
    // The default column family (metadata) is the database's own put.
    db.put_opt(key, value, write_options)
        .map_err(Error::rocks("write metadata"))
}

pub(crate) fn get_meta(db: &Db, key: &[u8]) -> Result<Option<Vec<u8>>> {
    db.get(key).map_err(Error::rocks("read metadata"))
}

/// Checks the format and max parallelism of an existing store; writes them into a new one.
pub(crate) fn check_metadata(
    db: &Db,
    write_options: &WriteOptions,
    config: &StoreConfig,
) -> Result<()> {
    // Format and max parallelism: checked on an existing store, written on a new one.
    match get_meta(db, META_FORMAT_KEY)? {
        Some(found) if found != FORMAT_VERSION.as_bytes() => {
            return Err(Error::FormatVersionMismatch {
                expected: FORMAT_VERSION.to_owned(),
                found: String::from_utf8_lossy(&found).into_owned(),
            });
        }
        Some(_) => {}
        None => put_meta(
            db,
            write_options,
            META_FORMAT_KEY,
            FORMAT_VERSION.as_bytes(),
        )?,
    }
    let mp = config.max_parallelism().get();
    match get_meta(db, META_MAX_PARALLELISM_KEY)? {
        Some(found) => {
            let found = <[u8; 4]>::try_from(found.as_slice())
                .map(i32::from_be_bytes)
                .map_err(|_| Error::CorruptMetadata {
                    key: String::from_utf8_lossy(META_MAX_PARALLELISM_KEY).into_owned(),
                })?;
            if found != mp {
                return Err(Error::MaxParallelismMismatch {
                    expected: mp,
                    found,
                });
            }
        }
        None => put_meta(
            db,
            write_options,
            META_MAX_PARALLELISM_KEY,
            &mp.to_be_bytes(),
        )?,
    }
    Ok(())
}
