#include "cli/model_session.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "core/sysmem.h"
#include "engine/scheduler.h"

namespace keel::cli {

void add_session_options(CLI::App& cmd, SessionOptions& o) {
  cmd.add_option("-m,--model", o.dir,
                 "Hugging Face model folder (config.json + safetensors + tokenizer.json)")
      ->required();
  cmd.add_option("-t,--threads", o.threads, "CPU threads (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option(
      "--memory-limit", o.memory_limit,
      "Memory budget: bytes (\"12GiB\") or a fraction of RAM (\"0.5\"); default: what is free now, less a "
      "margin");
}

ModelSession open_session(const SessionOptions& o, bool need_tokenizer) {
  ModelSession s;
  MemoryFacts facts = read_memory_facts();
  int64_t limit = o.memory_limit.empty() ? default_cpu_budget(facts)
                                         : parse_memory_limit(o.memory_limit, facts.mem_total);
  s.pool = std::make_unique<MemoryPool>("cpu", limit);
  s.be = std::make_unique<CpuBackend>(*s.pool, o.threads);
  s.loaded = models::load_model(o.dir, *s.be);
  check_startup_memory(s.model(), *s.pool);
  if (std::filesystem::exists(std::filesystem::path(o.dir) / "tokenizer.json")) {
    s.tok = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::load(o.dir));
  } else if (need_tokenizer) {
    throw_error(ErrorCode::invalid_file, "{}: no tokenizer.json (pass token ids instead)", o.dir);
  }
  fmt::print(stderr, "keel: {}: {} ({} layers), weights {}, memory limit {}, {}\n", o.dir,
             s.model().model_type(), s.loaded.config.num_layers(),
             format_bytes(s.loaded.weights->total_bytes()), format_bytes(limit), s.be->name());
  return s;
}

}  // namespace keel::cli
