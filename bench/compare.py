#!/usr/bin/env python3
"""Side-by-side speed of two engines on the same shapes, interleaved, as ratios.

Two modes, each running its two commands in turn (A B, then B A, ...) for --runs rounds, so drift of a shared
machine hits both alike; each row prints A and B as median [min-max] and the pairwise ratio A/B the same way.

  keel vs keel (every performance change reports its ratio against the previous main):
    bench/compare.py keel --a build/keel --b /tmp/keel-main -m bench/seed_width --random-weights \
        --prompt-lengths 1024,4096 --gen 16 -t 2 --runs 3 --out bench/results/x.json

  keel vs llama.cpp (a llama-bench binary and a GGUF of the same shapes, bf16; nothing is built from outside):
    bench/compare.py llama --a build/keel --llama-bench PATH/llama-bench --gguf MODEL.gguf \
        -m DIR --random-weights --prompt-lengths 512,2048,8192 --gen 64 -t 2 --runs 3

  keel vs llama.cpp through node-llama-cpp's prebuilt libraries (bench/llama_node: `npm install --omit=optional
  --ignore-scripts` there once; the GGUF from tools/gguf_write.py; nothing is built from outside; one node
  process per round measures every length):
    bench/compare.py llama-node --a build/keel --gguf /tmp/qwen3_0_6b.gguf -m bench/qwen3_0_6b --random-weights \
        --prompt-lengths 512,2048 --gen 16 -t 2 --runs 3 --out bench/results/x.json

Rows: prefill tok/s per prompt length (keel bench's prefill of N tokens; llama-bench -p N -n 0), decode tok/s
after N tokens of context (keel bench's --gen tokens after the prompt; llama-bench -p 0 -n G -d N), and peak
memory (keel's process VmHWM; llama-bench's is not reported by it and is left out; llama-node reports its node
process's VmHWM after each length, which includes node's own ~50 MiB and, after the first length, the earlier
lengths' peak). The machine's load average
is recorded before and after every run, in the JSON, so runs taken with other load beside them can be discarded.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run_keel(binary, args, lengths, cache_type=None):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [binary, "bench", "-m", args.model, "--prompt-lengths", ",".join(map(str, lengths)), "--gen",
           str(args.gen), "-t", str(args.threads), "--json", out]
    if args.random_weights:
        cmd.append("--random-weights")
    if args.quantize:
        cmd += ["--quantize", str(args.quantize)]
    if args.prefill_chunk_size:
        cmd += ["--prefill-chunk-size", str(args.prefill_chunk_size)]
    if args.device:
        cmd += ["--device", args.device]
    if cache_type:
        cmd += ["--cache-type", cache_type]
    before = loadavg()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    after = loadavg()
    if p.returncode != 0:
        sys.exit(f"compare: {' '.join(cmd)} exited {p.returncode}:\n{p.stdout[-2000:]}")
    with open(out) as f:
        rows = json.load(f)["rows"]
    os.unlink(out)
    res = {}
    for r in rows:
        n = r["prompt_tokens"]
        res[f"prefill {n}"] = r["prefill_tok_s"]
        if args.gen > 0:
            res[f"decode after {n}"] = r["decode_tok_s"]
        res[f"peak MiB {n}"] = r["process_peak_bytes"] / 2**20
    return res, {"cmd": cmd, "load_before": before, "load_after": after}


def run_llama(binary, args, lengths):
    res, meta = {}, []
    for n in lengths:
        for kind, extra in (("prefill", ["-p", str(n), "-n", "0"]),
                            ("decode after", ["-p", "0", "-n", str(args.gen), "-d", str(n)])):
            if kind == "decode after" and args.gen == 0:
                continue
            cmd = [binary, "-m", args.gguf, "-t", str(args.threads), "-r", "1", "-o", "json"] + extra
            before = loadavg()
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            after = loadavg()
            if p.returncode != 0:
                sys.exit(f"compare: {' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-2000:]}")
            res[f"{kind} {n}"] = json.loads(p.stdout)[0]["avg_ts"]
            meta.append({"cmd": cmd, "load_before": before, "load_after": after})
    return res, {"runs": meta}


LLAMA_NODE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llama_node", "bench.mjs")


def run_llama_node(args, lengths):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = ["node", LLAMA_NODE, "--model", args.gguf, "--prompt-lengths", ",".join(map(str, lengths)), "--gen",
           str(args.gen), "-t", str(args.threads), "--ubatch", str(args.prefill_chunk_size or 512), "--json", out]
    before = loadavg()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    after = loadavg()
    if p.returncode != 0:
        sys.exit(f"compare: {' '.join(cmd)} exited {p.returncode}:\n{p.stdout[-2000:]}")
    with open(out) as f:
        got = json.load(f)
    os.unlink(out)
    res = {}
    for r in got["rows"]:
        n = r["prompt_tokens"]
        if r["threads_used"] != args.threads:
            sys.exit(f"compare: llama.cpp ran {r['threads_used']} threads, not {args.threads}")
        res[f"prefill {n}"] = r["prefill_tok_s"]
        if args.gen > 0:
            res[f"decode after {n}"] = r["decode_tok_s"]
        res[f"peak MiB {n}"] = r["process_peak_bytes"] / 2**20
    return res, {"cmd": cmd, "load_before": before, "load_after": after, "cpu_backend": got["cpu_backend"],
                 "log": got["log"]}


def spread(xs):
    return f"{statistics.median(xs):.2f} [{min(xs):.2f}-{max(xs):.2f}]"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["keel", "llama", "llama-node"])
    ap.add_argument("--a", required=True, help="the keel binary measured (A)")
    ap.add_argument("--b", help="keel mode: the baseline keel binary (B)")
    ap.add_argument("--llama-bench", help="llama mode: the llama-bench binary (B)")
    ap.add_argument("--gguf", help="llama, llama-node modes: the GGUF of the same shapes (tools/gguf_write.py)")
    ap.add_argument("-m", "--model", required=True, help="the model folder keel reads (config.json alone with --random-weights)")
    ap.add_argument("--random-weights", action="store_true")
    ap.add_argument("--quantize", type=int, help="keel mode: keel bench --quantize BITS (random weights MLX-packed)")
    ap.add_argument("--prompt-lengths", default="1024,4096")
    ap.add_argument("--gen", type=int, default=16)
    ap.add_argument("--prefill-chunk-size", type=int, default=0)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--device", help="keel's --device (e.g. cuda); keel mode on a GPU machine")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cache-type", help="A's keel --cache-type (f32, f16; llama.cpp's KV cache is f16)")
    ap.add_argument("--b-cache-type", help="keel mode: B's --cache-type (a binary before the flag: leave out)")
    ap.add_argument("--smoke", action="store_true",
                    help="allow fewer than 3 runs (a check that the script works, not a measurement)")
    ap.add_argument("--out", help="write every run's figures and the machine's load to this JSON file")
    args = ap.parse_args()
    if args.runs < 3 and not args.smoke:
        sys.exit("compare: --runs must be at least 3 (medians of fewer runs mean little on a shared machine)")
    lengths = [int(x) for x in args.prompt_lengths.split(",")]
    if args.mode == "keel":
        if not args.b:
            sys.exit("compare: keel mode needs --b (the baseline keel binary)")
        a = lambda: run_keel(args.a, args, lengths, args.cache_type)
        b = lambda: run_keel(args.b, args, lengths, args.b_cache_type)
        b_name = args.b
    elif args.mode == "llama-node":
        if not args.gguf:
            sys.exit("compare: llama-node mode needs --gguf")
        a = lambda: run_keel(args.a, args, lengths, args.cache_type)
        b = lambda: run_llama_node(args, lengths)
        b_name = "llama.cpp (node-llama-cpp, bench/llama_node)"
    else:
        if not (args.llama_bench and args.gguf):
            sys.exit("compare: llama mode needs --llama-bench and --gguf")
        a = lambda: run_keel(args.a, args, lengths, args.cache_type)
        b = lambda: run_llama(args.llama_bench, args, lengths)
        b_name = args.llama_bench
    runs = []
    for i in range(args.runs):
        order = [("a", a), ("b", b)] if i % 2 == 0 else [("b", b), ("a", a)]
        got = {}
        for name, fn in order:
            got[name] = fn()
            print(f"round {i + 1}/{args.runs}: {name} done", file=sys.stderr, flush=True)
        runs.append(got)
    rows = [k for k in runs[0]["a"][0] if k in runs[0]["b"][0]]
    print(f"A = {args.a}\nB = {b_name}\nmodel {args.model}, threads {args.threads}, {args.runs} interleaved rounds"
          + (" (SMOKE: fewer than 3 runs, not a measurement)" if args.runs < 3 else ""))
    metas = [m for r in runs for x in (r["a"][1], r["b"][1]) for m in [x] + x.get("runs", [])]
    loads = [m[k] for m in metas for k in ("load_before", "load_after") if k in m]
    if loads:
        print(f"load average (1 min) around the runs: {min(loads):.2f}-{max(loads):.2f} on {os.cpu_count()} CPUs")
    print(f"{'row':<22} {'A median [min-max]':>28} {'B median [min-max]':>28} {'A/B median [min-max]':>24}")
    table = []
    for k in rows:
        av = [r["a"][0][k] for r in runs]
        bv = [r["b"][0][k] for r in runs]
        ratio = [x / y for x, y in zip(av, bv)]
        print(f"{k:<22} {spread(av):>28} {spread(bv):>28} {spread(ratio):>24}")
        table.append({"row": k, "a": av, "b": bv, "ratio": ratio})
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"mode": args.mode, "a": args.a, "b": b_name, "args": vars(args), "rows": table,
                       "runs": [{"a": r["a"][1], "b": r["b"][1]} for r in runs]}, f, indent=1)


if __name__ == "__main__":
    main()
