#!/usr/bin/env bash
# Proves with real Apache Flink 2.3.0 that savepoints written by sfstate's Rust writer
# (flink-savepoint's `write-savepoint`) restore on the HashMap and the RocksDB backend at
# another parallelism with exactly the written content, and that the savepoints Flink then
# takes of the restored job read back in Rust with the original content.
#
#   compat/flink-savepoint/proof.sh [WORK_DIR]
#
# Needs Java 17 and python3 (pip), and the Flink 2.3.0 jars: FLINK_LIB = the unpacked
# pyflink/lib of apache-flink-libraries 2.3.0. Default: /work/flink/pyflink/lib when it exists,
# else the wheel is downloaded from PyPI into $WORK/flink (pip download --no-deps).
# The Java side is tool/ (a copy of shared/flink-savepoint/tool: run.sh restore-check).
# Exit status 0 when every row passes. CI does not run this (it needs a JVM and ~3 minutes).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
WORK="${1:-${TMPDIR:-/tmp}/sfstate-flink-savepoint-proof}"
rm -rf "$WORK/runs" && mkdir -p "$WORK/runs"
R="$WORK/runs"

# ---------------------------------------------------------------- Flink jars
if [[ -z "${FLINK_LIB:-}" ]]; then
    if [[ -f /work/flink/pyflink/lib/flink-dist-2.3.0.jar ]]; then
        FLINK_LIB=/work/flink/pyflink/lib
    else
        mkdir -p "$WORK/flink"
        if [[ ! -f "$WORK/flink/pyflink/lib/flink-dist-2.3.0.jar" ]]; then
            python3 -m pip download --quiet --no-deps "apache-flink-libraries==2.3.0" -d "$WORK/flink"
            unzip -q -o "$WORK"/flink/apache_flink_libraries-2.3.0-*.whl 'pyflink/lib/*.jar' -d "$WORK/flink"
        fi
        FLINK_LIB="$WORK/flink/pyflink/lib"
    fi
fi
export FLINK_LIB
TOOL="$HERE/tool/run.sh"

# ---------------------------------------------------------------- Rust side
source "$ROOT/scripts/env.sh"
# SFSP_BIN_DIR: a directory already holding release builds of write-savepoint and
# read-savepoint (skips building them here).
if [[ -n "${SFSP_BIN_DIR:-}" ]]; then
    BIN="$SFSP_BIN_DIR"
else
    (cd "$ROOT" && cargo build --release -q -p flink-savepoint --bins)
    BIN="$CARGO_TARGET_DIR/release"
fi
# The store example links memory-store and typed-store (Arrow, RocksDB): the dev profile
# builds faster.
# SFSP_STORE_BIN: an already built savepoint_roundtrip example (skips building it here).
# SFSP_SKIP_STORE=1: skip section 5 (the store leg; it needs the typed-store example, which
# links RocksDB).
if [[ -n "${SFSP_SKIP_STORE:-}" ]]; then
    STORE=""
elif [[ -n "${SFSP_STORE_BIN:-}" ]]; then
    STORE="$SFSP_STORE_BIN"
else
    (cd "$ROOT" && cargo build -q -p typed-store --example savepoint_roundtrip)
    STORE="$CARGO_TARGET_DIR/debug/examples/savepoint_roundtrip"
fi
SAMPLES="$ROOT/testdata/flink-savepoints"

PASS=0; FAIL=0
row() { # row "description" command...
    local what="$1"; shift
    local log="$R/$(printf '%02d' $((PASS + FAIL + 1))).log"
    if "$@" >"$log" 2>&1; then
        PASS=$((PASS + 1)); echo "PASS  $what"
    else
        FAIL=$((FAIL + 1)); echo "FAIL  $what (log: $log)"; tail -5 "$log" | sed 's/^/      /'
    fi
    grep -E "RESTORE-CHECK|compared with|key groups read|^wrote|restored [0-9]+ key groups|^restored|^snapshot" "$log" | sed 's/^/      /' || true
}

