#include "models/loader.h"

#include <string_view>

#include "core/error.h"
#include "models/registry.h"

namespace keel::models {

LoadedModel load_model(const std::string& dir, Backend& be, DType kv_cache) {
  LoadedModel m;
  m.config = load_model_config(dir);
  m.config.kv_cache_dtype = kv_cache;
  ModelFactory make = find_model_factory(m.config.model_type);
  m.weights = std::make_unique<WeightStore>(WeightStore::open(dir));
  if (be.host_addressable()) {
    m.weight_reservation = be.pool().reserve(m.weights->total_bytes(), "model weights");  // mmap'd in place
  } else {
    // A device's weights are copies in its pool, uploaded as the model binds them (each tensor once).
    m.weights->place_with([&be](const std::string& name, const Tensor& mapped) {
      Tensor t = Tensor::empty(be.pool(), mapped.dtype(), mapped.shape().data(), mapped.ndim(), name);
      be.upload(mapped.data(), mapped.nbytes(), t);
      return t;
    });
  }
  try {
    m.model = make(m.config, *m.weights, be);
  } catch (const Error& e) {
    if (std::string_view(e.what()).find(dir) != std::string_view::npos) throw;
    throw Error(e.code(), dir + ": " + e.what());
  }
  return m;
}

}  // namespace keel::models
