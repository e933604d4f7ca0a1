// CUDA sampling: argmax over rows of f32 logits, and sample_rows (below). argmax: one block per row. Gives
// exactly the CPU's answer
// (backend/cpu/sampling.cpp: best = 0, then `x[i] > x[best]` in ascending i), which is: 0 when x[0] is NaN,
// else the first index of the largest non-NaN value (a NaN never compares greater, and the scan never stands
// on one after index 0). Each thread keeps the best non-NaN (value, index) of its strided elements; the
// block combines them by larger value, then lower index.
#include <cuda_runtime.h>

#include <climits>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_util.cuh"
#include "core/error.h"

namespace keel {

namespace {

// index < 0: no candidate (every element seen was NaN).
struct Best {
  float value;
  int64_t index;
};

__device__ inline Best better(Best p, Best q) {
  if (q.index < 0) return p;
  if (p.index < 0) return q;
  if (q.value > p.value || (q.value == p.value && q.index < p.index)) return q;
  return p;
}

__global__ void argmax_kernel(ArgmaxArgs a) {
  cuda::pdl_begin();
  __shared__ float part_value[32];
  __shared__ int64_t part_index[32];
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const auto* x = reinterpret_cast<const float*>(a.logits + r * a.row_bytes);
    Best b{0.0f, -1};
    for (int64_t i = threadIdx.x; i < a.V; i += blockDim.x) {
      const float v = x[i];
      if (v == v && (b.index < 0 || v > b.value)) b = {v, i};  // ascending i: ties keep the first
    }
    for (int o = 16; o > 0; o >>= 1) {
      Best q;
      q.value = __shfl_xor_sync(0xffffffffu, b.value, o);
      q.index = __shfl_xor_sync(0xffffffffu, b.index, o);
      b = better(b, q);
    }
    __syncthreads();  // the previous row's partials are read
    if ((threadIdx.x & 31) == 0)
      part_value[threadIdx.x >> 5] = b.value, part_index[threadIdx.x >> 5] = b.index;
    __syncthreads();
    if (threadIdx.x == 0) {
      Best best{part_value[0], part_index[0]};
      for (unsigned w = 1; w < blockDim.x / 32; ++w) best = better(best, Best{part_value[w], part_index[w]});
      // V = 0: no candidate, and x[0] is not read (the CPU answers 0 too).
      a.out[r] = best.index < 0 || x[0] != x[0] ? 0 : static_cast<int32_t>(best.index);
    }
  }
}

}  // namespace

void CudaBackend::argmax(const ArgmaxArgs& a) {
  enter();
  if (a.rows == 0) return;
  cuda::launch(argmax_kernel, cuda::grid_blocks(a.rows), cuda::kThreads, 0, stream(), a);
  cuda::check(cudaGetLastError(), "argmax launch");
}

// ---- sample_rows -------------------------------------------------------------------------------------
// The semantics of backend/sampling_host.cpp (the CPU's sample_rows), row for row, in up to five launches:
//   1. prepare (one block per row; only when some row has logit_bias, penalties or truncation): for a row
//   with logit_bias or penalties, its working copy work[r] = raw
//      row + logit_bias (thread 0 adds the entries in order, as the host loop does) with the penalties over
//      the history's per-token counts (atomicAdd into counts[r]) — the host's f32 formulas, rounded the same
//      way (__f*_rn: no contraction); other rows are read where they are; and, when some row truncates (top-k
//      / top-p), sort keys of the row: (orderable logit bits << 32) | (0xffffffff − id), so a descending sort
//      is the host's `better` order (higher logit, then lower id; −0 keyed as +0, as `==` ties them).
//   2. when some row truncates: cub::DeviceSegmentedRadixSort, one segment per row, descending.
//   3. stats, then exp-sum (blocks over chunks of kChunk logits of every row): each chunk's best of the
//      working row, its largest raw logit, then its Σ expf(raw − the row's largest) (ChunkStats).
//   4. choose (one block per row): greedy = the best of work[r] (lowest id on ties). Else, as the host:
//      without top-k / top-p the survivors (min-p's, or all) stay in id order; with them, the sorted
//      best-first prefix: top-k's k, then top-p's shortest prefix whose running Σ w/total reaches top_p, then
//      min-p's count (a prefix, the weights falling along it). The draw takes the first survivor whose
//      running sum of exp((l − max) / T) exceeds uniform · total (the last when rounding leaves none). Sums
//      are in double, by block scans in chunks of kSampleThreads in the survivors' order: the same terms as
//      the host's sequential sums, added in another order, so a uniform within ~1e-12 (relative) of a
//      boundary may pick the neighbour. Then the logprobs over the RAW row: logsumexp (max, then Σ expf(x −
//      max) in double), the chosen id's, and top_logprobs passes of a block argmax that each take the best
//      ranked below the last.
// Workspace (one pool allocation, 256-byte aligned parts): work n × V f32; counts n × V i32 when any_penalty;
// when any_truncation keys in / out n × V u64 each, segment offsets (n + 1) i32 and CUB's scratch; the
// chunks' stats n × ⌈V / kChunk⌉ ChunkStats.

