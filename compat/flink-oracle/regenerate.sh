#!/usr/bin/env bash
# Regenerates (or replays) the Flink 2.3.0 golden vectors with Flink's own classes.
#
#   compat/flink-oracle/regenerate.sh [--profile NAME] [--seed HEX] [--out DIR] [--extended]
#   compat/flink-oracle/regenerate.sh --verify DIR
#
# Needs Java 17 (javac, java), pip, unzip and sha256sum. Downloads the apache-flink-libraries
# 2.3.0 wheel from PyPI into work/ on first use (about 330 MB; never committed).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="$HERE/work"
FLINK_VERSION=2.3.0

usage() {
    sed -n '4,5p' "$0" | sed 's/^# *//' >&2
    exit 2
}

PROFILE=""
SEED=""
OUT="$HERE/out"
EXTENDED=""
VERIFY=""
while [ $# -gt 0 ]; do
    case "$1" in
        --profile) PROFILE="${2:?}"; shift 2 ;;
        --seed) SEED="${2:?}"; shift 2 ;;
        --out) OUT="${2:?}"; shift 2 ;;
        --extended) EXTENDED=1; shift ;;
        --verify) VERIFY="${2:?}"; shift 2 ;;
        -h|--help) usage ;;
        *) echo "unknown argument: $1" >&2; usage ;;
    esac
done

# ---------------------------------------------------------------- jars
LIB="$WORK/pyflink/lib"
WHEEL_GLOB="$WORK/apache_flink_libraries-$FLINK_VERSION-*.whl"
mkdir -p "$WORK"
if [ ! -f "$LIB/flink-dist-$FLINK_VERSION.jar" ]; then
    if ! ls $WHEEL_GLOB >/dev/null 2>&1; then
        echo "downloading apache-flink-libraries==$FLINK_VERSION (PyPI) into $WORK" >&2
        python3 -m pip download --quiet --no-deps "apache-flink-libraries==$FLINK_VERSION" -d "$WORK"
    fi
    echo "unpacking jars" >&2
    unzip -q -o $WHEEL_GLOB 'pyflink/lib/*.jar' -d "$WORK"
fi
if [ ! -f "$WORK/flink-table-planner.jar" ]; then
    # the planner proper is nested inside the planner loader
    unzip -q -o "$LIB/flink-table-planner-loader-$FLINK_VERSION.jar" flink-table-planner.jar -d "$WORK"
fi
CP="$LIB/flink-dist-$FLINK_VERSION.jar:$LIB/flink-table-runtime-$FLINK_VERSION.jar"
CP="$CP:$LIB/flink-table-api-java-uber-$FLINK_VERSION.jar:$WORK/flink-table-planner.jar"

# ---------------------------------------------------------------- compile
CLASSES="$WORK/classes"
rm -rf "$CLASSES"
mkdir -p "$CLASSES"
javac -nowarn -encoding UTF-8 -d "$CLASSES" -cp "$CP" $(find "$HERE/src" -name '*.java' | sort)

JAVA=(java -Xmx2g -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dfile.encoding=UTF-8
      -cp "$CP:$CLASSES" flinkoracle.FlinkOracle)

# ---------------------------------------------------------------- run
if [ -n "$VERIFY" ]; then
    exec "${JAVA[@]}" verify "$VERIFY" 2> >(grep -v '^SLF4J:' >&2)
fi

ARGS=(generate --out "$OUT")
[ -n "$PROFILE" ] && ARGS+=(--profile "$PROFILE")
[ -n "$SEED" ] && ARGS+=(--seed "$SEED")
[ -n "$EXTENDED" ] && ARGS+=(--extended)
"${JAVA[@]}" "${ARGS[@]}" 2> >(grep -v '^SLF4J:' >&2)

echo "| file | lines | sha256 |"
echo "|---|---|---|"
for f in murmur.jsonl keygroup_math.jsonl binary_rows.jsonl rocksdb_keys.jsonl crc32c.jsonl memory_formulas.jsonl; do
    printf '| %s | %s | %s |\n' "$f" "$(wc -l < "$OUT/$f" | tr -d ' ')" "$(sha256sum "$OUT/$f" | cut -d' ' -f1)"
done
