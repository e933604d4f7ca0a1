// ops::embedding against a plain lookup of the same (widened) table values; widening is exact, so atol = 0.
#include "ops/embedding.h"

#include "core/error.h"
#include "op_harness.h"

using namespace keel;
using namespace keel::testing;

namespace {
std::vector<double> lookup(const std::vector<double>& table, const std::vector<double>& ids, int64_t d) {
  std::vector<double> out;
  for (double id : ids)
    for (int64_t j = 0; j < d; ++j) out.push_back(table[static_cast<size_t>(id) * d + j]);
  return out;
}
}  // namespace

TEST(Embedding, RowsOfEveryDtypeExactly) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (DType dt : {DType::f32, DType::bf16, DType::f16})
      for (int64_t T : {1, 9}) {
        Tensor table = random_tensor(*ob, rng, dt, {50, 33}, 3.0);
        std::vector<double> id_values = {0, 49};
        while (static_cast<int64_t>(id_values.size()) < T)
          id_values.push_back(static_cast<double>(rng.integer(0, 49)));
        id_values.resize(static_cast<size_t>(T));
        Tensor ids = tensor_from(*ob, DType::i32, {T}, id_values);
        Tensor out = nan_tensor(*ob, {T, 33});
        int64_t peak = pool_peak_during(ob->pool(), [&] { ops::embedding(ob->be(), table, ids, out); });
        EXPECT_TRUE(all_close(out, lookup(values(table), id_values, 33), 0, 0)) << dtype_name(dt);
        EXPECT_TRUE(workspace_ok(peak, ops::embedding_workspace_bytes()));
      }
  }
}

TEST(Embedding, IdOutsideVocabularyIsAClearError) {
  OpBackend& ob = *op_backends().front();
  Tensor table = Tensor::empty(ob.pool(), DType::bf16, {10, 4}, "table");
  Tensor out = nan_tensor(ob, {3, 4});
  for (double bad : {10.0, -1.0}) {
    Tensor ids = tensor_from(ob, DType::i32, {3}, {1, bad, 2});
    try {
      ops::embedding(ob.be(), table, ids, out);
      FAIL() << "id " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("at position 1 is outside the vocabulary of 10"),
                std::string::npos)
          << e.what();
    }
    EXPECT_TRUE(std::isnan(element(out, 0))) << "wrote before checking every id";
  }
}

// Table rows 2^32 + 64 bytes apart (a sparse address range; only the rows used are committed).
TEST(Embedding, RowOffsetsPastTwoToThe32) {
  KEEL_TEST_RNG(rng);
  const int64_t stride = (int64_t{1} << 32) + 64;
  SparseArena arena(10 * stride + 4096);
  ASSERT_TRUE(arena.ok());
  for (int64_t r : {0, 5, 9}) arena.commit(r * stride, 64);
  Tensor table = Tensor::borrow(arena.base(), DType::bf16, {1}).strided_view({10, 20}, {stride, 2});
  for (int64_t r : {0, 5, 9})
    for (int64_t j = 0; j < 20; ++j) set_element(table, r * 20 + j, rng.uniform());
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    Tensor ids = tensor_from(*ob, DType::i32, {3}, {9, 0, 5});
    if (ob->is_cuda())
      continue;  // the sparse range is host memory (the CUDA kernels' offsets are not run here)
    Tensor out = nan_tensor(*ob, {3, 20});
    ops::embedding(ob->be(), table, ids, out);
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t j = 0; j < 20; ++j)
        ASSERT_EQ(element(out, t * 20 + j), element(table, static_cast<int64_t>(element(ids, t)) * 20 + j));
  }
}

// A packed table (MLX affine, built bit by bit by the harness): rows dequantized as scale·q + bias, rounded
// to f32 once, on a backend with a packed kernel; Error(unsupported) naming the backend elsewhere.
TEST(Embedding, PackedTableRowsOrAClearRefusal) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    int n = 0;
    for (int32_t bits : {2, 3, 4, 5, 6, 8})
      for (int32_t group : {32, 64, 128}) {
        SCOPED_TRACE(fmt::format("bits={} group={}", bits, group));
        const DType sd = n++ % 2 ? DType::f16 : DType::bf16;
        PackedCase c = make_packed(*ob, rng, 20, 128, bits, group, sd);
        const std::vector<double> id_values = {19, 0, 7, 7};
        Tensor ids = tensor_from(*ob, DType::i32, {4}, id_values);
        Tensor out = nan_tensor(*ob, {4, 128});
        if (!ob->be().supports(Op::embedding, DType::u32)) {
          try {
            ops::embedding(ob->be(), c.w, ids, out);
            ADD_FAILURE() << "no error";
          } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::unsupported);
            EXPECT_NE(std::string(e.what()).find(ob->name), std::string::npos) << e.what();
          }
          continue;
        }
        ops::embedding(ob->be(), c.w, ids, out);
        std::vector<double> want = lookup(c.dense, id_values, 128);
        for (double& v : want) v = static_cast<float>(v);
        EXPECT_TRUE(all_close(out, want, 0, 0)) << bits << " bits";
      }
  }
}