# 1. Canonical snapshots as sfcs-format directory containers: the native state of three
#    Flink-written samples (multi-chunk M=256; Snappy + timers M=4096; non-ASCII uid and
#    operator id M=256), extracted by the Rust reader.
row "extract p2-rocksdb-files-mp256-multichunk into a container" \
    "$BIN/read-savepoint" "$SAMPLES/p2-rocksdb-files-mp256-multichunk" --uid native-op --to-container "$R/c-multichunk"
row "extract p2-rocksdb-files-mp4096-snappy-timers-multichunk into a container" \
    "$BIN/read-savepoint" "$SAMPLES/p2-rocksdb-files-mp4096-snappy-timers-multichunk" --uid native-op --to-container "$R/c-4096"
UTF_UID="native-op-ü✓😀"
row "extract p3-hashmap-inline-mp256-timers-otherop-snappy-utf8 into a container" \
    "$BIN/read-savepoint" "$SAMPLES/p3-hashmap-inline-mp256-timers-otherop-snappy-utf8" --uid "$UTF_UID" --to-container "$R/c-utf8"

# 2. Rust writes savepoints (v6 files; v3 files; v6 inline), with a manifest read back in Rust.
row "write-savepoint multichunk M=256 P=3 (v6, relative files)" \
    "$BIN/write-savepoint" --from "$R/c-multichunk" --uid native-op --max-parallelism 256 --parallelism 3 --out "$R/w-multichunk" --name native
row "write-savepoint M=4096 P=5 (v3, relative files)" \
    "$BIN/write-savepoint" --from "$R/c-4096" --uid native-op --max-parallelism 4096 --parallelism 5 --out "$R/w-4096" --metadata-version 3
row "write-savepoint non-ASCII uid M=256 P=2 (v6, inline)" \
    "$BIN/write-savepoint" --from "$R/c-utf8" --uid "$UTF_UID" --max-parallelism 256 --parallelism 2 --out "$R/w-utf8"

row "write-savepoint multichunk M=256 P=2 with Snappy-framed key groups (v6, relative files)" \
    "$BIN/write-savepoint" --from "$R/c-multichunk" --uid native-op --max-parallelism 256 --parallelism 2 --out "$R/w-snappy" --compression snappy

# What Rust wrote has the original Flink samples' content (every key group, header, payload
# SHA-256), so the Flink rows below, which compare with the manifests of what Rust wrote, are
# not vacuous (an empty container once gave an empty savepoint that every restore accepted).
row "Rust-written content equals the original Flink sample (multichunk)" \
    "$BIN/read-savepoint" "$R/w-multichunk" --uid native-op --expect "$SAMPLES/p2-rocksdb-files-mp256-multichunk/manifest.json"
row "Rust-written content equals the original Flink sample (M=4096)" \
    "$BIN/read-savepoint" "$R/w-4096" --uid native-op --expect "$SAMPLES/p2-rocksdb-files-mp4096-snappy-timers-multichunk/manifest.json"
row "Rust-written content equals the original Flink sample (non-ASCII uid)" \
    "$BIN/read-savepoint" "$R/w-utf8" --uid "$UTF_UID" --expect "$SAMPLES/p3-hashmap-inline-mp256-timers-otherop-snappy-utf8/manifest.json"
row "Rust-written Snappy savepoint equals the original Flink sample (multichunk)" \
    "$BIN/read-savepoint" "$R/w-snappy" --uid native-op --expect "$SAMPLES/p2-rocksdb-files-mp256-multichunk/manifest.json"

# 3. Real Flink restores them at another parallelism on both backends, compares every key
#    group with the manifest, and takes a new savepoint of the restored job.
check() { "$TOOL" restore-check "$@"; }
row "Flink rocksdb P=2 restores w-multichunk (written at P=3), resavepoint" \
    check "$R/w-multichunk" --parallelism 2 --backend rocksdb --expect "$R/w-multichunk/manifest.json" --resavepoint "$R/f-multichunk-rocksdb"
