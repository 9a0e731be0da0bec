//! Snapshot containers: where the header and chunks of each key group are stored.
//!
//! A host runtime stores a key group's canonical snapshot as reserved keyed states — the
//! header under [`HEADER_STATE_NAME`] and chunk `n` under [`chunk_state_name`]`(n)` — with
//! that key group selected. [`Container`] is that storage seen from this crate;
//! [`MemoryContainer`] and [`DirContainer`] implement it so that tests and command-line tools
//! can write and read canonical snapshots without a host.

mod dir;
mod memory;

use std::borrow::Cow;

pub use dir::{CURRENT_FILE, DirContainer, MANIFEST_FILE};
pub use memory::MemoryContainer;

use crate::envelope::{Envelope, assemble_payload};
use crate::error::{Error, Result};
use crate::header::Header;

/// Name of the reserved state that holds a key group's SFCS header.
pub const HEADER_STATE_NAME: &str = "__streamfusion_canonical_native_state_v1";

/// Name of the reserved state that holds chunk `index` of a key group's payload:
/// `__streamfusion_canonical_native_state_v1_chunk_<index>` (decimal, no padding).
pub fn chunk_state_name(index: u32) -> String {
    format!("{HEADER_STATE_NAME}_chunk_{index}")
}

/// Storage for canonical snapshots, addressed by key group, written in generations.
///
/// A container holds one **committed generation** (the last complete snapshot: envelopes
/// plus the [manifest](crate::Manifest) that describes them) and, while a snapshot is being
/// written through this handle, one **generation being written**.
///
/// Contract for implementations:
/// - [`begin_generation`](Container::begin_generation) starts an empty generation being
///   written, discarding one this handle had not committed. The first
///   [`put_key_group`](Container::put_key_group) or
///   [`remove_key_group`](Container::remove_key_group) after a commit (or on a fresh handle)
///   begins one implicitly, holding the committed generation's envelopes (not its manifest):
///   an edit of the last snapshot that must be committed with a new manifest to count.
/// - [`put_key_group`](Container::put_key_group) replaces everything stored for the key
///   group in the generation being written.
/// - [`commit_generation`](Container::commit_generation) stores the manifest and makes the
///   generation being written the committed one, atomically: a reader (or a restart after a
///   crash) sees the old committed generation or the new one, never a mix, and never a
///   generation without its manifest. It returns [`Error::NotWriting`] when no generation is
///   being written.
/// - The getters read the generation being written when this handle has one, else the
///   committed generation. Another handle never sees a generation that is not committed.
///   They return `Ok(None)` for absent entries and `Err` only for failures of the storage
///   itself; they never interpret the bytes.
pub trait Container {
    /// Stores `header` and `chunks` (chunk 0, 1, … in order) for `key_group`, replacing
    /// whatever was stored for it before.
    ///
    /// # Errors
    /// A storage failure; the key group then holds its previous contents.
    fn put_key_group(&mut self, key_group: u32, header: &[u8], chunks: &[&[u8]]) -> Result<()>;

    /// The header stored for `key_group`.
    ///
    /// # Errors
    /// A storage failure.
    fn get_header(&self, key_group: u32) -> Result<Option<Cow<'_, [u8]>>>;

    /// Chunk `index` stored for `key_group`.
    ///
    /// # Errors
    /// A storage failure.
    fn get_chunk(&self, key_group: u32, index: u32) -> Result<Option<Cow<'_, [u8]>>>;

    /// Every key group that has something stored, ascending.
    ///
    /// # Errors
    /// A storage failure.
    fn key_groups(&self) -> Result<Vec<u32>>;

    /// Removes everything stored for `key_group` (a no-op when there is nothing).
    ///
    /// # Errors
    /// A storage failure.
    fn remove_key_group(&mut self, key_group: u32) -> Result<()>;

    /// Starts an empty generation being written (see the [contract](Container)).
    ///
    /// # Errors
    /// A storage failure.
    fn begin_generation(&mut self) -> Result<()>;

    /// Stores `manifest` with the generation being written and commits it atomically.
    ///
    /// # Errors
    /// [`Error::NotWriting`], or a storage failure (the previous committed generation then
    /// stays the committed one).
    fn commit_generation(&mut self, manifest: &[u8]) -> Result<()>;

    /// The manifest of the generation the getters read (`None` for a generation being
    /// written, or a container that holds no committed snapshot).
    ///
    /// # Errors
    /// A storage failure.
    fn get_manifest(&self) -> Result<Option<Cow<'_, [u8]>>>;
}

/// Encodes `payload` for `operator_id` and stores it as `key_group`'s canonical snapshot.
///
/// # Errors
/// [`Error::Encode`] for input the format cannot hold, or the container's storage error.
pub fn write_envelope<C: Container + ?Sized>(
    container: &mut C,
    key_group: u32,
    operator_id: &str,
    deadline: Option<i64>,
    payload: &[u8],
) -> Result<Header> {
    let envelope = Envelope::encode(operator_id, deadline, payload)?;
    let chunks: Vec<&[u8]> = envelope.chunks().collect();
    container.put_key_group(key_group, envelope.header_bytes(), &chunks)?;
    Ok(envelope.header().clone())
}

/// Reads and validates `key_group`'s canonical snapshot and returns its payload.
///
/// The header is validated first (so the chunk count is trusted before any chunk is read),
/// then chunk `0..chunk_count` are fetched, plus one probe for a surplus chunk. The payload is
/// returned only after every check of [`decode`](crate::decode) passed.
///
/// # Errors
/// [`Error::MissingHeader`] when the key group has no snapshot, [`Error::Envelope`] (carrying
/// the key group) for a snapshot that fails validation, or the container's storage error.
pub fn read_envelope<C: Container + ?Sized>(
    container: &C,
    key_group: u32,
    expected_operator_id: &str,
) -> Result<(Header, Vec<u8>)> {
    let header_bytes = container
        .get_header(key_group)?
        .ok_or(Error::MissingHeader { key_group })?;
    let header = Header::decode(&header_bytes, expected_operator_id)
        .map_err(|source| Error::Envelope { key_group, source })?;
    read_payload(container, key_group, header)
}

/// Fetches chunk `0..=chunk_count` of `key_group` (one probe for a surplus chunk) and
/// validates them against an already validated `header`.
pub(crate) fn read_payload<C: Container + ?Sized>(
    container: &C,
    key_group: u32,
    header: Header,
) -> Result<(Header, Vec<u8>)> {
    let envelope_error = |source| Error::Envelope { key_group, source };
    let mut chunks = Vec::with_capacity(header.chunk_count() as usize + 1);
    for index in 0..=header.chunk_count() {
        chunks.push(container.get_chunk(key_group, index)?);
    }
    let payload =
        assemble_payload(&header, chunks.iter().map(Option::as_deref)).map_err(envelope_error)?;
    Ok((header, payload))
}