namespace {

// Threads per block of prepare and choose: one block per row, and a decode step's one row is the whole
// launch, so the block is wide (256 threads spent 0.7 ms per step on a 131072-logit row, ncu on the H200);
// 1024 made choose spill registers (its 64-register cap), 512 does not.
constexpr int kSampleThreads = 512;

constexpr int64_t kAlign = 256;
int64_t align_up(int64_t b) {
  return (b + kAlign - 1) / kAlign * kAlign;
}

// Per (row, chunk of kChunk logits), from the two stats kernels: the chunk's best of the working row (by
// better(): its largest non-NaN value, lowest index on ties), its largest raw logit (−inf when none), and
// its Σ expf(raw − the row's largest raw logit) in double.
constexpr int kStatThreads = 256, kStatPerThread = 16, kChunk = kStatThreads * kStatPerThread;
struct ChunkStats {
  Best best;
  float raw_max;
  double exp_sum;
};

__host__ __device__ inline int64_t chunks(int64_t V) {
  return V > kChunk ? (V + kChunk - 1) / kChunk : 1;
}

struct SampleLayout {
  int64_t work = 0, counts = 0, keys_in = 0, keys_out = 0, offsets = 0, temp = 0, stats = 0, total = 0;
  size_t temp_bytes = 0;
};

SampleLayout sample_layout(const SampleRowsArgs& a) {
  SampleLayout l;
  const int64_t nv = a.n * a.V;
  int64_t at = 0;
  l.work = at;
  at += align_up(nv * 4);
  if (a.any_penalty) {
    l.counts = at;
    at += align_up(nv * 4);
  }
  if (a.any_truncation) {
    if (nv > INT_MAX)
      throw_error(ErrorCode::unsupported,
                  "sample_rows on CUDA: {} rows × {} logits exceed the sort's int count", a.n, a.V);
    size_t temp = 0;
    cuda::check(cub::DeviceSegmentedRadixSort::SortKeysDescending(
                    nullptr, temp, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
                    static_cast<int>(nv), static_cast<int>(a.n), static_cast<const int*>(nullptr),
                    static_cast<const int*>(nullptr)),
                "sample_rows sort (scratch size)");
    l.temp_bytes = temp;
    l.keys_in = at;
    at += align_up(nv * 8);
    l.keys_out = at;
    at += align_up(nv * 8);
    l.offsets = at;
    at += align_up((a.n + 1) * 4);
    l.temp = at;
    at += align_up(static_cast<int64_t>(temp));
  }
  l.stats = at;
  at += align_up(a.n * chunks(a.V) * static_cast<int64_t>(sizeof(ChunkStats)));
  l.total = at;
  return l;
}

__device__ inline bool truncates(const SampleRowDesc& d, int64_t V) {
  return d.temperature > 0 && ((d.top_k > 0 && d.top_k < V) || d.top_p < 1.0f);
}

// Whether prepare writes the row's working copy (logit_bias or penalties change it); else work[r] is not
// written and both kernels read the raw row.
__device__ inline bool row_changed(const SampleRowDesc& d) {
  return d.bias_count > 0 ||
         (d.history_count > 0 &&
          (d.repetition_penalty != 1.0f || d.presence_penalty != 0.0f || d.frequency_penalty != 0.0f));
}

__device__ inline uint64_t sort_key(float l, int64_t id) {
  if (l == 0.0f) l = 0.0f;  // −0 ties +0, as the host's == does
  uint32_t u = __float_as_uint(l);
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<uint64_t>(u) << 32) | (0xffffffffu - static_cast<uint32_t>(id));
}
__device__ inline int64_t key_id(uint64_t k) {
  return static_cast<int64_t>(0xffffffffu - static_cast<uint32_t>(k & 0xffffffffu));
}

