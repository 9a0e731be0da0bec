#!/usr/bin/env bash
# Runs the end-to-end state benchmark on both engines in the same session, side by side:
# sfstate-bench (typed-store, memory-store; release build) and real Flink 2.3.0
# (EmbeddedRocksDBStateBackend, HashMapStateBackend) on W1-W4 at parallelism 1 and 2, and
# prints the ratio per workload, backend and parallelism (medians of the timed runs).
#
#   compat/flink-bench/run.sh [--workloads "w1 w2 w3 w4"] [--parallelism "1 2"] [--runs 3]
#                             [--pairs "typed:rocksdb memory:hashmap"] [--events N] [--keys K]
#                             [--out DIR] [--per-record]
# SFSTATE_BENCH=path uses that (release) sfstate-bench binary instead of building it.
# --per-record adds sfstate's typed-store per-record runs (W1, W4 at parallelism 1: a bundle
# of one event, Flink's access pattern), reported as typed/per-record against Flink RocksDB.
#
# Before every timed run (either engine) it waits until the CPUs are at least MIN_IDLE (0.85)
# idle over one second and the 1-minute load average is at most MAX_LOAD (1.0), for at most
# IDLE_TIMEOUT (120) seconds, and records the idle fraction and load average it saw.
# Needs Java 17 (javac, java), python3, unzip; Flink's jars come from $FLINK_LIB, else
# /work/flink, else the apache-flink-libraries 2.3.0 wheel from PyPI into work/ (~330 MB,
# never committed).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
WORK="$HERE/work"
FLINK_VERSION=2.3.0
WORKLOADS="w1 w2 w3 w4"
PARALLELISM="1 2"
PAIRS="typed:rocksdb memory:hashmap"
RUNS=3
EVENTS=2000000
KEYS=100000
OUT="$WORK/results-$(date -u +%Y%m%dT%H%M%SZ)"
MIN_IDLE="${MIN_IDLE:-0.85}"
IDLE_TIMEOUT="${IDLE_TIMEOUT:-120}"
MAX_LOAD="${MAX_LOAD:-1.0}"
PER_RECORD=off
while [ $# -gt 0 ]; do
    case "$1" in
        --workloads) WORKLOADS="${2:?}"; shift 2 ;;
        --parallelism) PARALLELISM="${2:?}"; shift 2 ;;
        --runs) RUNS="${2:?}"; shift 2 ;;
        --pairs) PAIRS="${2:?}"; shift 2 ;;
        --events) EVENTS="${2:?}"; shift 2 ;;
        --keys) KEYS="${2:?}"; shift 2 ;;
        --out) OUT="${2:?}"; shift 2 ;;
        --per-record) PER_RECORD=on; shift ;;
        -h|--help) sed -n '2,19p' "$0" | sed 's/^# *//'; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done
mkdir -p "$WORK" "$OUT"

# ---------------------------------------------------------------- Flink jars
if [ -n "${FLINK_LIB:-}" ]; then
    LIB="$FLINK_LIB"
elif [ -f /work/flink/pyflink/lib/flink-dist-$FLINK_VERSION.jar ]; then
    LIB=/work/flink/pyflink/lib
else
    LIB="$WORK/pyflink/lib"
    if [ ! -f "$LIB/flink-dist-$FLINK_VERSION.jar" ]; then
        if ! ls "$WORK"/apache_flink_libraries-$FLINK_VERSION-*.whl >/dev/null 2>&1; then
            echo "downloading apache-flink-libraries==$FLINK_VERSION (PyPI) into $WORK" >&2
            python3 -m pip download --quiet --no-deps "apache-flink-libraries==$FLINK_VERSION" -d "$WORK"
        fi
        unzip -q -o "$WORK"/apache_flink_libraries-$FLINK_VERSION-*.whl 'pyflink/lib/*.jar' -d "$WORK"
    fi
fi
# W2-W4 are SQL: the planner proper is nested inside the planner loader.
PLANNER="$WORK/flink-table-planner.jar"
if [ -f /work/flink/flink-table-planner.jar ] && [ -z "${FLINK_LIB:-}" ]; then
    PLANNER=/work/flink/flink-table-planner.jar
elif [ ! -f "$PLANNER" ]; then
    unzip -q -o "$LIB/flink-table-planner-loader-$FLINK_VERSION.jar" flink-table-planner.jar -d "$WORK"
fi
CP="$LIB/flink-dist-$FLINK_VERSION.jar:$LIB/flink-table-runtime-$FLINK_VERSION.jar"
CP="$CP:$LIB/flink-table-api-java-uber-$FLINK_VERSION.jar:$PLANNER:$LIB/flink-cep-$FLINK_VERSION.jar"
for jar in "$LIB"/log4j-api-*.jar "$LIB"/log4j-core-*.jar "$LIB"/log4j-slf4j-impl-*.jar; do CP="$CP:$jar"; done

# ---------------------------------------------------------------- build both
CLASSES="$WORK/classes"
rm -rf "$CLASSES" && mkdir -p "$CLASSES"
javac -nowarn -encoding UTF-8 -d "$CLASSES" -cp "$CP" $(find "$HERE/src" -name '*.java' | sort)
cat > "$CLASSES/log4j2.properties" <<'LOG'
rootLogger.level = ERROR
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d %p %c - %m%n
LOG
if [ -n "${SFSTATE_BENCH:-}" ]; then
    BENCH="$SFSTATE_BENCH"
