// fuzz-libs: keel_core keel_load

// libFuzzer target: generation_config.json text → GenerationConfig. keel::Error is the only acceptable
// failure, and what is accepted must be inside the documented ranges.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/error.h"
#include "load/generation_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    keel::GenerationConfig g = keel::parse_generation_config(text, "fuzz/generation_config.json");
    if (g.temperature && !(*g.temperature >= 0 && *g.temperature <= 100)) std::abort();
    if (g.top_p && !(*g.top_p > 0 && *g.top_p <= 1)) std::abort();
    if (g.min_p && !(*g.min_p >= 0 && *g.min_p <= 1)) std::abort();
    if (g.repetition_penalty && !(*g.repetition_penalty > 0 && *g.repetition_penalty <= 100)) std::abort();
    if (g.top_k && *g.top_k < 0) std::abort();
    for (int32_t id : g.eos_token_ids)
      if (id < 0) std::abort();
  } catch (const keel::Error&) {
  }
  return 0;
}
