#!/usr/bin/env bash
# Runs every test of the workspace: unit, integration (including the Flink vector tests),
# property tests, doc tests, and each fuzz target's body over its committed seed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/setup.sh

cargo nextest run --workspace --no-fail-fast
cargo test --workspace --doc
cargo test --manifest-path fuzz/Cargo.toml --locked
