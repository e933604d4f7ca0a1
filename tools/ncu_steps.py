#!/usr/bin/env python3
"""Where a keel step's GPU time goes, from an Nsight Compute CSV of every kernel of a `keel bench` run.

    ncu --clock-control none --metrics gpu__time_duration.sum --csv keel bench ... > run.csv
    python3 tools/ncu_steps.py run.csv [--top 25]

A step starts at each `embedding_kernel` launch (the first kernel of every forward pass). Prints, for the
longest step (the prefill) and the median of the decode steps after it, the step's summed kernel time, its
kernel count, and the kernels by total time (name, launches, µs, share). ncu serialises kernels, so the sum is
kernel time only: a step's wall time minus this sum is launch and host overhead.
"""
import argparse
import csv
import re
import statistics
from collections import defaultdict


def read(path):
    rows = []
    with open(path) as f:
        lines = [ln for ln in f if ln.startswith('"')]
    for r in csv.DictReader(lines):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = r.get("Metric Unit", "nsecond")
        v = float(r["Metric Value"].replace(",", ""))
        scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
                 "second": 1e6, "s": 1e6}[unit]
        name = r["Kernel Name"].replace("(anonymous namespace)", "").replace("<unnamed>", "")
        name = name.replace("void ", "").replace("keel::::", "")
        name = re.sub(r"\(.*", "", name).strip()
        rows.append((int(r["ID"]), name, v * scale))
    rows.sort()
    return rows


def steps(rows):
    out, cur = [], None
    for _, name, us in rows:
        if name.startswith("embedding_kernel") or "embedding_kernel" in name:
            cur = []
            out.append(cur)
        if cur is not None:
            cur.append((name, us))
    return out


def table(title, step, top):
    total = sum(us for _, us in step)
    by = defaultdict(lambda: [0, 0.0])
    for name, us in step:
        by[name][0] += 1
        by[name][1] += us
    print(f"== {title}: {len(step)} kernels, {total:.1f} us of kernel time")
    for name, (n, us) in sorted(by.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"  {us:10.1f} us {100 * us / total:5.1f} %  x{n:<5d} {name[:110]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    st = steps(read(a.csv))
    if not st:
        raise SystemExit("no embedding_kernel launch in " + a.csv)
    sums = [sum(us for _, us in s) for s in st]
    print("steps (kernel us):", " ".join(f"{s:.0f}" for s in sums))
    big = max(range(len(st)), key=lambda i: sums[i])
    table(f"step {big} (the prefill)", st[big], a.top)
    dec = [i for i in range(big + 1, len(st))]
    if dec:
        med = sorted(dec, key=lambda i: sums[i])[len(dec) // 2]
        table(f"step {med} (median of {len(dec)} decode steps)", st[med], a.top)


if __name__ == "__main__":
    main()
