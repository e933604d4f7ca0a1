#!/usr/bin/env python3
"""Hugging Face folder <-> MLX affine-quantized folder, in plain Python (no mlx, no torch, no numpy).

The oracle side of keel's MLX support (docs/MLX.md): it writes folders laid out exactly as mlx-lm saves them, so
keel's loader is tested on what users have, and turns them back into Hugging Face folders of the dequantized
weights, so transformers can compute reference logits for them (the quantized model's function is the
dequantized weights, `w = scale * q + bias`, and nothing else).

  mlx_convert.py quantize   --src HF_DIR --out MLX_DIR --bits 4 --group-size 64 [--override PATH=BITS:GROUP]
                            [--keep REGEX] [--recipe mixed_2_6|mixed_3_4|mixed_3_6|mixed_4_6]
  mlx_convert.py dequantize --src MLX_DIR --out HF_DIR

quantize follows mlx-lm (mlx_lm/utils.py `quantize_model`, `save_model`; the model files' `sanitize` and
`quant_predicate`): the model's tensors are renamed and reshaped into MLX's module tree (per model_type below),
every Linear, Embedding and SwitchLinear whose input size is a multiple of the group size is quantized with
MLX's CPU quantizer (tools/mlx_quantize.py), Qwen3.5-MoE routers and shared-expert gates at 8 bits / group 64
(`quant_predicate`), --override PATH=BITS:GROUP sets a module's own width (written as a per-module entry of
`quantization`), --keep REGEX leaves matching modules in float (written as `false` entries, the form mlx-lm's
quantize_model records a predicate's refusal in). config.json gets `quantization` and its copy
`quantization_config`; the weights go to model.safetensors (metadata {"format": "mlx"}) with an index.
--recipe applies one of mlx-lm's mixed recipes (mlx_lm/convert.py `mixed_quant_predicate_builder`, see
`mixed_recipe` below) in place of the model's own quant_predicate, as mlx-lm's `quantize_model` does.

dequantize inverts the renaming (experts unstacked, conv1d back to [C, 1, K], Qwen3.5's stored 1 + w norms back
to w as s − 1, which is exact in float32 for s in [0.5, 2]) and writes every floating tensor as F32.
"""
import argparse
import array
import json
import math
import os
import re
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mlx_quantize as mq  # noqa: E402

# ---- safetensors (read and write) -------------------------------------------------------------------------

DTYPE_BYTES = {"F32": 4, "BF16": 2, "F16": 2, "U32": 4, "I32": 4, "I64": 8}


class T:
    """A tensor: safetensors dtype name, shape, values (floats for F32/BF16/F16, ints for U32)."""

    def __init__(self, dtype, shape, values):
        self.dtype, self.shape, self.values = dtype, list(shape), values

    def numel(self):
        return math.prod(self.shape)


def decode(dtype, raw):
    if dtype == "F32":
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))
    if dtype == "BF16":
        h = array.array("H", raw)
        return list(struct.unpack(f"<{len(h)}f", array.array("I", (v << 16 for v in h)).tobytes()))
    if dtype == "F16":
        return list(struct.unpack(f"<{len(raw) // 2}e", raw))
    if dtype in ("U32", "I32"):
        return list(array.array("I" if dtype == "U32" else "i", raw))
    if dtype == "I64":
        return list(array.array("q", raw))
    sys.exit(f"mlx_convert: dtype {dtype} not handled")


def encode(t):
    if t.dtype == "F32":
        return struct.pack(f"<{len(t.values)}f", *t.values)
    if t.dtype == "BF16":
        return array.array("H", (mq.to_bf16_bits(v) for v in t.values)).tobytes()
    if t.dtype == "F16":
        return array.array("H", (mq.to_f16_bits(v) for v in t.values)).tobytes()
    if t.dtype == "U32":
        return array.array("I", t.values).tobytes()
    sys.exit(f"mlx_convert: cannot write {t.dtype}")


