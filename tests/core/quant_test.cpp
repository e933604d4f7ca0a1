// MLX affine quantization (src/core/quant.h). Oracles: a bit-by-bit reading of the little-endian bit stream
// written here, and tools/mlx_quantize.py — MLX's CPU quantizer transcribed from its source — run as a child
// process on the same groups, whose packed words and stored scales/biases must equal keel's bit for bit.
#include "core/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace keel {
namespace {

namespace fs = std::filesystem;

uint64_t fresh_seed() {
  const uint64_t seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

constexpr int kAllBits[] = {2, 3, 4, 5, 6, 8};
constexpr int kAllGroups[] = {32, 64, 128};

// Bit i·bits + j of the stream is bit (i·bits + j) % 32 of word (i·bits + j) / 32: read one bit at a time.
uint32_t read_bits_one_by_one(const std::vector<uint32_t>& words, int64_t i, int bits) {
  uint32_t v = 0;
  for (int j = 0; j < bits; ++j) {
    const int64_t bit = i * bits + j;
    v |= ((words[bit / 32] >> (bit % 32)) & 1u) << j;
  }
  return v;
}

TEST(Quant, PackUnpackRoundTripAtEveryWidthAndAwkwardLengths) {
  std::mt19937_64 rng(fresh_seed());
  for (int bits : kAllBits) {
    for (int64_t k : {32, 96, 160, 224, 4128}) {
      std::vector<uint8_t> q(k), back(k);
      for (auto& v : q) v = static_cast<uint8_t>(rng() & ((1u << bits) - 1u));
      std::vector<uint32_t> words(quant::packed_words(k, bits), 0xdeadbeefu);
      quant::pack_row(q.data(), k, bits, words.data());
      for (int64_t i = 0; i < k; ++i) {
        ASSERT_EQ(read_bits_one_by_one(words, i, bits), q[i]) << "bits " << bits << " k " << k << " i " << i;
        ASSERT_EQ(quant::get_q(words.data(), i, bits), q[i]);
      }
      quant::unpack_row(words.data(), k, bits, back.data());
      ASSERT_EQ(back, q) << "bits " << bits << " k " << k;
      ASSERT_EQ(static_cast<int64_t>(words.size()) * 32, k * bits);
    }
  }
}

TEST(Quant, ThreeBitValuesStraddleWordsAsMlxLaysThemOut) {
  // MLX's 3-bit pack: 8 values in 3 bytes, value 2 = (byte0 >> 6) | (byte1 & 1) << 2 (extract_bits).
  std::vector<uint8_t> q(32);
  for (int i = 0; i < 32; ++i) q[i] = static_cast<uint8_t>((i * 5 + 3) & 7);
  std::vector<uint32_t> words(3);
  quant::pack_row(q.data(), 32, 3, words.data());
  const auto* bytes = reinterpret_cast<const uint8_t*>(words.data());
  for (int pack = 0; pack < 4; ++pack) {
    const uint8_t* w = bytes + 3 * pack;
    const uint8_t* v = q.data() + 8 * pack;
    EXPECT_EQ(w[0] & 0x7, v[0]);
    EXPECT_EQ((w[0] & 0x38) >> 3, v[1]);
    EXPECT_EQ(((w[0] & 0xc0) >> 6) + ((w[1] & 0x1) << 2), v[2]);
    EXPECT_EQ((w[1] & 0xe) >> 1, v[3]);
    EXPECT_EQ((w[1] & 0x70) >> 4, v[4]);
    EXPECT_EQ(((w[1] & 0x80) >> 7) + ((w[2] & 0x3) << 1), v[5]);
    EXPECT_EQ((w[2] & 0x1c) >> 2, v[6]);
    EXPECT_EQ((w[2] & 0xe0) >> 5, v[7]);
  }
}

enum class Store { bf16, f16, f32 };
const char* store_name(Store s) {
  return s == Store::bf16 ? "bf16" : s == Store::f16 ? "f16" : "f32";
}
float round_to(Store s, float x) {
  if (s == Store::bf16) return bf16_to_f32(f32_to_bf16(x));
  if (s == Store::f16) return f16_to_f32(f32_to_f16(x));
  return x;
}
uint32_t stored_bits(Store s, float x) {
  if (s == Store::bf16) return f32_to_bf16(x);
  if (s == Store::f16) return f32_to_f16(x);
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

// Groups of every kind the quantizer must get right: random, all equal, all zero, one outlier, ±max of the
// storage dtype, a negative-dominant group, tiny values (the eps floor), values on the grid.
std::vector<float> adversarial_groups(int g, Store s, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> out;
  auto group = [&](auto fn) {
    for (int j = 0; j < g; ++j) out.push_back(round_to(s, fn(j)));
  };
  for (int r = 0; r < 24; ++r) group([&](int) { return normal(rng); });
  group([&](int) { return 0.375f; });
  group([&](int) { return -1.5f; });
  group([&](int) { return 0.0f; });
  group([&](int j) { return j == g / 3 ? 7.0f : normal(rng); });
  group([&](int j) { return j == 5 ? -9.0f : normal(rng); });
  const float big = s == Store::f16 ? 65504.0f : s == Store::bf16 ? 3.3895314e38f : 3.4028235e38f;
  group([&](int j) { return j % 2 ? big : -big; });
  group([&](int j) { return j == 0 ? big : 0.0f; });
  group([&](int j) { return -std::abs(normal(rng)) * 3.0f + (j == 1 ? 0.5f : 0.0f); });
  group([&](int j) { return 1e-9f * static_cast<float>(j % 7); });
  group([&](int j) { return 0.25f * static_cast<float>(j % 16) - 1.0f; });
  return out;
}

TEST(Quant, QuantizeMatchesMlxCpuQuantizerBitForBit) {
  std::mt19937_64 rng(fresh_seed());
  const fs::path dir = fs::temp_directory_path() / ("keel_quant_" + std::to_string(rng()));
  fs::create_directories(dir);
  struct Job {
    Store store;
    int group, bits;
    std::vector<float> w;
    fs::path out;
  };
  std::vector<Job> jobs;
  {
    std::ofstream list(dir / "jobs.txt");
    for (Store s : {Store::bf16, Store::f16, Store::f32}) {
      for (int g : kAllGroups) {
        const std::vector<float> w = adversarial_groups(g, s, rng);
        const fs::path in = dir / (std::string(store_name(s)) + "_" + std::to_string(g) + ".bin");
        std::ofstream f(in, std::ios::binary);
        f.write(reinterpret_cast<const char*>(w.data()), static_cast<std::streamsize>(w.size() * 4));
        for (int bits : kAllBits) {
          jobs.push_back({s, g, bits, w, in.string() + "." + std::to_string(bits) + ".out"});
          list << in.string() << " " << jobs.back().out.string() << " " << bits << " " << g << " "
               << store_name(s) << "\n";
        }
      }
    }
  }
  const std::string cmd = std::string("python3 ") + KEEL_SOURCE_DIR + "/tools/mlx_quantize.py --jobs " +
                          (dir / "jobs.txt").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (const Job& j : jobs) {
    const std::string what = std::string(store_name(j.store)) + " group " + std::to_string(j.group) +
                             " bits " + std::to_string(j.bits);
    const int64_t k = static_cast<int64_t>(j.w.size());
    const int64_t n_words = quant::packed_words(k, j.bits), n_groups = k / j.group;
    std::ifstream f(j.out, std::ios::binary);
    std::vector<uint32_t> want(n_words + 2 * n_groups);
    f.read(reinterpret_cast<char*>(want.data()), static_cast<std::streamsize>(want.size() * 4));
    ASSERT_EQ(f.gcount(), static_cast<std::streamsize>(want.size() * 4)) << what;

    std::vector<uint32_t> words(n_words);
    std::vector<float> scales(n_groups), biases(n_groups);
    quant::quantize_row(j.w.data(), k, j.group, j.bits, words.data(), scales.data(), biases.data());
    for (int64_t i = 0; i < n_words; ++i)
      ASSERT_EQ(words[i], want[i]) << what << ": word " << i << " (group " << i * 32 / j.bits / j.group
                                   << ")";
    for (int64_t i = 0; i < n_groups; ++i) {
      ASSERT_EQ(stored_bits(j.store, scales[i]), want[n_words + i]) << what << ": scale of group " << i;
      ASSERT_EQ(stored_bits(j.store, biases[i]), want[n_words + n_groups + i])
          << what << ": bias of group " << i;
    }
  }
  fs::remove_all(dir);
  EXPECT_EQ(jobs.size(), 3u * 3u * 6u);
}

TEST(Quant, DequantizedRandomGroupsStayWithinHalfAStepOfTheWeights) {
  // w ≈ s·q + b: within half a quantization step |s| / 2 where q is not clamped; the far edge can fall up to
  // one step beyond the grid (|s| = |edge / rint(edge / s0)| may be smaller than s0 = (max − min) / n_bins),
  // so 1.5 steps at most, plus fp32 rounding.
  std::mt19937_64 rng(fresh_seed());
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int bits : kAllBits) {
    for (int g : kAllGroups) {
      const int64_t k = 4 * g;
      std::vector<float> w(k), back(k), scales(k / g), biases(k / g);
      for (auto& v : w) v = normal(rng);
      std::vector<uint32_t> words(quant::packed_words(k, bits));
      quant::quantize_row(w.data(), k, g, bits, words.data(), scales.data(), biases.data());
      quant::dequantize_row(words.data(), scales.data(), biases.data(), k, g, bits, back.data());
      for (int64_t i = 0; i < k; ++i) {
        const float step = std::abs(scales[i / g]);
        ASSERT_LE(std::abs(back[i] - w[i]), 1.5f * step * (1 + 1e-5f) + 1e-6f)
            << "bits " << bits << " group " << g << " i " << i;
      }
    }
  }
}

}  // namespace
}  // namespace keel
