//! Shared test support: loading the Flink operator cases (schema in
//! `testdata/flink-operator-cases/README.md`), their JSON value encoding, and running a
//! case's operator over one or more memory stores.

#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::too_many_lines,
    clippy::single_match_else,
    reason = "test support"
)]

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use arrow_schema::{DataType, Field, Fields, TimeUnit};
use keygroup::{LogicalType, MaxParallelism, Parallelism};
use memory_store::MemoryStore;
use operators::{
    AggCall, AggFunction, ChangelogBatch, ChangelogMode, Error, GroupAggSpec, GroupAggregate,
    InnerJoin, JoinSide, JoinSpec, KeyEncoder, MiniBatch, RowKind, SortColumn, Top1, Top1Spec,
    parse_row_kind, schema_of,
};
use operators::{
    AggPhases, RankFunction, TopN, TopNSpec, WindowAggSpec, WindowAggregate, WindowKind,
};
use serde_json::Value as Json;
use sfcs_format::MemoryContainer;
use state_api::{MapStateStore, Row, Scalar, StoreConfig, TimerStateStore};

/// The cases directory: env `FLINK_OPERATOR_CASES_DIR` (relative paths from the repository
/// root) or the committed copy.
pub fn cases_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    match std::env::var_os("FLINK_OPERATOR_CASES_DIR") {
        Some(d) => {
            let p = PathBuf::from(d);
            if p.is_absolute() { p } else { root.join(p) }
        }
        None => root.join("testdata/flink-operator-cases"),
    }
}

/// The cases made by the project's own harness (`compat/flink-operators-quick`).
pub fn generated_cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/flink-operator-cases-generated")
}

/// Every case directory (holding a `case.json`) of [`cases_dir`], sorted by name.
pub fn case_dirs() -> Vec<PathBuf> {
    case_dirs_in(&cases_dir())
}