else
    (cd "$ROOT" && source scripts/env.sh && cargo build --release --locked -q -p sfstate-bench --bin sfstate-bench)
    BENCH="${CARGO_TARGET_DIR:-$HOME/.cache/sfstate/target}/release/sfstate-bench"
fi

# ---------------------------------------------------------------- idle machine
cpu_idle() { # idle fraction of all CPUs over one second
    local a b
    a=($(head -1 /proc/stat)); sleep 1; b=($(head -1 /proc/stat))
    python3 - "${a[*]}" "${b[*]}" <<'PY'
import sys
a=[int(x) for x in sys.argv[1].split()[1:]]; b=[int(x) for x in sys.argv[2].split()[1:]]
d=[y-x for x,y in zip(a,b)]; print(f"{(d[3]+d[4])/max(1,sum(d)):.2f}")
PY
}
load1() { cut -d' ' -f1 /proc/loadavg; }
wait_idle() { # prints "idle load1" once the machine is idle enough or IDLE_TIMEOUT passed
    local idle t=0
    while :; do
        idle=$(cpu_idle)
        if python3 -c "import sys; sys.exit(0 if $idle >= $MIN_IDLE and $(load1) <= $MAX_LOAD else 1)" \
            || [ $t -ge "$IDLE_TIMEOUT" ]; then
            echo "$idle $(load1)"; return
        fi
        t=$((t + 1))
    done
}

# ---------------------------------------------------------------- runs
JAVA_OPTS="${JAVA_OPTS:--Xmx2g -XX:+UseParallelGC}"
echo "results in $OUT" >&2
for w in $WORKLOADS; do
    for p in $PARALLELISM; do
        for pair in $PAIRS; do
            ours=${pair%%:*} theirs=${pair##*:}
            echo "== $w p$p: flink $theirs" >&2
            java $JAVA_OPTS -cp "$CLASSES:$CP" flinkbench.FlinkBench --workload "$w" \
                --backend "$theirs" --parallelism "$p" --events "$EVENTS" --keys "$KEYS" \
                --warmup 1 --runs "$RUNS" --min-idle "$MIN_IDLE" --max-load "$MAX_LOAD" \
                --idle-timeout "$IDLE_TIMEOUT" \
                | tee -a "$OUT/flink.jsonl" >&2
            for r in $(seq "$RUNS"); do
                seen=$(wait_idle); idle=${seen% *}; load=${seen#* }
                echo "== $w p$p: sfstate $ours run $r (idle $idle, load $load)" >&2
                "$BENCH" --workload "$w" --backend "$ours" --parallelism "$p" --per-record "$PER_RECORD" \
                    --events "$EVENTS" --keys "$KEYS" --warmup 1 --json --no-progress \
                    | python3 -c "import json,sys; [print(json.dumps(dict(r, engine='sfstate', idle=$idle, load1=$load))) for r in json.load(sys.stdin)]" \
                    | tee -a "$OUT/sfstate.jsonl" >&2
            done
        done
    done
done

# ---------------------------------------------------------------- ratios
python3 - "$OUT" <<'PY' | tee "$OUT/ratios.txt"
import json, statistics, sys, os
out = sys.argv[1]
def lines(name):
    path = os.path.join(out, name)
    return [json.loads(l) for l in open(path) if l.strip()] if os.path.exists(path) else []
flink, ours = lines("flink.jsonl"), lines("sfstate.jsonl")
pairs = {"typed": "rocksdb", "memory": "hashmap"}
def spread(xs):
    return f"{min(xs):.0f}-{max(xs):.0f}"
print("medians of the timed runs; wall = events/s (sfstate: event processing, Flink: job net runtime);"
      " cpu = events per CPU second (sfstate: the threads running the source and subtasks; Flink: whole JVM)")
print(f"{'wl':3} {'p':>2} {'sfstate':16} {'events/s':>10} {'(range)':>17} {'flink':8} {'events/s':>9} {'(range)':>15}"
      f" {'wall':>7} {'cpu':>7}  {'load1 seen':>11}  checks")
for w in sorted({r["workload"] for r in ours}):
    for p in sorted({r["parallelism"] for r in ours}):
      for mode in sorted({r.get("mode", "bundled") for r in ours}):
        for b, fb in pairs.items():
            mine = [r for r in ours
                    if (r["workload"], r["parallelism"], r["backend"], r.get("mode", "bundled")) == (w, p, b, mode)]
            theirs = [r for r in flink if (r["workload"], r["parallelism"], r["backend"]) == (w, p, fb)]
            timed = [r for r in theirs if r["timed"]]
            if not mine or not timed:
                continue
            ok = all(r["ok"] is not False for r in theirs) and all(r.get("matches_issue") is not False for r in mine)
            m = statistics.median(r["events_per_second"] for r in mine)
            f = statistics.median(r["events_per_second"] for r in timed)
            mc = statistics.median(r["events_per_cpu_second"] for r in mine)
            fc = statistics.median(r["events_per_cpu_second"] for r in timed)
            loads = [r.get("load1", -1) for r in mine + timed]
            label = b if mode == "bundled" else f"{b}/{mode}"
            print(f"{w:3} {p:>2} {label:16} {m:>10.0f} {spread([r['events_per_second'] for r in mine]):>17} {fb:8} {f:>9.0f}"
                  f" {spread([r['events_per_second'] for r in timed]):>15} {m/f:>6.1f}x {mc/fc:>6.1f}x"
                  f"  {min(loads):>5.1f}-{max(loads):<5.1f}  {'ok' if ok else 'FAIL'}")
PY
