"""Prints the case table (markdown) of the gen_* cases in a directory, for GENERATED.md."""
import json, os, re, sys
d = sys.argv[1]
rows = []
for name in sorted(os.listdir(d)):
    p = os.path.join(d, name, 'case.json')
    if not name.startswith('gen_') or not os.path.exists(p):
        continue
    j = json.load(open(p))
    lines = open(os.path.join(d, name, 'input.jsonl')).read().splitlines()
    n_in = sum(1 for l in lines if '"watermark"' not in l)
    n_out = len(open(os.path.join(d, name, 'output.jsonl')).read().splitlines())
    nodes = []
    for l in j['plan'].split('\n'):
        m = re.search(r'(\w*(GroupAggregate|WindowAggregate|Join|Rank))\(', l)
        if m:
            cm = re.search(r'changelogMode=\[([^\]]*)\]', l).group(1)
            extra = ''
            if 'Rank' in m.group(1):
                extra = re.search(r'strategy=\[(\w+)\]', l).group(1) + ', '
            nodes.append('%s[%schangelogMode=[%s]]' % (m.group(1), extra, cm))
    size = sum(os.path.getsize(os.path.join(d, name, f)) for f in os.listdir(os.path.join(d, name)))
    rows.append((name, j['operator'], j['compare'], j['config']['changelog_mode'], j['config']['mini_batch'], n_in, len(lines), n_out, ' -> '.join(reversed(nodes)), size, j['description']))
print('| case | operator | compare | mode | input rows (lines) | output rows | Flink plan node(s) |')
print('|---|---|---|---|---|---|---|')
for r in rows:
    print('| `%s` | %s | %s | %s%s | %d (%d) | %d | %s |' % (r[0], r[1], r[2], r[3], ', mini-batch' if r[4] else '', r[5], r[6], r[7], r[8]))
print()
for r in rows:
    print('* `%s`: %s' % (r[0], r[10]))
print()
print('total bytes: %d in %d cases' % (sum(r[9] for r in rows), len(rows)), file=sys.stderr)
