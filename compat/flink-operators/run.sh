#!/usr/bin/env bash
# Generates (or replays) Flink 2.3.0 operator cases with real Flink SQL.
#
#   compat/flink-operators/run.sh generate --out DIR [--only NAME...]
#   compat/flink-operators/run.sh verify DIR
#   compat/flink-operators/run.sh model-check DIR
#
# generate: runs every case of src/flinkoperators/*Cases.java twice in Flink, checks that both runs agree
# under the case's compare mode, and writes DIR/<case>/{case.json,input.jsonl,output.jsonl}.
# verify: replays each DIR/<case>/input.jsonl through Flink and checks output.jsonl (under the case's
# compare mode), the plan and the output schema.
# model-check: python3 only; checks window_aggregate cases against models/window_counts.py (row counts per
# key and window); other operators are reported as skipped (no model here yet).
#
# Needs Java 17 (javac, java), python3 -m pip and unzip. Uses the jars in $FLINK_LIB (a pyflink/lib
# directory of apache-flink-libraries 2.3.0) when set; otherwise downloads the wheel from PyPI into
# work/ on first use (about 330 MB; never committed).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="$HERE/work"
FLINK_VERSION=2.3.0

usage() {
    sed -n '4,6p' "$0" | sed 's/^# *//' >&2
    exit 2
}
[ $# -ge 2 ] || usage
case "$1" in
    generate|verify) ;;
    model-check) exec python3 "$HERE/models/window_counts.py" "$2" ;;
    *) usage ;;
esac

# ---------------------------------------------------------------- jars
mkdir -p "$WORK"
if [ -n "${FLINK_LIB:-}" ]; then
    LIB="$FLINK_LIB"
else
    LIB="$WORK/pyflink/lib"
    if [ ! -f "$LIB/flink-dist-$FLINK_VERSION.jar" ]; then
        WHEEL_GLOB="$WORK/apache_flink_libraries-$FLINK_VERSION-*.whl"
        if ! ls $WHEEL_GLOB >/dev/null 2>&1; then
            echo "downloading apache-flink-libraries==$FLINK_VERSION (PyPI) into $WORK" >&2
            python3 -m pip download --quiet --no-deps "apache-flink-libraries==$FLINK_VERSION" -d "$WORK"
        fi
        echo "unpacking jars" >&2
        unzip -q -o $WHEEL_GLOB 'pyflink/lib/*.jar' -d "$WORK"
    fi
fi
[ -f "$LIB/flink-dist-$FLINK_VERSION.jar" ] || { echo "no flink-dist-$FLINK_VERSION.jar in $LIB" >&2; exit 1; }
PLANNER="$WORK/flink-table-planner.jar"
if [ ! -f "$PLANNER" ]; then
    # the planner proper is nested inside the planner loader
    unzip -q -o "$LIB/flink-table-planner-loader-$FLINK_VERSION.jar" flink-table-planner.jar -d "$WORK"
fi
CP="$LIB/flink-dist-$FLINK_VERSION.jar:$LIB/flink-table-runtime-$FLINK_VERSION.jar"
CP="$CP:$LIB/flink-table-api-java-uber-$FLINK_VERSION.jar:$PLANNER:$LIB/flink-cep-$FLINK_VERSION.jar"
for j in "$LIB"/log4j-api-*.jar "$LIB"/log4j-core-*.jar "$LIB"/log4j-slf4j-impl-*.jar; do CP="$CP:$j"; done

# ---------------------------------------------------------------- compile
CLASSES="$(mktemp -d "$WORK/classes.XXXXXX")"
trap 'rm -rf "$CLASSES"' EXIT
javac -nowarn -encoding UTF-8 -d "$CLASSES" -cp "$CP" $(find "$HERE/src" -name '*.java' | sort)
cp -r "$HERE/resources/." "$CLASSES/"

# ---------------------------------------------------------------- run
java -Xmx2g -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dfile.encoding=UTF-8 \
    -Dlog4j.configurationFile="$HERE/log4j2.properties" \
    -cp "$CP:$CLASSES" flinkoperators.Main "$@"