def read_folder(d):
    files = []
    if os.path.exists(os.path.join(d, "model.safetensors.index.json")):
        idx = json.load(open(os.path.join(d, "model.safetensors.index.json")))
        files = sorted(set(idx["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    out = {}
    for f in files:
        raw = open(os.path.join(d, f), "rb").read()
        n = struct.unpack("<Q", raw[:8])[0]
        header = json.loads(raw[8:8 + n])
        header.pop("__metadata__", None)
        base = 8 + n
        for k, v in header.items():
            b, e = v["data_offsets"]
            out[k] = T(v["dtype"], v["shape"], decode(v["dtype"], raw[base + b:base + e]))
    return out


def write_safetensors(path, tensors, metadata):
    header, blobs, off = {"__metadata__": metadata}, [], 0
    for k in sorted(tensors):
        blob = encode(tensors[k])
        header[k] = {"dtype": tensors[k].dtype, "shape": tensors[k].shape, "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


# ---- per model_type: Hugging Face names -> MLX names (mlx-lm's sanitize) -----------------------------------

def family(config):
    mt = config["model_type"]
    if mt == "nemotron_h":
        return "nemotron_h"
    if mt.startswith("qwen3_5"):
        return "qwen3_5"
    if mt in ("llama", "qwen3", "qwen2", "mistral"):
        return "llama"
    sys.exit(f"mlx_convert: model_type {mt} not handled")


def text_config(config):
    return config.get("text_config", config)


def moveaxis_2_1(t):
    """[C, 1, K] -> [C, K, 1] (mlx-lm: v.moveaxis(2, 1) for conv1d weights)."""
    c, one, k = t.shape
    assert one == 1
    return T(t.dtype, [c, k, 1], list(t.values))


def stack(ts):
    return T(ts[0].dtype, [len(ts)] + ts[0].shape, [v for t in ts for v in t.values])


def layer_indices(w, prefix):
    return sorted({int(k[len(prefix):].split(".")[0]) for k in w if k.startswith(prefix)})


def to_mlx(config, w):
    fam, tc = family(config), text_config(config)
    w = dict(w)
    if fam == "nemotron_h":
        # mlx_lm/models/nemotron_h.py `sanitize`
        w = {k: v for k, v in w.items() if not k.startswith("mtp.")}
        for k in list(w):
            if "conv1d.weight" in k and w[k].shape[-1] != 1:
                w[k] = moveaxis_2_1(w[k])
        for layer in layer_indices(w, "backbone.layers."):
            p = f"backbone.layers.{layer}.mixer"
            for m, n in (("down_proj", "fc2"), ("up_proj", "fc1")):
                if f"{p}.experts.0.{m}.weight" in w:
                    w[f"{p}.switch_mlp.{n}.weight"] = stack(
                        [w.pop(f"{p}.experts.{e}.{m}.weight") for e in range(tc["n_routed_experts"])])
    elif fam == "qwen3_5":
        # mlx_lm/models/qwen3_5.py and qwen3_5_moe.py `sanitize`
        out = {}
        for k, v in w.items():
            if k.startswith("model.visual") or k.startswith("vision_tower") or "mtp." in k:
                continue
            if k.startswith("model.language_model"):
                k = k.replace("model.language_model", "language_model.model")
            elif not k.startswith("language_model."):
                k = "language_model." + k
            out[k] = v
        w = out
        if tc.get("tie_word_embeddings"):
            w.pop("language_model.lm_head.weight", None)
        unsanitized = any("conv1d.weight" in k and v.shape[-1] != 1 for k, v in w.items())
        norm_keys = (".input_layernorm.weight", ".post_attention_layernorm.weight", "model.norm.weight",
                     ".q_norm.weight", ".k_norm.weight")
        for k in list(w):
            v = w[k]
            if "conv1d.weight" in k and v.shape[-1] != 1:
                w[k] = moveaxis_2_1(v)
            if unsanitized and any(k.endswith(s) for s in norm_keys) and len(v.shape) == 1:
                # v + 1.0 in the weight's dtype: mlx rounds the sum to bf16 when the weight is bf16
                w[k] = T(v.dtype, v.shape, [v.values[i] + 1.0 for i in range(len(v.values))])
                if v.dtype == "BF16":
                    w[k].values = [mq.f32(x) for x in w[k].values]  # stored through encode() as bf16(x)
        for layer in layer_indices(w, "language_model.model.layers."):
            p = f"language_model.model.layers.{layer}.mlp"
            if f"{p}.experts.0.gate_proj.weight" in w:
                for n in ("gate_proj", "up_proj", "down_proj"):
                    w[f"{p}.switch_mlp.{n}.weight"] = stack(
                        [w.pop(f"{p}.experts.{e}.{n}.weight") for e in range(tc["num_experts"])])
    else:
        # mlx_lm/models/llama.py, qwen3.py `sanitize`
        w = {k: v for k, v in w.items() if "rotary_emb.inv_freq" not in k}
        if config.get("tie_word_embeddings"):
            w.pop("lm_head.weight", None)
    return w


def quantizable(fam, path, t):
    """Modules MLX can quantize (to_quantized: Linear, Embedding, SwitchLinear), by their weight's path."""
    if not path.endswith(".weight") or len(t.shape) < 2:
        return False
    mod = path[: -len(".weight")]
    if "conv1d" in mod or mod.endswith("norm"):
        return False
    if fam == "nemotron_h" and mod.endswith("mixer.gate"):
        return False  # MoEGate holds a plain weight parameter, not a Linear
    return True


def quant_predicate(fam, config, mod):
    """The model's own quant_predicate: a dict of parameters, True, or False."""
    if fam == "qwen3_5" and text_config(config).get("num_experts", 0) > 0:
        if mod.endswith("mlp.gate") or mod.endswith("shared_expert_gate"):
            return {"group_size": 64, "bits": 8}
    return True


# mlx_lm/convert.py `mixed_quant_predicate_builder`: recipe -> (low_bits, high_bits)
RECIPES = {"mixed_2_6": (2, 6), "mixed_3_4": (3, 4), "mixed_3_6": (3, 6), "mixed_4_6": (4, 6)}
LAYER_PREFIX = {"llama": "model.layers.", "nemotron_h": "backbone.layers.", "qwen3_5": "language_model.model.layers."}


def mixed_recipe(recipe, fam, w, group_size):
    """mlx-lm's mixed recipe as a predicate on module paths (mlx_lm/convert.py `mixed_quant_predicate_builder`,
    as `convert` calls it after ml-explore/mlx-lm#449, #506 and #809: the group size is convert's resolved
    q_group_size, each result carries mode "affine").

    The layer index sits at the first all-digit component of the first module path holding "down_proj" (the
    same position in every path of these families); num_layers is len(model.layers). A module is "more bits"
    when its layer index is in the first eighth, the last eighth, or every third layer between
    ((index - n // 8) % 3 == 2); paths without that component count as index 0. v_proj (v_a_proj, v_b_proj)
    and down_proj of those layers and every lm_head get the high bits, everything else the low bits. Every
    quantized module gets its own entry (a dict), so --bits only sets the block's top-level bits.
    """
    low_bits, high_bits = RECIPES[recipe]
    down_keys = [k for k in sorted(w) if "down_proj" in k]
    if not down_keys:
        sys.exit("mlx_convert: the model has no down_proj module, which mixed recipes need (mlx-lm: "
                 "\"Model does not have expected keys for mixed quant.\")")
    for layer_location, k in enumerate(down_keys[0].split(".")):
        if k.isdigit():
            break
    num_layers = len(layer_indices(w, LAYER_PREFIX[fam]))

    def predicate(path):
        parts = path.split(".")
        index = int(parts[layer_location]) if len(parts) > layer_location else 0
        use_more_bits = (index < num_layers // 8 or index >= 7 * num_layers // 8 or
                         (index - num_layers // 8) % 3 == 2)
        if ("v_proj" in path or "v_a_proj" in path or "v_b_proj" in path) and use_more_bits:
            return {"group_size": group_size, "bits": high_bits, "mode": "affine"}
        if "down_proj" in path and use_more_bits:
            return {"group_size": group_size, "bits": high_bits, "mode": "affine"}
        if "lm_head" in path:
            return {"group_size": group_size, "bits": high_bits, "mode": "affine"}
        return {"group_size": group_size, "bits": low_bits, "mode": "affine"}

    return predicate


def quantize_tensor(t, bits, group_size):
    k = t.shape[-1]
    vals = [mq.f32(v) for v in t.values]
    n_groups = len(vals) // group_size
    words, scales, biases = [], [], []
    for g in range(n_groups):
        q, s, b = mq.quantize_group(vals[g * group_size:(g + 1) * group_size], bits)
        for c in range(0, group_size, 32):
            words += mq.pack(q[c:c + 32], bits)
        scales.append(s)
        biases.append(b)
    lead = t.shape[:-1]
    return (T("U32", lead + [k * bits // 32], words), T(t.dtype, lead + [k // group_size], scales),
            T(t.dtype, lead + [k // group_size], biases))


def cmd_quantize(a):
    config = json.load(open(os.path.join(a.src, "config.json")))
    fam = family(config)
    w = to_mlx(config, read_folder(a.src))
    overrides = {}
    for o in a.override or []:
        path, spec = o.split("=")
        bits, gs = spec.split(":")
        overrides[path] = {"group_size": int(gs), "bits": int(bits)}
    keep = re.compile(a.keep) if a.keep else None
    # mlx_lm/utils.py `quantize_model`: `quant_predicate = quant_predicate or getattr(model, "quant_predicate")`:
    # a recipe replaces the model's own predicate (the Qwen3.5-MoE 8-bit router and shared-expert gate too).
    recipe = mixed_recipe(a.recipe, fam, w, a.group_size) if a.recipe else None
    quant = {"group_size": a.group_size, "bits": a.bits, "mode": "affine"}
    out = {}
    n_quantized = 0
    for path in sorted(w):
        t = w[path]
        mod = path[: -len(".weight")] if path.endswith(".weight") else None
        params = None
        if mod and quantizable(fam, path, t) and keep and keep.search(mod):
            quant[mod] = False  # a predicate's refusal, as mlx-lm records it (`quantization[path] = False`)
        elif mod and quantizable(fam, path, t):
            pred = recipe(mod) if recipe else quant_predicate(fam, config, mod)
            if mod in overrides:
                pred = overrides[mod]
            if pred is not False:
                params = pred if isinstance(pred, dict) else {"group_size": a.group_size, "bits": a.bits}
                if t.shape[-1] % params["group_size"] != 0:  # mlx-lm: input not a multiple of the group
                    params = None
                elif isinstance(pred, dict):
                    quant[mod] = dict(params)
        if params is None:
            out[path] = t
            continue
        wq, s, b = quantize_tensor(t, params["bits"], params["group_size"])
        out[mod + ".weight"], out[mod + ".scales"], out[mod + ".biases"] = wq, s, b
        n_quantized += 1
    os.makedirs(a.out, exist_ok=True)
    write_safetensors(os.path.join(a.out, "model.safetensors"), out, {"format": "mlx"})
    total = sum(math.prod(t.shape) * DTYPE_BYTES[t.dtype] for t in out.values())
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total},
                   "weight_map": {k: "model.safetensors" for k in sorted(out)}}, f, indent=4)
    config["quantization"] = quant
    config["quantization_config"] = quant
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=4, sort_keys=True)
    for name in os.listdir(a.src):  # tokenizer, generation config, template: as they are
        if name not in ("config.json", "model.safetensors", "model.safetensors.index.json") and \
                not name.startswith("reference") and os.path.isfile(os.path.join(a.src, name)):
            with open(os.path.join(a.src, name), "rb") as fi, open(os.path.join(a.out, name), "wb") as fo:
                fo.write(fi.read())
    print(f"mlx_convert: {n_quantized} modules quantized, {len(out)} tensors, {total} bytes -> {a.out}")


def dequantize_tensor(wq, s, b, bits, group_size):
    k = wq.shape[-1] * 32 // bits
    rows = math.prod(wq.shape[:-1])
    vals = []
    wpr, gpr = wq.shape[-1], k // group_size
    for r in range(rows):
        words = wq.values[r * wpr:(r + 1) * wpr]
        for i in range(k):
            bit = i * bits
            v = words[bit >> 5] >> (bit & 31)
            if (bit & 31) + bits > 32:
                v |= words[(bit >> 5) + 1] << (32 - (bit & 31))
            q = v & ((1 << bits) - 1)
            g = r * gpr + i // group_size
            vals.append(mq.f32(mq.f32(s.values[g] * q) + b.values[g]))
    return T("F32", wq.shape[:-1] + [k], vals)


def cmd_dequantize(a):
    config = json.load(open(os.path.join(a.src, "config.json")))
    fam, tc = family(config), text_config(config)
    quant = config.pop("quantization")
    config.pop("quantization_config", None)
    w = read_folder(a.src)
    out = {}
    for path in list(w):
        if path.endswith(".scales"):
            mod = path[: -len(".scales")]
            p = quant.get(mod) if isinstance(quant.get(mod), dict) else quant
            out[mod + ".weight"] = dequantize_tensor(w[mod + ".weight"], w[mod + ".scales"], w[mod + ".biases"],
                                                     p["bits"], p["group_size"])
    for path, t in w.items():
        mod = path.rsplit(".", 1)[0]
        if path.endswith((".scales", ".biases")) and mod + ".scales" in w:
            continue
        if path.endswith(".weight") and mod + ".scales" in w:
            continue
        out[path] = t
    # back to Hugging Face names and layouts
    hf = {}
    for path, t in out.items():
        if fam == "qwen3_5":
            path = path.replace("language_model.model.", "model.", 1).replace("language_model.lm_head",
                                                                                 "lm_head", 1)
        if t.dtype in ("BF16", "F16"):
            t = T("F32", t.shape, t.values)
        if "conv1d.weight" in path and len(t.shape) == 3 and t.shape[-1] == 1:
            t = T(t.dtype, [t.shape[0], 1, t.shape[1]], t.values)
        if ".switch_mlp." in path:
            prefix, rest = path.split(".switch_mlp.")
            name = rest[: -len(".weight")]
            hf_name = {"fc1": "up_proj", "fc2": "down_proj"}.get(name, name)
            e, inner = t.shape[0], math.prod(t.shape[1:])
            for i in range(e):
                hf[f"{prefix}.experts.{i}.{hf_name}.weight"] = T(t.dtype, t.shape[1:],
                                                                 t.values[i * inner:(i + 1) * inner])
            continue
        if fam == "qwen3_5":
            if path.endswith((".input_layernorm.weight", ".post_attention_layernorm.weight", "model.norm.weight",
                              ".q_norm.weight", ".k_norm.weight")) and len(t.shape) == 1:
                t = T("F32", t.shape, [mq.f32(v - 1.0) for v in t.values])
        hf[path] = t
    if fam == "qwen3_5" and tc.get("tie_word_embeddings") is False and "lm_head.weight" not in hf:
        sys.exit("mlx_convert: untied model without lm_head")
    os.makedirs(a.out, exist_ok=True)
    write_safetensors(os.path.join(a.out, "model.safetensors"), hf, {"format": "pt"})
    config["dtype"] = "float32"
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    for name in os.listdir(a.src):
        if name not in ("config.json", "model.safetensors", "model.safetensors.index.json") and \
                os.path.isfile(os.path.join(a.src, name)):
            with open(os.path.join(a.src, name), "rb") as fi, open(os.path.join(a.out, name), "wb") as fo:
                fo.write(fi.read())
    print(f"mlx_convert: {len(hf)} tensors (F32) -> {a.out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("quantize")
    q.add_argument("--src", required=True)
    q.add_argument("--out", required=True)
    q.add_argument("--bits", type=int, default=4)
    q.add_argument("--group-size", type=int, default=64)
    q.add_argument("--override", action="append", help="MODULE_PATH=BITS:GROUP_SIZE")
    q.add_argument("--keep", help="modules whose path matches stay in float")
    q.add_argument("--recipe", help="mlx-lm's mixed recipe: " + ", ".join(RECIPES))
    d = sub.add_parser("dequantize")
    d.add_argument("--src", required=True)
    d.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.cmd == "quantize":
        if a.bits not in (2, 3, 4, 5, 6, 8) or a.group_size not in (32, 64, 128):
            sys.exit("mlx_convert: bits must be 2, 3, 4, 5, 6 or 8 and the group size 32, 64 or 128")
        if a.recipe and a.recipe not in RECIPES:
            sys.exit(f"mlx_convert: unknown recipe {a.recipe} (mlx-lm's: {', '.join(RECIPES)})")
        cmd_quantize(a)
    else:
        cmd_dequantize(a)


if __name__ == "__main__":
    main()
