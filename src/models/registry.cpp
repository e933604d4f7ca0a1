#include "models/registry.h"

#include "core/error.h"

namespace keel::models {

// One line per model_type: X(name) registers make_<name>() from src/models/<name>.cpp.
#define KEEL_MODEL_TYPES(X) \
  X(llama)                  \
  X(qwen3)                  \
  X(nemotron_h)             \
  X(qwen3_5)                \
  X(qwen3_5_moe)

#define KEEL_DECLARE_MODEL(name) \
  std::unique_ptr<Model> make_##name(const ModelConfig&, WeightStore&, Backend&);
KEEL_MODEL_TYPES(KEEL_DECLARE_MODEL)
#undef KEEL_DECLARE_MODEL

const std::vector<ModelEntry>& model_registry() {
#define KEEL_MODEL_ENTRY(name) ModelEntry{#name, &make_##name},
  static const std::vector<ModelEntry> entries = {KEEL_MODEL_TYPES(KEEL_MODEL_ENTRY)};
#undef KEEL_MODEL_ENTRY
  return entries;
}

std::string registered_model_types() {
  std::string s;
  for (const ModelEntry& e : model_registry()) s += (s.empty() ? "" : ", ") + std::string(e.model_type);
  return s;
}

ModelFactory find_model_factory(std::string_view model_type) {
  for (const ModelEntry& e : model_registry())
    if (e.model_type == model_type) return e.make;
  throw_error(ErrorCode::unsupported,
              "model_type \"{}\" is not supported by this build of keel (supported: {})", model_type,
              registered_model_types());
}

}  // namespace keel::models