/// Every case directory (holding a `case.json`) in `dir`, sorted by name.
pub fn case_dirs_in(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("cases directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("case.json").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// A Flink type string as an Arrow type.
pub fn arrow_type(flink: &str) -> Result<DataType, String> {
    let t: LogicalType = flink.parse().map_err(|e| format!("type {flink}: {e}"))?;
    Ok(match t {
        LogicalType::Boolean => DataType::Boolean,
        LogicalType::TinyInt => DataType::Int8,
        LogicalType::SmallInt => DataType::Int16,
        LogicalType::Int => DataType::Int32,
        LogicalType::BigInt => DataType::Int64,
        LogicalType::Float => DataType::Float32,
        LogicalType::Double => DataType::Float64,
        LogicalType::Char { .. } | LogicalType::VarChar { .. } => DataType::Utf8,
        LogicalType::Binary { .. } | LogicalType::VarBinary { .. } => DataType::Binary,
        LogicalType::Decimal { precision, scale } => {
            DataType::Decimal128(precision, i8::try_from(scale).unwrap())
        }
        LogicalType::Date => DataType::Date32,
        LogicalType::Timestamp { precision } => DataType::Timestamp(unit_of(precision), None),
        LogicalType::TimestampLtz { precision } => {
            DataType::Timestamp(unit_of(precision), Some("UTC".into()))
        }
        other => return Err(format!("type {other} has no mapping")),
    })
}

fn unit_of(precision: u8) -> TimeUnit {
    match precision {
        0..=3 => TimeUnit::Millisecond,
        4..=6 => TimeUnit::Microsecond,
        _ => TimeUnit::Nanosecond,
    }
}

/// `[{"name", "type", "nullable"}...]` as Arrow fields.
pub fn fields(columns: &Json) -> Result<Fields, String> {
    let mut out = Vec::new();
    for c in columns.as_array().ok_or("columns not an array")? {
        let ty = arrow_type(c["type"].as_str().ok_or("type")?)?;
        out.push(Field::new(
            c["name"].as_str().ok_or("name")?,
            ty,
            c["nullable"].as_bool().unwrap_or(true),
        ));
    }
    Ok(Fields::from(out))
}

/// Decodes one JSON value of `data_type` (the cases' value encoding).
pub fn decode_value(v: &Json, data_type: &DataType) -> Result<Scalar, String> {
    if v.is_null() {
        return Ok(Scalar::Null);
    }
    let bad = || format!("value {v} for {data_type}");
    Ok(match data_type {
        DataType::Boolean => Scalar::Boolean(v.as_bool().ok_or_else(bad)?),
        DataType::Int8 => {
            Scalar::Int8(i8::try_from(v.as_i64().ok_or_else(bad)?).map_err(|_| bad())?)
        }
        DataType::Int16 => {
            Scalar::Int16(i16::try_from(v.as_i64().ok_or_else(bad)?).map_err(|_| bad())?)
        }
        DataType::Int32 => {
            Scalar::Int32(i32::try_from(v.as_i64().ok_or_else(bad)?).map_err(|_| bad())?)
        }
        DataType::Date32 => {
            Scalar::Date32(i32::try_from(v.as_i64().ok_or_else(bad)?).map_err(|_| bad())?)
        }
        DataType::Int64 => Scalar::Int64(v.as_str().ok_or_else(bad)?.parse().map_err(|_| bad())?),
        DataType::Float64 => Scalar::Float64(float(v).ok_or_else(bad)?),
        #[allow(clippy::cast_possible_truncation)]
        DataType::Float32 => Scalar::Float32(float(v).ok_or_else(bad)? as f32),
        DataType::Decimal128(_, s) => {
            let text = v.as_str().ok_or_else(bad)?;
            let (int, frac) = text.split_once('.').unwrap_or((text, ""));
            if frac.len() != usize::try_from(*s).unwrap() {
                return Err(bad());
            }
            Scalar::Decimal128(format!("{int}{frac}").parse().map_err(|_| bad())?)
        }
        DataType::Utf8 => Scalar::Utf8(v.as_str().ok_or_else(bad)?.to_owned()),
        DataType::Timestamp(unit, _) => {
            let text = v.as_str().ok_or_else(bad)?;
            let (millis, nanos) = text.split_once('.').unwrap_or((text, "0"));
            let millis: i128 = millis.parse().map_err(|_| bad())?;
            let nanos: i128 = nanos.parse().map_err(|_| bad())?;
            let total = millis * 1_000_000 + nanos;
            let per: i128 = match unit {
                TimeUnit::Second => 1_000_000_000,
                TimeUnit::Millisecond => 1_000_000,
                TimeUnit::Microsecond => 1_000,
                TimeUnit::Nanosecond => 1,
            };
            Scalar::Timestamp(i64::try_from(total.div_euclid(per)).map_err(|_| bad())?)
        }
        _ => return Err(bad()),
    })
}

fn float(v: &Json) -> Option<f64> {
    match v.as_str() {
        Some("NaN") => Some(f64::NAN),
        Some("Infinity") => Some(f64::INFINITY),
        Some("-Infinity") => Some(f64::NEG_INFINITY),
        Some(_) => None,
        None => v.as_f64(),
    }
}

/// Decodes a JSON row of `fields`.
pub fn decode_row(v: &Json, fields: &Fields) -> Result<Row, String> {
    let values = v.as_array().ok_or("row not an array")?;
    if values.len() != fields.len() {
        return Err(format!(
            "row {v} has {} values, expected {}",
            values.len(),
            fields.len()
        ));
    }
    values
        .iter()
        .zip(fields.iter())
        .map(|(v, f)| decode_value(v, f.data_type()))
        .collect()
}

/// Equality of two result values for comparison with Flink: floats by bits, except that
/// all NaNs are equal.
pub fn same_value(a: &Scalar, b: &Scalar) -> bool {
    match (a, b) {
        (Scalar::Float64(x), Scalar::Float64(y)) => {
            (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
        }
        (Scalar::Float32(x), Scalar::Float32(y)) => {
            (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
        }
        _ => a == b,
    }
}

/// Equality of two rows (see [`same_value`]).
pub fn same_row(a: &[Scalar], b: &[Scalar]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
}

/// A printable row.
pub fn show(kind: RowKind, row: &[Scalar]) -> String {
    let mut s = format!("{} [", operators::short_string(kind));
    for (i, v) in row.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{v:?}");
    }
    s.push(']');
    s
}

/// One input event of a case.
#[derive(Debug, Clone)]
pub enum Event {
    /// A row of input `side` (0 = `input`/`left`, 1 = `right`).
    Row {
        side: usize,
        kind: RowKind,
        row: Row,
    },
    /// A watermark.
    Watermark(i64),
}

/// The operator of a case, built from its spec.
#[derive(Debug, Clone)]
pub enum OperatorSpec {
    /// A group aggregate.
    GroupAgg(GroupAggSpec),
    /// A Top-1.
    Top1(Top1Spec),
    /// An inner join.
    Join(JoinSpec),
    /// A window aggregate.
    Window(WindowAggSpec),
    /// A Top-N (`operator = "topn"`).
    TopN(TopNSpec),
}

/// How a case compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// Row for row.
    Changelog,
    /// The materialised table.
    Final,
    /// The changelog as a multiset of (kind, row) for operators without a unique key, the
    /// materialised table otherwise: what a run at another parallelism must reproduce
    /// (the order between keys is not part of the contract there).
    Rescaled,
}

/// A loaded case.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub operator: OperatorSpec,
    pub events: Vec<Event>,
    pub expected: Vec<(RowKind, Row)>,
    pub output: Fields,
    pub compare: Compare,
    /// Output column indexes of the unique key (group / partition keys); `None` = multiset.
    pub unique_key: Option<Vec<usize>>,
}

/// Why a case cannot be run.
#[derive(Debug)]
pub enum Skip {
    /// An operator or spec feature not built.
    Unsupported(String),
}

fn columns(v: &Json) -> Vec<usize> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Json::as_u64)
                .map(|x| usize::try_from(x).unwrap())
                .collect()
        })
        .unwrap_or_default()
}

