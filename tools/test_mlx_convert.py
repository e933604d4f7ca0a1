#!/usr/bin/env python3
"""Round trip of tools/mlx_convert.py on every reference fixture (ctest `mlx_convert_roundtrip`).

HF folder -> MLX folder (4 bits, group 32; 3 bits, group 64 with a --keep) -> HF folder of the dequantized
weights must give back every tensor name and shape; tensors MLX does not quantize come back bit-exact (but
Qwen3.5's 1 + w norms, rounded to bf16 on the way, within half a bf16 ulp of 1 + w); quantized ones within 1.5
quantization steps (the far edge of a group may fall one step past the grid, docs/MLX.md); the MLX folder has
mlx-lm's names (switch_mlp stacks, conv1d [C, K, 1], prefixes), the config's quantization block and its copy.
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mlx_convert as mc  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)


def run(name, bits, group, keep=None):
    src = os.path.join(ROOT, name)
    with tempfile.TemporaryDirectory() as tmp:
        q, d = os.path.join(tmp, "q"), os.path.join(tmp, "d")
        args = ["quantize", "--src", src, "--out", q, "--bits", str(bits), "--group-size", str(group)]
        if keep:
            args += ["--keep", keep]
        sys.argv = ["mlx_convert.py"] + args
        mc.main()
        sys.argv = ["mlx_convert.py", "dequantize", "--src", q, "--out", d]
        mc.main()
        a, mq, b = mc.read_folder(src), mc.read_folder(q), mc.read_folder(d)
        cfg = json.load(open(os.path.join(q, "config.json")))
        check(cfg["quantization"] == cfg["quantization_config"], f"{name}: quantization_config is not a copy")
        check(cfg["quantization"]["bits"] == bits and cfg["quantization"]["group_size"] == group,
              f"{name}: quantization block {cfg['quantization']}")
        check(sorted(a) == sorted(b), f"{name}: names differ after the round trip")
        check(all("conv1d.weight" not in k or mq[k].shape[-1] == 1 for k in mq), f"{name}: conv1d not [C, K, 1]")
        check(not any(".experts." in k for k in mq), f"{name}: experts not stacked into switch_mlp")
        if keep:
            check(not any(k.endswith(".scales") and keep in k for k in mq), f"{name}: --keep {keep} quantized")
        for k in a:
            if k not in b:
                continue
            check(a[k].shape == b[k].shape, f"{name}: {k} shape {a[k].shape} -> {b[k].shape}")
            diffs = [abs(x - y) for x, y in zip(a[k].values, b[k].values)]
            mod = k[: -len(".weight")]
            if ".experts." in mod:  # experts.E.up_proj -> switch_mlp.up_proj (Nemotron-H: fc1/fc2)
                prefix, rest = mod.split(".experts.")
                proj = rest.split(".", 1)[1]
                if name == "nemotron_h":
                    proj = {"up_proj": "fc1", "down_proj": "fc2"}[proj]
                mod = f"{prefix}.switch_mlp.{proj}"
            if name.startswith("qwen3_5"):
                mod = "language_model." + mod
            if mod + ".scales" in mq:
                steps = [abs(s) for s in mq[mod + ".scales"].values]
                check(max(diffs) <= 1.5 * max(steps) * (1 + 1e-6), f"{name}: {k} off by {max(diffs)}")
            elif name.startswith("qwen3_5") and k.endswith("norm.weight") and "linear_attn" not in k:
                check(max(diffs) <= 2.0 ** -8 * 1.0001, f"{name}: {k} (1 + w norm) off by {max(diffs)}")
            else:
                check(max(diffs) == 0, f"{name}: {k} changed by {max(diffs)} but is not quantized")


for fixture in ("nemotron_h", "qwen3_5", "qwen3_5_moe", "qwen3", "llama"):
    run(fixture, 4, 32)
run("qwen3_5_moe", 3, 64, keep="lm_head")
for f in failures:
    print("FAIL", f)
print(f"6 round trips, {len(failures)} failures")
sys.exit(1 if failures else 0)