__global__ void __launch_bounds__(kSampleThreads)
    sample_prepare_kernel(SampleRowsArgs a, float* work, int32_t* counts, uint64_t* keys, int* offsets) {
  cuda::pdl_begin();
  const int64_t V = a.V;
  for (int64_t r = blockIdx.x; r < a.n; r += gridDim.x) {
    const SampleRowDesc d = a.rows[r];
    const auto* raw = reinterpret_cast<const float*>(a.logits + d.row * a.row_bytes);
    const bool changed = row_changed(d);
    float* w = work + r * V;
    if (changed)
      for (int64_t i = threadIdx.x; i < V; i += blockDim.x) w[i] = raw[i];
    const float* src = changed ? w : raw;
    __syncthreads();
    if (threadIdx.x == 0)
      for (int64_t b = d.bias_begin; b < d.bias_begin + d.bias_count; ++b) {
        const int32_t id = a.bias_ids[b];
        const float bias = a.bias_values[b];
        if (id < 0 || id >= V) continue;
        w[id] = bias <= -100.0f ? -INFINITY : __fadd_rn(w[id], bias);
      }
    const bool penalize = d.history_count > 0 && (d.repetition_penalty != 1.0f ||
                                                  d.presence_penalty != 0.0f || d.frequency_penalty != 0.0f);
    if (penalize) {
      int32_t* c = counts + r * V;
      for (int64_t i = threadIdx.x; i < V; i += blockDim.x) c[i] = 0;
      __syncthreads();
      for (int64_t h = threadIdx.x; h < d.history_count; h += blockDim.x)
        atomicAdd(&c[a.history[d.history_begin + h]], 1);
      __syncthreads();
      for (int64_t i = threadIdx.x; i < V; i += blockDim.x) {
        if (c[i] == 0) continue;
        float l = w[i];
        if (d.repetition_penalty != 1.0f)
          l = l > 0 ? __fdiv_rn(l, d.repetition_penalty) : __fmul_rn(l, d.repetition_penalty);
        l = __fsub_rn(
            l, __fadd_rn(d.presence_penalty, __fmul_rn(d.frequency_penalty, static_cast<float>(c[i]))));
        w[i] = l;
      }
    }
    __syncthreads();
    if (keys) {
      uint64_t* k = keys + r * V;
      for (int64_t i = threadIdx.x; i < V; i += blockDim.x) k[i] = sort_key(src[i], i);
      if (threadIdx.x == 0) {
        offsets[r] = static_cast<int>(r * V);
        if (r == a.n - 1) offsets[a.n] = static_cast<int>(a.n * V);
      }
    }
    __syncthreads();  // the next row's copy reuses nothing, but keeps the block in step
  }
}

// The block's best (value, index) by better(); every thread gets it.
__device__ Best block_best(Best b) {
  __shared__ float part_value[32];
  __shared__ int64_t part_index[32];
  __shared__ Best result;
  for (int o = 16; o > 0; o >>= 1) {
    Best q;
    q.value = __shfl_xor_sync(0xffffffffu, b.value, o);
    q.index = __shfl_xor_sync(0xffffffffu, b.index, o);
    b = better(b, q);
  }
  __syncthreads();
  if ((threadIdx.x & 31) == 0) part_value[threadIdx.x >> 5] = b.value, part_index[threadIdx.x >> 5] = b.index;
  __syncthreads();
  if (threadIdx.x == 0) {
    Best best{part_value[0], part_index[0]};
    for (unsigned w = 1; w < blockDim.x / 32; ++w) best = better(best, Best{part_value[w], part_index[w]});
    result = best;
  }
  __syncthreads();
  return result;
}

