// Peak f32 FMA and bf16 dot-product throughput of one core (zmm and ymm, 12 independent accumulators, timed in
// thread CPU time so that time slicing on a shared machine does not lower it) and memory bandwidth (1 GiB
// buffers, far above the L3). docs/CPU_PROFILE.md quotes its output.
//   gcc -O3 -march=native -fopenmp -o /tmp/peak bench/profile/peak.c && /tmp/peak
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
#define N_ACC 12
__attribute__((target("avx512f"))) static double fma_f32(long iters) {
  __m512 acc[N_ACC]; __m512 a = _mm512_set1_ps(1.0001f), b = _mm512_set1_ps(0.9999f);
  for (int i = 0; i < N_ACC; i++) acc[i] = _mm512_set1_ps((float)i);
  double t0 = now();
  for (long it = 0; it < iters; it++)
    { _Pragma("GCC unroll 12") for (int i = 0; i < N_ACC; i++) acc[i] = _mm512_fmadd_ps(a, acc[i], b); }
  double t = now() - t0; float s = 0; for (int i = 0; i < N_ACC; i++) s += _mm512_reduce_add_ps(acc[i]);
  if (s == 12345.f) puts("");
  return iters * N_ACC * 16.0 * 2 / t / 1e9;
}
__attribute__((target("avx512f,avx512bf16"))) static double dot_bf16(long iters) {
  __m512 acc[N_ACC]; __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3f80);
  for (int i = 0; i < N_ACC; i++) acc[i] = _mm512_setzero_ps();
  double t0 = now();
  for (long it = 0; it < iters; it++)
    { _Pragma("GCC unroll 12") for (int i = 0; i < N_ACC; i++) acc[i] = _mm512_dpbf16_ps(acc[i], a, b); }
  double t = now() - t0; float s = 0; for (int i = 0; i < N_ACC; i++) s += _mm512_reduce_add_ps(acc[i]);
  if (s == 12345.f) puts("");
  return iters * N_ACC * 32.0 * 2 / t / 1e9;  // 32 bf16 pairs per zmm, 2 flop each
}
__attribute__((target("avx2,fma"))) static double fma_ymm(long iters) {
  __m256 acc[N_ACC]; __m256 a = _mm256_set1_ps(1.0001f), b = _mm256_set1_ps(0.9999f);
  for (int i = 0; i < N_ACC; i++) acc[i] = _mm256_set1_ps((float)i);
  double t0 = now();
  for (long it = 0; it < iters; it++) { _Pragma("GCC unroll 12") for (int i = 0; i < N_ACC; i++) acc[i] = _mm256_fmadd_ps(a, acc[i], b); }
  double t = now() - t0; float s = 0; for (int i = 0; i < N_ACC; i++) { float v[8]; _mm256_storeu_ps(v, acc[i]); s += v[0]; }
  if (s == 12345.f) puts("");
  return iters * N_ACC * 8.0 * 2 / t / 1e9;
}
__attribute__((target("avx512f,avx512bf16,avx512vl"))) static double dot_ymm(long iters) {
  __m256 acc[N_ACC]; __m256bh a = (__m256bh)_mm256_set1_epi16(0x3f80);
  for (int i = 0; i < N_ACC; i++) acc[i] = _mm256_setzero_ps();
  double t0 = now();
  for (long it = 0; it < iters; it++) { _Pragma("GCC unroll 12") for (int i = 0; i < N_ACC; i++) acc[i] = _mm256_dpbf16_ps(acc[i], a, a); }
  double t = now() - t0; float s = 0; for (int i = 0; i < N_ACC; i++) { float v[8]; _mm256_storeu_ps(v, acc[i]); s += v[0]; }
  if (s == 12345.f) puts("");
  return iters * N_ACC * 16.0 * 2 / t / 1e9;
}
int main(void) {
  long iters = 200000000 / N_ACC;
  for (int r = 0; r < 3; r++) printf("f32 FMA zmm: %.1f GFLOP/s   bf16 dot zmm: %.1f GFLOP/s\n", fma_f32(iters), dot_bf16(iters));
  for (int r = 0; r < 3; r++) printf("f32 FMA ymm: %.1f GFLOP/s   bf16 dot ymm: %.1f GFLOP/s\n", fma_ymm(iters), dot_ymm(iters));
  size_t n = (size_t)1 << 30;  // 1 GiB, far above the 32 MiB L3
  char* src = aligned_alloc(64, n); char* dst = aligned_alloc(64, n);
  memset(src, 1, n); memset(dst, 2, n);
  for (int r = 0; r < 5; r++) {
    src[r] = (char)r; double t0 = now(); memcpy(dst, src, n); __asm__ volatile("" ::"r"(dst) : "memory"); double t = now() - t0;
    double t1 = now(); const long* p = (const long*)src; long s = 0;
    for (size_t i = 0; i < n / 8; i += 8) s += p[i] + p[i+1] + p[i+2] + p[i+3] + p[i+4] + p[i+5] + p[i+6] + p[i+7];
    __asm__ volatile("" ::"r"(s)); double tr = now() - t1;
    if (dst[12345] != 1) puts("bad");
    printf("memcpy 1 GiB: %.2f GB/s (read+write %.2f GB/s)   read-only sum: %.2f GB/s\n", n / t / 1e9, 2 * n / t / 1e9, n / tr / 1e9);
  }
  for (int r = 0; r < 5; r++) {
    struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a); long s = 0;
    const long* p = (const long*)src;
#pragma omp parallel for reduction(+ : s) num_threads(2)
    for (size_t i = 0; i < n / 8; i += 8) s += p[i] + p[i+1] + p[i+2] + p[i+3] + p[i+4] + p[i+5] + p[i+6] + p[i+7];
    clock_gettime(CLOCK_MONOTONIC, &b); double t = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
    printf("2-thread read sum (wall): %.2f GB/s %ld\n", n / t / 1e9, s & 1);
  }
  return 0;
}
