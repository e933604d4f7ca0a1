#include "models/loader.h"

#include <string_view>

#include "core/error.h"
#include "models/registry.h"

namespace keel::models {

LoadedModel load_model(const std::string& dir, Backend& be) {
  LoadedModel m;
  m.config = load_model_config(dir);
  ModelFactory make = find_model_factory(m.config.model_type);
  m.weights = std::make_unique<WeightStore>(WeightStore::open(dir));
  m.weight_reservation = be.pool().reserve(m.weights->total_bytes(), "model weights");
  try {
    m.model = make(m.config, *m.weights, be);
  } catch (const Error& e) {
    if (std::string_view(e.what()).find(dir) != std::string_view::npos) throw;
    throw Error(e.code(), dir + ": " + e.what());
  }
  return m;
}

}  // namespace keel::models