// The first j in [0, count) (in order) where pred(Σ_{i ≤ j} weight(i)) holds; −1 when none. Every thread
// gets it. weight ≥ 0, so pred (a lower bound on the sum) holds from some j on.
template <class Weight, class Pred>
__device__ int64_t block_find_first(int64_t count, Weight weight, Pred pred) {
  using Scan = cub::BlockScan<double, kSampleThreads>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ int first;
  double carry = 0;
  for (int64_t base = 0; base < count; base += blockDim.x) {
    const int64_t j = base + threadIdx.x;
    const double v = j < count ? weight(j) : 0.0;
    double incl = 0, chunk = 0;
    __syncthreads();  // scan and first are free again
    Scan(scan).InclusiveSum(v, incl, chunk);
    if (threadIdx.x == 0) first = INT_MAX;
    __syncthreads();
    if (j < count && pred(carry + incl)) atomicMin(&first, static_cast<int>(threadIdx.x));
    __syncthreads();
    const int f = first;
    if (f != INT_MAX) return base + f;
    carry += chunk;
  }
  return -1;
}

// The largest j < count where keep(j) holds; −1 when none. Every thread gets it.
template <class Keep>
__device__ int64_t block_last(int64_t count, Keep keep) {
  __shared__ unsigned long long last;
  __syncthreads();
  if (threadIdx.x == 0) last = 0;
  __syncthreads();
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x)
    if (keep(j)) atomicMax(&last, static_cast<unsigned long long>(j + 1));
  __syncthreads();
  return static_cast<int64_t>(last) - 1;
}

// The row's working copy (the raw row when prepare left it), as choose reads it.
__device__ inline const float* working_row(const SampleRowsArgs& a, const SampleRowDesc& d, const float* work,
                                           int64_t r) {
  return row_changed(d) ? work + r * a.V : reinterpret_cast<const float*>(a.logits + d.row * a.row_bytes);
}

// The row's largest raw logit from its chunks' (every thread of the block reads them: the same value).
__device__ inline float row_raw_max(const ChunkStats* st, int64_t C) {
  float m = -INFINITY;
  for (int64_t c = 0; c < C; ++c) m = st[c].raw_max > m ? st[c].raw_max : m;
  return m;
}

// Blocks over (chunks along x, rows along y), kStatThreads each, kStatPerThread logits a thread (issued
// together: a decode step's one row over 32+ blocks instead of one block's strided loop, which spent
// ~200 µs a step on 131072 logits, ncu, H200).
// 1: each chunk's best of the working row and largest raw logit.
__global__ void __launch_bounds__(kStatThreads)
    sample_stats_kernel(SampleRowsArgs a, const float* work, ChunkStats* stats) {
  cuda::pdl_begin();
  const int64_t V = a.V, C = gridDim.x;
  for (int64_t r = blockIdx.y; r < a.n; r += gridDim.y) {
    const SampleRowDesc d = a.rows[r];
    const auto* raw = reinterpret_cast<const float*>(a.logits + d.row * a.row_bytes);
    const float* w = working_row(a, d, work, r);
    Best b{0.0f, -1};
    float m = -INFINITY;
    const int64_t c0 = blockIdx.x * static_cast<int64_t>(kChunk) + threadIdx.x;
#pragma unroll
    for (int u = 0; u < kStatPerThread; ++u) {
      const int64_t i = c0 + u * kStatThreads;
      if (i >= V) break;
      const float x = raw[i], v = w[i];
      m = x > m ? x : m;
      if (v == v && (b.index < 0 || v > b.value)) b = {v, i};
    }
    b = block_best(b);
    m = cuda::block_max(m);
    if (threadIdx.x == 0) stats[r * C + blockIdx.x].best = b, stats[r * C + blockIdx.x].raw_max = m;
  }
}

