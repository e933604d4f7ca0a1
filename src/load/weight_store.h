// WeightStore: every tensor of a Hugging Face model folder, by name, as zero-copy views into mmap'd
// safetensors files. A folder holds either `model.safetensors` or `model.safetensors.index.json` whose
// "weight_map" names the shard that holds each tensor. Read-only after open(); safe to share between threads.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/tensor.h"
#include "load/safetensors.h"

namespace keel {

struct WeightInfo {
  const TensorRecord* record = nullptr;  // dtype, shape, numel, nbytes (owned by the store)
  int shard = 0;                         // index into WeightStore::shards()
};

class WeightStore {
 public:
  // Opens `folder`: maps every shard and validates every header, then checks the index against the shards
  // (every listed shard exists, every listed tensor is in the shard the index names, no tensor is in two
  // shards). Throws Error(invalid_file) naming the folder/shard/tensor.
  static WeightStore open(const std::string& folder);
  // A store over one .safetensors file (tests, single-file tools).
  static WeightStore open_file(const std::string& path);
  // A store without files whose tensors are made on first request (random weights for benchmarks at real
  // sizes): get(name, expected_shape) calls `make(name, shape)` once per name and keeps the tensor it
  // returns; has() and get(name) answer for tensors made so far. Not thread-safe while a model binds from it.
  using TensorMaker = std::function<Tensor(const std::string& name, const std::vector<int64_t>& shape)>;
  static WeightStore on_demand(std::string label, TensorMaker make);

  // From now on, get() hands out place(name, mapped view) instead of the mapped view, made once per name
  // and kept (a device backend's copy of each weight in its pool: load_model sets this when the backend
  // cannot read host memory). Tensors made on demand are not placed (their maker makes them where they
  // belong).
  using Placer = std::function<Tensor(const std::string& name, const Tensor& mapped)>;
  void place_with(Placer place) { place_ = std::move(place); }
  WeightStore(WeightStore&&) noexcept = default;
  WeightStore& operator=(WeightStore&&) noexcept = default;

  const std::string& folder() const { return folder_; }
  bool has(std::string_view name) const;
  // nullptr when absent.
  const WeightInfo* find(std::string_view name) const;
  // A borrowed view of the tensor's bytes in the mapping; valid while the store lives. The memory is mapped
  // read-only: writing through the view faults. Throws Error(invalid_file) naming the tensor and the folder
  // when it is absent, Error(unsupported) when it has more than kMaxDims dimensions.
  Tensor get(std::string_view name) const;
  // The mapped view itself, whatever place_with says (host memory: checks that read every value).
  Tensor mapped(std::string_view name) const;
  // As get(), and checks the shape: Error(invalid_file) "tensor X has shape [a, b], expected [c, d]".
  Tensor get(std::string_view name, std::initializer_list<int64_t> expected_shape) const;
  Tensor get(std::string_view name, const std::vector<int64_t>& expected_shape) const;

  // All tensor names, sorted.
  std::vector<std::string> names() const;
  size_t size() const { return by_name_.size(); }
  // Renames every tensor whose name starts with `from` to `to` + the rest of its name, e.g.
  // rename_prefix("model.language_model.", "model.") for Qwen3.5 folders that hold a vision tower beside the
  // text model. Returns how many were renamed; Error(invalid_file) if a new name collides with an existing
  // one.
  int64_t rename_prefix(std::string_view from, std::string_view to);

  // Sum of numel over all tensors (what the safetensors headers say, every tensor counted once; made ones
  // too).
  int64_t parameter_count() const;
  // Bytes of tensor data by dtype, and their total.
  std::map<DType, int64_t> bytes_by_dtype() const;
  int64_t total_bytes() const;
  const std::vector<std::unique_ptr<SafetensorsFile>>& shards() const { return shards_; }

 private:
  WeightStore() = default;
  void add_shard(std::unique_ptr<SafetensorsFile> shard, std::string_view shard_label);

  std::string folder_;
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::unordered_map<std::string, WeightInfo> by_name_;
  TensorMaker make_;                                        // on_demand stores only
  mutable std::unordered_map<std::string, Tensor> made_;    // what make_ returned, by name
  Placer place_;                                            // set by place_with
  mutable std::unordered_map<std::string, Tensor> placed_;  // what place_ returned, by name
};

}  // namespace keel
