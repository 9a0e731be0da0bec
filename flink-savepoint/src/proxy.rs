//! The keyed-state stream's `KeyedBackendSerializationProxy` and state list
//! (FORMAT.md 5.1 and 5.3).
//!
//! ```text
//! i32  version = 6
//! bool usingKeyGroupCompression              01: every key-group block is Snappy-framed
//! SerializerSnapshot keySerializer           IntSerializer$IntSerializerSnapshot
//! i16  numStates (>= 0)                      the state id is the index in this list
//! numStates × StateMetaInfo:
//!   UTF name ; i32 backendStateType (0 KEY_VALUE, 1 OPERATOR, 2 BROADCAST, 3 PRIORITY_QUEUE)
//!   i32 numOptions ; × { UTF key ; UTF value }
//!   i32 numSerializers ; × { UTF key ; SerializerSnapshot }
//! ```
//!
//! The reserved states' meta is exact: type 0, the one option `KEYED_STATE_TYPE = VALUE`,
//! `VALUE_SERIALIZER = BytePrimitiveArraySerializer` and `NAMESPACE_SERIALIZER =
//! VoidNamespaceSerializer` snapshots, version 3, in any order. For the header state that is
//! 339 bytes:
//!
//! ```text
//! 0028 "__streamfusion_canonical_native_state_v1" 00000000
//! 00000001 0010 "KEYED_STATE_TYPE" 0005 "VALUE"
//! 00000002 0010 "VALUE_SERIALIZER" 00000002 0072 "…BytePrimitiveArraySerializerSnapshot" 00000003
//!          0014 "NAMESPACE_SERIALIZER" 00000002 0056 "…VoidNamespaceSerializerSnapshot" 00000003
//! ```

use std::collections::HashSet;

use sfcs_format::HEADER_STATE_NAME;

use crate::error::{Error, Result};
use crate::input::Input;
use crate::mutf8;
use crate::serializer::{self, BYTES, INT, Snapshot, VOID_NAMESPACE};

/// `KeyedBackendSerializationProxy.VERSION` in Flink 2.3.0.
pub(crate) const PROXY_VERSION: i32 = 6;
/// The prefix of the chunk states' names.
pub(crate) const CHUNK_PREFIX: &str = "__streamfusion_canonical_native_state_v1_chunk_";
/// `StreamFusion`'s v2 states (FORMAT.md 7.3): their meta is accepted, their entries refused.
const V2_STATES: &[&str] = &[
    "__streamfusion_canonical_native_state_v2_header",
    "__streamfusion_canonical_native_state_v2_payload",
];
const KEYED_STATE_TYPE: &str = "KEYED_STATE_TYPE";
const VALUE_SERIALIZER: &str = "VALUE_SERIALIZER";
const NAMESPACE_SERIALIZER: &str = "NAMESPACE_SERIALIZER";
/// Backend state type of a priority queue (timers).
const PRIORITY_QUEUE: i32 = 3;

/// What a listed state is to this reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StateKind {
    /// The SFCS header state.
    Header,
    /// Chunk `n`.
    Chunk(u32),
    /// A `StreamFusion` v2 state, or a name with the chunk prefix that is not `_chunk_<n>`
    /// in canonical decimal: refused when it has entries.
    Refused,
    /// A priority queue (timers): entries have empty values.
    PriorityQueue,
    /// Any other state: entries skipped by their frame.
    Other,
}

/// One listed state.
#[derive(Debug, Clone)]
pub(crate) struct StateInfo {
    pub(crate) name: String,
    pub(crate) kind: StateKind,
}

/// The parsed proxy.
#[derive(Debug, Clone)]
pub(crate) struct Proxy {
    pub(crate) compressed: bool,
    pub(crate) states: Vec<StateInfo>,
}

/// Reads the proxy at position 0 of a keyed stream; the input is left at the end of the
/// state list.
pub(crate) fn read(r: &mut Input) -> Result<Proxy> {
    let found = r.i32("serialization proxy version")?;
    if found != PROXY_VERSION {
        return Err(Error::ProxyVersion { found });
    }
    let compressed = r.bool("usingKeyGroupCompression")?;
    let key = serializer::read(r)?;
    if key.class != INT {
        return Err(Error::KeySerializer { class: key.class });
    }
    let n = r.i16("state count")?;
    let n = u16::try_from(n).map_err(|_| Error::NegativeLength {
        what: "state count",
        value: i64::from(n),
    })?;
    // A state meta takes at least 2 + 4 + 4 + 4 bytes.
    if u64::from(n) * 14 > r.remaining() {
        return Err(r.truncated("state list", u64::from(n) * 14));
    }
    let mut states = Vec::with_capacity(usize::from(n));
    let mut names = HashSet::new();
    for _ in 0..n {
        let state = state_meta(r)?;
        if !names.insert(state.name.clone()) {
            return Err(Error::DuplicateStateName { name: state.name });
        }
        states.push(state);
    }
    Ok(Proxy { compressed, states })
}

