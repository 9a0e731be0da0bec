//! The in-memory container.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::Container;
use crate::error::{Error, Result};

/// A [`Container`] in memory: a committed generation and, while a snapshot is being written,
/// a generation being written, each a `BTreeMap` of key groups plus a manifest. Committing
/// swaps one value, so it is trivially atomic.
///
/// The `set_*_raw` methods edit the generation the getters read, bypassing every check: a
/// way for tests to model a damaged, partially lost or re-sealed snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryContainer {
    committed: Generation,
    writing: Option<Generation>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Generation {
    key_groups: BTreeMap<u32, StoredKeyGroup>,
    manifest: Option<Vec<u8>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct StoredKeyGroup {
    header: Vec<u8>,
    chunks: Vec<Vec<u8>>,
}

impl MemoryContainer {
    /// An empty container.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a generation is being written (begun and not yet committed).
    pub fn is_writing(&self) -> bool {
        self.writing.is_some()
    }

    fn view(&self) -> &Generation {
        self.writing.as_ref().unwrap_or(&self.committed)
    }

    fn view_mut(&mut self) -> &mut Generation {
        self.writing.as_mut().unwrap_or(&mut self.committed)
    }

    /// The generation being written; an implicit begin starts from the committed key groups
    /// (without their manifest).
    fn writing(&mut self) -> &mut Generation {
        let committed = &self.committed;
        self.writing.get_or_insert_with(|| Generation {
            key_groups: committed.key_groups.clone(),
            manifest: None,
        })
    }

    /// Overwrites one stored chunk in place, leaving the header alone. `None` removes the
    /// chunk and every later one; chunks past the stored count are appended (an empty
    /// placeholder fills any gap).
    pub fn set_chunk_raw(&mut self, key_group: u32, index: u32, chunk: Option<Vec<u8>>) {
        let stored = self.view_mut().key_groups.entry(key_group).or_default();
        let index = index as usize;
        match chunk {
            Some(bytes) => {
                if stored.chunks.len() <= index {
                    stored.chunks.resize(index + 1, Vec::new());
                }
                if let Some(slot) = stored.chunks.get_mut(index) {
                    *slot = bytes;
                }
            }
            None => stored.chunks.truncate(index),
        }
    }

    /// Overwrites a stored header in place (see [`set_chunk_raw`](Self::set_chunk_raw)).
    pub fn set_header_raw(&mut self, key_group: u32, header: Vec<u8>) {
        self.view_mut()
            .key_groups
            .entry(key_group)
            .or_default()
            .header = header;
    }

    /// Replaces (`Some`) or removes (`None`) the manifest of the generation the getters read
    /// (see [`set_chunk_raw`](Self::set_chunk_raw)).
    pub fn set_manifest_raw(&mut self, manifest: Option<Vec<u8>>) {
        self.view_mut().manifest = manifest;
    }

    /// Copies what is stored for key group `from` to key group `to` (replacing `to`'s), in the
    /// generation the getters read; a no-op when `from` holds nothing.
    pub fn copy_key_group_raw(&mut self, from: u32, to: u32) {
        let view = self.view_mut();
        if let Some(stored) = view.key_groups.get(&from).cloned() {
            view.key_groups.insert(to, stored);
        }
    }
}

impl Container for MemoryContainer {
    fn put_key_group(&mut self, key_group: u32, header: &[u8], chunks: &[&[u8]]) -> Result<()> {
        let stored = StoredKeyGroup {
            header: header.to_vec(),
            chunks: chunks.iter().map(|c| c.to_vec()).collect(),
        };
        self.writing().key_groups.insert(key_group, stored);
        Ok(())
    }

    fn get_header(&self, key_group: u32) -> Result<Option<Cow<'_, [u8]>>> {
        Ok(self
            .view()
            .key_groups
            .get(&key_group)
            .map(|kg| Cow::Borrowed(kg.header.as_slice())))
    }

    fn get_chunk(&self, key_group: u32, index: u32) -> Result<Option<Cow<'_, [u8]>>> {
        Ok(self
            .view()
            .key_groups
            .get(&key_group)
            .and_then(|kg| kg.chunks.get(index as usize))
            .map(|c| Cow::Borrowed(c.as_slice())))
    }

    fn key_groups(&self) -> Result<Vec<u32>> {
        Ok(self.view().key_groups.keys().copied().collect())
    }

    fn remove_key_group(&mut self, key_group: u32) -> Result<()> {
        self.writing().key_groups.remove(&key_group);
        Ok(())
    }

    fn begin_generation(&mut self) -> Result<()> {
        self.writing = Some(Generation::default());
        Ok(())
    }

    fn commit_generation(&mut self, manifest: &[u8]) -> Result<()> {
        let mut generation = self.writing.take().ok_or(Error::NotWriting)?;
        generation.manifest = Some(manifest.to_vec());
        self.committed = generation;
        Ok(())
    }

    fn get_manifest(&self) -> Result<Option<Cow<'_, [u8]>>> {
        Ok(self.view().manifest.as_deref().map(Cow::Borrowed))
    }
}
