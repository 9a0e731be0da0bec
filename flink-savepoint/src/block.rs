//! Key-group blocks of a keyed-state stream (FORMAT.md 5.4 and 5.5).
//!
//! ```text
//! u16 firstStateId
//! repeat:
//!     i32 n ; n bytes key        key[0] bit 7 = META_DATA_FOLLOWS on a state's last entry
//!     i32 m ; m bytes value
//!     if the flag was set: u16 next state id, or FFFF = end of the block
//! key = kgPrefix (1 byte if max parallelism <= 128, else 2 bytes BE) ‖ key ‖ namespace
//! ```
//!
//! A reserved entry is `prefix(kg) ‖ i32 kg ‖ 00` (the synthetic key is the key group, the
//! namespace `VoidNamespace`), its value `i32 (n + 4) ‖ i32 n ‖ n bytes`. Timer entries
//! (priority queues) have empty values; other states' entries are skipped by their frame.
//! Values are not read here (only the header's): their location is recorded.

use std::collections::BTreeMap;

use sfcs_format::{FIXED_HEADER_LEN, MAX_OPERATOR_ID_LEN};

use crate::error::{Error, Result};
use crate::input::Input;
use crate::proxy::{StateInfo, StateKind};
use crate::snappy::SnappyReader;

/// The state id that ends a block.
const END_OF_KEY_GROUP: u16 = 0xFFFF;
/// `FullSnapshotUtil`'s `META_DATA_FOLLOWS` flag, bit 7 of the key's first byte.
pub(crate) const META_DATA_FOLLOWS: u8 = 0x80;
/// Largest valid SFCS header.
pub(crate) const MAX_HEADER_LEN: usize = FIXED_HEADER_LEN + MAX_OPERATOR_ID_LEN;

/// Where a value's bytes start in a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loc {
    /// Stream position of the first byte (uncompressed stream).
    Plain(u64),
    /// Inside a Snappy-framed block: the frame chunk holding the first byte and the bytes
    /// of that chunk's output before it.
    Snappy {
        /// Stream position of the frame chunk's type byte.
        chunk: u64,
        /// Decompressed bytes to skip in that chunk.
        skip: u32,
    },
}

/// A located value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ValueRef {
    pub(crate) loc: Loc,
    pub(crate) len: u32,
}

/// The reserved entries of one key group.
#[derive(Debug, Default)]
pub(crate) struct Reserved {
    /// The header value's bytes and location.
    pub(crate) header: Option<(ValueRef, Vec<u8>)>,
    /// Chunk index → location.
    pub(crate) chunks: BTreeMap<u32, ValueRef>,
}

