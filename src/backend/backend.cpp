#include "backend/backend.h"

#include "core/error.h"

namespace keel {

std::string_view op_name(Op op) {
  switch (op) {
    case Op::matmul:
      return "matmul";
    case Op::embedding:
      return "embedding";
    case Op::rms_norm:
      return "rms_norm";
    case Op::l2_norm:
      return "l2_norm";
    case Op::rope:
      return "rope";
    case Op::softmax:
      return "softmax";
    case Op::activation:
      return "activation";
    case Op::conv1d:
      return "causal_conv1d";
    case Op::ssd_scan:
      return "ssd_scan";
    case Op::gated_deltanet:
      return "gated_deltanet";
    case Op::attention:
      return "attention";
    case Op::moe:
      return "moe";
    case Op::sampling:
      return "sampling";
    case Op::convert:
      return "convert";
  }
  return "?";
}

void Backend::no_kernel(std::string_view op) const {
  throw_error(ErrorCode::unsupported, "{}: no kernel for backend {}", op, name());
}

void Backend::matmul(const MatmulArgs&) {
  no_kernel("matmul");
}
int64_t Backend::matmul_workspace(const MatmulArgs&) const {
  no_kernel("matmul");
}
void Backend::embedding(const EmbeddingArgs&) {
  no_kernel("embedding");
}
void Backend::rms_norm(const RmsNormArgs&) {
  no_kernel("rms_norm");
}
void Backend::gated_rms_norm(const GatedRmsNormArgs&) {
  no_kernel("gated_rms_norm");
}
void Backend::l2_norm(const L2NormArgs&) {
  no_kernel("l2_norm");
}
void Backend::activation(const ActivationArgs&) {
  no_kernel("activation");
}
void Backend::softmax(const SoftmaxArgs&) {
  no_kernel("softmax");
}
void Backend::binary(const BinaryArgs&) {
  no_kernel("add/mul");
}
void Backend::rope_cos_sin(const RopeCosSinArgs&) {
  no_kernel("rope_cos_sin");
}
void Backend::rope(const RopeArgs&) {
  no_kernel("rope");
}
void Backend::causal_conv1d(const Conv1dArgs&) {
  no_kernel("causal_conv1d");
}
int64_t Backend::causal_conv1d_workspace(const Conv1dArgs&) const {
  no_kernel("causal_conv1d");
}
void Backend::ssd_scan(const SsdScanArgs&) {
  no_kernel("ssd_scan");
}
int64_t Backend::ssd_scan_workspace(const SsdScanArgs&) const {
  no_kernel("ssd_scan");
}
void Backend::gated_deltanet(const GatedDeltaNetArgs&) {
  no_kernel("gated_deltanet");
}
int64_t Backend::gated_deltanet_workspace(const GatedDeltaNetArgs&) const {
  no_kernel("gated_deltanet");
}
void Backend::convert(const ConvertArgs&) {
  no_kernel("convert");
}
void Backend::attention(const AttentionArgs&) {
  no_kernel("attention");
}
int64_t Backend::attention_workspace(const AttentionArgs&) const {
  no_kernel("attention");
}
void Backend::moe_route(const MoeRouteArgs&) {
  no_kernel("moe_route");
}
int64_t Backend::moe_route_workspace(const MoeRouteArgs&) const {
  no_kernel("moe_route");
}
void Backend::moe_group(const MoeGroupArgs&) {
  no_kernel("moe_group");
}
void Backend::grouped_matmul(const GroupedMatmulArgs&) {
  no_kernel("grouped_matmul");
}
int64_t Backend::grouped_matmul_workspace(const GroupedMatmulArgs&) const {
  no_kernel("grouped_matmul");
}
void Backend::moe_combine(const MoeCombineArgs&) {
  no_kernel("moe_combine");
}
void Backend::scale_rows(const ScaleRowsArgs&) {
  no_kernel("scale_rows");
}
void Backend::argmax(const ArgmaxArgs&) {
  no_kernel("argmax");
}
void Backend::sample_rows(const SampleRowsArgs&) {
  no_kernel("sample_rows");
}
int64_t Backend::sample_rows_workspace(const SampleRowsArgs&) const {
  no_kernel("sample_rows");
}

}  // namespace keel
