//! The model-based target (the shape of redb's `fuzz_redb`): arbitrary operations on a
//! memory-store keyed table, mirrored on a `BTreeMap`, compared after every step.

use std::collections::BTreeMap;
use std::sync::Arc;

use arbitrary::{Arbitrary, Unstructured};
use keygroup::{KeyGroup, MaxParallelism, Parallelism};
use memory_store::MemoryStore;
use sfcs_format::MemoryContainer;
use state_api::{
    CanonicalTable, I64Codec, KeyedStateStore, KeyedTable, MemoryPool, StoreConfig,
    UnboundedMemoryPool, restore_canonical_snapshot, write_canonical_snapshot,
};

/// Key groups the target uses (of max parallelism 8, one subtask).
const KEY_GROUPS: u8 = 8;

/// A key: its key group (mod [`KEY_GROUPS`]) and up to three bytes.
#[derive(Debug, Arbitrary, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ModelKey {
    /// The key group (taken mod 8).
    pub key_group: u8,
    /// The key bytes (truncated to 3: collisions are the point).
    pub key: Vec<u8>,
}

impl ModelKey {
    fn normal(&self) -> (u8, Vec<u8>) {
        (
            self.key_group % KEY_GROUPS,
            self.key.iter().take(3).copied().collect(),
        )
    }
}

/// One operation on the table.
#[derive(Debug, Arbitrary)]
pub enum StoreOp {
    /// `begin_bundle` over these keys.
    Begin(Vec<ModelKey>),
    /// `get`.
    Get(ModelKey),
    /// `put`.
    Put(ModelKey, i64),
    /// `remove`.
    Remove(ModelKey),
    /// `update` adding the value.
    Add(ModelKey, i64),
    /// `commit_bundle`.
    Commit,
    /// A canonical snapshot restored into a fresh store, which replaces the table.
    SnapshotRestore,
}

fn key_group(kg: u8) -> KeyGroup {
    KeyGroup::new(i32::from(kg)).expect("non-negative")
}

fn open(pool: &Arc<dyn MemoryPool>) -> (MemoryStore, memory_store::MemoryKeyedTable<I64Codec>) {
    let mp = MaxParallelism::new(i32::from(KEY_GROUPS)).expect("max parallelism");
    let config = StoreConfig::for_subtask(mp, Parallelism::new(1).expect("parallelism"), 0)
        .expect("config")
        .with_memory_pool(Arc::clone(pool));
    let mut store = MemoryStore::new(config);
    let table = store.open_table("t", I64Codec, None).expect("table");
    (store, table)
}

/// Arbitrary operations on a memory-store keyed table against a `BTreeMap` model: every
/// `get` returns the model's value, operations outside their bundle state fail without a
/// change, and a snapshot restored into a fresh store holds exactly the committed model.
pub fn store_model(data: &[u8]) {
    let Ok(ops) = Vec::<StoreOp>::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let pool: Arc<dyn MemoryPool> = Arc::new(UnboundedMemoryPool::new());
    let (_store, mut table) = open(&pool);
    let mut committed: BTreeMap<(u8, Vec<u8>), i64> = BTreeMap::new();
    // The bundle's view (committed + its writes) while one is open.
    let mut bundle: Option<BTreeMap<(u8, Vec<u8>), i64>> = None;
    for op in ops.into_iter().take(256) {
        match op {
            StoreOp::Begin(keys) => {
                let keys: Vec<_> = keys.iter().take(32).map(ModelKey::normal).collect();
                let refs: Vec<_> = keys
                    .iter()
                    .map(|(kg, k)| (key_group(*kg), k.as_slice()))
                    .collect();
                let r = table.begin_bundle(&refs);
                assert_eq!(r.is_ok(), bundle.is_none(), "begin: {r:?}");
                if r.is_ok() {
                    bundle = Some(committed.clone());
                }
            }
            StoreOp::Get(k) => {
                let (kg, key) = k.normal();
                let got = table.get(key_group(kg), &key).map(Option::<&i64>::copied);
                match &bundle {
                    Some(view) => {
                        assert_eq!(got.expect("get in a bundle"), view.get(&(kg, key)).copied());
                    }
                    None => assert!(got.is_err(), "get outside a bundle"),
                }
            }
            StoreOp::Put(k, v) => {
                let (kg, key) = k.normal();
                let r = table.put(key_group(kg), &key, v);
                assert_eq!(r.is_ok(), bundle.is_some(), "put: {r:?}");
                if let Some(view) = bundle.as_mut() {
                    view.insert((kg, key), v);
                }
            }
            StoreOp::Remove(k) => {
                let (kg, key) = k.normal();
                let r = table.remove(key_group(kg), &key);
                assert_eq!(r.is_ok(), bundle.is_some(), "remove: {r:?}");
                if let Some(view) = bundle.as_mut() {
                    view.remove(&(kg, key));
                }
            }
            StoreOp::Add(k, v) => {
                let (kg, key) = k.normal();
                let r = table.update(key_group(kg), &key, |x| *x = x.wrapping_add(v));
                match bundle.as_mut() {
                    Some(view) => {
                        let present = r.expect("update in a bundle").is_some();
                        let entry = view.get_mut(&(kg, key));
                        assert_eq!(present, entry.is_some(), "update found the value");
                        if let Some(x) = entry {
                            *x = x.wrapping_add(v);
                        }
                    }
                    None => assert!(r.is_err(), "update outside a bundle"),
                }
            }
            StoreOp::Commit => {
                let r = table.commit_bundle();
                assert_eq!(r.is_ok(), bundle.is_some(), "commit: {r:?}");
                if let Some(view) = bundle.take() {
                    committed = view;
                }
            }
            StoreOp::SnapshotRestore => {
                if bundle.is_some() {
                    continue;
                }
                let mut container = MemoryContainer::new();
                let tables: [&dyn CanonicalTable; 1] = [&table];
                write_canonical_snapshot("model", None, &tables, &mut container, &pool)
                    .expect("snapshot of committed state");
                let (_fresh_store, mut fresh) = open(&pool);
                let mut targets: [&mut dyn CanonicalTable; 1] = [&mut fresh];
                restore_canonical_snapshot("model", &[&container], &mut targets, &pool)
                    .expect("restore of a fresh snapshot");
                table = fresh;
                // The restored table holds exactly the committed model.
                let keys: Vec<_> = committed.keys().cloned().collect();
                let refs: Vec<_> = keys
                    .iter()
                    .map(|(kg, k)| (key_group(*kg), k.as_slice()))
                    .collect();
                table.begin_bundle(&refs).expect("begin after restore");
                for ((kg, key), v) in &committed {
                    assert_eq!(
                        table.get(key_group(*kg), key).expect("get").copied(),
                        Some(*v)
                    );
                }
                table.commit_bundle().expect("empty commit");
            }
        }
    }
}