/// Decompressed or plain bytes of a block.
pub(crate) enum BlockSource<'a> {
    /// An uncompressed stream.
    Plain(&'a mut Input),
    /// A Snappy-framed block.
    Snappy(SnappyReader<'a>),
}

impl BlockSource<'_> {
    pub(crate) fn read_into(&mut self, buf: &mut [u8], what: &'static str) -> Result<()> {
        match self {
            BlockSource::Plain(i) => i.read_into(buf, what),
            BlockSource::Snappy(s) => s.read_into(buf, what),
        }
    }

    pub(crate) fn skip(&mut self, n: u64, what: &'static str) -> Result<()> {
        match self {
            BlockSource::Plain(i) => i.skip(n, what),
            BlockSource::Snappy(s) => s.skip(n, what),
        }
    }

    fn mark(&self) -> Loc {
        match self {
            BlockSource::Plain(i) => Loc::Plain(i.position()),
            BlockSource::Snappy(s) => {
                let (chunk, skip) = s.mark();
                Loc::Snappy { chunk, skip }
            }
        }
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let mut buf = [0_u8; N];
        self.read_into(&mut buf, what)?;
        Ok(buf)
    }

    fn u16(&mut self, what: &'static str) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }

    fn len32(&mut self, what: &'static str) -> Result<u32> {
        let v = i32::from_be_bytes(self.array(what)?);
        u32::try_from(v).map_err(|_| Error::NegativeLength {
            what,
            value: i64::from(v),
        })
    }
}

/// Reads the block of `key_group` and returns its reserved entries.
pub(crate) fn scan(
    src: &mut BlockSource<'_>,
    key_group: u32,
    prefix_bytes: u32,
    states: &[StateInfo],
) -> Result<Reserved> {
    let num_states = u16::try_from(states.len()).unwrap_or(u16::MAX);
    let state_at = |state_id: u16| {
        states
            .get(usize::from(state_id))
            .ok_or(Error::StateIdOutOfRange {
                key_group,
                state_id,
                num_states,
            })
    };
    let first = src.u16("first state id")?;
    if first == END_OF_KEY_GROUP {
        return Err(Error::EmptyBlock { key_group });
    }
    let mut state = state_at(first)?;
    let mut out = Reserved::default();
    loop {
        let key_len = src.len32("key length")?;
        if key_len < prefix_bytes {
            return Err(Error::KeyTooShort {
                key_group,
                length: key_len,
            });
        }
        let flagged = entry(src, key_group, prefix_bytes, key_len, state, &mut out)?;
        if flagged {
            let next = src.u16("next state id")?;
            if next == END_OF_KEY_GROUP {
                return Ok(out);
            }
            state = state_at(next)?;
        }
    }
}

/// Reads one entry (after its key length); returns whether the key carried the flag.
fn entry(
    src: &mut BlockSource<'_>,
    key_group: u32,
    prefix_bytes: u32,
    key_len: u32,
    state: &StateInfo,
    out: &mut Reserved,
) -> Result<bool> {
    let [b0, b1]: [u8; 2] = if prefix_bytes == 1 {
        let [b] = src.array::<1>("key-group prefix")?;
        [b, 0]
    } else {
        src.array("key-group prefix")?
    };
    let flagged = b0 & META_DATA_FOLLOWS != 0;
    let cleared = b0 & !META_DATA_FOLLOWS;
    let prefix = if prefix_bytes == 1 {
        u32::from(cleared)
    } else {
        u32::from(u16::from_be_bytes([cleared, b1]))
    };
    if prefix != key_group {
        return Err(Error::KeyGroupPrefix {
            key_group,
            state: state.name.clone(),
            found: prefix,
        });
    }
    let rest = key_len - prefix_bytes;
    match state.kind {
        StateKind::Header | StateKind::Chunk(_) => {
            reserved_entry(src, key_group, rest, state, out)?;
        }
        StateKind::Refused => {
            return Err(Error::StreamFusionV2Entry {
                key_group,
                state: state.name.clone(),
            });
        }
        StateKind::PriorityQueue => {
            src.skip(u64::from(rest), "timer key")?;
            let length = src.len32("value length")?;
            if length != 0 {
                return Err(Error::TimerValue {
                    key_group,
                    state: state.name.clone(),
                    length: i64::from(length),
                });
            }
        }
        StateKind::Other => {
            src.skip(u64::from(rest), "key")?;
            let length = src.len32("value length")?;
            src.skip(u64::from(length), "value")?;
        }
    }
    Ok(flagged)
}

/// Reads a reserved entry's key rest (`rest` bytes after the prefix) and value.
fn reserved_entry(
    src: &mut BlockSource<'_>,
    key_group: u32,
    rest: u32,
    state: &StateInfo,
    out: &mut Reserved,
) -> Result<()> {
    let bad_key = || Error::ReservedKey {
        key_group,
        state: state.name.clone(),
    };
    if rest != 5 {
        return Err(bad_key());
    }
    let [k0, k1, k2, k3, ns] = src.array("reserved key")?;
    if u32::from_be_bytes([k0, k1, k2, k3]) != key_group || ns != 0 {
        return Err(bad_key());
    }
    let outer = src.len32("value length")?;
    let inner = if outer >= 4 {
        src.len32("reserved value length")?
    } else {
        u32::MAX
    };
    if u64::from(inner) + 4 != u64::from(outer) {
        return Err(Error::ReservedValueLength {
            key_group,
            state: state.name.clone(),
            outer: i64::from(outer),
            inner: i64::from(inner),
        });
    }
    let value = ValueRef {
        loc: src.mark(),
        len: inner,
    };
    let duplicate = || Error::DuplicateReservedEntry {
        key_group,
        state: state.name.clone(),
    };
    if let StateKind::Chunk(index) = state.kind {
        src.skip(u64::from(inner), "chunk value")?;
        if out.chunks.insert(index, value).is_some() {
            return Err(duplicate());
        }
    } else {
        let len = usize::try_from(inner).unwrap_or(usize::MAX);
        if len > MAX_HEADER_LEN {
            return Err(Error::HeaderTooLarge {
                key_group,
                length: inner,
                max: MAX_HEADER_LEN,
            });
        }
        let mut bytes = vec![0_u8; len];
        src.read_into(&mut bytes, "header value")?;
        if out.header.replace((value, bytes)).is_some() {
            return Err(duplicate());
        }
    }
    Ok(())
}
