// The reference backend's dense ops: matmul (dense and packed), embedding, norms, activations, rope, argmax,
// and sample_rows (the host sampler of backend/sampling_host.h, as on the CPU: sampling has no float64 form).
// Each reads its f32 inputs into double, calls the float64 reference of src/ops/reference/ and rounds the
// result to f32 once.
#include "backend/reference/reference_backend.h"

#include <cmath>
#include <vector>

#include "backend/reference/reference_util.h"
#include "backend/sampling_host.h"
#include "ops/reference/activation_ref.h"
#include "ops/reference/matmul_ref.h"
#include "ops/reference/norm_ref.h"

namespace keel {

using namespace reference_util;

bool ReferenceBackend::supports(Op op, DType dtype) const {
  // Packed weights, dequantized in double; the MoE experts multiply through matmul.
  if (dtype == DType::u32) return op == Op::matmul || op == Op::embedding || op == Op::moe;
  return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16;
}

void ReferenceBackend::matmul(const MatmulArgs& a) {
  if (a.T == 0 || a.out == 0) return;
  const std::vector<double> x = read_rows(a.x, a.x_row_bytes, a.T, a.in);
  // Weight rows in blocks, so lm_head's [vocab, d] is never widened whole.
  constexpr int64_t kBlock = 256;
  for (int64_t o0 = 0; o0 < a.out; o0 += kBlock) {
    const int64_t n = std::min(kBlock, a.out - o0);
    std::vector<double> w(static_cast<size_t>(n * a.in)), bias;
    for (int64_t o = 0; o < n; ++o) {
      if (a.w_bits == 0)
        widen(a.w + (o0 + o) * a.w_row_bytes, a.w_dtype, a.in, &w[static_cast<size_t>(o * a.in)]);
      else
        dequantize_row(a.w + (o0 + o) * a.w_row_bytes, a.w_scales + (o0 + o) * a.w_scale_row_bytes,
                       a.w_biases + (o0 + o) * a.w_scale_row_bytes, a.w_scale_dtype, a.w_bits, a.w_group_size,
                       a.in, &w[static_cast<size_t>(o * a.in)]);
    }
    if (a.bias) bias.assign(a.bias + o0, a.bias + o0 + n);
    const std::vector<double> y = ref::matmul(x, w, bias, a.T, a.in, n);
    for (int64_t t = 0; t < a.T; ++t)
      for (int64_t o = 0; o < n; ++o)
        reinterpret_cast<float*>(a.y + t * a.y_row_bytes)[o0 + o] =
            static_cast<float>(y[static_cast<size_t>(t * n + o)]);
  }
}

void ReferenceBackend::embedding(const EmbeddingArgs& a) {
  std::vector<double> row(static_cast<size_t>(a.d));
  for (int64_t t = 0; t < a.T; ++t) {
    const int64_t id = a.ids[t];
    if (a.bits == 0)
      widen(a.table + id * a.row_bytes, a.dtype, a.d, row.data());
    else
      dequantize_row(a.table + id * a.row_bytes, a.scales + id * a.scale_row_bytes,
                     a.biases + id * a.scale_row_bytes, a.scale_dtype, a.bits, a.group_size, a.d, row.data());
    write_row(row, reinterpret_cast<float*>(a.out + t * a.out_row_bytes));
  }
}

namespace {
std::vector<double> weight_vector(const NormWeight& w) {
  std::vector<double> v(static_cast<size_t>(w.size));
  widen(static_cast<const char*>(w.data), w.dtype, w.size, v.data());
  return v;
}
}  // namespace

void ReferenceBackend::rms_norm(const RmsNormArgs& a) {
  const std::vector<double> w = weight_vector(a.w);
  for (int64_t r = 0; r < a.x.rows; ++r)
    write_row(ref::rms_norm(read_row(a.x.row(r), a.x.n), w, a.x.n, a.eps, a.w.one_plus), a.out.row(r));
}

void ReferenceBackend::gated_rms_norm(const GatedRmsNormArgs& a) {
  const std::vector<double> w = weight_vector(a.w);
  const int64_t C = a.x.n;
  for (int64_t r = 0; r < a.x.rows; ++r) {
    const std::vector<double> x = read_row(a.x.row(r), C), z = read_row(a.z.row(r), C);
    write_row(a.order == GateOrder::gate_then_norm ? ref::rms_norm_gate_then_norm(x, z, w, C, a.group, a.eps)
                                                   : ref::rms_norm_then_gate(x, z, w, C, a.group, a.eps),
              a.out.row(r));
  }
}

void ReferenceBackend::l2_norm(const L2NormArgs& a) {
  if (a.x.n == 0) return;
  for (int64_t r = 0; r < a.x.rows; ++r)
    write_row(ref::l2_norm(read_row(a.x.row(r), a.x.n), a.x.n, a.eps), a.out.row(r));
}

void ReferenceBackend::activation(const ActivationArgs& a) {
  for (int64_t r = 0; r < a.x.rows; ++r) {
    std::vector<double> y = ref::activation(a.f, read_row(a.x.row(r), a.x.n));
    if (a.gated)
      for (int64_t i = 0; i < a.x.n; ++i) y[static_cast<size_t>(i)] *= a.up.row(r)[i];
    write_row(y, a.out.row(r));
  }
}

void ReferenceBackend::softmax(const SoftmaxArgs& a) {
  for (int64_t r = 0; r < a.x.rows; ++r)
    write_row(ref::softmax(read_row(a.x.row(r), a.x.n), a.x.n), a.out.row(r));
}

void ReferenceBackend::binary(const BinaryArgs& a) {
  for (int64_t r = 0; r < a.out.rows; ++r) {
    const float *x = a.a.row(r), *y = a.b.row(r);
    float* o = a.out.row(r);
    for (int64_t i = 0; i < a.out.n; ++i)
      o[i] = static_cast<float>(a.op == BinaryOp::add ? double(x[i]) + double(y[i])
                                                      : double(x[i]) * double(y[i]));
  }
}

// The angle is transformers' float32 one, f32(inv_freq[i] · f32(position)) (ops/reference/rope_ref.h); its
// cos and sin in double.
void ReferenceBackend::rope_cos_sin(const RopeCosSinArgs& a) {
  const int64_t half = a.R / 2;
  for (int64_t t = 0; t < a.T; ++t) {
    float* row = reinterpret_cast<float*>(a.table + t * a.table_row_bytes);
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<float>(a.inv_freq[i] * static_cast<float>(a.positions[t]));
      row[i] = static_cast<float>(std::cos(angle));
      row[half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

// q·cos + rotate_half(q)·sin in double on the first R elements of each head (ref::rope's rotation).
void ReferenceBackend::rope(const RopeArgs& a) {
  const int64_t half = a.R / 2;
  std::vector<double> y(static_cast<size_t>(a.D));
  for (int64_t t = 0; t < a.T; ++t) {
    const float* cs = reinterpret_cast<const float*>(a.table + t * a.table_row_bytes);
    for (int64_t h = 0; h < a.H; ++h) {
      const float* x = reinterpret_cast<const float*>(a.x + t * a.x_st + h * a.x_sh);
      for (int64_t i = 0; i < a.D; ++i) y[static_cast<size_t>(i)] = x[i];
      for (int64_t i = 0; i < half; ++i) {
        const double c = cs[i], s = cs[half + i], x0 = x[i], x1 = x[i + half];
        y[static_cast<size_t>(i)] = x0 * c - x1 * s;
        y[static_cast<size_t>(i + half)] = x1 * c + x0 * s;
      }
      write_row(y, reinterpret_cast<float*>(a.out + t * a.o_st + h * a.o_sh));
    }
  }
}

void ReferenceBackend::argmax(const ArgmaxArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* l = reinterpret_cast<const float*>(a.logits + r * a.row_bytes);
    int64_t best = 0;
    for (int64_t i = 1; i < a.V; ++i)
      if (l[i] > l[best]) best = i;
    a.out[r] = static_cast<int32_t>(best);
  }
}

int64_t ReferenceBackend::sample_rows_workspace(const SampleRowsArgs& a) const {
  return sampling_host::sample_rows_workspace(a);
}

void ReferenceBackend::sample_rows(const SampleRowsArgs& a) {
  if (a.n == 0) return;
  Tensor ws =
      Tensor::empty(pool(), DType::u8, {sampling_host::sample_rows_workspace(a)}, "sampling workspace");
  sampling_host::sample_rows(a, ws.data());
}

}  // namespace keel
