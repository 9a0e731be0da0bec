#!/usr/bin/env bash
# The main job: the end-to-end state benchmark (bench/README.md). By default it runs the
# issue-8 workloads W1 (group aggregate), W2 (mini-batch group aggregate), W3 (inner join)
# and W4 (append Top-1) on typed-store, the embedded RocksDB backend, at parallelism 1 and 2
# (W1, W4 also per record), with the issue's sizes (2,000,000 events, 100,000 keys; every run
# checks its checksums and fails loudly on a difference).
# Extra arguments go to sfstate-bench (try --help), e.g.
#   bash scripts/run.sh --backend memory      # memory-store
#   bash scripts/run.sh --backend typed,memory --json
#   bash scripts/run.sh --quick               # seconds
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/setup.sh

args=("$@")
case " $* " in
    *" --backend "*) ;;
    *) args=(--backend typed "${args[@]}") ;;
esac
cargo run --release --locked -q -p sfstate-bench --bin sfstate-bench -- "${args[@]}"
