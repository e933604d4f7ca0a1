import re, sys, collections
sys.path.insert(0, __import__('os').path.dirname(__file__)); from classify import kind
def slices(path):
    rows = []
    for line in open(path):
        m = re.match(r'\s*(\d+)\s+([\d.]+):\s+(\d+)\s+cpu-clock:\s+\S+\s+(.*?)\+0x[0-9a-f]+\s+\((.*)\)\s*$', line) or \
            re.match(r'\s*(\d+)\s+([\d.]+):\s+(\d+)\s+cpu-clock:\s+\S+\s+(.*?)\s+\((.*)\)\s*$', line)
        if not m: continue
        tid, t, per, sym, dso = m.groups()
        dso = '[kernel.kallsyms]' if 'kernel' in dso else dso
        rows.append((float(t), int(tid), int(per), kind(dso, sym)))
    kb = [r[0] for r in rows if r[3].startswith('GEMM prefill: tile')]
    import json, os
    j = json.load(open(os.path.join(os.path.dirname(path), 'bench.json')))['rows'][0]
    b = kb[-1]; a = b - j['prompt_tokens'] / j['prefill_tok_s']
    e = max(r[0] for r in rows if r[3].startswith('GEMV'))  # the last decode step's end (then teardown)
    pre = collections.Counter(); dec = collections.Counter()
    for t, tid, per, k in rows:
        if a <= t <= b: pre[k] += per
        elif b < t <= e: dec[k] += per
    return (a, b, e), pre, dec
if __name__ == '__main__':
    (a, b, e), pre, dec = slices(sys.argv[1])
    print('segments', a, b, e, 'prefill wall', b - a, 'decode wall', e - b)
    for name, c in (('prefill', pre), ('decode', dec)):
        tot = sum(c.values())
        print(name, 'CPU s', tot / 1e9)
        for k, v in c.most_common(): print(f'  {k:50s} {v/1e9:7.3f} s {100*v/tot:5.1f}%')
