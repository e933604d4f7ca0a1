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

struct SessionOptions {
  std::string dir;
  int threads = 0;           // 0: all cores
  std::string memory_limit;  // bytes or a fraction of MemTotal; empty: default_cpu_budget
};

// -m/--model, -t/--threads, --memory-limit.
void add_session_options(CLI::App& cmd, SessionOptions& o);

struct ModelSession {
  std::unique_ptr<MemoryPool> pool;
  std::unique_ptr<CpuBackend> be;
  models::LoadedModel loaded;
  std::unique_ptr<tokenizer::Tokenizer> tok;  // null when the folder has no tokenizer.json
  Model& model() { return *loaded.model; }
};

ModelSession open_session(const SessionOptions& o, bool need_tokenizer);

}  // namespace keel::cli
