#!/usr/bin/env python3
"""Where a keel decode step's wall time goes, from an Nsight Systems trace of a `keel bench` run.

    nsys profile -t cuda -o run keel bench ...
    nsys stats --report cuda_gpu_trace --format csv --output run run.nsys-rep   # writes run_cuda_gpu_trace.csv
    python3 tools/nsys_steps.py run_cuda_gpu_trace.csv [--top 15]

Unlike Nsight Compute, nsys does not serialise or flush anything: kernels run as keel runs them. A step starts
at each `embedding_kernel` (the first kernel of every forward pass) and ends where the next one starts, so its
wall time holds its kernels, its copies, the gaps between them (launch latency, host work) and the host's work
after its last kernel (sampling's download, the scheduler). Prints, for the median decode step (the steps
after the longest, the prefill): wall, kernel sum, copy sum, idle (wall − both), kernel count, the gaps by size
and the kernels by total time.
"""
import argparse
import csv
import re
import statistics
from collections import defaultdict


def clean(name):
    name = name.replace("(anonymous namespace)", "").replace("<unnamed>", "").replace("void ", "")
    name = name.replace("keel::", "").replace("::", "")
    return re.sub(r"[(<].*", "", name).strip()


def read(path):
    """[(start ns, duration ns, name, is_kernel)] in start order."""
    with open(path) as f:
        rows = list(csv.DictReader(ln for ln in f if ln.strip() and not ln.startswith("#")))
    out = []
    for r in rows:
        start = int(float(r["Start (ns)"]))
        dur = int(float(r["Duration (ns)"]))
        name = r.get("Name", "")
        kernel = not name.startswith("[CUDA")  # copies and memsets are "[CUDA memcpy ...]"
        out.append((start, dur, clean(name) if kernel else name, kernel))
    out.sort()
    return out


def steps(rows):
    starts = [i for i, r in enumerate(rows) if r[3] and r[2].startswith("embedding_kernel")]
    out = []
    for a, b in zip(starts, starts[1:]):
        out.append((rows[a:b], rows[b][0] - rows[a][0]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    ss = steps(read(a.csv))
    if not ss:
        raise SystemExit("no embedding_kernel in the trace")
    longest = max(range(len(ss)), key=lambda i: ss[i][1])
    decode = ss[longest + 1:]
    if not decode:
        raise SystemExit("no decode step after the longest")
    order = sorted(range(len(decode)), key=lambda i: decode[i][1])
    rows, wall = decode[order[len(order) // 2]]
    kern = sum(d for _, d, _, k in rows if k)
    copy = sum(d for _, d, _, k in rows if not k)
    nk = sum(1 for r in rows if r[3])
    print(f"{len(decode)} decode steps; wall median {wall / 1e3:.1f} us "
          f"(min {decode[order[0]][1] / 1e3:.1f}, max {decode[order[-1]][1] / 1e3:.1f})")
    print(f"median step: kernels {kern / 1e3:.1f} us ({nk} launches, {100 * kern / wall:.0f} %), copies "
          f"{copy / 1e3:.1f} us ({sum(1 for r in rows if not r[3])}), idle {(wall - kern - copy) / 1e3:.1f} us "
          f"({100 * (wall - kern - copy) / wall:.0f} %)")
    gaps = []
    for (s0, d0, n0, _), (s1, _, n1, _) in zip(rows, rows[1:]):
        gaps.append((s1 - s0 - d0, n0, n1))
    end = rows[-1][0] + rows[-1][1]
    tail = rows[0][0] + wall - end
    g = sorted(x[0] for x in gaps)
    print(f"gaps between launches: median {g[len(g) // 2] / 1e3:.2f} us, sum {sum(g) / 1e3:.1f} us; "
          f"after the last kernel to the next step {tail / 1e3:.1f} us")
    for gap, n0, n1 in sorted(gaps, reverse=True)[:8]:
        print(f"  gap {gap / 1e3:8.1f} us  {n0} -> {n1}")
    by = defaultdict(lambda: [0, 0])
    for _, d, n, _ in rows:
        by[n][0] += 1
        by[n][1] += d
    print(f"{'kernel':<48} {'n':>4} {'us':>9} {'share':>6}")
    for n, (c, d) in sorted(by.items(), key=lambda x: -x[1][1])[:a.top]:
        print(f"{n[:48]:<48} {c:>4} {d / 1e3:>9.1f} {100 * d / wall:>5.1f}%")
    prefill_rows, prefill_wall = ss[longest]
    pk = sum(d for _, d, _, k in prefill_rows if k)
    print(f"longest step (prefill chunk): wall {prefill_wall / 1e3:.0f} us, kernels {pk / 1e3:.0f} us "
          f"({100 * pk / prefill_wall:.0f} %), {sum(1 for r in prefill_rows if r[3])} launches")


if __name__ == "__main__":
    main()
