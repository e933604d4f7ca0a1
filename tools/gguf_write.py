#!/usr/bin/env python3
"""Write a bf16 GGUF with seeded random weights for the shape of a keel config.json (standard library only).

  tools/gguf_write.py bench/qwen3_0_6b/config.json /tmp/qwen3_0_6b.gguf [--seed 1]

For llama.cpp baselines (bench/compare.py llama / llama-node): the file holds the same shapes keel's
`--random-weights` builds, so both engines do the same arithmetic. The values are not keel's (no engine compares
outputs here); they are finite bf16 of magnitude [2^-7, 2^-5) with random signs, so no NaN, infinity or subnormal
slows either side. Norm weights are f32 ones and biases f32 zeros (Mamba's A is -1), as convert_hf_to_gguf.py
keeps 1-D tensors in f32.

Written from the GGUF spec (ggml docs/gguf.md, version 3) and llama.cpp's key and tensor names
(gguf-py/gguf/constants.py; src/models/qwen3.cpp and src/llama-vocab.cpp for what the loader requires). The
tokenizer is a minimal valid gpt2 BPE one (tokenizer_kv below): token ids are all a benchmark evaluates.

Architectures: qwen3 (dense) and nemotron_h with experts (llama.cpp's nemotron_h_moe). Others exit with a
message naming what is missing.
"""
import argparse
import json
import random
import struct
import sys

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32

# gguf_type (metadata value types)
T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY = 4, 5, 6, 7, 8, 9
# ggml_type (tensor types)
GGML_F32, GGML_BF16 = 0, 30
LLAMA_FTYPE_MOSTLY_BF16 = 32


