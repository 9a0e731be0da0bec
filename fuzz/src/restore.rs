//! Bodies of the snapshot-level targets: canonical restore of a table (the Arrow IPC layer
//! behind the CRC), the manifest decoder, and the directory container's framing, manifest and
//! generation pointer.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use sfcs_format::{
    Container, DirContainer, Manifest, ManifestEntry, MemoryContainer, SectionWriter,
    read_vouched_envelope,
};
use state_api::arrow_array::RecordBatch;
use state_api::arrow_schema::SchemaRef;
use state_api::keygroup::{KeyGroup, KeyGroupRange, MaxParallelism};
use state_api::{
    CanonicalTable, Error, I64F64StrCodec, MemoryPool, UnboundedMemoryPool, ValueCodec,
    canonical_schema, decode_canonical_batch, encode_canonical_batch,
};

use crate::OPERATOR;

/// A table that stages rows by decoding them with its codec, and keeps nothing.
struct Sink {
    staged: usize,
    max_parallelism: MaxParallelism,
}

impl CanonicalTable for Sink {
    fn table_name(&self) -> &'static str {
        "t"
    }
    fn table_key_groups(&self) -> KeyGroupRange {
        KeyGroupRange::new(0, 7).expect("valid range")
    }
    fn canonical_schema(&self) -> SchemaRef {
        canonical_schema(&I64F64StrCodec.fields())
    }
    fn export_key_group(&self, _: KeyGroup) -> state_api::Result<Option<RecordBatch>> {
        Ok(None)
    }
    fn stage_restore(&mut self, batches: Vec<(KeyGroup, RecordBatch)>) -> state_api::Result<()> {
        for (_, batch) in &batches {
            self.staged += decode_canonical_batch(&I64F64StrCodec, batch)?.values.len();
        }
        Ok(())
    }
    fn commit_restore(&mut self) {}
    fn abort_restore(&mut self) {}
    fn table_max_parallelism(&self) -> MaxParallelism {
        self.max_parallelism
    }
    fn table_has_ttl(&self) -> bool {
        true
    }
}

/// The IPC stream of a valid section of table `t` (three rows, a null string).
#[must_use]
pub fn pristine_section() -> Vec<u8> {
    let schema = canonical_schema(&I64F64StrCodec.fields());
    let values = [
        (1, 0.5, Some("one".to_owned())),
        (-2, f64::NAN, None),
        (3, -0.0, Some(String::new())),
    ];
    let rows: Vec<(&[u8], i64, &_)> = vec![
        (b"a", 10, &values[0]),
        (b"ab", 20, &values[1]),
        (b"b", 30, &values[2]),
    ];
    let batch = encode_canonical_batch(&schema, &I64F64StrCodec, &rows).expect("batch");
    let mut writer = arrow_ipc::writer::StreamWriter::try_new(Vec::new(), &schema).expect("writer");
    writer.write(&batch).expect("write");
    writer.finish().expect("finish");
    writer.into_inner().expect("bytes")
}

/// Canonical restore of a table from a snapshot whose envelope and manifest are valid
/// (re-sealed around the input): never panics, and in particular never returns
/// `Error::DecodePanicked` (the validation before Arrow must refuse whatever Arrow would
/// panic on); a successful restore staged as many rows as it reports.
///
/// Input: byte 0 even — the rest is the section of table `t`; odd — the rest is up to 8
/// edits `(u16 BE position, u8 xor)` applied to [`pristine_section`] (reaching past the
/// framing checks).
pub fn canonical_restore(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let section = if mode % 2 == 0 {
        rest.to_vec()
    } else {
        let mut bytes = pristine_section();
        let len = bytes.len();
        for edit in rest.chunks_exact(3).take(8) {
            let at = usize::from(u16::from_be_bytes([edit[0], edit[1]])) % len;
            bytes[at] ^= edit[2];
        }
        bytes
    };
    let mut sections = SectionWriter::new();
    sections.push("t", &section).expect("one section");
    let payload = sections.finish();
    let mut container = MemoryContainer::new();
    container.begin_generation().expect("memory");
    let header =
        sfcs_format::write_envelope(&mut container, 3, OPERATOR, None, &payload).expect("envelope");
    let manifest = Manifest::try_new(
        OPERATOR,
        8,
        0,
        8,
        1,
        vec![ManifestEntry::for_header(3, &header)],
    )
    .expect("manifest");
    container
        .commit_generation(&manifest.encode())
        .expect("memory");
    let mut table = Sink {
        staged: 0,
        max_parallelism: MaxParallelism::new(8).expect("valid max parallelism"),
    };
    let pool: Arc<dyn MemoryPool> = Arc::new(UnboundedMemoryPool::new());
    match state_api::restore_canonical_snapshot(OPERATOR, &[&container], &mut [&mut table], &pool) {
        Err(Error::DecodePanicked { message, .. }) => {
            panic!("a panic reached the decode barrier: {message}")
        }
        Ok(summary) => assert_eq!(summary.rows, table.staged, "rows reported vs staged"),
        Err(_) => {}
    }
}