/// Loads the case in `dir`. `Err(Ok(skip))` for an unsupported case, `Err(Err(msg))` for a
/// case that cannot be read.
pub fn load(dir: &Path) -> Result<Case, Result<Skip, String>> {
    let fail = |m: String| Err(m);
    let text = std::fs::read_to_string(dir.join("case.json")).map_err(|e| fail(e.to_string()))?;
    let case: Json = serde_json::from_str(&text).map_err(|e| fail(e.to_string()))?;
    let name = case["name"].as_str().unwrap_or_default().to_owned();
    let operator = case["operator"].as_str().unwrap_or_default();
    let spec = &case["spec"];
    let config = &case["config"];
    let mode = if config["changelog_mode"].as_str() == Some("upsert") {
        ChangelogMode::Upsert
    } else {
        ChangelogMode::All
    };
    let output = fields(&case["output"]).map_err(fail)?;
    let input_names: Vec<String>;
    let (op, unique_key) = match operator {
        "group_aggregate" => {
            let input = fields(&case["inputs"]["input"]).map_err(fail)?;
            input_names = vec!["input".into()];
            let mut aggs = Vec::new();
            for a in spec["aggregates"].as_array().into_iter().flatten() {
                let f = a["function"].as_str().unwrap_or_default();
                let function = AggFunction::from_name(f)
                    .ok_or_else(|| Ok(Skip::Unsupported(format!("aggregate {f}"))))?;
                let mut call = AggCall::new(function, columns(&a["args"]));
                if a["distinct"].as_bool() == Some(true) {
                    call = call.distinct();
                }
                aggs.push(call);
            }
            let group_by = columns(&spec["group_by"]);
            let key: Vec<usize> = (0..group_by.len()).collect();
            let mut s = GroupAggSpec::new(
                input,
                group_by,
                aggs,
                spec["input_insert_only"].as_bool().unwrap_or(false),
            )
            .with_changelog_mode(mode);
            if config["mini_batch"].as_bool() == Some(true) {
                let size = config["mini_batch_size"].as_u64().unwrap_or(5000);
                s = s.with_mini_batch(MiniBatch {
                    size: usize::try_from(size).unwrap(),
                });
            }
            (OperatorSpec::GroupAgg(s), Some(key))
        }
        "top1" => {
            let input = fields(&case["inputs"]["input"]).map_err(fail)?;
            input_names = vec!["input".into()];
            if spec["rank_limit"].as_u64() != Some(1) {
                return Err(Ok(Skip::Unsupported("Top-N with N > 1".into())));
            }
            let order_by = spec["order_by"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|o| SortColumn {
                    column: usize::try_from(o["column"].as_u64().unwrap_or(0)).unwrap(),
                    descending: o["descending"].as_bool().unwrap_or(false),
                    nulls_last: o["nulls_last"].as_bool().unwrap_or(false),
                })
                .collect();
            let partition_by = columns(&spec["partition_by"]);
            let s = Top1Spec::new(
                input,
                partition_by.clone(),
                order_by,
                spec["output_rank_number"].as_bool().unwrap_or(false),
            )
            .with_changelog_mode(mode);
            (OperatorSpec::Top1(s), Some(partition_by))
        }
        "join" => {
            if spec["join_type"].as_str() != Some("INNER") {
                return Err(Ok(Skip::Unsupported(format!(
                    "join type {}",
                    spec["join_type"]
                ))));
            }
            let left = fields(&case["inputs"]["left"]).map_err(fail)?;
            let right = fields(&case["inputs"]["right"]).map_err(fail)?;
            input_names = vec!["left".into(), "right".into()];
            let mut s = JoinSpec::new(
                left,
                right,
                columns(&spec["left_keys"]),
                columns(&spec["right_keys"]),
            );
            if let Some(c) = spec["non_equi_condition"].as_str() {
                s = s.with_non_equi_condition(c);
            }
            (OperatorSpec::Join(s), None)
        }
        "window_aggregate" => {
            let input = fields(&case["inputs"]["input"]).map_err(fail)?;
            input_names = vec!["input".into()];
            // The shared schema: an input with any -U/+U/-D line was declared
            // `ChangelogMode.all()` (a retracting changelog).
            let lines = std::fs::read_to_string(dir.join("input.jsonl"))
                .map_err(|e| fail(e.to_string()))?;
            let insert_only = !["\"-U\"", "\"+U\"", "\"-D\""]
                .iter()
                .any(|k| lines.contains(k));
            let s = window_spec(&case, input, insert_only)?;
            (OperatorSpec::Window(s), None)
        }
        "topn" => {
            let input = fields(&case["inputs"]["input"]).map_err(fail)?;
            input_names = vec!["input".into()];
            let lines = std::fs::read_to_string(dir.join("input.jsonl"))
                .map_err(|e| fail(e.to_string()))?;
            let insert_only = !["\"-U\"", "\"+U\"", "\"-D\""]
                .iter()
                .any(|k| lines.contains(k));
            let order_by = spec["order_by"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|o| SortColumn {
                    column: usize::try_from(o["column"].as_u64().unwrap_or(0)).unwrap(),
                    descending: o["descending"].as_bool().unwrap_or(false),
                    nulls_last: o["nulls_last"].as_bool().unwrap_or(false),
                })
                .collect();
            let partition_by = columns(&spec["partition_by"]);
            let rank_number = spec["output_rank_number"].as_bool().unwrap_or(false);
            let function = match spec["rank_function"].as_str().unwrap_or("ROW_NUMBER") {
                "ROW_NUMBER" => RankFunction::RowNumber,
                "RANK" => RankFunction::Rank,
                "DENSE_RANK" => RankFunction::DenseRank,
                other => return Err(Ok(Skip::Unsupported(format!("rank function {other}")))),
            };
            let mut s = TopNSpec::new(
                input.clone(),
                partition_by.clone(),
                order_by,
                spec["rank_limit"].as_u64().unwrap_or(1),
                rank_number,
            )
            .with_function(function)
            .with_changelog_mode(mode);
            if !insert_only {
                s = s.with_retracting_input();
            }
            let unique = rank_number.then(|| {
                let mut k = partition_by.clone();
                k.push(input.len());
                k
            });
            (OperatorSpec::TopN(s), unique)
        }
        other => return Err(Ok(Skip::Unsupported(format!("operator {other}")))),
    };
    let input_fields: Vec<Fields> = match &op {
        OperatorSpec::GroupAgg(s) => vec![s.input.clone()],
        OperatorSpec::Top1(s) => vec![s.input.clone()],
        OperatorSpec::Join(s) => vec![s.left.clone(), s.right.clone()],
        OperatorSpec::Window(s) => vec![s.input.clone()],
        OperatorSpec::TopN(s) => vec![s.input.clone()],
    };
    let mut events = Vec::new();
    let input =
        std::fs::read_to_string(dir.join("input.jsonl")).map_err(|e| fail(e.to_string()))?;
    for (n, line) in input
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: Json =
            serde_json::from_str(line).map_err(|e| fail(format!("input line {n}: {e}")))?;
        if let Some(w) = v.get("watermark") {
            events.push(Event::Watermark(w.as_i64().unwrap_or(i64::MAX)));
            continue;
        }
        let input_name = v["input"].as_str().unwrap_or("input");
        let side = input_names
            .iter()
            .position(|n| n == input_name)
            .ok_or_else(|| fail(format!("input line {n}: unknown input {input_name}")))?;
        let kind =
            parse_row_kind(v["kind"].as_str().unwrap_or(""), n).map_err(|e| fail(e.to_string()))?;
        let row = decode_row(&v["row"], &input_fields[side])
            .map_err(|e| fail(format!("input line {n}: {e}")))?;
        events.push(Event::Row { side, kind, row });
    }
    let mut expected = Vec::new();
    let out = std::fs::read_to_string(dir.join("output.jsonl")).map_err(|e| fail(e.to_string()))?;
    for (n, line) in out
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: Json =
            serde_json::from_str(line).map_err(|e| fail(format!("output line {n}: {e}")))?;
        let kind =
            parse_row_kind(v["kind"].as_str().unwrap_or(""), n).map_err(|e| fail(e.to_string()))?;
        let row =
            decode_row(&v["row"], &output).map_err(|e| fail(format!("output line {n}: {e}")))?;
        expected.push((kind, row));
    }
    let compare = if case["compare"].as_str() == Some("final") {
        Compare::Final
    } else {
        Compare::Changelog
    };
    Ok(Case {
        name,
        operator: op,
        events,
        expected,
        output,
        compare,
        unique_key,
    })
}

