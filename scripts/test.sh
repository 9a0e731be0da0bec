#!/usr/bin/env bash
# Runs every test of the workspace: unit, integration (including the Flink vector tests),
# property tests, doc tests, and each fuzz target's body over its committed seed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/setup.sh

cargo test --workspace --doc --locked
cargo test --manifest-path fuzz/Cargo.toml --locked --test seed_corpus

# Arrow-native dumps: pyarrow (from PyPI, in a venv under the target dir) reads sections.
bash scripts/pyarrow-check.sh

# Last, so its summary closes the output.
cargo nextest run --workspace --no-fail-fast --locked
