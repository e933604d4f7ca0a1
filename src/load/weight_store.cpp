#include "load/weight_store.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "load/json_util.h"

namespace keel {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kMaxIndexBytes = 64 << 20;

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// A shard name from the index must be a plain file name inside the folder.
bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\\') == std::string::npos && name.find('\0') == std::string::npos;
}

}  // namespace

void WeightStore::add_shard(std::unique_ptr<SafetensorsFile> shard, std::string_view shard_label) {
  int index = static_cast<int>(shards_.size());
  for (const TensorRecord& t : shard->header().tensors) {
    auto [it, inserted] = by_name_.emplace(t.name, WeightInfo{&t, index});
    if (!inserted)
      throw_error(ErrorCode::invalid_file, "{}: tensor '{}' is in two shards: {} and {}", folder_,
                  clip_for_message(t.name), fs::path(shards_[it->second.shard]->path()).filename().string(),
                  shard_label);
  }
  shards_.push_back(std::move(shard));
}

WeightStore WeightStore::open_file(const std::string& path) {
  WeightStore store;
  store.folder_ = path;
  auto shard = std::make_unique<SafetensorsFile>(path);
  store.add_shard(std::move(shard), path);
  return store;
}

WeightStore WeightStore::on_demand(std::string label, TensorMaker make) {
  WeightStore store;
  store.folder_ = std::move(label);
  store.make_ = std::move(make);
  return store;
}

WeightStore WeightStore::open(const std::string& folder) {
  WeightStore store;
  store.folder_ = folder;
  fs::path dir(folder);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw_error(ErrorCode::invalid_file, "{}: not a folder", folder);
  fs::path single = dir / "model.safetensors";
  fs::path index_path = dir / "model.safetensors.index.json";
  if (!fs::exists(index_path, ec)) {
    if (!fs::exists(single, ec))
      throw_error(ErrorCode::invalid_file,
                  "{}: neither model.safetensors nor model.safetensors.index.json is there", folder);
    store.add_shard(std::make_unique<SafetensorsFile>(single.string()), "model.safetensors");
    return store;
  }

  std::string label = index_path.string();
  nlohmann::json index = parse_json_lenient(read_text_file(label, kMaxIndexBytes), label);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw_error(ErrorCode::invalid_file, "{}: no \"weight_map\" object", label);
  const nlohmann::json& weight_map = index["weight_map"];

  // Shards in order of first mention; each tensor's shard name as the index gives it.
  std::vector<std::string> shard_names;
  std::unordered_map<std::string, int> shard_index;
  for (const auto& [tensor, file] : weight_map.items()) {
    if (!file.is_string())
      throw_error(ErrorCode::invalid_file, "{}: weight_map entry for '{}' is not a file name", label,
                  clip_for_message(tensor));
    const std::string& name = file.get_ref<const std::string&>();
    if (!is_plain_file_name(name))
      throw_error(ErrorCode::invalid_file,
                  "{}: weight_map entry for '{}' names '{}', not a file in the folder", label,
                  clip_for_message(tensor), clip_for_message(name));
    if (shard_index.emplace(name, static_cast<int>(shard_names.size())).second) shard_names.push_back(name);
  }
  if (shard_names.empty()) throw_error(ErrorCode::invalid_file, "{}: weight_map is empty", label);
  for (const std::string& name : shard_names) {
    fs::path p = dir / name;
    if (!fs::exists(p, ec))
      throw_error(ErrorCode::invalid_file, "{}: shard {} listed in model.safetensors.index.json is missing",
                  folder, name);
    store.add_shard(std::make_unique<SafetensorsFile>(p.string()), name);
  }
  for (const auto& [tensor, file] : weight_map.items()) {
    const WeightInfo* info = store.find(tensor);
    const std::string& want = file.get_ref<const std::string&>();
    if (!info)
      throw_error(ErrorCode::invalid_file,
                  "{}: tensor '{}' is listed in model.safetensors.index.json under {} but no "
                  "shard holds it",
                  folder, clip_for_message(tensor), want);
    if (info->shard != shard_index.at(want))
      throw_error(ErrorCode::invalid_file, "{}: tensor '{}' is listed under {} but found in {}", folder,
                  clip_for_message(tensor), want, shard_names[info->shard]);
  }
  return store;
}

bool WeightStore::has(std::string_view name) const {
  return find(name) != nullptr || made_.count(std::string(name)) > 0;
}

const WeightInfo* WeightStore::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &it->second;
}

