// Every fixture model on the CUDA backend (keel's own device pool) against its transformers reference, the
// same checks and bars as on the CPU (tests/models/<model_type>_test.cpp): hidden states per layer, prompt
// log-probs (max |Δ| ≤ 1e-3, argmax where the reference's top-2 gap exceeds 2e-3), decode teacher-forced,
// free greedy, and chunked prefill against one-shot prefill (the same argmax wherever the reference's gap
// exceeds 2e-3, log-probs within the GPU's bar of 1e-3: the CUDA matmul's sums depend on the rows of a call,
// GEMV for ≤ 8 and cuBLAS beyond, so pieces are not bitwise as on the CPU; measured 2.5e-4 on qwen3_5, whose
// DeltaNet recurrence carries the difference, 1e-4 on qwen3_5_moe, ≤ 1e-4 on the others). Without a GPU
// every test skips, saying so. CudaMlxFolders: the MLX folders of every family (8 to 2 bits, groups 64 and
// 32, tests/models/mlx_folder_check.h) on CUDA — the packed GEMV for decode and the packed tensor-core tiles
// for prefill — against transformers on the dequantized weights and keel's dense run of them, within 1e-3.
// F16Cache*: the same prompt and decode checks over an f16 KV cache, at the CPU's f16 bars.
#include <string>

#include "../models/mlx_folder_check.h"
#include "../models/model_test_util.h"
#include "backend/cuda/cuda_device.h"
#include "require_gpu.h"

namespace keel::testing {
namespace {

struct Fixture {
  const char* name;
  int64_t chunk;            // the mixers' chunk (Mamba2 chunk_size, DeltaNet/attention tiles)
  double hidden_tolerance;  // relative L2 per layer, as on the CPU
};

class CudaModels : public ::testing::TestWithParam<Fixture> {};

TEST_P(CudaModels, HiddenStatesMatchReference) {
  REQUIRE_GPU();
  check_hidden_states(GetParam().name, GetParam().hidden_tolerance, TestBackend::cuda);
}
TEST_P(CudaModels, PromptLogprobsMatchReference) {
  REQUIRE_GPU();
  check_prompt_logprobs(GetParam().name, 1e-3, TestBackend::cuda);
}
TEST_P(CudaModels, DecodeTeacherForcedMatchesReference) {
  REQUIRE_GPU();
  check_decode_teacher_forced(GetParam().name, 1e-3, TestBackend::cuda);
}
TEST_P(CudaModels, FreeGreedyMatchesReference) {
  REQUIRE_GPU();
  check_free_greedy(GetParam().name, 1e-3, TestBackend::cuda);
}
// --cache-type f16 on CUDA (the tensor-core kernel over an f16 cache, and the decode kernel): against
// transformers' f32 cache within the f16 rounding's bar, the CPU's f16 test's (tests/models/qwen3_test.cpp).
TEST_P(CudaModels, F16CachePromptLogprobsMatchReference) {
  REQUIRE_GPU();
  check_prompt_logprobs(GetParam().name, 3e-2, TestBackend::cuda, DType::f16);
}
TEST_P(CudaModels, F16CacheDecodeTeacherForcedMatchesReference) {
  REQUIRE_GPU();
  check_decode_teacher_forced(GetParam().name, 1e-2, TestBackend::cuda, DType::f16);
}
TEST_P(CudaModels, ChunkedPrefillMatchesOneShot) {
  REQUIRE_GPU();
  check_chunked_prefill(GetParam().name, GetParam().chunk, 1e-3, TestBackend::cuda);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaModels,
                         ::testing::Values(Fixture{"llama", 64, 1e-4}, Fixture{"qwen3", 64, 1e-4},
                                           Fixture{"nemotron_h", 32, 1e-4}, Fixture{"qwen3_5", 64, 1e-4},
                                           Fixture{"qwen3_5_moe", 64, 1e-4}),
                         [](const ::testing::TestParamInfo<Fixture>& i) {
                           return std::string(i.param.name);
                         });

class CudaMlxFolders : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaMlxFolders, MatchDequantizedWeights) {
  REQUIRE_GPU();
  mlx_folders::check_family(GetParam(), TestBackend::cuda);
}

INSTANTIATE_TEST_SUITE_P(Families, CudaMlxFolders,
                         ::testing::Values("llama", "qwen3", "nemotron_h", "qwen3_5", "qwen3_5_moe"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

}  // namespace
}  // namespace keel::testing
