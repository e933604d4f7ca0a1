// The CPU backend: the host pool, one thread pool, and the instruction set the kernels dispatch on at run
// time.
#pragma once
#include <memory>

#include "backend/backend.h"
#include "backend/thread_pool.h"

namespace keel {

enum class CpuIsa { generic, avx2, avx512, avx512_bf16 };
// The best instruction set this CPU has (cached). KEEL_CPU_ISA=generic|avx2|avx512|avx512_bf16 caps it
// (tests).
CpuIsa cpu_isa();
// Whether this CPU has AVX512-VBMI (vpmultishiftqb: the packed decode's lookups) and cpu_isa() is AVX-512.
bool cpu_vbmi();
const char* cpu_isa_name(CpuIsa isa);

class CpuBackend final : public Backend {
 public:
  // `pool` is the host pool (owned by the caller, outlives the backend). n_threads <= 0: all cores.
  // `isa` picks the kernels (tests run each path); it is capped at cpu_isa().
  CpuBackend(MemoryPool& pool, int n_threads, CpuIsa isa = cpu_isa());
  DeviceKind kind() const override { return DeviceKind::cpu; }
  std::string name() const override;
  bool supports(Op op, DType weight_dtype) const override;
  // Memory (host memory: synchronous memcpy/memset).
  void copy(const Tensor& src, Tensor& dst) override;
  void upload(const void* host, int64_t bytes, Tensor& dst) override;
  void download(const Tensor& src, void* host, int64_t bytes) override;
  void fill_zero(Tensor& dst) override;
  MemoryPool& pool() override { return pool_; }
  bool host_addressable() const override { return true; }
  ThreadPool* threads() override { return &threads_; }
  CpuIsa isa() const { return isa_; }

  // Kernels: one family per file (backend/cpu/<family>.cpp), each splitting its work with threads_.
  void matmul(const MatmulArgs& a) override;
  int64_t matmul_workspace(const MatmulArgs& a) const override;
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
  int64_t causal_conv1d_workspace(const Conv1dArgs& a) const override;
  void ssd_scan(const SsdScanArgs& a) override;
  int64_t ssd_scan_workspace(const SsdScanArgs& a) const override;
  void gated_deltanet(const GatedDeltaNetArgs& a) override;
  int64_t gated_deltanet_workspace(const GatedDeltaNetArgs& a) const override;
  void convert(const ConvertArgs& a) override;  // attention.cpp (the KV cache's rows)
  void attention(const AttentionArgs& a) override;
  int64_t attention_workspace(const AttentionArgs& a) const override;
  void moe_route(const MoeRouteArgs& a) override;
  int64_t moe_route_workspace(const MoeRouteArgs& a) const override;
  void moe_group(const MoeGroupArgs& a) override;
  void grouped_matmul(const GroupedMatmulArgs& a) override;
  int64_t grouped_matmul_workspace(const GroupedMatmulArgs& a) const override;
  void moe_combine(const MoeCombineArgs& a) override;
  void scale_rows(const ScaleRowsArgs& a) override;
  void argmax(const ArgmaxArgs& a) override;
  void sample_rows(const SampleRowsArgs& a) override;
  int64_t sample_rows_workspace(const SampleRowsArgs& a) const override;

 private:
  int workers() const { return threads_.size(); }
  MemoryPool& pool_;
  CpuIsa isa_;
  ThreadPool threads_;
};

}  // namespace keel
