//! `read-savepoint`: reads a Flink 2.3.0 canonical savepoint's native state, validates every
//! key group (structure and CRC32C), optionally compares it with a `manifest.json` and
//! optionally extracts it into an sfcs-format directory container.
//!
//! ```text
//! read-savepoint SAVEPOINT (--uid <uid> | --operator-id <hex>) [--max-parallelism M]
//!                [--expect manifest.json] [--to-container DIR] [--write-manifest FILE]
//! ```
//! Exit status: 0 = read (and equal to the manifest), 1 = any difference or failure.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use flink_savepoint::{
    OperatorId, OperatorSelector, ReadOptions, SFSTATE_PAYLOAD_VERSION, SavepointReader,
    manifest_json,
};
use serde_json::Value;
use sfcs_format::{Container, DirContainer};

const USAGE: &str = "usage: read-savepoint SAVEPOINT (--uid <uid> | --operator-id <hex>) \
[--max-parallelism M] [--expect manifest.json] [--to-container DIR] [--write-manifest FILE]";

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

struct Args {
    savepoint: PathBuf,
    selector: OperatorSelector,
    options: ReadOptions,
    expect: Option<PathBuf>,
    to_container: Option<PathBuf>,
    write_manifest: Option<PathBuf>,
}

fn main() -> ExitCode {
    match parse_args().and_then(|a| a.map_or(Ok(true), |a| run(&a))) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("read-savepoint: {e}");
            ExitCode::FAILURE
        }
    }
}

fn parse_args() -> AnyResult<Option<Args>> {
    let mut savepoint = None;
    let mut selector = None;
    let mut options = ReadOptions::default();
    let (mut expect, mut to_container, mut write_manifest) = (None, None, None);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--uid" => selector = Some(OperatorSelector::Uid(value()?)),
            "--operator-id" => {
                selector = Some(OperatorSelector::Id(OperatorId::from_hex(&value()?)?));
            }
            "--max-parallelism" => options = options.with_max_parallelism(value()?.parse()?),
            "--expect" => expect = Some(PathBuf::from(value()?)),
            "--to-container" => to_container = Some(PathBuf::from(value()?)),
            "--write-manifest" => write_manifest = Some(PathBuf::from(value()?)),
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(None);
            }
            other if !other.starts_with("--") && savepoint.is_none() => {
                savepoint = Some(PathBuf::from(other));
            }
            other => return Err(format!("unknown argument {other}\n{USAGE}").into()),
        }
    }
    Ok(Some(Args {
        savepoint: savepoint.ok_or_else(|| format!("SAVEPOINT is required\n{USAGE}"))?,
        selector: selector.ok_or_else(|| format!("--uid or --operator-id is required\n{USAGE}"))?,
        options,
        expect,
        to_container,
        write_manifest,
    }))
}

fn run(args: &Args) -> AnyResult<bool> {
    let reader = SavepointReader::open_with(&args.savepoint, &args.selector, &args.options)?;
    let uid = match &args.selector {
        OperatorSelector::Uid(uid) => Some(uid.as_str()),
        OperatorSelector::Id(_) => None,
    };
    let manifest = manifest_json(&reader, uid)?;
    let groups = manifest["key_groups"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for kg in &groups {
        println!(
            "kg={} subtask={} chunks={} payload_bytes={} crc32c={} sha256={} header={}",
            kg["key_group"],
            kg["writer_subtask"],
            kg["chunk_count"],
            kg["payload_length"],
            kg["crc32c_hex"].as_str().unwrap_or(""),
            kg["sha256"].as_str().unwrap_or(""),
            kg["header_hex"].as_str().unwrap_or("")
        );
    }
    let op = reader.operator();
    println!(
        "{}: metadata v{}, operator {} max parallelism {} parallelism {}, {} key groups read",
        args.savepoint.display(),
        reader.metadata_version(),
        op.id,
        op.max_parallelism,
        op.parallelism,
        groups.len()
    );
    if let Some(path) = &args.write_manifest {
        std::fs::write(path, serde_json::to_string_pretty(&manifest)?)?;
    }
    if let Some(dir) = &args.to_container {
        extract(&reader, dir)?;
        println!(
            "extracted {} key groups into {}",
            groups.len(),
            dir.display()
        );
    }
    match &args.expect {
        Some(path) => compare(&manifest, path),
        None => Ok(true),
    }
}

/// Copies every key group's envelope, verbatim, into a new generation of a directory
/// container and commits it with the manifest the reader derives (an uncommitted generation
/// is invisible to every reader of the container, so without the commit the container would
/// read as empty).
fn extract(reader: &SavepointReader, dir: &Path) -> AnyResult<()> {
    let mut container = DirContainer::open(dir)?;
    container.begin_generation()?;
    for kg in reader.key_groups()? {
        let header = reader.get_header(kg)?.unwrap_or_default().into_owned();
        let count = reader
            .header(kg)
            .map_or(0, sfcs_format::Header::chunk_count);
        let mut chunks = Vec::new();
        for i in 0..count {
            chunks.push(reader.get_chunk(kg, i)?.unwrap_or_default().into_owned());
        }
        let refs: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        container.put_key_group(kg, &header, &refs)?;
    }
    let manifest = if let Some(m) = reader.get_manifest()? {
        m.into_owned()
    } else {
        let m = reader.operator().max_parallelism;
        sfcs_format::Manifest::try_new("", m, 0, m, SFSTATE_PAYLOAD_VERSION, Vec::new())?.encode()
    };
    container.commit_generation(&manifest)?;
    Ok(())
}

/// Compares header bytes, chunk count and payload SHA-256 of every key group with a manifest.
fn compare(manifest: &Value, expect: &Path) -> AnyResult<bool> {
    let expected: Value = serde_json::from_str(&std::fs::read_to_string(expect)?)?;
    let index = |v: &Value| -> BTreeMap<u64, (String, u64, String)> {
        v["key_groups"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|k| {
                let text = |f: &str| k[f].as_str().unwrap_or("").to_owned();
                (
                    k["key_group"].as_u64().unwrap_or(u64::MAX),
                    (
                        text("header_hex"),
                        k["chunk_count"].as_u64().unwrap_or(u64::MAX),
                        text("sha256"),
                    ),
                )
            })
            .collect()
    };
    let (want, got) = (index(&expected), index(manifest));
    let mut differences = 0;
    for kg in want.keys().chain(got.keys()).collect::<BTreeSet<_>>() {
        if want.get(kg) != got.get(kg) {
            differences += 1;
            println!(
                "DIFF kg={kg}: expected {:?}, read {:?}",
                want.get(kg),
                got.get(kg)
            );
        }
    }
    println!(
        "compared with {}: {} key groups, {differences} differences",
        expect.display(),
        want.len()
    );
    Ok(differences == 0)
}
