// The model types this build has. A model type is one file, src/models/<model_type>.cpp, which defines its
// config.json reader, its factory and `ModelEntry <model_type>_model_entry()` naming both; one line in
// registry.cpp lists it; one line in tests/fixtures/models.txt names its transformers fixture. Everything
// else that lists model types (load_model_config's dispatch, the error naming the supported ones, the
// tests) is derived from model_registry().
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "load/config.h"
#include "load/config_fields.h"
#include "load/weight_store.h"
#include "models/model.h"

namespace keel::models {

// Binds the model's weights from `store` (which must outlive it; a factory may rename prefixes first) and
// builds it on `be`. Throws Error(invalid_file) for a missing tensor or a wrong shape, naming the tensor.
using ModelFactory = std::unique_ptr<Model> (*)(const ModelConfig& cfg, WeightStore& store, Backend& be);

struct ModelEntry {
  ConfigReader config;  // config.model_type: the canonical name; config.config_names: what config.json says
  ModelFactory make = nullptr;
  std::string_view model_type() const { return config.model_type; }
};

// In registry.cpp's order; built once.
const std::vector<ModelEntry>& model_registry();
// Every entry's config reader, for load/'s parse_model_config.
std::span<const ConfigReader> config_readers();
// Error(unsupported) naming the model_type and the list when none is registered for it.
ModelFactory find_model_factory(std::string_view model_type);
std::string registered_model_types();  // "llama, qwen3, ..."

// load/config.h's parse_model_config and load_model_config with every registered model type's reader.
ModelConfig parse_model_config(std::string_view json_text, std::string_view source = "config.json");
ModelConfig load_model_config(const std::string& folder);

}  // namespace keel::models
