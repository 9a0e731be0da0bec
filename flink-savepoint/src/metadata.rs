//! `_metadata`: parsed structurally (the layout is documented on [`SavepointMetadata`]).

use std::path::Path;

use crate::error::{Error, Result};
use crate::input::Input;
use crate::operator_id::OperatorId;

/// `Checkpoints.HEADER_MAGIC_NUMBER`.
pub const METADATA_MAGIC: u32 = 0x4960_672d;
/// `MetadataV2V3SerializerBase` master-state magic.
const MASTER_STATE_MAGIC: u32 = 0xc96b_1696;
/// The start of a Java serialization stream (`ObjectOutputStream`), the v4+ trailer.
const JAVA_SERIALIZATION_MAGIC: [u8; 4] = [0xac, 0xed, 0x00, 0x05];
/// `KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM`.
pub(crate) const MAX_MAX_PARALLELISM: u32 = 1 << 15;

/// The parsed `_metadata` of a savepoint (FORMAT.md section 4), versions 3 to 6.
///
/// ```text
/// u32 magic 4960672d ; i32 version (3..=6)
/// i64 checkpointId (>= 0) ; i32 numMasterStates (>= 0)
///     × { u32 magic c96b1696 ; i32 len (> 0) ; len bytes }           skipped by len
/// i32 numOperators
///     × OperatorRecord:
///       [v5+] UTF name ; UTF uid                                    "" = absent
///       16 bytes OperatorID ; i32 parallelism ; i32 maxParallelism
///       StreamHandle coordinatorState                               tag 0 or 1 only
///       i32 numSubtaskStates                                        < 0: finished, no subtasks
///         × { i32 subtaskIndex (< 0: finished, no body)
///             i32 hasManagedOperatorState [OperatorStateHandle]
///             i32 hasRawOperatorState     [OperatorStateHandle]
///             KeyedStateHandle managed ; KeyedStateHandle raw
///             i32 numInputChannelStates = 0 ; i32 numResultSubpartitionStates = 0 }
/// [v4+] Java-serialized CheckpointProperties (aced0005 …) to the end: never deserialized
/// ```
///
/// Handles (one tag byte each):
///
/// ```text
/// StreamHandle        0 null | 1 ByteStreamStateHandle { UTF name ; i32 n ; n bytes }
///                     2 FileStateHandle { i64 size ; UTF uri } | 6 RelativeFileStateHandle { UTF path ; i64 size }
/// OperatorStateHandle 0 null | 4 { i32 n ; n × { UTF name ; u8 mode 0..=2 ; i32 k ; k × i64 } ; StreamHandle }
/// KeyedStateHandle    0 null | 3, 7 { i32 start ; i32 n ; n × i64 offset ; StreamHandle } | 12 { same ; UTF id }
/// ```
///
/// Inline stream data is not copied: the parser records where it lies in `_metadata`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SavepointMetadata {
    /// The metadata version (3..=6).
    pub version: i32,
    /// The checkpoint id.
    pub checkpoint_id: i64,
    /// Every operator record, in file order.
    pub operators: Vec<OperatorRecord>,
}

/// One operator of `_metadata`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OperatorRecord {
    /// The operator name (v5+, `None` when absent).
    pub name: Option<String>,
    /// The operator uid (v5+, `None` when absent).
    pub uid: Option<String>,
    /// The operator id.
    pub id: OperatorId,
    /// The operator's parallelism.
    pub parallelism: i32,
    /// The operator's max parallelism.
    pub max_parallelism: i32,
    /// Whether the operator has coordinator state.
    pub has_coordinator_state: bool,
    /// `true` when `numSubtaskStates < 0` (a fully finished operator).
    pub finished: bool,
    /// The subtask states, in file order (finished subtasks included, without handles).
    pub subtasks: Vec<SubtaskRecord>,
}

/// One subtask of an operator record.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SubtaskRecord {
    /// The subtask index (`-(i + 1)` for a finished subtask `i`).
    pub index: i32,
    /// Whether the subtask has managed or raw operator state.
    pub has_operator_state: bool,
    /// The managed keyed-state handle.
    pub managed_keyed: Option<KeyedHandle>,
    /// Whether a raw keyed-state handle is present.
    pub has_raw_keyed: bool,
}

/// A keyed-state handle with its key-group offsets (tag 3, 7 or 12).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct KeyedHandle {
    /// The handle tag.
    pub tag: u8,
    /// The first key group.
    pub start: i32,
    /// `offsets[j]`: position of key group `start + j`'s block in the stream (0 = no entries).
    pub offsets: Vec<i64>,
    /// The stream, if any.
    pub stream: Option<StreamHandle>,
}