/// A running operator of any kind over stores `S`.
pub enum Running<S: MapStateStore + TimerStateStore> {
    GroupAgg(GroupAggregate<S>),
    Top1(Top1<S>),
    Join(InnerJoin<S>),
    Window(WindowAggregate<S>),
    TopN(TopN<S>),
}

/// Makes the store of subtask `index` of `parallelism` (max parallelism 128): one line per
/// backend.
pub trait Backend {
    /// The store type.
    type Store: MapStateStore + TimerStateStore;
    /// The backend's name in the printed lines.
    const NAME: &'static str;
    /// A fresh store.
    fn store(&self, parallelism: i32, index: i32) -> Self::Store;
}

/// memory-store.
pub struct Memory;

impl Backend for Memory {
    type Store = MemoryStore;
    const NAME: &'static str = "memory-store";
    fn store(&self, parallelism: i32, index: i32) -> MemoryStore {
        MemoryStore::new(config(parallelism, index))
    }
}

/// typed-store (RocksDB): every store in its own directory of one temporary directory, all in
/// one slot (typed-store's `test-util` factory).
pub struct Rocks(typed_store::test_util::RocksFactory);

impl Rocks {
    /// A fresh temporary directory and slot.
    pub fn new() -> Self {
        Self(typed_store::test_util::RocksFactory::new())
    }
}

