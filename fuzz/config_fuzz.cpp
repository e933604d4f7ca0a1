// fuzz-libs: keel_core keel_load keel_models

// libFuzzer target: config.json text → ModelConfig (load/'s dispatch and every registered family's reader,
// src/models/<type>.cpp) → state spec. keel::Error is the only acceptable failure;
// the state spec's byte arithmetic runs on every config the parser accepts, so an unchecked overflow shows up
// as a UBSan report.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "load/config.h"
#include "load/state_spec.h"
#include "models/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    keel::ModelConfig cfg = keel::models::parse_model_config(text, "fuzz/config.json");
    keel::StateSpec spec = keel::compute_state_spec(cfg);
    (void)spec.bytes_at_context(cfg.max_position_embeddings);
  } catch (const keel::Error&) {
  }
  return 0;
}
