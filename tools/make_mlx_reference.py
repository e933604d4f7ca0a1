#!/usr/bin/env python3
"""transformers on the dequantized twins of the MLX test folders: tests/fixtures/<family>/mlx_reference.safetensors.

Run where torch and transformers 5.x are installed (the GPU machine; CPU works too):

    python3 tools/make_mlx_reference.py --out tests/fixtures [--family qwen3_5_moe]

For each fixture family, tools/mlx_test_folders.py writes the MLX folders (8, 6, 5, 4, 3, 2 bits; groups 64 and 32;
one override, one module kept in float) and their Hugging Face twins, whose weights are w = scale * q + bias
computed in Python (tools/mlx_convert.py dequantize, float32). Each twin is loaded with from_pretrained (the class
its config.json names), upcast to float64 and run over the fixture's prompt_ids under make_reference.py's
Float64Mode (RoPE frequencies recomputed in float64), as the fixtures' own references are. Written per family:

  positions              i64 [P]     the prompt positions kept: 0, 16, 32, ... and the last (the file stays small)
  logprobs_b{B}_g{G}     f32 [P, V]  log-softmax of the logits at those positions

tests/models/mlx_folders_test.cpp compares keel on the MLX folder (packed kernels, CPU and CUDA) with these rows
within 1e-3. The folders are deterministic (no randomness in the quantizer), so CI's folders are these folders.
"""
import argparse
import json
import os
import sys
import tempfile
import time

import torch
import transformers
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference as mr  # noqa: E402
import mlx_test_folders as mtf  # noqa: E402

STRIDE = 16


def family_reference(family, fixtures, dev):
    prompt = load_file(os.path.join(fixtures, family, "reference.safetensors"))["prompt_ids"].to(torch.int64)
    T = prompt.numel()
    pos = torch.tensor(sorted(set(range(0, T, STRIDE)) | {T - 1}), dtype=torch.int64)
    out = {"positions": pos}
    with tempfile.TemporaryDirectory() as tmp:
        for bits in mtf.BITS:
            for group in mtf.GROUPS:
                mtf.make(family, tmp, bits, group)
                hf = os.path.join(tmp, f"b{bits}_g{group}", "hf")
                arch = json.load(open(os.path.join(hf, "config.json")))["architectures"][0]
                model = getattr(transformers, arch).from_pretrained(
                    hf, dtype=torch.float32, attn_implementation="eager", experts_implementation="eager")
                model = model.double().to(dev).eval()
                mr.reset_rotary(model, torch.float64, True)
                lp, _, promos, _ = mr.run_logprobs(model, prompt, dev, True)
                tag = f"b{bits}_g{group}"
                out["logprobs_" + tag] = lp[pos.to(lp.device)].to(torch.float32).cpu().contiguous()
                print(f"{family} {tag}: {arch}, T={T}, kept {pos.numel()} rows, float64 promotions {promos}",
                      flush=True)
                del model
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="the fixtures folder (tests/fixtures)")
    ap.add_argument("--family", action="append", choices=sorted(mtf.MODULES), help="default: every family")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    for family in a.family or sorted(mtf.MODULES):
        start = time.time()
        tensors = family_reference(family, a.out, dev)
        meta = {"tool": "tools/make_mlx_reference.py", "torch": torch.__version__,
                "transformers": transformers.__version__, "device": dev, "stride": str(STRIDE)}
        save_file(tensors, os.path.join(a.out, family, "mlx_reference.safetensors"), metadata=meta)
        print(f"{family}: {len(tensors) - 1} references in {time.time() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