impl Backend for Rocks {
    type Store = typed_store::RocksStore;
    const NAME: &'static str = "typed-store";
    fn store(&self, parallelism: i32, index: i32) -> typed_store::RocksStore {
        use state_api::conformance::StoreFactory as _;
        self.0.create(config(parallelism, index))
    }
}

/// The configuration of subtask `index` of `parallelism`, max parallelism 128.
pub fn config(parallelism: i32, index: i32) -> StoreConfig {
    let mp = MaxParallelism::new(128).unwrap();
    StoreConfig::for_subtask(mp, Parallelism::new(parallelism).unwrap(), index).unwrap()
}

/// The operator id used by the tests.
pub const OPERATOR_ID: &str = "op";

/// Opens `spec` over `store`.
pub fn open<S: MapStateStore + TimerStateStore>(
    spec: &OperatorSpec,
    store: &mut S,
) -> Result<Running<S>, Error> {
    Ok(match spec {
        OperatorSpec::GroupAgg(s) => {
            Running::GroupAgg(GroupAggregate::try_new(OPERATOR_ID, s.clone(), store)?)
        }
        OperatorSpec::Top1(s) => Running::Top1(Top1::try_new(OPERATOR_ID, s.clone(), store)?),
        OperatorSpec::Join(s) => Running::Join(InnerJoin::try_new(OPERATOR_ID, s, store)?),
        OperatorSpec::Window(s) => {
            Running::Window(WindowAggregate::try_new(OPERATOR_ID, s.clone(), store)?)
        }
        OperatorSpec::TopN(s) => Running::TopN(TopN::try_new(OPERATOR_ID, s.clone(), store)?),
    })
}

fn input_fields(spec: &OperatorSpec, side: usize) -> Fields {
    match spec {
        OperatorSpec::GroupAgg(s) => s.input.clone(),
        OperatorSpec::Top1(s) => s.input.clone(),
        OperatorSpec::Window(s) => s.input.clone(),
        OperatorSpec::TopN(s) => s.input.clone(),
        OperatorSpec::Join(s) => {
            if side == 0 {
                s.left.clone()
            } else {
                s.right.clone()
            }
        }
    }
}

/// Runs one bundle of events (rows only) through `op`.
pub fn run_bundle<S: MapStateStore + TimerStateStore>(
    spec: &OperatorSpec,
    op: &mut Running<S>,
    events: &[Event],
) -> Result<Vec<(RowKind, Row)>, Error> {
    if let Running::Window(w) = op {
        return run_window_events(w, events);
    }
    // Consecutive rows of one side form a segment.
    let mut segments: Vec<(usize, Vec<(RowKind, Row)>)> = Vec::new();
    for e in events {
        if let Event::Row { side, kind, row } = e {
            match segments.last_mut() {
                Some((s, rows)) if s == side => rows.push((*kind, row.clone())),
                _ => segments.push((*side, vec![(*kind, row.clone())])),
            }
        }
    }
    let batches: Vec<(usize, ChangelogBatch)> = segments
        .into_iter()
        .map(|(side, rows)| {
            let schema = schema_of(&input_fields(spec, side));
            ChangelogBatch::from_rows(&schema, &rows).map(|b| (side, b))
        })
        .collect::<Result<_, _>>()?;
    let out = match op {
        Running::GroupAgg(g) => {
            let mut out = Vec::new();
            for (_, b) in &batches {
                out.extend(g.process_bundle(b)?.to_rows()?);
            }
            out
        }
        Running::Top1(t) => {
            let mut out = Vec::new();
            for (_, b) in &batches {
                out.extend(t.process_bundle(b)?.to_rows()?);
            }
            out
        }
        Running::Window(_) => Vec::new(),
        Running::TopN(t) => {
            let mut out = Vec::new();
            for (_, b) in &batches {
                out.extend(t.process_bundle(b)?.to_rows()?);
            }
            out
        }
        Running::Join(j) => {
            let segs: Vec<(JoinSide, &ChangelogBatch)> = batches
                .iter()
                .map(|(s, b)| {
                    (
                        if *s == 0 {
                            JoinSide::Left
                        } else {
                            JoinSide::Right
                        },
                        b,
                    )
                })
                .collect();
            j.process_bundle(&segs)?.to_rows()?
        }
    };
    Ok(out)
}

