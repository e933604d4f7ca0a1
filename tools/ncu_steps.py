#!/usr/bin/env python3
"""Where a keel step's GPU time goes, from an Nsight Compute CSV of every kernel of a `keel bench` run.

    ncu --clock-control none --metrics gpu__time_duration.sum[,dram__bytes_read.sum,dram__bytes_write.sum] \
        --csv keel bench ... > run.csv
    python3 tools/ncu_steps.py run.csv [--top 25] [--launches]

A step starts at each `embedding_kernel` launch (the first kernel of every forward pass). Prints, for the
longest step (the prefill) and the median of the decode steps after it, the step's summed kernel time, its
kernel count, and the kernels by total time (name, launches, µs, share). ncu serialises kernels, so the sum is
kernel time only: a step's wall time minus this sum is launch and host overhead. With the DRAM metrics, each
kernel's bytes moved and the rate (GB/s; ncu flushes the caches before every kernel, so a kernel's inputs come
from DRAM); --launches lists the median decode step's launches in order (µs, grid, MB, GB/s).
"""
import argparse
import csv
import re
import statistics
from collections import defaultdict


def read(path):
    """[(id, name, µs, bytes moved or None, grid)] in launch order."""
    by_id = {}
    with open(path) as f:
        lines = [ln for ln in f if ln.startswith('"')]
    for r in csv.DictReader(lines):
        metric = r.get("Metric Name")
        if metric not in ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"):
            continue
        unit = r.get("Metric Unit", "")
        v = float(r["Metric Value"].replace(",", ""))
        k = int(r["ID"])
        if k not in by_id:
            name = r["Kernel Name"].replace("(anonymous namespace)", "").replace("<unnamed>", "")
            name = name.replace("void ", "").replace("keel::::", "")
            name = re.sub(r"\(.*", "", name).strip()
            by_id[k] = [k, name, 0.0, None, r.get("Grid Size", "")]
        e = by_id[k]
        if metric == "gpu__time_duration.sum":
            e[2] = v * {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
                        "second": 1e6, "s": 1e6}.get(unit, 1e-3)
        else:
            b = v * {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9}.get(unit, 1)
            e[3] = (e[3] or 0.0) + b
    return [tuple(by_id[k]) for k in sorted(by_id)]


def steps(rows):
    out, cur = [], None
    for _, name, us, moved, grid in rows:
        if "embedding_kernel" in name:
            cur = []
            out.append(cur)
        if cur is not None:
            cur.append((name, us, moved, grid))
    return out


def rate(moved, us):
    return f"{moved / (us * 1e3):8.0f} GB/s" if moved is not None and us > 0 else ""


def table(title, step, top):
    total = sum(us for _, us, _, _ in step)
    by = defaultdict(lambda: [0, 0.0, None])
    for name, us, moved, _ in step:
        by[name][0] += 1
        by[name][1] += us
        if moved is not None:
            by[name][2] = (by[name][2] or 0.0) + moved
    print(f"== {title}: {len(step)} kernels, {total:.1f} us of kernel time")
    for name, (n, us, moved) in sorted(by.items(), key=lambda kv: -kv[1][1])[:top]:
        mb = f"{moved / 1e6:9.1f} MB {rate(moved, us)}" if moved is not None else ""
        print(f"  {us:10.1f} us {100 * us / total:5.1f} %  x{n:<5d} {name[:80]:80s} {mb}")


def launches(title, step):
    print(f"== {title}, launch by launch")
    for name, us, moved, grid in step:
        mb = f"{moved / 1e6:9.2f} MB {rate(moved, us)}" if moved is not None else ""
        print(f"  {us:9.1f} us  {grid:>16s}  {name[:70]:70s} {mb}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--launches", action="store_true", help="the median decode step's launches in order")
    a = ap.parse_args()
    st = steps(read(a.csv))
    if not st:
        raise SystemExit("no embedding_kernel launch in " + a.csv)
    sums = [sum(us for _, us, _, _ in s) for s in st]
    print("steps (kernel us):", " ".join(f"{s:.0f}" for s in sums))
    big = max(range(len(st)), key=lambda i: sums[i])
    table(f"step {big} (the prefill)", st[big], a.top)
    dec = [i for i in range(big + 1, len(st))]
    if dec:
        med = sorted(dec, key=lambda i: sums[i])[len(dec) // 2]
        table(f"step {med} (median of {len(dec)} decode steps)", st[med], a.top)
        if a.launches:
            launches(f"step {med}", st[med])


if __name__ == "__main__":
    main()
