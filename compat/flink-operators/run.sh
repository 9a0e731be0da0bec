#!/usr/bin/env bash
# Generates Flink 2.3.0 operator cases (schema: testdata/flink-operator-cases/README.md) with
# real Flink, into testdata/flink-operator-cases-generated (or DIR).
#
#   compat/flink-operators/run.sh [DIR] [CASE]
#
# Needs Java 17 (javac, java), pip and unzip. Jars: $FLINK_LIB (a directory holding
# pyflink/lib/*.jar and flink-table-planner.jar, e.g. /work/flink), else the
# apache-flink-libraries 2.3.0 wheel downloaded from PyPI into work/ (never committed).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
WORK="$HERE/work"
FLINK_VERSION=2.3.0
OUT="${1:-$ROOT/testdata/flink-operator-cases-generated}"
ONLY="${2:-}"

if [ -n "${FLINK_LIB:-}" ]; then
    BASE="$FLINK_LIB"
else
    BASE="$WORK"
    LIB="$WORK/pyflink/lib"
    mkdir -p "$WORK"
    if [ ! -f "$LIB/flink-dist-$FLINK_VERSION.jar" ]; then
        if ! ls "$WORK"/apache_flink_libraries-$FLINK_VERSION-*.whl >/dev/null 2>&1; then
            echo "downloading apache-flink-libraries==$FLINK_VERSION (PyPI) into $WORK" >&2
            python3 -m pip download --quiet --no-deps "apache-flink-libraries==$FLINK_VERSION" -d "$WORK"
        fi
        unzip -q -o "$WORK"/apache_flink_libraries-$FLINK_VERSION-*.whl 'pyflink/lib/*.jar' -d "$WORK"
    fi
    if [ ! -f "$WORK/flink-table-planner.jar" ]; then
        unzip -q -o "$LIB/flink-table-planner-loader-$FLINK_VERSION.jar" flink-table-planner.jar -d "$WORK"
    fi
fi
LIB="$BASE/pyflink/lib"
CP="$LIB/flink-dist-$FLINK_VERSION.jar:$LIB/flink-table-runtime-$FLINK_VERSION.jar"
CP="$CP:$LIB/flink-table-api-java-uber-$FLINK_VERSION.jar:$BASE/flink-table-planner.jar"
CP="$CP:$LIB/flink-cep-$FLINK_VERSION.jar:$LIB/log4j-api-2.25.3.jar:$LIB/log4j-core-2.25.3.jar:$LIB/log4j-slf4j-impl-2.25.3.jar"

CLASSES="$WORK/classes"
rm -rf "$CLASSES"
mkdir -p "$CLASSES"
javac -nowarn -encoding UTF-8 -d "$CLASSES" -cp "$CP" $(find "$HERE/src" -name '*.java' | sort)

rm -rf "$OUT.tmp"
mkdir -p "$OUT.tmp"
java -Xmx2g -cp "$CLASSES:$CP" flinkops.CaseGen "$OUT.tmp" $ONLY
if [ -z "$ONLY" ]; then
    rm -rf "$OUT"
    mv "$OUT.tmp" "$OUT"
else
    mkdir -p "$OUT"
    rm -rf "$OUT/$ONLY"
    mv "$OUT.tmp/$ONLY" "$OUT/$ONLY"
    rm -rf "$OUT.tmp"
fi
echo "cases written to $OUT" >&2
