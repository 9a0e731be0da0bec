"""Independent model of the window rules in the fixtures' README, checking window_aggregate cases.

For every window_aggregate case directory given: replays input.jsonl with the README's rules (a row counts
in every window containing it whose end - 1, in UTC, is above the current watermark when it arrives;
a retraction (-U/-D) counts -1 there; a window is emitted when its count is not 0 (the record counter's
emptiness check); TIMESTAMP_LTZ windows on local time; TUMBLE offset) and compares the multiset of (key, COUNT(*),
window_start, window_end) with output.jsonl. Only the row count is modelled, not the other aggregates;
cases of other operators are reported as skipped. Exit status 1 if any case differs.
"""
import json
import os
import sys
from collections import defaultdict

OFFSETS = {"UTC": 0, "Asia/Kolkata": 19800000, "Asia/Shanghai": 28800000}


def windows(w, t):
    size, off = w["size_ms"], w.get("offset_ms", 0)
    if w["kind"] == "TUMBLE":
        s = (t - off) // size * size + off
        return [(s, s + size)]
    if w["kind"] == "HOP":
        sl = w["slide_ms"]
        last = (t - off) // sl * sl + off
        return [(s, s + size) for s in range(last - size + sl, last + 1, sl)]
    st = w["step_ms"]
    s = (t - off) // size * size + off
    return [(s, e) for e in range(s + st, s + size + 1, st) if e > t]


def check(d):
    j = json.load(open(os.path.join(d, "case.json")))
    if j["operator"] != "window_aggregate":
        return "skipped (no model for %s)" % j["operator"]
    if len(j["spec"]["group_by"]) != 1 or j["spec"]["aggregates"][0]["function"] != "COUNT_STAR":
        return "skipped (model needs one key column and COUNT(*) first)"
    w = j["spec"]["window"]
    zone = OFFSETS.get(j["config"]["local_time_zone"])
    if zone is None:
        return "skipped (zone %s not modelled)" % j["config"]["local_time_zone"]
    ltz = j["inputs"]["input"][w["time_column"]]["type"].startswith("TIMESTAMP_LTZ")
    shift = zone if ltz else 0
    key, tcol = j["spec"]["group_by"][0], w["time_column"]
    wm = -(2 ** 63)
    counts = defaultdict(int)
    for line in open(os.path.join(d, "input.jsonl")):
        e = json.loads(line)
        if "watermark" in e:
            wm = e["watermark"]
            continue
        t = int(e["row"][tcol]) + shift
        for s, end in windows(w, t):
            if end - shift - 1 > wm:
                counts[(json.dumps(e["row"][key]), s, end)] += -1 if e["kind"] in ("-U", "-D") else 1
    expected = sorted((k, n, s, e) for (k, s, e), n in counts.items() if n != 0)
    got = sorted(
        (json.dumps(r["row"][0]), int(r["row"][1]), int(r["row"][-2]), int(r["row"][-1]))
        for r in map(json.loads, open(os.path.join(d, "output.jsonl")))
    )
    return "model agrees (%d windows)" % len(got) if expected == got else "DIFFERS (%d vs %d)" % (
        len(expected), len(got))


def main():
    bad = 0
    root = sys.argv[1]
    for name in sorted(os.listdir(root)):
        if os.path.exists(os.path.join(root, name, "case.json")):
            r = check(os.path.join(root, name))
            bad += r.startswith("DIFFERS")
            print("%s: %s" % (name, r))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