/// Where a keyed-state stream's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamHandle {
    /// `ByteStreamStateHandle` (tag 1): inline in `_metadata`.
    Inline {
        /// The handle name.
        name: String,
        /// Offset of the data's first byte in `_metadata`.
        offset: u64,
        /// Data length.
        len: u64,
    },
    /// `FileStateHandle` (tag 2): an absolute URI.
    File {
        /// The URI as stored.
        uri: String,
        /// The size in the handle.
        size: i64,
    },
    /// `RelativeFileStateHandle` (tag 6): a file next to `_metadata`.
    Relative {
        /// The file name.
        path: String,
        /// The size in the handle.
        size: i64,
    },
}

impl SavepointMetadata {
    /// Parses the `_metadata` file at `path`.
    ///
    /// # Errors
    /// A typed [`Error`] for every malformed structure (FORMAT.md section 8); never panics.
    pub fn read(path: &Path) -> Result<Self> {
        let mut input = Input::open(path)?;
        parse(&mut input)
    }

    /// The operator with `id`.
    ///
    /// # Errors
    /// [`Error::OperatorNotFound`], or [`Error::DuplicateOperator`] when two records carry it.
    pub fn operator(&self, id: OperatorId) -> Result<&OperatorRecord> {
        let mut found = self.operators.iter().filter(|o| o.id == id);
        let first = found.next().ok_or(Error::OperatorNotFound { id })?;
        if found.next().is_some() {
            return Err(Error::DuplicateOperator { id });
        }
        Ok(first)
    }
}

fn parse(r: &mut Input) -> Result<SavepointMetadata> {
    let magic = r.u32("metadata magic")?;
    if magic != METADATA_MAGIC {
        return Err(Error::BadMetadataMagic { found: magic });
    }
    let version = r.i32("metadata version")?;
    if !(3..=6).contains(&version) {
        return Err(Error::UnsupportedMetadataVersion { found: version });
    }
    let checkpoint_id = r.i64("checkpoint id")?;
    if checkpoint_id < 0 {
        return Err(Error::NegativeCheckpointId {
            found: checkpoint_id,
        });
    }
    let masters = r.count("master state count", 8)?;
    for index in 0..masters {
        let found = r.u32("master state magic")?;
        if found != MASTER_STATE_MAGIC {
            return Err(Error::BadMasterStateMagic { index, found });
        }
        let length = r.i32("master state length")?;
        let len = u64::try_from(length)
            .ok()
            .filter(|&l| l > 0)
            .ok_or(Error::MasterStateLength { index, length })?;
        r.skip(len, "master state")?;
    }
    // An operator record takes at least 16 + 4 + 4 + 1 + 4 bytes.
    let count = r.count("operator count", 29)?;
    let mut operators = Vec::with_capacity(count as usize);
    for _ in 0..count {
        operators.push(operator_record(r, version)?);
    }
    if version >= 4 {
        let trailer = r.remaining();
        let magic: Option<[u8; 4]> = if trailer >= 4 {
            Some(r.array("CheckpointProperties trailer")?)
        } else {
            None
        };
        if magic != Some(JAVA_SERIALIZATION_MAGIC) {
            return Err(Error::MissingTrailer { version });
        }
    }
    Ok(SavepointMetadata {
        version,
        checkpoint_id,
        operators,
    })
}

fn optional_utf(r: &mut Input, what: &'static str) -> Result<Option<String>> {
    let s = r.utf(what)?;
    Ok((!s.is_empty()).then_some(s))
}

fn operator_record(r: &mut Input, version: i32) -> Result<OperatorRecord> {
    let (name, uid) = if version >= 5 {
        (
            optional_utf(r, "operator name")?,
            optional_utf(r, "operator uid")?,
        )
    } else {
        (None, None)
    };
    let id = OperatorId(r.array("operator id")?);
    let parallelism = r.i32("parallelism")?;
    let max_parallelism = r.i32("max parallelism")?;
    let coordinator = stream_handle(r, "coordinator")?;
    if !matches!(coordinator, None | Some(StreamHandle::Inline { .. })) {
        return Err(Error::StreamHandleTag {
            context: "coordinator",
            tag: coordinator_tag(coordinator.as_ref()),
        });
    }
    let n = r.i32("subtask count")?;
    let mut subtasks = Vec::new();
    let finished = n < 0;
    if finished {
        if coordinator.is_some() {
            return Err(Error::FinishedWithCoordinatorState { id });
        }
    } else {
        // A subtask record takes at least 4 bytes (a finished one).
        let n = u32::try_from(n).unwrap_or_default();
        if u64::from(n) * 4 > r.remaining() {
            return Err(r.truncated("subtask count", u64::from(n) * 4));
        }
        subtasks.reserve(n as usize);
        for _ in 0..n {
            subtasks.push(subtask_record(r)?);
        }
    }
    Ok(OperatorRecord {
        name,
        uid,
        id,
        parallelism,
        max_parallelism,
        has_coordinator_state: coordinator.is_some(),
        finished,
        subtasks,
    })
}