/// The bundle size of a case run: mini-batch cases close bundles every 97 rows (Flink
/// closes them by time; the final table does not depend on it), others every 64 rows (the
/// changelog does not depend on it either).
pub fn bundle_size(spec: &OperatorSpec) -> usize {
    match spec {
        OperatorSpec::GroupAgg(s) if s.mini_batch.is_some() => 97,
        _ => 64,
    }
}

/// Runs `case` over one store, bundle by bundle.
pub fn run_single<B: Backend>(backend: &B, case: &Case) -> Result<Vec<(RowKind, Row)>, Error> {
    let mut st = backend.store(1, 0);
    let mut op = open(&case.operator, &mut st)?;
    let mut out = Vec::new();
    for chunk in case.events.chunks(bundle_size(&case.operator)) {
        out.extend(run_bundle(&case.operator, &mut op, chunk)?);
    }
    Ok(out)
}

/// The key group (max parallelism 128) of the row of `side` under the operator's key.
pub fn route(spec: &OperatorSpec, side: usize, row: &[Scalar]) -> i32 {
    let mp = MaxParallelism::new(128).unwrap();
    let (fields, cols) = match spec {
        OperatorSpec::GroupAgg(s) => (s.input.clone(), s.group_by.clone()),
        OperatorSpec::Top1(s) => (s.input.clone(), s.partition_by.clone()),
        OperatorSpec::Window(s) => (s.input.clone(), s.group_by.clone()),
        OperatorSpec::TopN(s) => (s.input.clone(), s.partition_by.clone()),
        OperatorSpec::Join(s) => {
            if side == 0 {
                (s.left.clone(), s.left_keys.clone())
            } else {
                (s.right.clone(), s.right_keys.clone())
            }
        }
    };
    let mut enc = KeyEncoder::try_new(&fields, &cols, mp).unwrap();
    let mut buf = Vec::new();
    enc.encode(row, &mut buf).unwrap().get()
}

/// Runs `case` at parallelism 2 (events routed by key group to two stores); after bundle
/// `snapshot_after` (if any) both subtasks snapshot canonically and the run continues on
/// fresh stores of parallelism `restore_parallelism` restored from both snapshots.
pub fn run_parallel<B: Backend>(
    backend: &B,
    case: &Case,
    snapshot_after: Option<usize>,
    restore_parallelism: i32,
) -> Result<Vec<(RowKind, Row)>, Error> {
    run_parallel_across(backend, backend, case, snapshot_after, restore_parallelism)
}

/// As [`run_parallel`], but the run after the snapshot continues on `then`'s stores: the
/// state moves between backends through the canonical snapshot.
pub fn run_parallel_across<B: Backend, C: Backend>(
    first: &B,
    then: &C,
    case: &Case,
    snapshot_after: Option<usize>,
    restore_parallelism: i32,
) -> Result<Vec<(RowKind, Row)>, Error> {
    let bundles: Vec<&[Event]> = case.events.chunks(bundle_size(&case.operator)).collect();
    let split = snapshot_after.map_or(bundles.len(), |k| (k + 1).min(bundles.len()));
    let mut out = Vec::new();
    let mut stores: Vec<B::Store> = (0..2).map(|i| first.store(2, i)).collect();
    let mut ops: Vec<Running<B::Store>> = stores
        .iter_mut()
        .map(|s| open(&case.operator, s))
        .collect::<Result<_, _>>()?;
    for chunk in bundles.get(..split).unwrap_or_default() {
        route_bundle(case, &mut ops, 2, chunk, &mut out)?;
    }
    if snapshot_after.is_none() {
        return Ok(out);
    }
    let mut containers: Vec<MemoryContainer> = Vec::new();
    for op in &ops {
        let mut c = MemoryContainer::new();
        match op {
            Running::GroupAgg(g) => g.snapshot(&mut c)?,
            Running::Top1(t) => t.snapshot(&mut c)?,
            Running::Join(j) => j.snapshot(&mut c)?,
            Running::Window(w) => w.snapshot(&mut c)?,
            Running::TopN(t) => t.snapshot(&mut c)?,
        };
        containers.push(c);
    }
    drop(ops);
    let mut stores: Vec<C::Store> = (0..restore_parallelism)
        .map(|i| then.store(restore_parallelism, i))
        .collect();
    let mut ops: Vec<Running<C::Store>> = stores
        .iter_mut()
        .map(|s| open(&case.operator, s))
        .collect::<Result<_, _>>()?;
    let sources: Vec<&dyn sfcs_format::Container> = containers
        .iter()
        .map(|c| c as &dyn sfcs_format::Container)
        .collect();
    for op in &mut ops {
        match op {
            Running::GroupAgg(g) => g.restore(&sources)?,
            Running::Top1(t) => t.restore(&sources)?,
            Running::Join(j) => j.restore(&sources)?,
            Running::Window(w) => w.restore(&sources)?,
            Running::TopN(t) => t.restore(&sources)?,
        };
    }
    for chunk in bundles.get(split..).unwrap_or_default() {
        route_bundle(case, &mut ops, restore_parallelism, chunk, &mut out)?;
    }
    Ok(out)
}

