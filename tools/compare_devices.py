#!/usr/bin/env python3
"""The same keel binary on two devices (`--device cpu` and `--device cuda`), user-visible outputs compared:

    tools/compare_devices.py KEEL [--device cuda:0] [--models DIR ...]

For the bundled model and every fixture folder under tests/fixtures/ (or the folders given) it runs
  - `keel perplexity --json` over two documents of 300 seeded pseudo-random ids in windows of 128 and prefill
    chunks of 37, on both devices: max |Δ nll| per scored token, the perplexities, and the argmax agreement;
  - `keel run --json` greedy from a 40-id prompt, 24 new tokens, on both devices: the tokens must match up to
    the first position where the CPU run's own top-2 gap (from its perplexity run's logits it cannot see) is
    unknown, so the comparison reports the first differing step instead of failing on it.
The CPU is the oracle here only in the sense that it is tested against transformers' float64 outputs
(tests/models); the bars are the GPU's stated tolerances (docs/CUDA.md): max |Δ nll| ≤ 1e-3.
Exit status 1 when a perplexity comparison exceeds the bar or a command fails.
"""
import argparse
import glob
import json
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def vocab_of(model):
    with open(os.path.join(model, "config.json")) as f:
        c = json.load(f)
    return c.get("text_config", c)["vocab_size"]


def run(keel, args):
    p = subprocess.run([keel] + args, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"keel {' '.join(args)}: exit {p.returncode}: {p.stderr[-2000:]}")
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    return json.loads(lines[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("keel")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--models", nargs="*")
    ap.add_argument("--bar", type=float, default=1e-3)
    a = ap.parse_args()
    models = a.models or [os.path.join(ROOT, "models/keel-brown-nemotron-h-8m")] + sorted(
        d.rstrip("/") for d in glob.glob(os.path.join(ROOT, "tests/fixtures/*/")) if os.path.exists(d + "config.json"))
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for m in models:
            name = os.path.basename(m)
            r = random.Random(20261201)
            V = vocab_of(m)
            docs = [[r.randrange(V) for _ in range(300)] for _ in range(2)]
            ids = os.path.join(tmp, "ids")
            with open(ids, "w") as f:
                for d in docs:
                    f.write(" ".join(map(str, d)) + "\n")
            prompt = ",".join(map(str, docs[0][:40]))
            try:
                ppl = {}
                for dev in ("cpu", a.device):
                    ppl[dev] = run(a.keel, ["perplexity", "-m", m, "-t", "4", "--device", dev, "--ids-file", ids,
                                            "--ctx", "128", "--prefill-chunk-size", "37", "--json"])
                c, g = ppl["cpu"], ppl[a.device]
                d = max(abs(x - y) for x, y in zip(c["nll"], g["nll"]))
                agree = sum(x == y for x, y in zip(c["argmax"], g["argmax"]))
                n = len(c["nll"])
                good = len(c["nll"]) == len(g["nll"]) and d <= a.bar
                ok &= good
                print(f"{'ok  ' if good else 'FAIL'} {name}: perplexity cpu {c['ppl']:.6f} {a.device} {g['ppl']:.6f}, "
                      f"max |Δ nll| {d:.2e} over {n} tokens, argmax equal at {agree}/{n}")
                gen = {}
                for dev in ("cpu", a.device):
                    gen[dev] = run(a.keel, ["run", "-m", m, "-t", "4", "--device", dev, "--prompt-ids", prompt,
                                            "-n", "24", "--json"])
                tc, tg = gen["cpu"].get("ids", []), gen[a.device].get("ids", [])
                first = next((i for i, (x, y) in enumerate(zip(tc, tg)) if x != y), None)
                print(f"     {name}: greedy 24 tokens " + ("identical" if first is None and len(tc) == len(tg)
                                                          else f"differ from step {first}"))
            except RuntimeError as e:
                ok = False
                print(f"FAIL {name}: {e}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