/// Manifest decode of arbitrary bytes: never panics; a manifest that decodes re-encodes to
/// the same bytes.
pub fn manifest_decode(data: &[u8]) {
    if let Ok(manifest) = Manifest::decode(data, None) {
        assert_eq!(
            manifest.encode(),
            data,
            "decoded manifest re-encodes differently"
        );
        assert!(Manifest::decode(data, Some(manifest.operator_id())).is_ok());
    }
}

/// Splits `n` bytes off the front of `data`.
fn take<'a>(data: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, tail) = data.split_at_checked(n)?;
    *data = tail;
    Some(head)
}

/// Splits a `u16 BE` length and that many bytes off the front of `data`.
fn take_framed<'a>(data: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = take(data, 2)?;
    let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
    let available = data.len();
    take(data, len.min(available))
}

fn scratch_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        std::env::temp_dir().join(format!("sfstate-fuzz-dir-{}", std::process::id()))
    })
}

/// The directory container over arbitrary files (key-group framing, manifest, generation
/// pointer): opening and reading never panics and never allocates past a file's size;
/// whatever a vouched read returns matches its manifest entry.
///
/// Input: byte 0 flags (bit 0: a `CURRENT` follows, else a valid pointer to generation 1
/// is written; bit 1: a `MANIFEST` follows), each as `u16 BE length | bytes`; then up to 8
/// key-group files as `u8 key group (mod 8) | u16 BE length | bytes`.
pub fn dir_container(data: &[u8]) {
    let mut data = data;
    let Some(flags) = take(&mut data, 1).map(|f| f[0]) else {
        return;
    };
    let current = if flags & 1 == 1 {
        take_framed(&mut data).unwrap_or_default().to_vec()
    } else {
        let mut bytes = b"SFCG".to_vec();
        bytes.extend_from_slice(&1_u64.to_be_bytes());
        let crc = crate::crc32c(&bytes);
        bytes.extend_from_slice(&crc.to_be_bytes());
        bytes
    };
    let manifest_bytes = (flags & 2 == 2).then(|| take_framed(&mut data).unwrap_or_default());
    let root = scratch_dir();
    let _ = std::fs::remove_dir_all(root);
    let generation = root.join("gen-0000000001");
    std::fs::create_dir_all(&generation).expect("scratch dir");
    std::fs::write(root.join("CURRENT"), current).expect("write");
    if let Some(manifest) = manifest_bytes {
        std::fs::write(generation.join("MANIFEST"), manifest).expect("write");
    }
    for _ in 0..8 {
        let Some(kg) = take(&mut data, 1).map(|k| k[0] % 8) else {
            break;
        };
        let bytes = take_framed(&mut data).unwrap_or_default();
        std::fs::write(generation.join(format!("kg-{kg:05}.sfkg")), bytes).expect("write");
    }
    let Ok(container) = DirContainer::open_existing(root) else {
        return;
    };
    let manifest = container
        .get_manifest()
        .ok()
        .flatten()
        .and_then(|m| Manifest::decode(&m, None).ok());
    for kg in container.key_groups().unwrap_or_default() {
        let _ = sfcs_format::read_envelope(&container, kg, OPERATOR);
        if let Some(m) = &manifest
            && let Ok((header, payload)) = read_vouched_envelope(&container, m, kg)
        {
            let entry = m.entry(kg).expect("vouched means listed");
            assert_eq!(payload.len(), entry.payload_len as usize);
            assert_eq!(header.crc32c(), entry.payload_crc32c);
        }
    }
    if let Some(m) = &manifest {
        let _ = m.check_listing(&container);
    }
}
