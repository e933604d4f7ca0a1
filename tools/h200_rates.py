"""The card's own rates, the yardsticks issue 16 measures keel against: the bf16 GEMM rate (cuBLAS through
torch.matmul, bf16 in, f32 accumulate, square and the seed shapes' expert-like products) and the device copy
rate (a large tensor copied on the device: bytes read + written per second). Run on the GPU machine:
    python3 tools/h200_rates.py
Prints one line per measurement and a JSON summary (best of several timed runs after warm-up)."""
import json

import torch


def timed(fn, reps=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        best = min(best, a.elapsed_time(b) / 1e3)
    return best


def main():
    out = {"device": torch.cuda.get_device_name(0), "gemm_bf16": {}, "copy": {}}
    for m, n, k in [(8192, 8192, 8192), (16384, 8192, 8192), (4096, 1856, 2688), (4096, 2688, 1856),
                    (4096, 10304, 2688), (24576, 1856, 2688)]:
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        t = timed(lambda: torch.matmul(x, w))
        tf = 2.0 * m * n * k / t / 1e12
        out["gemm_bf16"][f"{m}x{n}x{k}"] = tf
        print(f"bf16 GEMM {m}x{n}x{k}: {t * 1e3:.3f} ms, {tf:.1f} TFLOP/s")
    for mib in (256, 1024, 4096):
        a = torch.empty(mib * 2**20, dtype=torch.uint8, device="cuda")
        b = torch.empty_like(a)
        t = timed(lambda: b.copy_(a))
        gbs = 2.0 * a.numel() / t / 1e9
        out["copy"][f"{mib}MiB"] = gbs
        print(f"device copy {mib} MiB: {t * 1e3:.3f} ms, {gbs:.0f} GB/s (read + write)")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