fn state_meta(r: &mut Input) -> Result<StateInfo> {
    let name = r.utf("state name")?;
    let backend_type = r.i32("backend state type")?;
    if !(0..=3).contains(&backend_type) {
        return Err(Error::BackendStateType {
            state: name,
            found: backend_type,
        });
    }
    let n = r.count("option count", 4)?;
    let mut options = Vec::with_capacity(n as usize);
    for _ in 0..n {
        options.push((r.utf("option key")?, r.utf("option value")?));
    }
    let n = r.count("serializer count", 6)?;
    let mut serializers = Vec::with_capacity(n as usize);
    for _ in 0..n {
        serializers.push((r.utf("serializer key")?, serializer::read(r)?));
    }
    let kind = classify(&name, backend_type);
    if matches!(kind, StateKind::Header | StateKind::Chunk(_)) {
        check_reserved_meta(&name, backend_type, &options, &serializers)?;
    }
    Ok(StateInfo { name, kind })
}

fn classify(name: &str, backend_type: i32) -> StateKind {
    if name == HEADER_STATE_NAME {
        return StateKind::Header;
    }
    if let Some(n) = name.strip_prefix(CHUNK_PREFIX) {
        // Decimal without leading zeros, as `"_chunk_" + n` prints it.
        let canonical = !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
            && (n == "0" || !n.starts_with('0'));
        if let Some(index) = canonical.then(|| n.parse::<u32>().ok()).flatten() {
            return StateKind::Chunk(index);
        }
        return StateKind::Refused;
    }
    if V2_STATES.contains(&name) {
        StateKind::Refused
    } else if backend_type == PRIORITY_QUEUE {
        StateKind::PriorityQueue
    } else {
        StateKind::Other
    }
}

fn check_reserved_meta(
    name: &str,
    backend_type: i32,
    options: &[(String, String)],
    serializers: &[(String, Snapshot)],
) -> Result<()> {
    let bad = |reason| Error::ReservedStateMeta {
        state: name.to_owned(),
        reason,
    };
    if backend_type != 0 {
        return Err(bad("backend state type is not KEY_VALUE"));
    }
    if options != [(KEYED_STATE_TYPE.to_owned(), "VALUE".to_owned())] {
        return Err(bad("options are not exactly KEYED_STATE_TYPE = VALUE"));
    }
    let simple = |class: &str| Snapshot {
        class: class.to_owned(),
        version: 3,
        nested: Vec::new(),
    };
    let value = (VALUE_SERIALIZER.to_owned(), simple(BYTES));
    let namespace = (NAMESPACE_SERIALIZER.to_owned(), simple(VOID_NAMESPACE));
    let exact =
        serializers.len() == 2 && serializers.contains(&value) && serializers.contains(&namespace);
    if !exact {
        return Err(bad(
            "serializers are not exactly BytePrimitiveArraySerializer and VoidNamespaceSerializer (v3)",
        ));
    }
    Ok(())
}

/// Writes a proxy listing the header state and `chunks` chunk states, with the exact
/// reserved meta; `compressed` sets `usingKeyGroupCompression` (Snappy-framed blocks).
pub(crate) fn write(chunks: u32, compressed: bool, out: &mut Vec<u8>) -> Result<()> {
    out.extend_from_slice(&PROXY_VERSION.to_be_bytes());
    out.push(u8::from(compressed));
    serializer::write_simple(INT, out)?;
    let num_states = i16::try_from(u64::from(chunks) + 1).map_err(|_| Error::TooLarge {
        key_group: 0,
        what: "number of chunk states",
    })?;
    out.extend_from_slice(&num_states.to_be_bytes());
    write_reserved_meta(HEADER_STATE_NAME, out)?;
    for i in 0..chunks {
        write_reserved_meta(&format!("{CHUNK_PREFIX}{i}"), out)?;
    }
    Ok(())
}

fn write_reserved_meta(name: &str, out: &mut Vec<u8>) -> Result<()> {
    mutf8::encode_prefixed(name, "state name", out)?;
    out.extend_from_slice(&0_i32.to_be_bytes());
    out.extend_from_slice(&1_i32.to_be_bytes());
    mutf8::encode_prefixed(KEYED_STATE_TYPE, "option", out)?;
    mutf8::encode_prefixed("VALUE", "option", out)?;
    out.extend_from_slice(&2_i32.to_be_bytes());
    mutf8::encode_prefixed(VALUE_SERIALIZER, "serializer key", out)?;
    serializer::write_simple(BYTES, out)?;
    mutf8::encode_prefixed(NAMESPACE_SERIALIZER, "serializer key", out)?;
    serializer::write_simple(VOID_NAMESPACE, out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_meta_is_339_bytes_for_the_header_state() {
        let mut out = Vec::new();
        write_reserved_meta(HEADER_STATE_NAME, &mut out).unwrap();
        assert_eq!(out.len(), 339);
    }

    #[test]
    fn chunk_names_are_canonical_decimal() {
        assert_eq!(
            classify(&format!("{CHUNK_PREFIX}0"), 0),
            StateKind::Chunk(0)
        );
        assert_eq!(
            classify(&format!("{CHUNK_PREFIX}12"), 0),
            StateKind::Chunk(12)
        );
        assert_eq!(
            classify(&format!("{CHUNK_PREFIX}012"), 0),
            StateKind::Refused
        );
        assert_eq!(classify(CHUNK_PREFIX, 0), StateKind::Refused);
        assert_eq!(classify(V2_STATES[1], 0), StateKind::Refused);
        assert_eq!(
            classify("_timer_state/event_user-timers", 3),
            StateKind::PriorityQueue
        );
    }
}