fn coordinator_tag(h: Option<&StreamHandle>) -> u8 {
    match h {
        None => 0,
        Some(StreamHandle::Inline { .. }) => 1,
        Some(StreamHandle::File { .. }) => 2,
        Some(StreamHandle::Relative { .. }) => 6,
    }
}

fn subtask_record(r: &mut Input) -> Result<SubtaskRecord> {
    let index = r.i32("subtask index")?;
    if index < 0 {
        return Ok(SubtaskRecord {
            index,
            has_operator_state: false,
            managed_keyed: None,
            has_raw_keyed: false,
        });
    }
    let mut has_operator_state = false;
    for what in ["managed operator state flag", "raw operator state flag"] {
        if r.i32(what)? != 0 {
            has_operator_state |= operator_state_handle(r)?;
        }
    }
    let managed_keyed = keyed_handle(r)?;
    let has_raw_keyed = keyed_handle(r)?.is_some();
    let input = r.i32("input channel state count")?;
    let output = r.i32("result subpartition state count")?;
    if input != 0 || output != 0 {
        return Err(Error::ChannelState {
            subtask: index,
            input,
            output,
        });
    }
    Ok(SubtaskRecord {
        index,
        has_operator_state,
        managed_keyed,
        has_raw_keyed,
    })
}

/// Skips an operator-state handle; `true` when it is not null.
fn operator_state_handle(r: &mut Input) -> Result<bool> {
    match r.u8("operator state handle tag")? {
        0 => Ok(false),
        4 => {
            // Each entry takes at least 2 + 1 + 4 bytes.
            let n = r.count("operator state count", 7)?;
            for _ in 0..n {
                r.utf("operator state name")?;
                let mode = r.u8("distribution mode")?;
                if mode > 2 {
                    return Err(Error::DistributionMode { mode });
                }
                let k = r.count("operator state offset count", 8)?;
                r.skip(u64::from(k) * 8, "operator state offsets")?;
            }
            stream_handle(r, "operator")?;
            Ok(true)
        }
        tag => Err(Error::OperatorStateHandleTag { tag }),
    }
}

fn keyed_handle(r: &mut Input) -> Result<Option<KeyedHandle>> {
    let tag = r.u8("keyed state handle tag")?;
    match tag {
        0 => Ok(None),
        3 | 7 | 12 => {
            let start = r.i32("key group range start")?;
            let n = r.count("key group count", 8)?;
            let mut offsets = Vec::with_capacity(n as usize);
            for _ in 0..n {
                offsets.push(r.i64("key group offset")?);
            }
            let stream = stream_handle(r, "keyed")?;
            if tag == 12 {
                r.utf("state handle id")?;
            }
            Ok(Some(KeyedHandle {
                tag,
                start,
                offsets,
                stream,
            }))
        }
        tag => Err(Error::KeyedHandleTag { tag }),
    }
}

fn stream_handle(r: &mut Input, context: &'static str) -> Result<Option<StreamHandle>> {
    match r.u8("stream handle tag")? {
        0 => Ok(None),
        1 => {
            let name = r.utf("inline handle name")?;
            let len = u64::from(r.len32("inline handle length")?);
            let offset = r.file_offset();
            r.skip(len, "inline handle data")?;
            Ok(Some(StreamHandle::Inline { name, offset, len }))
        }
        2 => {
            let size = r.i64("file handle size")?;
            let uri = r.utf("file handle path")?;
            Ok(Some(StreamHandle::File { uri, size }))
        }
        6 => {
            let path = r.utf("relative file path")?;
            let size = r.i64("relative file size")?;
            Ok(Some(StreamHandle::Relative { path, size }))
        }
        tag => Err(Error::StreamHandleTag { context, tag }),
    }
}