row "Flink hashmap P=4 restores w-multichunk (written at P=3), resavepoint with Snappy" \
    check "$R/w-multichunk" --parallelism 4 --backend hashmap --expect "$R/w-multichunk/manifest.json" --resavepoint "$R/f-multichunk-hashmap" --resavepoint-compression
row "Flink hashmap P=3 restores w-4096 (written at P=5), resavepoint" \
    check "$R/w-4096" --parallelism 3 --backend hashmap --expect "$R/w-4096/manifest.json" --resavepoint "$R/f-4096-hashmap"
row "Flink rocksdb P=1 restores w-4096 (written at P=5)" \
    check "$R/w-4096" --parallelism 1 --backend rocksdb --expect "$R/w-4096/manifest.json"
row "Flink rocksdb P=3 restores w-utf8 (written at P=2), resavepoint inline" \
    check "$R/w-utf8" --parallelism 3 --backend rocksdb --expect "$R/w-utf8/manifest.json" --resavepoint "$R/f-utf8-rocksdb" --resavepoint-storage inline
row "Flink hashmap P=1 restores w-utf8 (written at P=2)" \
    check "$R/w-utf8" --parallelism 1 --backend hashmap --expect "$R/w-utf8/manifest.json"
row "Flink hashmap P=3 restores w-snappy (Rust Snappy, written at P=2), resavepoint" \
    check "$R/w-snappy" --parallelism 3 --backend hashmap --expect "$R/w-snappy/manifest.json" --resavepoint "$R/f-snappy-hashmap"
row "Flink rocksdb P=1 restores w-snappy (Rust Snappy, written at P=2)" \
    check "$R/w-snappy" --parallelism 1 --backend rocksdb --expect "$R/w-snappy/manifest.json"

# 4. The Rust reader reads Flink's new savepoints back and compares them with the manifests
#    of what Rust wrote (and so with the original Flink samples' content).
row "Rust reads Flink's rocksdb resavepoint of w-multichunk" \
    "$BIN/read-savepoint" "$R/f-multichunk-rocksdb" --uid native-op --max-parallelism 256 --expect "$R/w-multichunk/manifest.json"
row "Rust reads Flink's hashmap+Snappy resavepoint of w-multichunk" \
    "$BIN/read-savepoint" "$R/f-multichunk-hashmap" --uid native-op --max-parallelism 256 --expect "$R/w-multichunk/manifest.json"
row "Rust reads Flink's hashmap resavepoint of w-4096" \
    "$BIN/read-savepoint" "$R/f-4096-hashmap" --uid native-op --max-parallelism 4096 --expect "$R/w-4096/manifest.json"
row "Rust reads Flink's inline rocksdb resavepoint of w-utf8" \
    "$BIN/read-savepoint" "$R/f-utf8-rocksdb" --uid "$UTF_UID" --max-parallelism 256 --expect "$R/w-utf8/manifest.json"
row "Rust reads Flink's hashmap resavepoint of w-snappy" \
    "$BIN/read-savepoint" "$R/f-snappy-hashmap" --uid native-op --max-parallelism 256 --expect "$R/w-snappy/manifest.json"

# 5. The same table (5000 rows over 256 key groups) on either sfstate backend: its canonical
#    snapshot (Arrow IPC sections) -> Rust savepoint -> Flink on both backends at another
#    parallelism -> Flink's own savepoint -> a table of the OTHER sfstate backend (and of the
#    same one) restored straight from it at yet another parallelism, every row checked.
if [[ -n "$STORE" ]]; then
row "memory-store table -> canonical snapshot container" "$STORE" snapshot --backend memory --out "$R/c-store"
row "typed-store (RocksDB) table -> canonical snapshot container" "$STORE" snapshot --backend typed --out "$R/c-store-typed"
row "the two backends' canonical snapshots are byte-identical" diff -r "$R/c-store" "$R/c-store-typed"
row "write-savepoint of the memory-store snapshot M=256 P=2" \
    "$BIN/write-savepoint" --from "$R/c-store" --uid store-op --max-parallelism 256 --parallelism 2 --out "$R/w-store"
