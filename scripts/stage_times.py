#!/usr/bin/env python3
"""Wall time per stage of a grid run, from the cache's step manifests: steps,
summed step seconds, and the wall span (first start to last finish) per kind;
attribute seconds per method config. Also `--completed CELLS SAMPLE METHODS...`: the
TOML array of those configs whose attribute (at that sample size) and erasure
steps exist for every cell."""
import collections, glob, json, os, sys
cache = sys.argv[1]
manifests = []
for path in glob.glob(os.path.join(cache, '*', '*', '*', 'manifest.json')) + glob.glob(os.path.join(cache, '*', '*', 'manifest.json')):
    try:
        manifests.append(json.load(open(path)))
    except Exception as e:
        print('unreadable', path, e, file=sys.stderr)
if len(sys.argv) > 2 and sys.argv[2] == '--completed':
    # Attribute steps of this sample size, and the erasure steps made from them
    # (a config's label is the same at every sample size; its key is not).
    cells, sample = int(sys.argv[3]), int(sys.argv[4])
    attributed = {m['key']: m['label'] for m in manifests
                  if m['kind'] == 'attribute' and m['params'].get('sample') == sample}
    done = collections.defaultdict(set)
    for key, label in attributed.items():
        done[('attribute', label.split('/')[-1])].add(label)
    for m in manifests:
        if m['kind'] == 'erasure' and any(i['key'] in attributed for i in m.get('inputs', [])):
            done[('erasure', m['label'].split('/')[-1])].add(m['label'])
    ok = [m for m in sys.argv[5:] if len(done[('attribute', m)]) == cells and len(done[('erasure', m)]) == cells]
    print('[' + ', '.join('"%s"' % m for m in ok) + ']')
    sys.exit(0)
by_kind = collections.defaultdict(list)
for m in manifests:
    by_kind[m['kind']].append(m)
rows = {}
print('%-10s %6s %12s %12s' % ('stage', 'steps', 'step-sum s', 'wall span s'))
for kind, ms in sorted(by_kind.items(), key=lambda kv: min(m['finished_at'] - m['seconds'] for m in kv[1])):
    start = min(m['finished_at'] - m['seconds'] for m in ms); end = max(m['finished_at'] for m in ms)
    total = sum(m['seconds'] for m in ms)
    rows[kind] = {'steps': len(ms), 'step_seconds': round(total, 1), 'wall_span': round(end - start, 1)}
    print('%-10s %6d %12.1f %12.1f' % (kind, len(ms), total, end - start))
methods = collections.defaultdict(float)
for m in by_kind.get('attribute', []) + by_kind.get('erasure', []):
    methods[m['kind'] + ' ' + m['label'].split('/')[-1]] += m['seconds']
per_step = {m['label']: round(m['seconds'], 2) for m in manifests}
json.dump({'stages': rows, 'per_method': {k: round(v, 1) for k, v in sorted(methods.items())}, 'per_step': per_step},
          open(sys.argv[2] if len(sys.argv) > 2 else 'stages.json', 'w'), indent=1)
for k, v in sorted(methods.items()):
    print('  %-32s %8.1f s' % (k, v))