/// Routes one bundle's rows by Flink key group to the subtasks of `parallelism` (watermarks
/// to every subtask) and runs it.
fn route_bundle<S: MapStateStore + TimerStateStore>(
    case: &Case,
    ops: &mut [Running<S>],
    parallelism: i32,
    chunk: &[Event],
    out: &mut Vec<(RowKind, Row)>,
) -> Result<(), Error> {
    let mp = MaxParallelism::new(128).unwrap();
    let mut per: Vec<Vec<Event>> = vec![Vec::new(); ops.len()];
    for e in chunk {
        if let Event::Row { side, row, .. } = e {
            let kg = route(&case.operator, *side, row);
            let idx = keygroup::compute_operator_index_for_key_group(
                mp,
                Parallelism::new(parallelism).unwrap(),
                keygroup::KeyGroup::new(kg).unwrap(),
            );
            per[usize::try_from(idx).unwrap()].push(e.clone());
        } else {
            // Watermarks reach every subtask.
            for p in &mut per {
                p.push(e.clone());
            }
        }
    }
    for (op, events) in ops.iter_mut().zip(&per) {
        out.extend(run_bundle(&case.operator, op, events)?);
    }
    Ok(())
}

/// The materialised table of a changelog: by unique key (last `+I`/`+U`, `-D` removes), or
/// as a multiset. Rows are returned sorted by their printed form.
pub fn materialise(rows: &[(RowKind, Row)], unique_key: Option<&[usize]>) -> Vec<String> {
    match unique_key {
        Some(key) => {
            let mut table: HashMap<String, Row> = HashMap::new();
            for (kind, row) in rows {
                let k = show(
                    RowKind::Insert,
                    &key.iter().map(|&i| row[i].clone()).collect::<Vec<_>>(),
                );
                match kind {
                    RowKind::Insert | RowKind::UpdateAfter => {
                        table.insert(k, row.clone());
                    }
                    RowKind::Delete => {
                        table.remove(&k);
                    }
                    RowKind::UpdateBefore => {}
                }
            }
            let mut out: Vec<String> = table.values().map(|r| canonical(r)).collect();
            out.sort();
            out
        }
        None => {
            let mut counts: HashMap<String, i64> = HashMap::new();
            for (kind, row) in rows {
                let d = if operators::is_accumulate(*kind) {
                    1
                } else {
                    -1
                };
                *counts.entry(canonical(row)).or_default() += d;
            }
            // A signed multiset: Flink's join retracts the matches of a retraction it has no
            // state for (rows it never emitted as inserts), so a row's net count can be
            // negative in Flink's own output; both sides are compared with their signs.
            let mut out = Vec::new();
            for (row, n) in counts {
                let shown = if n < 0 {
                    format!("(net retraction) {row}")
                } else {
                    row
                };
                for _ in 0..n.unsigned_abs() {
                    out.push(shown.clone());
                }
            }
            out.sort();
            out
        }
    }
}

/// A printed row where all NaNs print alike.
fn canonical(row: &[Scalar]) -> String {
    let normalised: Vec<Scalar> = row
        .iter()
        .map(|v| match v {
            Scalar::Float64(x) if x.is_nan() => Scalar::Float64(f64::NAN),
            Scalar::Float32(x) if x.is_nan() => Scalar::Float32(f32::NAN),
            other => other.clone(),
        })
        .collect();
    show(RowKind::Insert, &normalised)
}

