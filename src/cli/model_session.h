// What `keel run`, `keel perplexity` (and later bench/serve) share: the CPU pool under the memory limit, the
// backend, the loaded model (its weights counted in the pool) and its tokenizer.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "core/pool.h"
#include "models/loader.h"
#include "tokenizer/tokenizer.h"

namespace keel::cli {

// --threads above this is refused (a typo, not a machine): each thread is a kernel worker.
inline constexpr int kMaxThreads = 1024;

struct SessionOptions {
  std::string dir;              // empty: the bundled model (default_model_dir)
  int threads = 0;              // 0: all cores
  bool check_tensors = false;   // --check-tensors: scan the weights for NaN/Inf after loading
  std::string memory_limit;     // bytes or a fraction of MemTotal; empty: default_cpu_budget
  int64_t held_back_bytes = 0;  // taken off the limit before the pool gets it (serve's request budget)
};

// The bytes --memory-limit allows in all (`flag` as given; empty: default_cpu_budget of this machine).
int64_t memory_limit_bytes(const std::string& flag);

// -m/--model, -t/--threads, --memory-limit.
void add_session_options(CLI::App& cmd, SessionOptions& o);

// The bundled default model: ./models/keel-brown-nemotron-h-8m, else next to the keel binary's folder
// (build/keel → models/). Throws Error(invalid_argument) saying to pass --model when it is not there.
std::string default_model_dir();
// Throws Error(invalid_argument) naming --model when `dir` has no config.json.
void check_model_dir(const std::string& dir);

// Throws Error(invalid_file) naming the folder, the tensor and the element when a float weight (or a
// quantized block's scale) is NaN or infinite.
void check_tensors_finite(const WeightStore& weights);

struct ModelSession {
  std::string dir;  // the model folder used: --model, or the bundled model
  std::unique_ptr<MemoryPool> pool;
  std::unique_ptr<CpuBackend> be;
  models::LoadedModel loaded;
  std::unique_ptr<tokenizer::Tokenizer> tok;  // null when the folder has no tokenizer.json
  Model& model() { return *loaded.model; }
};

ModelSession open_session(const SessionOptions& o, bool need_tokenizer);

}  // namespace keel::cli
