#!/usr/bin/env python3
"""Write a bf16 GGUF with seeded random weights for the shape of a keel config.json (standard library only).

  tools/gguf_write.py bench/qwen3_0_6b/config.json /tmp/qwen3_0_6b.gguf [--seed 1]

For llama.cpp baselines (bench/compare.py llama / llama-node): the file holds the same shapes keel's
`--random-weights` builds, so both engines do the same arithmetic. The values are not keel's (no engine compares
outputs here); they are finite bf16 of magnitude [2^-7, 2^-5) with random signs, so no NaN, infinity or subnormal
slows either side. Norm weights are f32 ones, as convert_hf_to_gguf.py keeps 1-D tensors in f32.

Written from the GGUF spec (ggml docs/gguf.md, version 3) and llama.cpp's key and tensor names
(gguf-py/gguf/constants.py; src/models/qwen3.cpp and src/llama-vocab.cpp for what the loader requires). The
tokenizer is a minimal valid gpt2 BPE one (tokenizer_kv below): token ids are all a benchmark evaluates.

Architectures: qwen3 (dense). Others exit with a message naming what is missing.
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


ARCHS = {"qwen3": qwen3_tensors}

# High byte of a little-endian bf16: keep the random sign bit, set exponent bits 7..1 to 0b0111100, so with the
# random exponent LSB (bit 7 of the low byte) the biased exponent is 120 or 121: |x| in [2^-7, 2^-5).
HIGH_BYTE = bytes((b & 0x80) | 0x3C for b in range(256))
ONE_F32 = struct.pack("<f", 1.0)


def write_tensor_data(f, t, rng, chunk=1 << 24):
    if t.kind == "ones":
        f.write(ONE_F32 * t.count)
        return
    left = t.nbytes
    while left:
        n = min(left, chunk)
        buf = bytearray(rng.randbytes(n))
        buf[1::2] = buf[1::2].translate(HIGH_BYTE)
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
