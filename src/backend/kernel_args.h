// What an op hands the backend that owns its tensors: one plain-data struct per op (pointers, dtypes, sizes,
// strides, parameters; no Tensor, no backend type). The op in src/ops/ has checked every shape and dtype and
// asked Backend::supports() before it fills one; the backend's method (backend.h) runs the kernel, takes its
// scratch from its own pool and splits the work among its own threads or blocks. The same struct with only
// the sizes filled asks the backend for the op's workspace bytes (the planner does that before anything
// runs). Pointers are device addresses of the backend's memory; byte strides are int64.
#pragma once
#include <cstdint>

#include "core/dtype.h"

// Callable from device code too (the CUDA kernels read F32Rows the same way).
#if defined(__CUDACC__)
#define KEEL_HOST_DEVICE __host__ __device__
#else
#define KEEL_HOST_DEVICE
#endif

namespace keel {

// ---- rows of an f32 tensor of rank 1..4
// ---------------------------------------------------------------------- rows = product of the outer
// dimensions, each row n contiguous floats; row r is at the row-major index r of the outer dimensions (any
// byte strides).
struct F32Rows {
  char* data = nullptr;
  int outer = 0;                  // outer dimensions (rank − 1), ≤ 3
  int64_t dim[3] = {1, 1, 1};     // their sizes
  int64_t stride[3] = {0, 0, 0};  // their byte strides
  int64_t rows = 1, n = 0;
  KEEL_HOST_DEVICE float* row(int64_t r) const {
    int64_t off = 0;
    for (int d = outer - 1; d >= 0; --d) {
      off += (r % dim[d]) * stride[d];
      r /= dim[d];
    }
    return reinterpret_cast<float*>(data + off);
  }
};

// ---- matmul ----------------------------------------------------------------------------------------------
// y[T, out] = x[T, in] · W[out, in]ᵀ (+ bias[out]); x, y, bias f32. W dense (w_bits = 0): row o of w_dtype
// (f32/bf16/f16) at w + o·w_row_bytes. W packed (w_bits > 0, w_dtype u32, MLX affine): row o's words at
// w + o·w_row_bytes hold element i in bits [i·b, i·b + b) of the row's little-endian bit stream, and
// W[o, i] = scale[o, i / g] · q + bias[o, i / g] with scales/biases rows w_scale_row_bytes apart.
struct MatmulArgs {
  const char* x = nullptr;  // [T, in] f32, row r at x + r·x_row_bytes
  int64_t x_row_bytes = 0;
  const char* w = nullptr;  // [out, in] (borrowed, e.g. mmap'd)
  int64_t w_row_bytes = 0;
  DType w_dtype = DType::f32;
  const char* w_scales = nullptr;  // packed only: [out, in / w_group_size] of w_scale_dtype
  const char* w_biases = nullptr;
  int64_t w_scale_row_bytes = 0;
  DType w_scale_dtype = DType::f32;
  int32_t w_bits = 0, w_group_size = 0;
  const float* bias = nullptr;  // [out] f32 or nullptr
  char* y = nullptr;            // [T, out] f32, row r at y + r·y_row_bytes
  int64_t y_row_bytes = 0;
  int64_t T = 0, in = 0, out = 0;
};

// ---- embedding -------------------------------------------------------------------------------------------
// out[t, :] = table[ids[t], :] widened to f32; ids already checked to lie in [0, vocab).
struct EmbeddingArgs {
  const char* table = nullptr;  // [vocab, d] f32/bf16/f16, rows row_bytes apart
  int64_t row_bytes = 0;
  DType dtype = DType::f32;      // u32 when packed (MatmulArgs' layout)
  const char* scales = nullptr;  // packed only: [vocab, d / group_size]
  const char* biases = nullptr;
  int64_t scale_row_bytes = 0;
  DType scale_dtype = DType::f32;
  int32_t bits = 0, group_size = 0;
  const int32_t* ids = nullptr;  // [T]
  char* out = nullptr;           // [T, d] f32, rows out_row_bytes apart
  int64_t out_row_bytes = 0;
  int64_t T = 0, d = 0;
};

// ---- norms -----------------------------------------------------------------------------------------------
// A weight vector in its stored dtype (f32, bf16 or f16).
struct NormWeight {
  const void* data = nullptr;
  DType dtype = DType::f32;
  int64_t size = 0;  // elements: the row's n (one per channel), or the group size (shared by every group)
  bool one_plus = false;  // scale by (1 + w) instead of w
};

enum class GateOrder {
  gate_then_norm,  // Mamba2: v = x ⊙ silu(z); out = v / sqrt(mean_group(v²) + eps) ⊙ w
  norm_then_gate,  // Gated DeltaNet: out = (x / sqrt(mean_group(x²) + eps) ⊙ w) ⊙ silu(z)
};

struct RmsNormArgs {  // out = x / sqrt(mean(x²) + eps) ⊙ w per row
  F32Rows x, out;
  NormWeight w;
  float eps = 1e-6f;
};
struct GatedRmsNormArgs {  // per group of `group` channels of each row
  F32Rows x, z, out;
  NormWeight w;
  int64_t group = 0;
  GateOrder order = GateOrder::gate_then_norm;
  float eps = 1e-6f;
};
struct L2NormArgs {  // out = x / sqrt(Σx² + eps) per row
  F32Rows x, out;
  float eps = 1e-6f;
};

// ---- activations -----------------------------------------------------------------------------------------
enum class Activation {
  silu,       // x·σ(x) (SwiGLU gates, Mamba2 conv output, DeltaNet gates)
  sigmoid,    // σ(x) = 1 / (1 + e^{−x})
  relu2,      // relu(x)² (nemotron_h MLP and experts)
  gelu_erf,   // x/2 · (1 + erf(x/√2))
  gelu_tanh,  // x/2 · (1 + tanh(√(2/π)·(x + 0.044715·x³)))
  softplus,   // log(1 + e^x), x > 20 passes through as torch's F.softplus does
};

struct ActivationArgs {  // out = f(x), or f(x) ⊙ up when gated (same shapes)
  F32Rows x, up, out;
  Activation f = Activation::silu;
  bool gated = false;
};
struct SoftmaxArgs {  // out = softmax of each row (n > 0)
  F32Rows x, out;
};
enum class BinaryOp { add, mul };
struct BinaryArgs {  // out = a + b or a ⊙ b (same shapes)
  F32Rows a, b, out;
  BinaryOp op = BinaryOp::add;
};

// ---- rope ------------------------------------------------------------------------------------------------
// table row t = cos of the R/2 angles f32(inv_freq[i] · positions[t]), then their sin.
struct RopeCosSinArgs {
  const int32_t* positions = nullptr;  // [T], ≥ 0
  const float* inv_freq = nullptr;     // [R/2] host memory (a few floats, transformers' f32 frequencies)
  char* table = nullptr;               // [T, R] f32, rows table_row_bytes apart
  int64_t table_row_bytes = 0;
  int64_t T = 0, R = 0;
};
// out[t, h] = x[t, h] rotated by table row t (rotate_half layout on the first R of D elements).
struct RopeArgs {
  const char* x = nullptr;  // [T, H, D] f32
  int64_t x_st = 0, x_sh = 0;
  char* out = nullptr;  // [T, H, D] f32 (may be x)
  int64_t o_st = 0, o_sh = 0;
  const char* table = nullptr;  // [T, R] f32
  int64_t table_row_bytes = 0;
  int64_t T = 0, H = 0, D = 0, R = 0;
};

// A stored [n] parameter vector (A_log, dt_bias, D, router biases) in f32/bf16/f16.
struct ParamVec {
  const void* data = nullptr;
  DType dtype = DType::f32;
  // Element i widened to f32 (host memory only: the CPU and reference backends read it this way).
  float at(int64_t i) const { return stored_f32(data, dtype, i); }
};

// ---- causal conv1d ---------------------------------------------------------------------------------------
constexpr int64_t kConv1dMaxKernel = 64;  // largest kernel width (the models use 4); the op refuses wider
// out[t, c] = bias[c] + Σ_{j<K} w[c, j] · xx[t + j, c], xx = concat(state, x); state = last K−1 rows of xx.
struct Conv1dArgs {
  const float* x = nullptr;  // [T, C], rows x_row floats apart
  int64_t x_row = 0;
  const void* w = nullptr;  // [C, K] in w_dtype, rows w_row elements apart
  int64_t w_row = 0;
  DType w_dtype = DType::f32;
  ParamVec bias;           // [C]; data null: no bias
  float* state = nullptr;  // [K−1, C] contiguous, updated
  float* out = nullptr;    // [T, C], rows out_row floats apart
  int64_t out_row = 0;
  int64_t T = 0, C = 0, K = 0;
  bool silu = false;
};

// ---- stateful mixers (strides in floats; innermost dimensions contiguous) ---------------------------------

// ops/ssd_scan.h states the math.
struct SsdScanArgs {
  int64_t T = 0, H = 0, P = 0, G = 0, N = 0, Q = 0;  // Q: chunk_size
  const float* x = nullptr;                          // [T, H, P]
  int64_t x_st = 0, x_sh = 0;
  const float* dt = nullptr;  // [T, H] raw dt
  int64_t dt_st = 0, dt_sh = 0;
  const float* B = nullptr;  // [T, G, N]
  int64_t B_st = 0, B_sg = 0;
  const float* C = nullptr;  // [T, G, N]
  int64_t C_st = 0, C_sg = 0;
  ParamVec A_log, dt_bias, D;  // [H]
  float* state = nullptr;      // [H, P, N] contiguous, updated in place
  float* y = nullptr;          // [T, H, P]
  int64_t y_st = 0, y_sh = 0;
  float dt_min = 0, dt_max = 0;
};

// ops/gated_deltanet.h states the math.
struct GatedDeltaNetArgs {
  int64_t T = 0, Hk = 0, Hv = 0, Dk = 0, Dv = 0;
  int64_t C = 0;  // chunk of the WY form; 0: the recurrence at every T
  bool qk_l2norm = true;
  float eps = 1e-6f;
  const float* q = nullptr;  // [T, Hk, Dk]
  int64_t q_st = 0, q_sh = 0;
  const float* k = nullptr;  // [T, Hk, Dk]
  int64_t k_st = 0, k_sh = 0;
  const float* v = nullptr;  // [T, Hv, Dv]
  int64_t v_st = 0, v_sh = 0;
  const float* a = nullptr;  // [T, Hv]
  int64_t a_st = 0, a_sh = 0;
  const float* b = nullptr;  // [T, Hv]
  int64_t b_st = 0, b_sh = 0;
  ParamVec A_log, dt_bias;  // [Hv]
  float* state = nullptr;   // [Hv, Dk, Dv] contiguous
  float* out = nullptr;     // [T, Hv, Dv]
  int64_t o_st = 0, o_sh = 0;
};

// ops/attention.h states the math.
struct AttentionArgs {
  int64_t T = 0, n_q = 0, n_kv = 0, D = 0, Dv = 0, offset = 0;
  int64_t key_tile = 64, query_tile = 16;  // fixed by the op (part of every row's reduction order)
  float scale = 1;
  const float* q = nullptr;  // [T, n_q, D]
  int64_t q_st = 0, q_sh = 0;
  DType kv_dtype = DType::f32;  // of the cache's K and V: f32, or f16 (the CPU's; strides in elements)
  const void* k = nullptr;      // [kv_len, n_kv, D]
  int64_t k_st = 0, k_sh = 0;
  const void* v = nullptr;  // [kv_len, n_kv, Dv]
  int64_t v_st = 0, v_sh = 0;
  float* out = nullptr;  // [T, n_q, Dv]
  int64_t o_st = 0, o_sh = 0;
};

// ---- conversion (the KV cache's rows) ---------------------------------------------------------------------
// dst[i] = src[i] in dst_dtype, i < n, both contiguous: f16 is IEEE binary16 rounded to nearest even (past
// ±65504 to ±inf, NaN stays NaN); f32 is a copy.
struct ConvertArgs {
  const float* src = nullptr;
  void* dst = nullptr;
  DType dst_dtype = DType::f32;
  int64_t n = 0;
};

// ---- mixture of experts ----------------------------------------------------------------------------------
constexpr int64_t kMoeMaxTopK = 64;    // num_experts_per_tok above this is refused by the op
constexpr int64_t kMoeMaxGroups = 64;  // n_group above this is refused by the op

// ops/moe.h states the routing math.
struct MoeRouteArgs {
  int64_t T = 0, E = 0, top_k = 1;
  bool sigmoid_grouped = false;
  int64_t n_group = 1, topk_group = 1;
  bool norm_topk_prob = true;
  float scaling = 1.0f;
  const float* logits = nullptr;  // [T, E], row stride logits_st floats
  int64_t logits_st = 0;
  ParamVec bias;               // [E] (sigmoid_grouped's e_score_correction_bias); data null: none
  int32_t* indices = nullptr;  // [T, top_k] contiguous
  float* weights = nullptr;    // [T, top_k] contiguous
};

constexpr int64_t kMoeMaxExperts = 512;  // experts per layer above this are refused by the op

// The routing's (token, slot) pairs p = t·k + j grouped by expert, every array in the backend's memory:
// the R = T·k grouped rows hold expert 0's pairs, then expert 1's, …, each expert's in ascending token order
// (a stable counting sort). offsets[e] = expert e's first grouped row (offsets[E] = the pairs kept),
// token[i] = the token of grouped row i, position[p] = the grouped row of pair p. An index outside [0, E)
// (the op refuses those where the host can read them) is dropped: its position is −1, and it is in no group.
struct MoeGroupArgs {
  const int32_t* indices = nullptr;  // [T, k] contiguous
  int64_t T = 0, k = 0, E = 0;
  int32_t* offsets = nullptr;   // [E + 1]
  int32_t* token = nullptr;     // [T·k] (entries past offsets[E] are not written)
  int32_t* position = nullptr;  // [T·k]
};

// One matmul per expert over its grouped rows, one call for all experts: for each e, y rows [offsets[e],
// offsets[e+1]) = x rows · W_eᵀ, where grouped row i reads x row x_rows[i] (x_rows null: row i). `m` holds
// what every expert shares — x, y and their row bytes, in, out and the weights' format (w_row_bytes,
// w_dtype, bits, group size, scale dtype and row bytes; its w, w_scales, w_biases and bias are not read) —
// and m.T = the grouped rows R. w / w_scales / w_biases are HOST arrays of E pointers into the backend's
// memory (scales and biases only when packed); offsets and x_rows are in the backend's memory. An expert
// holds at most `tokens` rows (each token chooses an expert once): the workspace is sized by it.
struct GroupedMatmulArgs {
  MatmulArgs m;
  const char* const* w = nullptr;         // [E] expert e's [out, in] rows
  const char* const* w_scales = nullptr;  // [E] packed only
  const char* const* w_biases = nullptr;  // [E] packed only
  const int32_t* offsets = nullptr;       // [E + 1] (MoeGroupArgs::offsets)
  const int32_t* x_rows = nullptr;        // [R] or null (MoeGroupArgs::token)
  int64_t E = 0, tokens = 0;
};

// out[t] += Σ_j weights[t, j] · y[position[t·k + j]] for t < T, the slots taken in ascending grouped row
// (= ascending expert: the order ops/moe.h promises), each term rounded before it is added; a slot whose
// position is −1 adds nothing. Strides in floats.
struct MoeCombineArgs {
  const float* y = nullptr;  // [R, H]
  int64_t y_st = 0;
  const int32_t* position = nullptr;  // [T, k] (MoeGroupArgs::position)
  const float* weights = nullptr;     // [T, k] routing weights
  int64_t T = 0, k = 0, H = 0;
  float* out = nullptr;  // [T, H]
  int64_t out_st = 0;
};

// dst row r *= scale[r] for r < n (rows of `width` floats, stride in floats; scale in the backend's memory):
// the shared expert's sigmoid gate.
struct ScaleRowsArgs {
  const float* scale = nullptr;  // [n]
  int64_t n = 0, width = 0;
  float* dst = nullptr;
  int64_t dst_st = 0;
};

// ---- sampling --------------------------------------------------------------------------------------------
struct ArgmaxArgs {  // out[r] = index of the largest of row r's V logits (the first on ties)
  const char* logits = nullptr;
  int64_t row_bytes = 0, rows = 0, V = 0;
  int32_t* out = nullptr;  // [rows]
};

// One row of a sample_rows call (ops/sampling.h states the semantics; the args live in the backend's memory).
struct SampleRowDesc {
  int64_t row = 0;     // logits row (< SampleRowsArgs::rows_in)
  double uniform = 0;  // [0, 1): the draw's one uniform; ignored when greedy (temperature ≤ 0)
  float temperature = 1.0f, top_p = 1.0f, min_p = 0.0f;
  float repetition_penalty = 1.0f, presence_penalty = 0.0f, frequency_penalty = 0.0f;
  int32_t top_k = 0;
  int32_t top_logprobs = 0;                      // ≤ SampleRowsArgs::max_top
  int64_t bias_begin = 0, bias_count = 0;        // entries [bias_begin, +count) of bias_ids / bias_values
  int64_t history_begin = 0, history_count = 0;  // tokens [history_begin, +count) of history
};

// Samples n rows of f32 logits: per row, logit_bias (≤ −100: −inf) then penalties over its history, then
// top-k → top-p → min-p → temperature → the draw with its uniform; temperature ≤ 0: greedy. The chosen id's
// logprob and the top_logprobs best alternatives (best first, ties lower id) are the log-softmax of the RAW
// row. Every pointer is in the backend's memory; history ids are inside [0, V) (the op checked), bias ids
// outside it are ignored. Flags and maxima are over the n rows; with the sizes they fix the workspace.
struct SampleRowsArgs {
  const char* logits = nullptr;  // [rows_in, V], row stride row_bytes
  int64_t row_bytes = 0, rows_in = 0, V = 0;
  int64_t n = 0;                        // rows to sample
  const SampleRowDesc* rows = nullptr;  // [n]
  const int32_t* bias_ids = nullptr;    // [n_bias]
  const float* bias_values = nullptr;   // [n_bias]
  int64_t n_bias = 0;
  const int32_t* history = nullptr;  // [n_history]
  int64_t n_history = 0;
  int64_t max_history = 0;      // max history_count
  int64_t max_top = 0;          // max top_logprobs
  bool any_penalty = false;     // some row has history and a penalty ≠ off
  bool any_truncation = false;  // some row samples (temperature > 0) with top_k or top_p on
  // Results: ids [n], logprobs [n] (the chosen id's), top_ids / top_logprobs [n, max_top] (row r's first
  // top_logprobs entries are set).
  int32_t* ids = nullptr;
  float* logprobs = nullptr;
  int32_t* top_ids = nullptr;
  float* top_logprobs = nullptr;
};

}  // namespace keel
