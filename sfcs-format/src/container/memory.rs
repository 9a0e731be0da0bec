//! The in-memory container.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::Container;
use crate::error::Result;

/// A [`Container`] in a `BTreeMap`: the header and chunks of each key group, owned.
/// Replacing a key group swaps one map entry, so it is trivially atomic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryContainer {
    key_groups: BTreeMap<u32, StoredKeyGroup>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct StoredKeyGroup {
    header: Vec<u8>,
    chunks: Vec<Vec<u8>>,
}

impl MemoryContainer {
    /// An empty container.
    pub fn new() -> Self {
        Self::default()
    }

    /// Overwrites one stored chunk in place, leaving the header alone: a way for tests to
    /// model a corrupted or partially lost snapshot. `None` removes the chunk; chunks past the
    /// stored count are appended (an empty placeholder fills any gap).
    pub fn set_chunk_raw(&mut self, key_group: u32, index: u32, chunk: Option<Vec<u8>>) {
        let stored = self
            .key_groups
            .entry(key_group)
            .or_insert_with(|| StoredKeyGroup {
                header: Vec::new(),
                chunks: Vec::new(),
            });
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
        self.key_groups
            .entry(key_group)
            .or_insert_with(|| StoredKeyGroup {
                header: Vec::new(),
                chunks: Vec::new(),
            })
            .header = header;
    }
}

impl Container for MemoryContainer {
    fn put_key_group(&mut self, key_group: u32, header: &[u8], chunks: &[&[u8]]) -> Result<()> {
        let stored = StoredKeyGroup {
            header: header.to_vec(),
            chunks: chunks.iter().map(|c| c.to_vec()).collect(),
        };
        self.key_groups.insert(key_group, stored);
        Ok(())
    }

    fn get_header(&self, key_group: u32) -> Result<Option<Cow<'_, [u8]>>> {
        Ok(self
            .key_groups
            .get(&key_group)
            .map(|kg| Cow::Borrowed(kg.header.as_slice())))
    }

    fn get_chunk(&self, key_group: u32, index: u32) -> Result<Option<Cow<'_, [u8]>>> {
        Ok(self
            .key_groups
            .get(&key_group)
            .and_then(|kg| kg.chunks.get(index as usize))
            .map(|c| Cow::Borrowed(c.as_slice())))
    }

    fn key_groups(&self) -> Result<Vec<u32>> {
        Ok(self.key_groups.keys().copied().collect())
    }

    fn remove_key_group(&mut self, key_group: u32) -> Result<()> {
        self.key_groups.remove(&key_group);
        Ok(())
    }
}
