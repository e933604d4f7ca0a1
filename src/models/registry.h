// model_type → the function that builds it (src/models/<model_type>.cpp). One line per model type in
// registry.cpp.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "load/config.h"
#include "load/weight_store.h"
#include "models/model.h"

namespace keel::models {

// Binds the model's weights from `store` (which must outlive it; a factory may rename prefixes first) and
// builds it on `be`. Throws Error(invalid_file) for a missing tensor or a wrong shape, naming the tensor.
using ModelFactory = std::unique_ptr<Model> (*)(const ModelConfig& cfg, WeightStore& store, Backend& be);

struct ModelEntry {
  std::string_view model_type;
  ModelFactory make;
};

const std::vector<ModelEntry>& model_registry();
// Error(unsupported) naming the model_type and the list when none is registered for it.
ModelFactory find_model_factory(std::string_view model_type);
std::string registered_model_types();  // "llama, qwen3, ..."

}  // namespace keel::models
