//! Serializer snapshots (FORMAT.md 5.2): read the classes this crate knows, write the ones
//! the native operator needs.
//!
//! ```text
//! SerializerSnapshot = i32 proxyVersion (2) ; VersionedSnapshot
//! VersionedSnapshot  = UTF class ; i32 version ; body
//! simple (SimpleTypeSerializerSnapshot)  version 3: empty body | version 2: UTF (ignored)
//! composite (CompositeTypeSerializerSnapshot), version 3:
//!     i32 0x000de704 ; i32 outerVersion ; (empty outer body)
//!     i32 0x001457fd ; i32 1 ; i32 n ; n × VersionedSnapshot
//! ```
//!
//! The body is not length-prefixed, so an unknown class cannot be skipped: it is refused
//! ([`Error::UnknownSerializerSnapshot`]).

use crate::error::{Error, Result};
use crate::input::Input;
use crate::mutf8;

/// `TypeSerializerSnapshotSerializationProxy` version.
const PROXY_VERSION: i32 = 2;
/// `CompositeTypeSerializerSnapshot` magic.
const COMPOSITE_MAGIC: i32 = 0x000d_e704;
/// `NestedSerializersSnapshotDelegate` magic.
const NESTED_MAGIC: i32 = 0x0014_57fd;
/// Deepest nesting accepted.
const MAX_DEPTH: u32 = 16;
/// Most nested snapshots accepted in one composite.
const MAX_NESTED: u32 = 64;

/// `IntSerializer`'s snapshot: the native operator's key serializer.
pub(crate) const INT: &str =
    "org.apache.flink.api.common.typeutils.base.IntSerializer$IntSerializerSnapshot";
/// `BytePrimitiveArraySerializer`'s snapshot: the reserved states' value serializer.
pub(crate) const BYTES: &str = "org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer$BytePrimitiveArraySerializerSnapshot";
/// `VoidNamespaceSerializer`'s snapshot: the reserved states' namespace serializer.
pub(crate) const VOID_NAMESPACE: &str =
    "org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot";

/// `SimpleTypeSerializerSnapshot` subclasses this reader knows (version 3, empty body).
const SIMPLE: &[&str] = &[
    INT,
    BYTES,
    VOID_NAMESPACE,
    "org.apache.flink.api.common.typeutils.base.LongSerializer$LongSerializerSnapshot",
    "org.apache.flink.api.common.typeutils.base.StringSerializer$StringSerializerSnapshot",
    "org.apache.flink.api.common.typeutils.base.BooleanSerializer$BooleanSerializerSnapshot",
    "org.apache.flink.api.common.typeutils.base.ByteSerializer$ByteSerializerSnapshot",
    "org.apache.flink.api.common.typeutils.base.ShortSerializer$ShortSerializerSnapshot",
    "org.apache.flink.api.common.typeutils.base.FloatSerializer$FloatSerializerSnapshot",
    "org.apache.flink.api.common.typeutils.base.DoubleSerializer$DoubleSerializerSnapshot",
    "org.apache.flink.api.common.typeutils.base.CharSerializer$CharSerializerSnapshot",
    "tech.streamfusion.state.AsyncNativeStateSerializer$SerializerSnapshot",
];

/// `CompositeTypeSerializerSnapshot` subclasses this reader knows, with their current outer
/// snapshot version (the outer body is empty for all of them).
const COMPOSITE: &[(&str, i32)] = &[
    (
        "org.apache.flink.streaming.api.operators.TimerSerializerSnapshot",
        2,
    ),
    (
        "org.apache.flink.api.common.typeutils.base.MapSerializerSnapshot",
        1,
    ),
    (
        "org.apache.flink.api.common.typeutils.base.ListSerializerSnapshot",
        1,
    ),
];

/// A parsed serializer snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    /// The snapshot class.
    pub(crate) class: String,
    /// The snapshot version.
    pub(crate) version: i32,
    /// Nested snapshots of a composite.
    pub(crate) nested: Vec<Snapshot>,
}

/// Reads a `SerializerSnapshot` (proxy version and versioned snapshot).
pub(crate) fn read(r: &mut Input) -> Result<Snapshot> {
    let found = r.i32("serializer snapshot proxy version")?;
    if found != PROXY_VERSION {
        return Err(Error::SnapshotProxyVersion { found });
    }
    read_versioned(r, 0)
}

fn read_versioned(r: &mut Input, depth: u32) -> Result<Snapshot> {
    if depth > MAX_DEPTH {
        return Err(Error::SnapshotNesting { max: MAX_DEPTH });
    }
    let class = r.utf("serializer snapshot class")?;
    let version = r.i32("serializer snapshot version")?;
    let bad_version = |class: String| Error::SerializerSnapshotVersion { class, version };
    if SIMPLE.contains(&class.as_str()) {
        match version {
            3 => {}
            2 => {
                r.utf("legacy serializer class name")?;
            }
            _ => return Err(bad_version(class)),
        }
        return Ok(Snapshot {
            class,
            version,
            nested: Vec::new(),
        });
    }
    let Some(&(_, current_outer)) = COMPOSITE.iter().find(|(c, _)| *c == class) else {
        return Err(Error::UnknownSerializerSnapshot { class });
    };
    if version != 3 {
        return Err(bad_version(class));
    }
    let magic = r.i32("composite snapshot magic")?;
    if magic != COMPOSITE_MAGIC {
        return Err(Error::SnapshotMagic {
            what: "composite",
            found: magic,
            expected: COMPOSITE_MAGIC,
        });
    }
    let outer = r.i32("outer snapshot version")?;
    if !(1..=current_outer).contains(&outer) {
        return Err(Error::SerializerSnapshotVersion {
            class,
            version: outer,
        });
    }
    let magic = r.i32("nested serializers magic")?;
    if magic != NESTED_MAGIC {
        return Err(Error::SnapshotMagic {
            what: "nested serializers",
            found: magic,
            expected: NESTED_MAGIC,
        });
    }
    let delegate_version = r.i32("nested serializers version")?;
    if delegate_version != 1 {
        return Err(Error::SerializerSnapshotVersion {
            class: "NestedSerializersSnapshotDelegate".to_owned(),
            version: delegate_version,
        });
    }
    let n = r.count("nested serializer count", 6)?;
    if n > MAX_NESTED {
        return Err(Error::SnapshotNesting { max: MAX_NESTED });
    }
    let mut nested = Vec::with_capacity(n as usize);
    for _ in 0..n {
        nested.push(read_versioned(r, depth + 1)?);
    }
    Ok(Snapshot {
        class,
        version,
        nested,
    })
}

/// Writes the `SerializerSnapshot` of a simple serializer `class` (version 3, empty body).
pub(crate) fn write_simple(class: &str, out: &mut Vec<u8>) -> Result<()> {
    out.extend_from_slice(&PROXY_VERSION.to_be_bytes());
    mutf8::encode_prefixed(class, "serializer class", out)?;
    out.extend_from_slice(&3_i32.to_be_bytes());
    Ok(())
}
