#!/usr/bin/env bash
# Proves that canonical snapshot sections are readable by ordinary Arrow tools: writes a
# sample snapshot (tables `counts`: i64 values, and `rows`: i64, f64, nullable string),
# dumps one section of each table kind with `sfstate dump` as an Arrow IPC file, and reads
# both with pyarrow installed from PyPI into a venv under the target directory, checking
# schema and row counts against `sfstate inspect --json`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

venv="$CARGO_TARGET_DIR/pyarrow-venv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -c "import pyarrow" 2>/dev/null ||
    "$venv/bin/pip" install --quiet --disable-pip-version-check pyarrow

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cargo build --quiet --locked -p sfstate-cli --bin sfstate --example sample_snapshot
"$CARGO_TARGET_DIR/debug/examples/sample_snapshot" "$work/snapshot"
sfstate="$CARGO_TARGET_DIR/debug/sfstate"
"$sfstate" inspect "$work/snapshot" --json > "$work/report.json"

# A key group holding both tables.
kg="$("$venv/bin/python" - "$work/report.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for g in report["key_groups"]:
    if {s["name"] for s in g["sections"]} == {"counts", "rows"}:
        print(g["key_group"])
        break
PY
)"
for section in counts rows; do
    "$sfstate" dump "$work/snapshot" --key-group "$kg" --section "$section" -o "$work/$section.arrow"
done

"$venv/bin/python" - "$work" "$kg" <<'PY'
import json, sys
import pyarrow as pa
import pyarrow.ipc

work, kg = sys.argv[1], int(sys.argv[2])
report = json.load(open(f"{work}/report.json"))
group = next(g for g in report["key_groups"] if g["key_group"] == kg)
expected_types = {
    "counts": [pa.binary(), pa.int64(), pa.int64()],
    "rows": [pa.binary(), pa.int64(), pa.int64(), pa.float64(), pa.string()],
}
for section in ("counts", "rows"):
    table = pa.ipc.open_file(f"{work}/{section}.arrow").read_all()
    info = next(s for s in group["sections"] if s["name"] == section)
    assert table.num_rows == info["rows"] > 0, (section, table.num_rows, info)
    assert table.schema.names[:2] == ["key", "last_access"], table.schema
    assert table.schema.types == expected_types[section], table.schema
    assert table.schema.metadata[b"sfstate.canonical.version"] == b"1"
    keys = table.column("key").to_pylist()
    assert keys == sorted(keys) and len(set(keys)) == len(keys), "keys strictly ascending"
    print(f"pyarrow {pa.__version__}: key group {kg}, section {section}: "
          f"{table.num_rows} rows, {table.num_columns} columns read")
PY
