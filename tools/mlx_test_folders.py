#!/usr/bin/env python3
"""The MLX test folders of one fixture family (tests/models/mlx_folders_test.cpp), made by tools/mlx_convert.py.

  mlx_test_folders.py --family qwen3_5_moe --out DIR

For every bits in 8, 6, 5, 4, 3, 2 and group size in 64, 32 it writes DIR/b{bits}_g{group}/mlx, the fixture as
mlx-lm saves a quantized model (names, layouts, config, MLX's CPU quantizer), with one per-module override
(another width, a `quantization` entry) and one module kept in float (a `false` entry), and DIR/b{bits}_g{group}/hf,
the Hugging Face folder of its dequantized weights (w = scale * q + bias in float32, computed here, not by keel).
Transformers run on an hf folder gives the reference the test can read (tests/fixtures/<family>/mlx_reference.
safetensors, "logprobs_b{bits}_g{group}" over the fixture's prompt_ids); the folders are deterministic.
"""
import argparse
import contextlib
import io
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mlx_convert as mc  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
BITS = (8, 6, 5, 4, 3, 2)
GROUPS = (64, 32)

# Per family (MLX module paths): a module given another width, and one kept in float.
MODULES = {
    "llama": ("model.layers.0.mlp.down_proj", "model.layers.1.self_attn.v_proj"),
    "qwen3": ("model.layers.0.mlp.down_proj", "model.layers.1.self_attn.v_proj"),
    "nemotron_h": ("backbone.layers.0.mixer.in_proj", "backbone.layers.1.mixer.q_proj"),
    "qwen3_5": ("language_model.model.layers.0.linear_attn.in_proj_qkv",
                "language_model.model.layers.2.self_attn.o_proj"),
    "qwen3_5_moe": ("language_model.model.layers.0.mlp.switch_mlp.down_proj",
                    "language_model.model.layers.2.self_attn.q_proj"),
}


def override_of(bits, group):
    """The override's own width: never the default one."""
    return (4 if bits == 8 else 8), (32 if group == 64 else 64)


def make(family, out, bits, group):
    src = os.path.join(FIXTURES, family)
    mlx, hf = os.path.join(out, f"b{bits}_g{group}", "mlx"), os.path.join(out, f"b{bits}_g{group}", "hf")
    over, keep = MODULES[family]
    ob, og = override_of(bits, group)
    with contextlib.redirect_stdout(io.StringIO()):
        sys.argv = ["mlx_convert.py", "quantize", "--src", src, "--out", mlx, "--bits", str(bits), "--group-size",
                    str(group), "--override", f"{over}={ob}:{og}", "--keep", f"^{keep}$"]
        mc.main()
        sys.argv = ["mlx_convert.py", "dequantize", "--src", mlx, "--out", hf]
        mc.main()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", required=True, choices=sorted(MODULES))
    ap.add_argument("--out", required=True)
    ap.add_argument("--bits", type=int, choices=BITS, help="only this width (with --group-size)")
    ap.add_argument("--group-size", type=int, choices=GROUPS)
    a = ap.parse_args()
    combos = [(b, g) for b in BITS for g in GROUPS if (a.bits is None or b == a.bits) and
              (a.group_size is None or g == a.group_size)]
    for bits, group in combos:
        make(a.family, a.out, bits, group)
    print(f"mlx_test_folders: {len(combos)} MLX folders and their dequantized twins -> {a.out}")


if __name__ == "__main__":
    main()
