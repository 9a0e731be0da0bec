//! `write-savepoint`: writes a Flink 2.3.0 canonical savepoint from an sfcs-format directory
//! container, plus a `manifest.json` that `restore-check --expect` reads.
//!
//! ```text
//! write-savepoint --from <container dir> (--uid <uid> | --operator-id <32 hex>)
//!                 --max-parallelism M --parallelism P --out DIR
//!                 [--name NAME] [--metadata-version 3|6] [--inline-threshold BYTES]
//!                 [--compression none|snappy] [--no-manifest]
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use flink_savepoint::{
    Compression, MetadataVersion, OperatorId, OperatorSelector, SavepointReader, WriteOptions,
    manifest_json, write_savepoint,
};
use sfcs_format::DirContainer;

const USAGE: &str = "usage: write-savepoint --from <container dir> (--uid <uid> | --operator-id <hex>) \
--max-parallelism M --parallelism P --out DIR [--name NAME] [--metadata-version 3|6] \
[--inline-threshold BYTES] [--compression none|snappy] [--no-manifest]";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("write-savepoint: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut from = None;
    let mut uid = None;
    let mut id = None;
    let mut max_parallelism = None;
    let mut parallelism = None;
    let mut out = None;
    let mut name = None;
    let mut version = MetadataVersion::V6;
    let mut inline_threshold = None;
    let mut compression = Compression::None;
    let mut manifest = true;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match flag.as_str() {
            "--from" => from = Some(PathBuf::from(value()?)),
            "--uid" => uid = Some(value()?),
            "--operator-id" => id = Some(OperatorId::from_hex(&value()?)?),
            "--max-parallelism" => max_parallelism = Some(value()?.parse::<u32>()?),
            "--parallelism" => parallelism = Some(value()?.parse::<u32>()?),
            "--out" => out = Some(PathBuf::from(value()?)),
            "--name" => name = Some(value()?),
            "--metadata-version" => version = parse_version(&value()?)?,
            "--inline-threshold" => inline_threshold = Some(value()?.parse::<u64>()?),
            "--compression" => compression = parse_compression(&value()?)?,
            "--no-manifest" => manifest = false,
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other}\n{USAGE}").into()),
        }
    }
    let missing = |what: &str| format!("{what} is required\n{USAGE}");
    let from = from.ok_or_else(|| missing("--from"))?;
    let out = out.ok_or_else(|| missing("--out"))?;
    let m = max_parallelism.ok_or_else(|| missing("--max-parallelism"))?;
    let p = parallelism.ok_or_else(|| missing("--parallelism"))?;
    let (mut options, selector) = match (uid, id) {
        (Some(uid), None) => (WriteOptions::new(&uid, m, p)?, OperatorSelector::Uid(uid)),
        (None, Some(id)) => (
            WriteOptions::for_operator_id(id, m, p)?,
            OperatorSelector::Id(id),
        ),
        _ => return Err(format!("exactly one of --uid and --operator-id\n{USAGE}").into()),
    };
    options = options
        .with_metadata_version(version)
        .with_compression(compression);
    if let Some(name) = name {
        options = options.with_name(name);
    }
    if let Some(t) = inline_threshold {
        options = options.with_inline_threshold(t);
    }
    let container = DirContainer::open_existing(&from)?;
    if container.committed_generation().is_none() {
        // An uncommitted generation reads as empty: refuse rather than write an empty
        // savepoint that every restore would accept.
        return Err(format!(
            "--from {}: no committed snapshot (no CURRENT generation pointer)",
            from.display()
        )
        .into());
    }
    let summary = write_savepoint(&container, &out, &options)?;
    println!(
        "wrote {}: {} key groups, {} chunks, {} stream bytes, {} inline subtask streams, {} state files",
        out.display(),
        summary.key_groups,
        summary.chunks,
        summary.stream_bytes,
        summary.inline_subtasks,
        summary.files.len()
    );
    if manifest {
        // Read the savepoint back (full validation, every CRC) and describe it.
        let reader = SavepointReader::open(&out, &selector)?;
        let uid = match &selector {
            OperatorSelector::Uid(uid) => Some(uid.as_str()),
            OperatorSelector::Id(_) => None,
        };
        let json = manifest_json(&reader, uid)?;
        let path = out.join("manifest.json");
        std::fs::write(&path, serde_json::to_string_pretty(&json)?)?;
        println!(
            "read back {} key groups; wrote {}",
            reader.key_group_count(),
            path.display()
        );
    }
    Ok(())
}

fn parse_version(v: &str) -> Result<MetadataVersion, String> {
    match v {
        "3" => Ok(MetadataVersion::V3),
        "6" => Ok(MetadataVersion::V6),
        v => Err(format!("--metadata-version {v}: 3 or 6")),
    }
}

fn parse_compression(v: &str) -> Result<Compression, String> {
    match v {
        "none" => Ok(Compression::None),
        "snappy" => Ok(Compression::Snappy),
        v => Err(format!("--compression {v}: none or snappy")),
    }
}
