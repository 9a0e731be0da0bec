//! The workspace's main job until the end-to-end benchmark exists.
//!
//! 1. Builds a section-framed payload per key group (a multi-chunk "rows" section of seeded
//!    bytes and a small "meta" section) for the key groups one subtask owns.
//! 2. Writes each as a canonical SFCS envelope into a new generation of a directory
//!    container, then commits the manifest (every key group's lengths and CRCs) atomically.
//! 3. Reopens the directory and reads every key group back through full validation, each
//!    envelope vouched for by the manifest, and compares it.
//! 4. Shows that a damaged file is refused with a typed error.
//! 5. Prints the Flink key group, owning subtask and RocksDB state keys of a few SQL keys.
//!
//! `cargo run --release -p sfcs-format --example canonical_snapshot -- --help`

use std::path::PathBuf;
use std::time::Instant;

use keygroup::{
    BinaryRow, CompositeKeyBuilder, LogicalType, MaxParallelism, Parallelism, RowDataSerializer,
    TableTimeWindowSerializer, TimeWindow, Timestamp, Value, VoidNamespace,
    VoidNamespaceSerializer, compute_key_group_range_for_operator_index,
    compute_operator_index_for_key_group,
};
use sfcs_format::{
    CHUNK_SIZE, Container, DirContainer, Manifest, ManifestEntry, SectionWriter, Sections,
    read_envelope, read_vouched_envelope, write_envelope,
};

const OPERATOR_ID: &str = "example-group-aggregate";

struct Args {
    dir: Option<PathBuf>,
    payload_mib: usize,
    key_groups: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        dir: None,
        payload_mib: 9,
        key_groups: 4,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--dir" => args.dir = Some(PathBuf::from(value("--dir")?)),
            "--payload-mib" => {
                args.payload_mib = value("--payload-mib")?
                    .parse()
                    .map_err(|e| format!("--payload-mib: {e}"))?;
            }
            "--key-groups" => {
                args.key_groups = value("--key-groups")?
                    .parse()
                    .map_err(|e| format!("--key-groups: {e}"))?;
            }
            "--help" | "-h" => {
                println!(
                    "canonical_snapshot [--dir DIR] [--payload-mib N (default 9)] \
                     [--key-groups N (default 4)]\n\
                     Without --dir the container goes to a fresh folder under the temp dir."
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(args)
}

/// Deterministic bytes (splitmix64), so every run writes the same snapshot.
fn seeded_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(len);
    out
}

fn payload_for(key_group: i32, payload_mib: usize) -> Result<Vec<u8>, sfcs_format::Error> {
    let rows = seeded_bytes(
        u64::from(key_group.unsigned_abs()),
        payload_mib * 1024 * 1024,
    );
    let meta = format!("key_group={key_group};format=example-v1");
    let mut sections = SectionWriter::new();
    sections.push("meta", meta.as_bytes())?;
    sections.push("rows", &rows)?;
    Ok(sections.finish())
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let dir = args.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("sfstate-example-{}", std::process::id()))
    });
    let max_parallelism = MaxParallelism::new(128)?;
    let parallelism = Parallelism::new(4)?;
    let subtask = 1;
    let owned = compute_key_group_range_for_operator_index(max_parallelism, parallelism, subtask)?;
    println!(
        "subtask {subtask} of {parallelism} at max parallelism {max_parallelism} owns key groups {owned}"
    );

    // 1 + 2: write.
    let mut container = DirContainer::open(&dir)?;
    container.begin_generation()?;
    let mut entries = Vec::new();
    let key_groups: Vec<i32> = owned
        .iter()
        .map(keygroup::KeyGroup::get)
        .take(args.key_groups)
        .collect();
    let started = Instant::now();
    let mut written = Vec::new();
    for &kg in &key_groups {
        let payload = payload_for(kg, args.payload_mib)?;
        let kg_u32 = u32::try_from(kg)?;
        let header = write_envelope(&mut container, kg_u32, OPERATOR_ID, Some(60_000), &payload)?;
        println!(
            "wrote key group {kg:>3}: {} payload bytes in {} chunks of <= {} MiB, CRC32C {:#010x}",
            header.payload_len(),
            header.chunk_count(),
            CHUNK_SIZE >> 20,
            header.crc32c()
        );
        entries.push(ManifestEntry::for_header(kg_u32, &header));
        written.push((kg_u32, payload));
    }
    let manifest = Manifest::try_new(
        OPERATOR_ID,
        u32::try_from(max_parallelism.get())?,
        u32::try_from(owned.start())?,
        u32::try_from(owned.len())?,
        1,
        entries,
    )?;
    container.commit_generation(&manifest.encode())?;
    let container = DirContainer::open_existing(&dir)?;
    println!(
        "container {} holds key groups {:?} ({:.1?})",
        dir.display(),
        container.key_groups()?,
        started.elapsed()
    );

    // 3: read back, validated.
    let started = Instant::now();
    for (kg, expected) in &written {
        let (header, payload) = read_vouched_envelope(&container, &manifest, *kg)?;
        let sections = Sections::decode(&payload)?;
        let names: Vec<&str> = sections.iter().map(|s| s.name).collect();
        if &payload != expected {
            return Err(format!("key group {kg}: payload differs after the round trip").into());
        }
        println!(
            "validated key group {kg:>3}: operator {:?}, deadline {:?}, sections {names:?}",
            header.operator_id(),
            header.deadline()
        );
    }
    println!(
        "all {} key groups validated ({:.1?})",
        written.len(),
        started.elapsed()
    );

    // 4: damaged or foreign snapshots are refused.
    if let Some((kg, _)) = written.first() {
        show_refusals(&container, &manifest, &dir, *kg)?;
    }

    // 5: SQL keys.
    print_sql_keys(max_parallelism, parallelism)?;

    if args.dir.is_none() {
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(())
}