row "write-savepoint of the typed-store snapshot M=256 P=3 (v3)" \
    "$BIN/write-savepoint" --from "$R/c-store-typed" --uid typed-op --max-parallelism 256 --parallelism 3 --out "$R/w-store-typed" --metadata-version 3
row "Flink rocksdb P=3 restores w-store (written at P=2), resavepoint" \
    check "$R/w-store" --parallelism 3 --backend rocksdb --expect "$R/w-store/manifest.json" --resavepoint "$R/f-store-rocksdb"
row "Flink hashmap P=1 restores w-store (written at P=2), resavepoint with Snappy" \
    check "$R/w-store" --parallelism 1 --backend hashmap --expect "$R/w-store/manifest.json" --resavepoint "$R/f-store-hashmap" --resavepoint-compression
row "Flink hashmap P=2 restores w-store-typed (written at P=3), resavepoint" \
    check "$R/w-store-typed" --parallelism 2 --backend hashmap --expect "$R/w-store-typed/manifest.json" --resavepoint "$R/f-typed-hashmap"
row "Flink rocksdb P=4 restores w-store-typed (written at P=3), resavepoint inline" \
    check "$R/w-store-typed" --parallelism 4 --backend rocksdb --expect "$R/w-store-typed/manifest.json" --resavepoint "$R/f-typed-rocksdb" --resavepoint-storage inline
row "memory-store -> Flink rocksdb -> typed-store: every row at P=4" \
    "$STORE" restore --backend typed --from "$R/f-store-rocksdb" --uid store-op --parallelism 4
row "memory-store -> Flink hashmap+Snappy -> typed-store: every row at P=2" \
    "$STORE" restore --backend typed --from "$R/f-store-hashmap" --uid store-op --parallelism 2
row "typed-store -> Flink hashmap -> memory-store: every row at P=1" \
    "$STORE" restore --backend memory --from "$R/f-typed-hashmap" --uid typed-op --parallelism 1
row "typed-store -> Flink rocksdb inline -> memory-store: every row at P=3" \
    "$STORE" restore --backend memory --from "$R/f-typed-rocksdb" --uid typed-op --parallelism 3
row "memory-store -> Flink rocksdb -> memory-store: every row at P=4" \
    "$STORE" restore --backend memory --from "$R/f-store-rocksdb" --uid store-op --parallelism 4
row "typed-store -> Flink hashmap -> typed-store: every row at P=5" \
    "$STORE" restore --backend typed --from "$R/f-typed-hashmap" --uid typed-op --parallelism 5
else
    echo "SKIP  section 5 (SFSP_SKIP_STORE set: no typed-store example)"
fi

# 6. Damage is caught: a flipped payload byte in a Rust-written state file fails Flink's
#    restore-check and the Rust reader.
cp -r "$R/w-multichunk" "$R/w-damaged"
F="$(ls "$R/w-damaged" | grep -- '-0-of-3$')"
python3 - "$R/w-damaged/$F" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[len(b) - 10] ^= 1; open(p, 'wb').write(bytes(b))
PY
row "a flipped payload byte fails restore-check (expected exit 1)" \
    bash -c "! '$TOOL' restore-check '$R/w-damaged' --parallelism 2 --backend hashmap --expect '$R/w-multichunk/manifest.json'"
row "a flipped payload byte fails the Rust reader" \
    bash -c "! '$BIN/read-savepoint' '$R/w-damaged' --uid native-op"

echo "== $PASS passed, $FAIL failed (logs in $R)"
[[ $FAIL -eq 0 ]]