/// Compares `actual` with the case's expectation; `Err` names the first difference.
pub fn compare(case: &Case, actual: &[(RowKind, Row)], compare: Compare) -> Result<(), String> {
    match compare {
        Compare::Changelog => {
            for (i, (e, a)) in case.expected.iter().zip(actual).enumerate() {
                if e.0 != a.0 || !same_row(&e.1, &a.1) {
                    return Err(format!(
                        "row {i}: expected {}, got {}",
                        show(e.0, &e.1),
                        show(a.0, &a.1)
                    ));
                }
            }
            if case.expected.len() != actual.len() {
                let i = case.expected.len().min(actual.len());
                return Err(format!(
                    "{} rows expected, {} produced; first extra/missing at {i}: {}",
                    case.expected.len(),
                    actual.len(),
                    case.expected
                        .get(i)
                        .or(actual.get(i))
                        .map(|r| show(r.0, &r.1))
                        .unwrap_or_default()
                ));
            }
            Ok(())
        }
        Compare::Rescaled if case.unique_key.is_none() => {
            let mut e: Vec<String> = case
                .expected
                .iter()
                .map(|(k, r)| format!("{k:?} {}", canonical(r)))
                .collect();
            let mut a: Vec<String> = actual
                .iter()
                .map(|(k, r)| format!("{k:?} {}", canonical(r)))
                .collect();
            e.sort();
            a.sort();
            if e != a {
                let first = e
                    .iter()
                    .zip(&a)
                    .position(|(x, y)| x != y)
                    .unwrap_or(e.len().min(a.len()));
                return Err(format!(
                    "changelog multiset differs at sorted row {first}: expected {:?}, got {:?}",
                    e.get(first),
                    a.get(first)
                ));
            }
            Ok(())
        }
        Compare::Final | Compare::Rescaled => {
            let e = materialise(&case.expected, case.unique_key.as_deref());
            let a = materialise(actual, case.unique_key.as_deref());
            for (i, (x, y)) in e.iter().zip(&a).enumerate() {
                if x != y {
                    return Err(format!("final row {i}: expected {x}, got {y}"));
                }
            }
            if e.len() != a.len() {
                return Err(format!(
                    "final table: {} rows expected, {} produced",
                    e.len(),
                    a.len()
                ));
            }
            Ok(())
        }
    }
}

/// The window aggregate of a `window_aggregate` case: `spec.window`, `config.local_time_zone`,
/// one or two phases as the plan shows.
pub fn window_spec(
    case: &Json,
    input: Fields,
    insert_only: bool,
) -> Result<WindowAggSpec, Result<Skip, String>> {
    let spec = &case["spec"];
    let w = &spec["window"];
    let ms = |name: &str| {
        w[name]
            .as_i64()
            .ok_or_else(|| Err(format!("window.{name}")))
    };
    let kind = match w["kind"].as_str().unwrap_or_default() {
        "TUMBLE" => WindowKind::Tumble {
            size_ms: ms("size_ms")?,
        },
        "HOP" => WindowKind::Hop {
            size_ms: ms("size_ms")?,
            slide_ms: ms("slide_ms")?,
        },
        "CUMULATE" => WindowKind::Cumulate {
            size_ms: ms("size_ms")?,
            step_ms: ms("step_ms")?,
        },
        other => return Err(Ok(Skip::Unsupported(format!("window {other}")))),
    };
    let mut aggs = Vec::new();
    for a in spec["aggregates"].as_array().into_iter().flatten() {
        let f = a["function"].as_str().unwrap_or_default();
        let function = AggFunction::from_name(f)
            .ok_or_else(|| Ok(Skip::Unsupported(format!("aggregate {f}"))))?;
        let mut call = AggCall::new(function, columns(&a["args"]));
        if a["distinct"].as_bool() == Some(true) {
            call = call.distinct();
        }
        aggs.push(call);
    }
    let time_column = usize::try_from(
        w["time_column"]
            .as_u64()
            .ok_or_else(|| Err("time_column".to_owned()))?,
    )
    .unwrap();
    let mut s = WindowAggSpec::new(input, kind, time_column, columns(&spec["group_by"]), aggs)
        .with_offset(w["offset_ms"].as_i64().unwrap_or(0))
        .with_local_time_zone(case["config"]["local_time_zone"].as_str().unwrap_or("UTC"));
    if case["plan"]
        .as_str()
        .is_some_and(|p| !p.contains("LocalWindowAggregate"))
    {
        s = s.with_phases(AggPhases::OnePhase);
    }
    if !insert_only || spec["input_insert_only"].as_bool() == Some(false) {
        s = s.with_retracting_input();
    }
    Ok(s)
}

/// Runs events through a window aggregate: rows between two watermarks form one bundle;
/// each watermark fires.
pub fn run_window_events<S: MapStateStore + TimerStateStore>(
    w: &mut WindowAggregate<S>,
    events: &[Event],
) -> Result<Vec<(RowKind, Row)>, Error> {
    let schema = schema_of(w.input_fields());
    let mut out = Vec::new();
    let mut rows: Vec<(RowKind, Row)> = Vec::new();
    for e in events {
        match e {
            Event::Row { kind, row, .. } => rows.push((*kind, row.clone())),
            Event::Watermark(t) => {
                if !rows.is_empty() {
                    w.process_bundle(&ChangelogBatch::from_rows(&schema, &rows)?)?;
                    rows.clear();
                }
                out.extend(w.process_watermark(*t)?.to_rows()?);
            }
        }
    }
    if !rows.is_empty() {
        w.process_bundle(&ChangelogBatch::from_rows(&schema, &rows)?)?;
    }
    Ok(out)
}