def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def kv_bytes(key, value):
    """One metadata pair; the type follows from the Python value (int: uint32, float: float32, str, bool)."""
    out = gguf_str(key)
    if isinstance(value, bool):
        return out + struct.pack("<IB", T_BOOL, value)
    if isinstance(value, int):
        return out + struct.pack("<II", T_UINT32, value)
    if isinstance(value, float):
        return out + struct.pack("<If", T_FLOAT32, value)
    if isinstance(value, str):
        return out + struct.pack("<I", T_STRING) + gguf_str(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return out + struct.pack("<IIQ", T_ARRAY, T_STRING, len(value)) + b"".join(gguf_str(v) for v in value)
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return out + struct.pack(f"<IIQ{len(value)}i", T_ARRAY, T_INT32, len(value), *value)
    sys.exit(f"gguf_write: no GGUF type for {key}={value!r}")


class Tensor:
    def __init__(self, name, shape, kind):
        # shape as Hugging Face / numpy order (outermost first); GGUF stores ne[0] (innermost) first
        self.name, self.shape, self.kind = name, list(shape), kind
        self.count = 1
        for d in shape:
            self.count *= d
        # "random": bf16; "random_f32": f32 where llama.cpp keeps it (convert_hf_to_gguf.py: the MoE router and
        # the Mamba conv1d, which ggml's ssm_conv reads as f32 only); the fills are f32
        self.ggml_type = GGML_BF16 if kind == "random" else GGML_F32
        self.nbytes = self.count * (2 if self.ggml_type == GGML_BF16 else 4)


def qwen3_tensors(c):
    h, ff, layers = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    hd = c.get("head_dim", h // c["num_attention_heads"])
    nq, nkv, vocab = c["num_attention_heads"], c["num_key_value_heads"], c["vocab_size"]
    t = [Tensor("token_embd.weight", [vocab, h], "random"), Tensor("output_norm.weight", [h], "ones")]
    if not c.get("tie_word_embeddings", False):
        t.append(Tensor("output.weight", [vocab, h], "random"))
    for i in range(layers):
        p = f"blk.{i}."
        t += [Tensor(p + "attn_norm.weight", [h], "ones"),
              Tensor(p + "attn_q.weight", [nq * hd, h], "random"),
              Tensor(p + "attn_k.weight", [nkv * hd, h], "random"),
              Tensor(p + "attn_v.weight", [nkv * hd, h], "random"),
              Tensor(p + "attn_output.weight", [h, nq * hd], "random"),
              Tensor(p + "attn_q_norm.weight", [hd], "ones"),
              Tensor(p + "attn_k_norm.weight", [hd], "ones"),
              Tensor(p + "ffn_norm.weight", [h], "ones"),
              Tensor(p + "ffn_gate.weight", [ff, h], "random"),
              Tensor(p + "ffn_up.weight", [ff, h], "random"),
              Tensor(p + "ffn_down.weight", [h, ff], "random")]
    rope = c.get("rope_parameters") or {}
    theta = float(rope.get("rope_theta", c.get("rope_theta", 1000000.0)))
    a = "qwen3"
    kv = {f"{a}.context_length": int(c.get("max_position_embeddings", 40960)),
          f"{a}.embedding_length": h,
          f"{a}.block_count": layers,
          f"{a}.feed_forward_length": ff,
          f"{a}.attention.head_count": nq,
          f"{a}.attention.head_count_kv": nkv,
          f"{a}.attention.key_length": hd,
          f"{a}.attention.value_length": hd,
          f"{a}.attention.layer_norm_rms_epsilon": float(c.get("rms_norm_eps", 1e-6)),
          f"{a}.rope.freq_base": theta,
          f"{a}.vocab_size": vocab}
    return a, kv, t


def nemotron_h_tensors(c):
    """Nemotron-H with experts: llama.cpp's nemotron_h_moe (src/models/nemotron-h.cpp loads it; the keys as
    conversion/nemotron.py and granite.py write them). Layer kinds from hybrid_override_pattern: M Mamba-2,
    * attention (no RoPE), E MoE (sigmoid router with a bias, relu2 experts, one shared expert)."""
    pattern = c["hybrid_override_pattern"]
    h, vocab, layers = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"]
    if len(pattern) != layers or set(pattern) - set("ME*"):
        sys.exit(f"gguf_write: pattern {pattern!r} must have {layers} letters of M, E, *")
    if "n_routed_experts" not in c:
        sys.exit("gguf_write: nemotron_h without experts (the '-' MLP layers) is not written yet")
    nh, hd, dst, ng, dconv = (c["mamba_num_heads"], c["mamba_head_dim"], c["ssm_state_size"], c["n_groups"],
                              c["conv_kernel"])
    d_inner = nh * hd
    d_in_proj = 2 * d_inner + 2 * ng * dst + nh
    conv_ch = d_inner + 2 * ng * dst
    nq, nkv, ahd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    ne, ff_e, ff_s = c["n_routed_experts"], c["moe_intermediate_size"], c["moe_shared_expert_intermediate_size"]
    t = [Tensor("token_embd.weight", [vocab, h], "random"), Tensor("output_norm.weight", [h], "ones")]
    if not c.get("tie_word_embeddings", False):
        t.append(Tensor("output.weight", [vocab, h], "random"))
    for i, kind in enumerate(pattern):
        p = f"blk.{i}."
        t.append(Tensor(p + "attn_norm.weight", [h], "ones"))
        if kind == "M":
            t += [Tensor(p + "ssm_in.weight", [d_in_proj, h], "random"),
                  Tensor(p + "ssm_conv1d.weight", [conv_ch, dconv], "random_f32"),
                  Tensor(p + "ssm_conv1d.bias", [conv_ch], "zeros"),
                  Tensor(p + "ssm_dt.bias", [nh], "zeros"),
                  Tensor(p + "ssm_a", [nh, 1], "minus_ones"),  # A = -exp(A_log): negative, the state decays
                  Tensor(p + "ssm_d", [nh, 1], "ones"),
                  Tensor(p + "ssm_norm.weight", [ng, d_inner // ng], "ones"),
                  Tensor(p + "ssm_out.weight", [h, d_inner], "random")]
        elif kind == "*":
            t += [Tensor(p + "attn_q.weight", [nq * ahd, h], "random"),
                  Tensor(p + "attn_k.weight", [nkv * ahd, h], "random"),
                  Tensor(p + "attn_v.weight", [nkv * ahd, h], "random"),
                  Tensor(p + "attn_output.weight", [h, nq * ahd], "random")]
        else:
            t += [Tensor(p + "ffn_gate_inp.weight", [ne, h], "random_f32"),
                  Tensor(p + "exp_probs_b.bias", [ne], "zeros"),
                  Tensor(p + "ffn_up_exps.weight", [ne, ff_e, h], "random"),
                  Tensor(p + "ffn_down_exps.weight", [ne, h, ff_e], "random"),
                  Tensor(p + "ffn_up_shexp.weight", [ff_s, h], "random"),
                  Tensor(p + "ffn_down_shexp.weight", [h, ff_s], "random")]
    a = "nemotron_h_moe"
    eps = float(c.get("layer_norm_epsilon", 1e-5))
    kv = {f"{a}.context_length": 1 << 20,  # no RoPE; the converter writes 2^20 too
          f"{a}.embedding_length": h,
          f"{a}.block_count": layers,
          f"{a}.feed_forward_length": [ff_e if k == "E" else 0 for k in pattern],
          f"{a}.attention.head_count": nq,
          f"{a}.attention.head_count_kv": [nkv if k == "*" else 0 for k in pattern],
          f"{a}.attention.key_length": ahd,
          f"{a}.attention.value_length": ahd,
          f"{a}.attention.layer_norm_epsilon": eps,
          f"{a}.attention.layer_norm_rms_epsilon": eps,
          f"{a}.ssm.conv_kernel": dconv,
          f"{a}.ssm.inner_size": d_inner,
          f"{a}.ssm.state_size": dst,
          f"{a}.ssm.time_step_rank": nh,
          f"{a}.ssm.group_count": ng,
          f"{a}.expert_count": ne,
          f"{a}.expert_used_count": c["num_experts_per_tok"],
          f"{a}.expert_feed_forward_length": ff_e,
          f"{a}.expert_shared_feed_forward_length": ff_s,
          f"{a}.expert_shared_count": c.get("n_shared_experts", 1),
          f"{a}.expert_weights_norm": bool(c.get("norm_topk_prob", True)),
          f"{a}.expert_weights_scale": float(c.get("routed_scaling_factor", 1.0)),
          f"{a}.expert_group_count": c.get("n_group", 1),
          f"{a}.vocab_size": vocab}
    return a, kv, t


ARCHS = {"qwen3": qwen3_tensors, "nemotron_h": nemotron_h_tensors}

# High byte of a little-endian bf16 (or f32): keep the random sign bit, set exponent bits 7..1 to 0b0111100, so with the
# random exponent LSB (bit 7 of the low byte) the biased exponent is 120 or 121: |x| in [2^-7, 2^-5).
HIGH_BYTE = bytes((b & 0x80) | 0x3C for b in range(256))
F32_FILL = {"ones": struct.pack("<f", 1.0), "zeros": struct.pack("<f", 0.0), "minus_ones": struct.pack("<f", -1.0)}


def write_tensor_data(f, t, rng, chunk=1 << 24):
    if t.kind in F32_FILL:
        f.write(F32_FILL[t.kind] * t.count)
        return
    left, width = t.nbytes, 2 if t.ggml_type == GGML_BF16 else 4
    while left:
        n = min(left, chunk)
        buf = bytearray(rng.randbytes(n))
        # the top byte of each bf16 or f32 holds the sign and exponent bits 7..1 in both formats
        buf[width - 1::width] = buf[width - 1::width].translate(HIGH_BYTE)
        f.write(buf)
        left -= n


def byte_tokens():
    """GPT-2's byte-level alphabet (bytes_to_unicode): every byte has a token, so any text tokenizes."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cps, n = [], 0
    for b in range(256):
        if b in keep:
            cps.append(b)
        else:
            cps.append(256 + n)
            n += 1
    return [chr(c) for c in cps]


def tokenizer_kv(vocab):
    """A valid gpt2-style BPE vocabulary of vocab dummy tokens: the 256 byte tokens, then <|dummy_N|>, the last
    one <|endoftext|> (control; BOS and EOS). No merges: text tokenizes byte by byte, which a benchmark never
    needs; llama.cpp's "none" vocabulary loads but aborts node-llama-cpp, which tokenizes at load."""
    tokens = byte_tokens() + [f"<|dummy_{i}|>" for i in range(256, vocab - 1)] + ["<|endoftext|>"]
    types = [1] * (vocab - 1) + [3]
    return {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "default", "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.token_type": types, "tokenizer.ggml.merges": [],
            "tokenizer.ggml.bos_token_id": vocab - 1, "tokenizer.ggml.eos_token_id": vocab - 1,
            "tokenizer.ggml.add_bos_token": False}


def pad(n):
    return (ALIGNMENT - n % ALIGNMENT) % ALIGNMENT


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", help="a keel model folder's config.json (Hugging Face format)")
    ap.add_argument("out", help="the GGUF file to write")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    with open(args.config) as f:
        c = json.load(f)
    mt = c.get("model_type")
    if mt not in ARCHS:
        sys.exit(f"gguf_write: model_type {mt!r} is not written yet (have: {', '.join(ARCHS)})")
    arch, arch_kv, tensors = ARCHS[mt](c)
    kv = {"general.architecture": arch,
          "general.name": f"keel random {mt}",
          "general.file_type": LLAMA_FTYPE_MOSTLY_BF16,
          "general.alignment": ALIGNMENT,
          **arch_kv,
          **tokenizer_kv(c["vocab_size"])}
    head = bytearray(GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(tensors), len(kv)))
    for k, v in kv.items():
        head += kv_bytes(k, v)
    offset = 0
    for t in tensors:
        dims = t.shape[::-1]
        head += gguf_str(t.name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
        head += struct.pack("<IQ", t.ggml_type, offset)
        offset += t.nbytes + pad(t.nbytes)
    head += b"\0" * pad(len(head))
    params = sum(t.count for t in tensors)
    with open(args.out, "wb") as f:
        f.write(head)
        for i, t in enumerate(tensors):
            write_tensor_data(f, t, random.Random(args.seed * 1000003 + i))
            f.write(b"\0" * pad(t.nbytes))
    print(f"gguf_write: {args.out}: {arch}, {len(tensors)} tensors, {params / 1e6:.1f} M parameters, "
          f"{(len(head) + offset) / 2**30:.2f} GiB", file=sys.stderr)


if __name__ == "__main__":
    main()