// 2: each chunk's Σ expf(raw − the row's largest raw logit), in double.
__global__ void __launch_bounds__(kStatThreads) sample_exp_sum_kernel(SampleRowsArgs a, ChunkStats* stats) {
  cuda::pdl_begin();
  const int64_t V = a.V, C = gridDim.x;
  for (int64_t r = blockIdx.y; r < a.n; r += gridDim.y) {
    const SampleRowDesc d = a.rows[r];
    const auto* raw = reinterpret_cast<const float*>(a.logits + d.row * a.row_bytes);
    const float m = row_raw_max(stats + r * C, C);
    double part = 0;
    const int64_t c0 = blockIdx.x * static_cast<int64_t>(kChunk) + threadIdx.x;
#pragma unroll
    for (int u = 0; u < kStatPerThread; ++u) {
      const int64_t i = c0 + u * kStatThreads;
      if (i >= V) break;
      part += static_cast<double>(expf(raw[i] - m));
    }
    part = cuda::block_sum(part);
    if (threadIdx.x == 0) stats[r * C + blockIdx.x].exp_sum = part;
  }
}

__device__ inline double weight_at(float l, float max_logit, float temperature) {
  return exp((static_cast<double>(l) - static_cast<double>(max_logit)) / static_cast<double>(temperature));
}

__global__ void __launch_bounds__(kSampleThreads)
    sample_choose_kernel(SampleRowsArgs a, const float* work, const uint64_t* sorted,
                         const ChunkStats* stats) {
  cuda::pdl_begin();
  const int64_t V = a.V, C = chunks(V);
  for (int64_t r = blockIdx.x; r < a.n; r += gridDim.x) {
    const SampleRowDesc d = a.rows[r];
    const auto* raw = reinterpret_cast<const float*>(a.logits + d.row * a.row_bytes);
    const float* w = working_row(a, d, work, r);
    const ChunkStats* st = stats + r * C;
    Best b{0.0f, -1};  // the working row's best, from its chunks'
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) b = better(b, st[c].best);
    const Best best = block_best(b);
    int64_t id = 0;
    if (!(d.temperature > 0)) {  // greedy: the best penalized logit, lowest id on ties
      id = best.index < 0 ? 0 : best.index;
    } else if (!truncates(d, V)) {  // survivors in id order: min-p's, or all
      const float max_logit = best.value;
      const float T = d.temperature, min_p = d.min_p;
      auto survives = [&](int64_t i) { return !(min_p > 0.0f) || weight_at(w[i], max_logit, 1.0f) >= min_p; };
      auto weight = [&](int64_t i) { return survives(i) ? weight_at(w[i], max_logit, T) : 0.0; };
      double part = 0;
      for (int64_t i = threadIdx.x; i < V; i += blockDim.x) part += weight(i);
      const double target = d.uniform * cuda::block_sum(part);
      id = block_find_first(V, weight, [&](double cum) { return target < cum; });
      if (id < 0) id = block_last(V, survives);
      if (id < 0) id = 0;
    } else {  // best-first: the sorted row
      const uint64_t* k = sorted + r * V;
      auto logit = [&](int64_t j) { return w[key_id(k[j])]; };
      const float max_logit = logit(0);
      int64_t count = d.top_k > 0 && d.top_k < V ? d.top_k : V;
      if (d.top_p < 1.0f) {
        double part = 0;
        for (int64_t j = threadIdx.x; j < count; j += blockDim.x)
          part += weight_at(logit(j), max_logit, 1.0f);
        const double total = cuda::block_sum(part);
        const double top_p = d.top_p;
        const int64_t cross = block_find_first(
            count, [&](int64_t j) { return weight_at(logit(j), max_logit, 1.0f) / total; },
            [&](double cum) { return cum >= top_p; });
        if (cross >= 0) count = cross + 1;
      }
      if (d.min_p > 0.0f) {
        double part = 0;
        for (int64_t j = threadIdx.x; j < count; j += blockDim.x)
          part += weight_at(logit(j), max_logit, 1.0f) >= d.min_p ? 1.0 : 0.0;
        const int64_t kept = static_cast<int64_t>(cuda::block_sum(part));
        count = kept > 0 ? kept : 1;
      }
      const float T = d.temperature;
      double part = 0;
      for (int64_t j = threadIdx.x; j < count; j += blockDim.x) part += weight_at(logit(j), max_logit, T);
      const double target = d.uniform * cuda::block_sum(part);
      int64_t j = block_find_first(
          count, [&](int64_t j) { return weight_at(logit(j), max_logit, T); },
          [&](double cum) { return target < cum; });
      if (j < 0) j = count - 1;
      id = key_id(k[j]);
    }

    // Logprobs over the raw row: logsumexp, Σ exp(x − max) summed in double (the chunks' sums, then theirs),
    // each term f32 expf (within 2 ulp of exp: 0.5 ms of double exp per 131072 logits on one block, ~1e-7
    // on the logprob).
    const float m = row_raw_max(st, C);
    double part = 0;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) part += st[c].exp_sum;
    const double lse = static_cast<double>(m) + log(cuda::block_sum(part));
    if (threadIdx.x == 0) {
      a.ids[r] = static_cast<int32_t>(id);
      a.logprobs[r] = static_cast<float>(static_cast<double>(raw[id]) - lse);
    }
    // The top_logprobs best of the raw row, best first: each pass the best ranked below the previous pick.
    Best prev{0.0f, -1};
    for (int32_t t = 0; t < d.top_logprobs; ++t) {
      Best b{0.0f, -1};
      for (int64_t i = threadIdx.x; i < V; i += blockDim.x) {
        const float x = raw[i];
        if (x != x) continue;
        if (prev.index >= 0 && !(x < prev.value || (x == prev.value && i > prev.index))) continue;
        if (b.index < 0 || x > b.value) b = {x, i};
      }
      prev = block_best(b);
      if (threadIdx.x == 0) {
        a.top_ids[r * a.max_top + t] = static_cast<int32_t>(prev.index < 0 ? 0 : prev.index);
        a.top_logprobs[r * a.max_top + t] = static_cast<float>(static_cast<double>(prev.value) - lse);
      }
    }
    __syncthreads();
  }
}

}  // namespace

