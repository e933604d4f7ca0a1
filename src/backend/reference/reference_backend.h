// The reference backend: the float64 references of src/ops/reference/ behind the same dispatch as every
// other backend (f32 in and out, double inside; plain loops, one thread, slow). It is the second
// implementation every test build runs: the op harness and the model fixtures run on it beside the CPU, so
// an op whose seam leaks CPU assumptions fails here first, and a new backend (CUDA) has a second opinion to
// agree with. It reads host memory and keeps its double scratch in std::vector on the host heap, outside
// the pool: every *_workspace answers 0 (the ops' own pool allocations are still counted by the ops).
// It supports every op, dense f32/bf16/f16 weights and packed (MLX affine) weights for matmul and embedding
// (dequantized in double), the plain reference of what a packed kernel must compute.
#pragma once
#include <string>

#include "backend/backend.h"
#include "backend/host_memory.h"

namespace keel {

class ReferenceBackend final : public Backend {
 public:
  explicit ReferenceBackend(MemoryPool& pool) : pool_(pool) {}
  DeviceKind kind() const override { return DeviceKind::cpu; }  // host memory
  std::string name() const override { return "reference (float64)"; }
  bool supports(Op op, DType dtype) const override;
  MemoryPool& pool() override { return pool_; }
  bool host_addressable() const override { return true; }
  // Host memory, as the CPU backend's.
  void copy(const Tensor& src, Tensor& dst) override { host_memory::copy(src, dst); }
  void upload(const void* host, int64_t bytes, Tensor& dst) override {
    host_memory::upload(host, bytes, dst);
  }
  void download(const Tensor& src, void* host, int64_t bytes) override {
    host_memory::download(src, host, bytes);
  }
  void fill_zero(Tensor& dst) override { host_memory::fill_zero(dst); }

  void matmul(const MatmulArgs& a) override;
  int64_t matmul_workspace(const MatmulArgs&) const override { return 0; }
  void embedding(const EmbeddingArgs& a) override;
  void rms_norm(const RmsNormArgs& a) override;
  void gated_rms_norm(const GatedRmsNormArgs& a) override;
  void l2_norm(const L2NormArgs& a) override;
  void activation(const ActivationArgs& a) override;
  void softmax(const SoftmaxArgs& a) override;
  void binary(const BinaryArgs& a) override;
  void rope_cos_sin(const RopeCosSinArgs& a) override;
  void rope(const RopeArgs& a) override;
  void causal_conv1d(const Conv1dArgs& a) override;
  int64_t causal_conv1d_workspace(const Conv1dArgs&) const override { return 0; }
  void ssd_scan(const SsdScanArgs& a) override;
  int64_t ssd_scan_workspace(const SsdScanArgs&) const override { return 0; }
  void gated_deltanet(const GatedDeltaNetArgs& a) override;
  int64_t gated_deltanet_workspace(const GatedDeltaNetArgs&) const override { return 0; }
  void convert(const ConvertArgs& a) override;
  void attention(const AttentionArgs& a) override;
  int64_t attention_workspace(const AttentionArgs&) const override { return 0; }
  void moe_route(const MoeRouteArgs& a) override;
  int64_t moe_route_workspace(const MoeRouteArgs&) const override { return 0; }
  void moe_group(const MoeGroupArgs& a) override;
  void grouped_matmul(const GroupedMatmulArgs& a) override;
  int64_t grouped_matmul_workspace(const GroupedMatmulArgs&) const override { return 0; }
  void moe_combine(const MoeCombineArgs& a) override;
  void scale_rows(const ScaleRowsArgs& a) override;
  void argmax(const ArgmaxArgs& a) override;
  void sample_rows(const SampleRowsArgs& a) override;
  int64_t sample_rows_workspace(const SampleRowsArgs& a) const override;

 private:
  MemoryPool& pool_;
};

}  // namespace keel