/// Damages a copy of one key group's file, reads it, and reads the original as another
/// operator: both must be refused with a typed error.
fn show_refusals(
    container: &DirContainer,
    manifest: &Manifest,
    dir: &std::path::Path,
    kg: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    let damaged_dir = dir.join("damaged");
    let mut damaged = DirContainer::open(&damaged_dir)?;
    damaged.begin_generation()?;
    let header = container.get_header(kg)?.ok_or("header")?;
    let mut chunks = Vec::new();
    while let Some(chunk) = container.get_chunk(kg, u32::try_from(chunks.len())?)? {
        chunks.push(chunk.into_owned());
    }
    let chunk_refs: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
    damaged.put_key_group(kg, &header, &chunk_refs)?;
    damaged.commit_generation(&manifest.encode())?;
    let mut bytes = std::fs::read(damaged.key_group_path(kg))?;
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(damaged.key_group_path(kg), &bytes)?;
    match read_vouched_envelope(&damaged, manifest, kg) {
        Ok(_) => return Err("a damaged snapshot validated".into()),
        Err(e) => println!("damaged copy of key group {kg} refused: {e}"),
    }
    match read_envelope(container, kg, "some-other-operator") {
        Ok(_) => return Err("a snapshot was accepted by the wrong operator".into()),
        Err(e) => println!("wrong operator refused: {e}"),
    }
    drop(damaged);
    std::fs::remove_dir_all(&damaged_dir)?;
    Ok(())
}

/// Prints a few SQL keys as Flink's key selector builds them: row bytes, hash, key groups,
/// owning subtask and RocksDB state keys.
fn print_sql_keys(
    max_parallelism: MaxParallelism,
    parallelism: Parallelism,
) -> Result<(), Box<dyn std::error::Error>> {
    println!("\nSQL keys (BinaryRowData), their key groups and RocksDB state keys:");
    let keys: Vec<(Vec<&str>, Vec<Value>)> = vec![
        (vec!["BIGINT"], vec![Value::BigInt(42)]),
        (
            vec!["BIGINT", "STRING"],
            vec![Value::BigInt(7), Value::String("user-0042".into())],
        ),
        (
            vec!["INT", "TIMESTAMP(3)"],
            vec![
                Value::Int(3),
                Value::Timestamp(Timestamp::new(1_700_000_000_123, 0)?),
            ],
        ),
        (
            vec!["STRING", "DECIMAL(38, 2)"],
            vec![Value::String("eu".into()), Value::Null],
        ),
    ];
    let big = MaxParallelism::new(32_768)?;
    for (type_names, values) in keys {
        let types: Vec<LogicalType> = type_names
            .iter()
            .map(|t| t.parse())
            .collect::<Result<_, _>>()?;
        let row = BinaryRow::from_values(&types, &values)?;
        let kg = row.key_group(max_parallelism);
        println!(
            "  ({}) = {values:?}\n    row {} hashCode {}\n    key group {kg} of {max_parallelism} \
             (subtask {} of {parallelism}); key group {} of {big}",
            type_names.join(", "),
            hex(row.as_bytes()),
            row.hash_code(),
            compute_operator_index_for_key_group(max_parallelism, parallelism, kg),
            row.key_group(big),
        );
        let mut builder = CompositeKeyBuilder::new(RowDataSerializer, max_parallelism);
        builder.set_key_and_key_group(row.as_bytes(), kg)?;
        let value_state =
            hex(builder.build_composite_key_namespace(&VoidNamespace, &VoidNamespaceSerializer)?);
        let window = TimeWindow {
            start: 1_700_000_000_000,
            end: 1_700_000_060_000,
        };
        let window_state =
            hex(builder.build_composite_key_namespace(&window, &TableTimeWindowSerializer)?);
        println!("    RocksDB key, value state:  {value_state}");
        println!("    RocksDB key, window state: {window_state}");
    }

    Ok(())
}