int64_t CudaBackend::sample_rows_workspace(const SampleRowsArgs& a) const {
  if (a.n == 0) return 0;
  enter();
  return sample_layout(a).total;
}

void CudaBackend::sample_rows(const SampleRowsArgs& a) {
  enter();
  if (a.n == 0) return;
  const SampleLayout l = sample_layout(a);
  Tensor ws = Tensor::empty(pool(), DType::u8, {l.total}, "sampling workspace");
  char* base = static_cast<char*>(ws.data());
  float* work = reinterpret_cast<float*>(base + l.work);
  int32_t* counts = a.any_penalty ? reinterpret_cast<int32_t*>(base + l.counts) : nullptr;
  uint64_t* keys_in = a.any_truncation ? reinterpret_cast<uint64_t*>(base + l.keys_in) : nullptr;
  uint64_t* keys_out = a.any_truncation ? reinterpret_cast<uint64_t*>(base + l.keys_out) : nullptr;
  int* offsets = a.any_truncation ? reinterpret_cast<int*>(base + l.offsets) : nullptr;
  auto* stats = reinterpret_cast<ChunkStats*>(base + l.stats);
  const unsigned grid = cuda::grid_blocks(a.n);
  if (a.any_penalty || a.n_bias > 0 || a.any_truncation) {  // else prepare would leave every row as it is
    cuda::launch(sample_prepare_kernel, grid, kSampleThreads, 0, stream(), a, work, counts, keys_in, offsets);
    cuda::check(cudaGetLastError(), "sample_rows prepare launch");
  }
  const dim3 stat_grid(static_cast<unsigned>(chunks(a.V)), grid);
  cuda::launch(sample_stats_kernel, stat_grid, kStatThreads, 0, stream(), a, work, stats);
  cuda::check(cudaGetLastError(), "sample_rows stats launch");
  cuda::launch(sample_exp_sum_kernel, stat_grid, kStatThreads, 0, stream(), a, stats);
  cuda::check(cudaGetLastError(), "sample_rows exp-sum launch");
  if (a.any_truncation) {
    size_t temp = l.temp_bytes;
    cuda::check(
        cub::DeviceSegmentedRadixSort::SortKeysDescending(
            base + l.temp, temp, keys_in, keys_out, static_cast<int>(a.n * a.V), static_cast<int>(a.n),
            static_cast<const int*>(offsets), static_cast<const int*>(offsets + 1), 0, 64, stream()),
        "sample_rows sort");
  }
  cuda::launch(sample_choose_kernel, grid, kSampleThreads, 0, stream(), a, work, keys_out, stats);
  cuda::check(cudaGetLastError(), "sample_rows choose launch");
}

}  // namespace keel
