#!/usr/bin/env python3
"""MLX's affine quantizer in plain Python: the oracle for keel's (src/core/quant.cpp) and `keel quantize`.

Written from ml-explore/mlx `mlx/backend/cpu/quantized.cpp` (commit 0e18bb05), the function
`template <typename T, typename U> void quantize(const T* w, U* out, T* scales, T* biases, int bits,
int group_size, size_t w_size)`:

    n_bins = (1 << bits) - 1; eps = 1e-7
    per group: w_min, w_max over the group (fp32, starting at +inf / -inf)
               mask  = |w_min| > |w_max|
               scale = max((w_max - w_min) / n_bins, eps); scale = mask ? scale : -scale
               edge  = mask ? w_min : w_max
               q0    = rint(edge / scale); bias = 0
               if q0 != 0: scale = edge / q0; bias = edge
               q     = clamp(rint((w - bias) / scale), 0, n_bins)
               scales[i] = T(scale); biases[i] = T(bias)
    packing:   element k of a pack at bits [k*bits, k*bits+bits) of `out_el`; for powers of two a pack is one
               u32 of 32/bits elements, for 3 and 5 bits 8 elements written as 3 or 5 little-endian bytes, for
               6 bits 4 elements as 3 bytes — one little-endian bit stream per row in every case.

Every arithmetic step is done in float64 and rounded to float32 (exact for one +, -, * or /: float64 holds the
exact float32 result's rounding), `rint` is round-half-even (Python's round), and the storage rounding to
bf16/f16 is round-to-nearest-even (MLX's bfloat16_t / float16_t conversions).

Use: mlx_quantize.py --in GROUPS.bin --out RESULT.bin --bits B --group-size G --dtype bf16|f16|f32
     mlx_quantize.py --jobs FILE   (one job a line: IN OUT BITS GROUP_SIZE DTYPE; one process for many)
  GROUPS.bin: float32 little-endian values, a whole number of groups (the source weights' values).
  RESULT.bin: the packed u32 words of all groups (as one row), then the stored scales, then the stored biases,
              each scale/bias as the storage dtype's raw bits widened to u32.
"""
import argparse
import math
import struct
import sys


def f32(x):
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:  # rounds past float32's largest: infinity, as the C++ operation gives
        return math.copysign(math.inf, x)


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", f32(x)))[0]


def to_bf16_bits(x):
    b = f32_bits(x)
    if (b & 0x7FFFFFFF) > 0x7F800000:
        return ((b >> 16) | 0x40) & 0xFFFF
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def to_f16_bits(x):
    try:
        return struct.unpack("<H", struct.pack("<e", x))[0]  # IEEE binary16, round half to even
    except OverflowError:
        return 0xFC00 if x < 0 else 0x7C00


def store(x, dtype):
    if dtype == "bf16":
        return to_bf16_bits(x)
    if dtype == "f16":
        return to_f16_bits(x)
    return f32_bits(x)


def rint(x):
    return float(round(x))  # Python rounds half to even, as std::rint in the default mode


def quantize_group(w, bits):
    n_bins = float((1 << bits) - 1)
    eps = f32(1e-7)
    w_min, w_max = math.inf, -math.inf
    for v in w:
        w_max = max(w_max, v)
        w_min = min(w_min, v)
    mask = abs(w_min) > abs(w_max)
    scale = max(f32(f32(w_max - w_min) / n_bins), eps)
    scale = scale if mask else -scale
    edge = w_min if mask else w_max
    q0 = rint(f32(edge / scale))
    bias = 0.0
    if q0 != 0:
        scale = f32(edge / q0)
        bias = edge
    q = []
    for v in w:
        e = rint(f32(f32(v - bias) / scale))
        q.append(int(min(max(e, 0.0), n_bins)))
    return q, scale, bias


def pack(q, bits):
    """One little-endian bit stream of len(q)*bits bits, as u32 words."""
    acc = 0
    for i, v in enumerate(q):
        acc |= v << (i * bits)
    n_words = len(q) * bits // 32
    return [(acc >> (32 * j)) & 0xFFFFFFFF for j in range(n_words)]


def run_job(inp, out, bits, group_size, dtype):
    if bits not in (2, 3, 4, 5, 6, 8) or group_size not in (32, 64, 128):
        sys.exit("mlx_quantize: bits must be 2, 3, 4, 5, 6 or 8 and the group size 32, 64 or 128")
    raw = open(inp, "rb").read()
    vals = list(struct.unpack(f"<{len(raw) // 4}f", raw))
    if len(vals) % group_size:
        sys.exit("mlx_quantize: not a whole number of groups")
    qs, scales, biases = [], [], []
    for g in range(len(vals) // group_size):
        q, s, b = quantize_group(vals[g * group_size:(g + 1) * group_size], bits)
        qs += q
        scales.append(store(s, dtype))
        biases.append(store(b, dtype))
    words = pack(qs, bits)
    with open(out, "wb") as f:
        f.write(struct.pack(f"<{len(words)}I", *words))
        f.write(struct.pack(f"<{len(scales)}I", *scales))
        f.write(struct.pack(f"<{len(biases)}I", *biases))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--in", dest="inp")
    ap.add_argument("--out")
    ap.add_argument("--bits", type=int)
    ap.add_argument("--group-size", type=int)
    ap.add_argument("--dtype", choices=["bf16", "f16", "f32"])
    ap.add_argument("--jobs")
    a = ap.parse_args()
    if a.jobs:
        for line in open(a.jobs):
            if line.strip():
                inp, out, bits, group_size, dtype = line.split()
                run_job(inp, out, int(bits), int(group_size), dtype)
    else:
        run_job(a.inp, a.out, a.bits, a.group_size, a.dtype)


if __name__ == "__main__":
    main()
