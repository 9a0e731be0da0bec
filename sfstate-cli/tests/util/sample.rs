//! Sample canonical snapshots for the inspector's tests, example and pyarrow check: two
//! tables of different kinds (`counts`: i64 values without TTL; `rows`: i64, f64 and a
//! nullable string with TTL) of one operator, written with `state_api`'s shared writer.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use keygroup::{
    KeyGroup, KeyGroupRange, MaxParallelism, Parallelism, compute_key_group_for_key_hash,
    compute_key_group_range_for_operator_index, murmur_hash_bytes,
};
use state_api::arrow_array::RecordBatch;
use state_api::arrow_schema::SchemaRef;
use state_api::{
    CanonicalTable, I64Codec, I64F64StrCodec, MemoryPool, UnboundedMemoryPool, ValueCodec,
    canonical_schema, encode_canonical_batch,
};

/// The operator id of the samples.
pub(crate) const OPERATOR: &str = "sample-op";

/// A table that only exports: rows by (key group, key).
pub(crate) struct SampleTable<C: ValueCodec> {
    name: &'static str,
    codec: C,
    range: KeyGroupRange,
    mp: MaxParallelism,
    ttl: bool,
    rows: BTreeMap<(i32, Vec<u8>), (i64, C::Value)>,
}

impl<C: ValueCodec> CanonicalTable for SampleTable<C> {
    fn table_name(&self) -> &str {
        self.name
    }
    fn table_key_groups(&self) -> KeyGroupRange {
        self.range
    }
    fn canonical_schema(&self) -> SchemaRef {
        canonical_schema(&self.codec.fields())
    }
    fn export_key_group(&self, key_group: KeyGroup) -> state_api::Result<Option<RecordBatch>> {
        let kg = key_group.get();
        let rows: Vec<(&[u8], i64, &C::Value)> = self
            .rows
            .range((kg, Vec::new())..(kg + 1, Vec::new()))
            .map(|((_, k), (ts, v))| (k.as_slice(), *ts, v))
            .collect();
        if rows.is_empty() {
            return Ok(None);
        }
        encode_canonical_batch(&self.canonical_schema(), &self.codec, &rows).map(Some)
    }
    fn stage_restore(&mut self, _: Vec<(KeyGroup, RecordBatch)>) -> state_api::Result<()> {
        Err(state_api::Error::Unsupported {
            operation: "restore into a sample table",
        })
    }
    fn commit_restore(&mut self) {}
    fn abort_restore(&mut self) {}
    fn table_max_parallelism(&self) -> MaxParallelism {
        self.mp
    }
    fn table_has_ttl(&self) -> bool {
        self.ttl
    }
}

/// Writes subtask `index` of `parallelism` (`keys` keys in all) at max parallelism `mp` into
/// the directory `dir`; returns the number of key groups written.
pub(crate) fn write_sample(
    dir: &Path,
    mp: i32,
    parallelism: i32,
    index: i32,
    keys: usize,
) -> usize {
    let mp = MaxParallelism::new(mp).expect("mp");
    let range = compute_key_group_range_for_operator_index(
        mp,
        Parallelism::new(parallelism).expect("p"),
        index,
    )
    .expect("range");
    let mut counts = SampleTable {
        name: "counts",
        codec: I64Codec,
        range,
        mp,
        ttl: false,
        rows: BTreeMap::new(),
    };
    let mut rows = SampleTable {
        name: "rows",
        codec: I64F64StrCodec,
        range,
        mp,
        ttl: true,
        rows: BTreeMap::new(),
    };
    for i in 0..keys {
        let key = format!("key-{i:04}").into_bytes();
        let kg = compute_key_group_for_key_hash(murmur_hash_bytes(&key), mp).get();
        if !range.contains(KeyGroup::new(kg).expect("kg")) {
            continue;
        }
        let n = i64::try_from(i).expect("small");
        counts.rows.insert((kg, key.clone()), (0, n * 10));
        if i % 2 == 0 {
            let label = (i % 3 != 0).then(|| format!("label-{i}"));
            rows.rows.insert(
                (kg, key),
                (
                    1_700_000_000_000 + n,
                    (n, f64::from(u32::try_from(i).unwrap_or(0)) / 2.0, label),
                ),
            );
        }
    }
    let mut container = sfcs_format::DirContainer::open(dir).expect("dir");
    let pool: Arc<dyn MemoryPool> = Arc::new(UnboundedMemoryPool::new());
    let summary = state_api::write_canonical_snapshot_at(
        mp,
        OPERATOR,
        &|kg| (kg.get() % 5 == 0).then_some(42_000),
        &[&counts, &rows],
        &mut container,
        &pool,
    )
    .expect("snapshot");
    summary.key_groups
}
