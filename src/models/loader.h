// A Hugging Face model folder → everything needed to run it: the config, the mmap'd weights, the Model.
// The weights are counted in the backend's pool (a reservation of their bytes), so the pool's baseline after
// loading is the weights plus the small f32 copies the model makes (biases).
#pragma once
#include <memory>
#include <string>

#include "backend/backend.h"
#include "core/pool.h"
#include "load/config.h"
#include "load/weight_store.h"
#include "models/model.h"

namespace keel::models {

struct LoadedModel {
  ModelConfig config;
  std::unique_ptr<WeightStore> weights;  // outlives `model`, whose tensors borrow its mappings
  Allocation weight_reservation;         // the weights' bytes, counted in the pool
  std::unique_ptr<Model> model;

  LoadedModel() = default;
  LoadedModel(LoadedModel&&) noexcept = default;
  LoadedModel& operator=(LoadedModel&&) noexcept = default;
  ~LoadedModel() { model.reset(); }  // before the weights it borrows
};

// Reads DIR/config.json, opens DIR's safetensors, reserves their bytes in be.pool() and builds the model for
// its model_type. Errors (each naming the folder): Error(unsupported) for a model_type keel lacks,
// Error(invalid_file) for a missing tensor or a wrong shape (naming the tensor, expected vs actual),
// Error(out_of_memory) when the weights do not fit the pool's limit.
// kv_cache: the KV cache's element type (f32, or f16 where the backend's attention takes it).
LoadedModel load_model(const std::string& dir, Backend& be, DType kv_cache = DType::f32);

}  // namespace keel::models
