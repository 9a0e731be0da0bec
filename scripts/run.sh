#!/usr/bin/env bash
# The main job (until the end-to-end benchmark exists): builds a canonical snapshot in a
# directory container, validates it back, and prints Flink key groups and RocksDB keys of a
# few SQL keys. Extra arguments go to the example (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/setup.sh

cargo run --release --locked -p sfcs-format --example canonical_snapshot -- "$@"
