import re, sys, collections
sys.path.insert(0, __import__('os').path.dirname(__file__)); from classify import kind
BLOCKS = ['AttentionBlock::forward', 'Mamba2Block::forward', 'MlpBlock::forward', 'MoeBlock::forward']
def parse(path):
    samples = []; cur = None
    for line in open(path):
        if not line.startswith('\t') and line.strip():
            m = re.match(r'\s*(\d+)\s+([\d.]+):\s+(\d+)', line)
            cur = [float(m.group(2)), int(m.group(3)), []]; samples.append(cur)
        elif line.strip():
            m = re.match(r'\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$', line.strip())
            if m: cur[2].append((m.group(1), '[kernel.kallsyms]' if 'kernel' in m.group(2) else m.group(2)))
    return samples
def owner(frames):
    names = [f[0] for f in frames]
    for n in names:
        if 'ops::moe_experts' in n: return 'MoE experts (gather, expert MLPs, scatter)'
        if 'ops::moe_route' in n: return 'MoE routing (top-k)'
        if re.search(r'ops::moe\b', n): return 'MoE (router matmul, shared expert)'
    for n in names:
        for b in BLOCKS:
            if b in n: return b.split('::')[0]
    for n in names:
        if 'DecoderModel::forward' in n or 'DecoderModel::step' in n:
            return 'DecoderModel (embedding, final norm, lm_head)'
    for n in names:
        if 'Scheduler::step' in n: return 'Scheduler (outside the model)'
    return 'outside steps'
def op(frames):
    for n, d in frames:
        for o in ['moe_experts', 'moe_route', 'ops::matmul', 'ops::attention', 'ops::ssd_scan', 'ops::causal_conv1d', 'ops::rms_norm', 'ops::gated_rms_norm', 'move_rows', 'ops::']:
            if o in n: return n.split('(')[0]
    return '-'
if __name__ == '__main__':
    s = parse(sys.argv[1])
    # phase: prefill = up to the last kblocked sample
    kb = [x[0] for x in s if x[2] and 'kblocked' in x[2][0][0]]
    b = kb[-1]
    for phase, sel in (('prefill (incl. warm-up)', lambda t: t <= b), ('decode', lambda t: t > b)):
        c = collections.Counter(); tot = 0
        for t, per, fr in s:
            if not fr or not sel(t): continue
            k = kind(fr[0][1], fr[0][0]); ow = owner(fr)
            if ow == 'outside steps': continue
            c[(ow, k, op(fr) if ow.startswith('Decoder') else '')] += per; tot += per
        print('==', phase, 'main-thread CPU s', tot / 1e9)
        for key, v in c.most_common(40):
            if v / tot >= 0.003: print(f'  {100*v/tot:5.1f}%  {key[0]:45s} {key[1]:45s} {key[2]}')
