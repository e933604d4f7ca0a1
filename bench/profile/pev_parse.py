# Sums pev.sh's events per scheduler step (a step runs from one Scheduler::step entry to the next).
import re, sys, collections
f = sys.argv[1]
steps = []  # list of dicts
cur = None
pre = collections.Counter()
for line in open(f):
    m = re.match(r'\s*\S+\s+(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)', line)
    if not m: continue
    tid, t, ev, rest = m.groups(); t = float(t)
    if ev == 'probe_keel:step':
        cur = collections.Counter(); cur['t0'] = t; steps.append(cur); continue
    c = cur if cur is not None else pre
    c[ev] += 1
    if ev == 'syscalls:sys_enter_futex':
        op = int(re.search(r'op: (0x[0-9a-f]+)', rest).group(1), 16) & 0x7f
        c['futex_wake' if op == 1 else 'futex_wait' if op in (0, 9) else f'futex_op{op}'] += 1
    c['t_last'] = t
for i, s in enumerate(steps):
    dur = s['t_last'] - s['t0'] if s['t_last'] else 0
    print(f"step {i}: {dur*1e3:8.1f} ms  pfor {s['probe_keel:pfor']:6d}  mmap {s['syscalls:sys_enter_mmap']:5d} munmap {s['syscalls:sys_enter_munmap']:5d}  faults {s['page-faults']:7d}  futex wake {s['futex_wake']:6d} wait {s['futex_wait']:6d}")
print('before first step:', dict(pre))
