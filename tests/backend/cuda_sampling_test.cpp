// The CUDA backend's sample_rows against the CPU's (itself checked against ops::sample, whose distribution
// tests/ops/sampling_test.cpp checks against an independent computation) on the same rows: vocabularies of
// 248,320 (Qwen3.5) and 131,072, batches of 1 and 64 rows, random parameters, penalties, logit_bias bans and
// ties. Greedy ids are identical; sampled ids are identical wherever the CPU picks the same token at the
// row's uniform ± 1e-6 (the uniform is not within 1e-6 of a cumulative boundary: the two sum the same terms
// in different orders); logprobs within 1e-5; the alternatives' ids identical. The CUDA pool's peak during
// the call is ops::sample_rows_bytes exactly. Without a GPU every test skips, saying so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../ops/sampling_rows_cases.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_device.h"
#include "ops/sampling.h"
#include "require_gpu.h"

namespace keel::testing {
namespace {

struct Devices {
  static constexpr int64_t kBytes = int64_t{8} << 30;
  cuda::ArenaAllocator arena{0, kBytes};
  MemoryPool pool{"cuda:0", kBytes, &arena};
  CudaBackend cuda{pool, 0};
  MemoryPool host_pool{"cpu", int64_t{8} << 30};
  CpuBackend cpu{host_pool, 1};
};

Devices& devices() {
  static std::unique_ptr<Devices> d = std::make_unique<Devices>();
  return *d;
}

::testing::AssertionResult logprob_near(double got, double want, double tol) {
  if (got == want || std::fabs(got - want) <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "logprob " << got << ", want " << want << " (tolerance " << tol << ")";
}

std::vector<ops::SampledToken> cpu_rows(const RowsCase& c, std::vector<ops::RowSampling> rows) {
  Devices& d = devices();
  Tensor logits = Tensor::borrow(const_cast<float*>(c.logits.data()), DType::f32, {c.L, c.V});
  std::vector<ops::SampledToken> out(rows.size());
  ops::sample_rows(d.cpu, logits, rows, out);
  return out;
}

struct Shape {
  int64_t V, n;
  bool ties;
};

class CudaSampleRows : public ::testing::TestWithParam<Shape> {};

TEST_P(CudaSampleRows, MatchesTheCpu) {
  REQUIRE_GPU();
  Devices& d = devices();
  const Shape s = GetParam();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 g(seed);
  int64_t compared = 0, near_boundary = 0;
  for (int trial = 0; trial < 3; ++trial) {
    auto c = random_rows_case(g, s.n, s.V, s.n, s.ties);
    Tensor logits = Tensor::empty(d.pool, DType::f32, {c->L, c->V}, "logits");
    d.cuda.upload(c->logits.data(), c->L * c->V * 4, logits);
    std::vector<ops::SampledToken> got(c->rows.size());
    const int64_t before = d.pool.in_use();
    d.pool.mark_peak();
    ops::sample_rows(d.cuda, logits, c->rows, got);
    d.cuda.synchronize();
    EXPECT_EQ(d.pool.peak() - before, ops::sample_rows_bytes(d.cuda, c->V, c->rows));
    EXPECT_EQ(d.pool.in_use(), before);

    const std::vector<ops::SampledToken> want = cpu_rows(*c, c->rows);
    std::vector<ops::RowSampling> lo = c->rows, hi = c->rows;
    for (auto& r : lo) r.uniform = std::max(0.0, r.uniform - 1e-6);
    for (auto& r : hi) r.uniform = std::min(std::nextafter(1.0, 0.0), r.uniform + 1e-6);
    const std::vector<ops::SampledToken> want_lo = cpu_rows(*c, lo), want_hi = cpu_rows(*c, hi);
    for (size_t i = 0; i < c->rows.size(); ++i) {
      const ops::RowSampling& r = c->rows[i];
      std::ostringstream what;
      what << "trial " << trial << " row " << i << " temperature " << r.params.temperature << " top_k "
           << r.params.top_k << " top_p " << r.params.top_p << " min_p " << r.params.min_p;
      SCOPED_TRACE(what.str());
      if (r.params.temperature > 0 && (want_lo[i].id != want[i].id || want_hi[i].id != want[i].id)) {
        ++near_boundary;
      } else {
        EXPECT_EQ(got[i].id, want[i].id);
        ++compared;
      }
      const float* raw = c->logits.data() + r.row * c->V;
      // The CUDA logprob of its own id, against the CPU's log-softmax of the raw row (the CPU's own logprob
      // where the ids agree).
      if (got[i].id == want[i].id) {
        EXPECT_TRUE(logprob_near(got[i].logprob, want[i].logprob, 1e-5));
      }
      const double lse_cpu = double(raw[want[i].id]) - want[i].logprob;
      if (std::isfinite(lse_cpu)) {
        EXPECT_TRUE(logprob_near(got[i].logprob, double(raw[got[i].id]) - lse_cpu, 1e-5));
      }
      ASSERT_EQ(got[i].top.size(), want[i].top.size());
      for (size_t k = 0; k < got[i].top.size(); ++k) {
        EXPECT_EQ(got[i].top[k].first, want[i].top[k].first) << "alternative " << k;
        EXPECT_TRUE(logprob_near(got[i].top[k].second, want[i].top[k].second, 1e-5)) << "alternative " << k;
      }
    }
  }
  EXPECT_GT(compared, 0);
  EXPECT_LE(near_boundary, compared / 4 + 1) << "most uniforms should be clear of a boundary";
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaSampleRows,
                         ::testing::Values(Shape{248320, 1, false}, Shape{248320, 64, false},
                                           Shape{248320, 64, true}, Shape{131072, 1, true},
                                           Shape{131072, 64, false}, Shape{131072, 64, true}),
                         [](const ::testing::TestParamInfo<Shape>& i) {
                           std::ostringstream name;
                           name << "V" << i.param.V << "_rows" << i.param.n << (i.param.ties ? "_ties" : "");
                           return name.str();
                         });

}  // namespace
}  // namespace keel::testing