Tensor WeightStore::get(std::string_view name) const {
  Tensor t = mapped(name);
  if (!place_ || !find(name)) return t;
  std::string key(name);
  auto it = placed_.find(key);
  if (it == placed_.end()) it = placed_.emplace(key, place_(key, t)).first;
  return it->second;
}

Tensor WeightStore::mapped(std::string_view name) const {
  const WeightInfo* info = find(name);
  if (auto it = made_.find(std::string(name)); !info && it != made_.end()) return it->second;
  if (!info)
    throw_error(ErrorCode::invalid_file, "{}: missing tensor '{}' ({} tensors in the folder)", folder_, name,
                by_name_.size());
  const TensorRecord& t = *info->record;
  int ndim = static_cast<int>(t.shape.size());
  if (ndim > kMaxDims)
    throw_error(ErrorCode::unsupported, "{}: tensor '{}' has {} dimensions; keel tensors have at most {}",
                folder_, name, ndim, kMaxDims);
  // The mapping is PROT_READ; Tensor's pointer is mutable only because the type serves owned memory too.
  void* data = const_cast<uint8_t*>(shards_[info->shard]->data(t));
  return Tensor::borrow(data, t.dtype, t.shape.data(), ndim);
}

Tensor WeightStore::get(std::string_view name, std::initializer_list<int64_t> expected_shape) const {
  return get(name, std::vector<int64_t>(expected_shape));
}

Tensor WeightStore::get(std::string_view name, const std::vector<int64_t>& expected_shape) const {
  const WeightInfo* info = find(name);
  if (!info && make_) {  // an on_demand store: make the tensor on its first request
    std::string key(name);
    auto it = made_.find(key);
    if (it == made_.end()) it = made_.emplace(key, make_(key, expected_shape)).first;
    const Tensor& t = it->second;
    if (t.ndim() != static_cast<int>(expected_shape.size()) ||
        !std::equal(expected_shape.begin(), expected_shape.end(), t.shape().begin()))
      throw_error(ErrorCode::invalid_file, "{}: tensor '{}' has shape {}, expected {}", folder_, name,
                  t.shape_string(), shape_text(expected_shape));
    return t;
  }
  if (info && info->record->shape != expected_shape)
    throw_error(ErrorCode::invalid_file, "{}: tensor '{}' has shape {}, expected {}", folder_, name,
                shape_text(info->record->shape), shape_text(expected_shape));
  return get(name);
}

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> out;
  out.reserve(by_name_.size());
  for (const auto& [name, info] : by_name_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

int64_t WeightStore::rename_prefix(std::string_view from, std::string_view to) {
  std::vector<std::string> matching;
  for (const auto& [name, info] : by_name_)
    if (std::string_view(name).substr(0, from.size()) == from) matching.push_back(name);
  std::unordered_map<std::string, WeightInfo> renamed;
  for (const std::string& name : matching) {
    std::string new_name = std::string(to) + name.substr(from.size());
    bool clash = renamed.count(new_name) > 0 ||
                 (by_name_.count(new_name) > 0 && std::string_view(new_name).substr(0, from.size()) != from);
    if (clash)
      throw_error(ErrorCode::invalid_file, "{}: renaming '{}' to '{}' collides with an existing tensor",
                  folder_, clip_for_message(name), clip_for_message(new_name));
    renamed.emplace(std::move(new_name), by_name_.at(name));
  }
  for (const std::string& name : matching) by_name_.erase(name);
  for (auto& [name, info] : renamed) by_name_.emplace(name, info);
  // A tensor already placed keeps its copy under the new name (it would otherwise be placed twice).
  for (const std::string& name : matching) {
    auto it = placed_.find(name);
    if (it == placed_.end()) continue;
    placed_.emplace(std::string(to) + name.substr(from.size()), std::move(it->second));
    placed_.erase(it);
  }
  return static_cast<int64_t>(matching.size());
}

int64_t WeightStore::parameter_count() const {
  int64_t n = 0;
  for (const auto& [name, info] : by_name_) n += info.record->numel;
  for (const auto& [name, t] : made_) n += t.numel();
  return n;
}

std::map<DType, int64_t> WeightStore::bytes_by_dtype() const {
  std::map<DType, int64_t> out;
  for (const auto& [name, info] : by_name_) out[info.record->dtype] += info.record->nbytes;
  for (const auto& [name, t] : made_) out[t.dtype()] += t.nbytes();
  return out;
}

int64_t WeightStore::total_bytes() const {
  int64_t n = 0;
  for (const auto& [name, info] : by_name_) n += info.record->nbytes;
  for (const auto& [name, t] : made_) n += t.nbytes();
  return n;
}

}  // namespace keel
