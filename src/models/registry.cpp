#include "models/registry.h"

#include "core/error.h"

namespace keel::models {

// One line per model type: X(name) registers name_model_entry() from src/models/<file>.cpp.
#define KEEL_MODEL_TYPES(X) \
  X(llama)                  \
  X(qwen3)                  \
  X(nemotron_h)             \
  X(qwen3_5)                \
  X(qwen3_5_moe)

#define KEEL_DECLARE_MODEL(name) ModelEntry name##_model_entry();
KEEL_MODEL_TYPES(KEEL_DECLARE_MODEL)
#undef KEEL_DECLARE_MODEL

const std::vector<ModelEntry>& model_registry() {
#define KEEL_MODEL_ENTRY(name) name##_model_entry(),
  static const std::vector<ModelEntry> entries = {KEEL_MODEL_TYPES(KEEL_MODEL_ENTRY)};
#undef KEEL_MODEL_ENTRY
  return entries;
}

std::span<const ConfigReader> config_readers() {
  static const std::vector<ConfigReader> readers = [] {
    std::vector<ConfigReader> r;
    for (const ModelEntry& e : model_registry()) r.push_back(e.config);
    return r;
  }();
  return readers;
}

std::string registered_model_types() {
  std::string s;
  for (const ModelEntry& e : model_registry()) s += (s.empty() ? "" : ", ") + std::string(e.model_type());
  return s;
}

ModelFactory find_model_factory(std::string_view model_type) {
  for (const ModelEntry& e : model_registry())
    if (e.model_type() == model_type) return e.make;
  throw_error(ErrorCode::unsupported,
              "model_type \"{}\" is not supported by this build of keel (supported: {})", model_type,
              registered_model_types());
}

ModelConfig parse_model_config(std::string_view json_text, std::string_view source) {
  return keel::parse_model_config(json_text, source, config_readers());
}

ModelConfig load_model_config(const std::string& folder) {
  return keel::load_model_config(folder, config_readers());
}

}  // namespace keel::models
