#include "load/safetensors.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "load/json_util.h"

namespace keel {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

TensorRecord parse_tensor_entry(const std::string& name, const nlohmann::json& entry, int64_t data_bytes,
                                std::string_view file) {
  std::string who = clip_for_message(name);
  if (!entry.is_object())
    throw_error(ErrorCode::invalid_file, "{}: tensor '{}': header entry is not a JSON object", file, who);
  TensorRecord t;
  t.name = name;

  auto dtype_it = entry.find("dtype");
  if (dtype_it == entry.end() || !dtype_it->is_string())
    throw_error(ErrorCode::invalid_file, "{}: tensor '{}': missing or non-string \"dtype\"", file, who);
  const std::string& dtype_name_st = dtype_it->get_ref<const std::string&>();
  std::optional<DType> dtype = dtype_from_safetensors(dtype_name_st);
  if (!dtype)
    throw_error(
        ErrorCode::unsupported,
        "{}: tensor '{}': dtype \"{}\" is not supported (keel reads F32, F16, BF16, I32, I64, U8, I8)", file,
        who, clip_for_message(dtype_name_st, 40));
  t.dtype = *dtype;

  auto shape_it = entry.find("shape");
  if (shape_it == entry.end() || !shape_it->is_array())
    throw_error(ErrorCode::invalid_file, "{}: tensor '{}': missing or non-array \"shape\"", file, who);
  t.numel = 1;
  for (const nlohmann::json& d : *shape_it) {
    // Only JSON integers: a float such as 2.0 is rejected as the reference implementation does.
    std::optional<int64_t> dim;
    if (d.is_number_integer() || d.is_number_unsigned()) dim = json_integer(d);
    if (!dim || *dim < 0)
      throw_error(ErrorCode::invalid_file, "{}: tensor '{}': shape entry {} is not a non-negative integer",
                  file, who, clip_for_message(d.dump(), 40));
    t.shape.push_back(*dim);
  }
  for (int64_t dim : t.shape) {
    if (__builtin_mul_overflow(t.numel, dim, &t.numel))
      throw_error(ErrorCode::invalid_file, "{}: tensor '{}': shape {} has more elements than fit in 64 bits",
                  file, who, clip_for_message(shape_text(t.shape), 200));
  }

  auto off_it = entry.find("data_offsets");
  if (off_it == entry.end() || !off_it->is_array() || off_it->size() != 2)
    throw_error(ErrorCode::invalid_file, "{}: tensor '{}': \"data_offsets\" must be [begin, end]", file, who);
  std::optional<int64_t> begin, end;
  if ((*off_it)[0].is_number_integer() || (*off_it)[0].is_number_unsigned())
    begin = json_integer((*off_it)[0]);
  if ((*off_it)[1].is_number_integer() || (*off_it)[1].is_number_unsigned()) end = json_integer((*off_it)[1]);
  if (!begin || !end || *begin < 0 || *end < 0)
    throw_error(ErrorCode::invalid_file, "{}: tensor '{}': data_offsets {} are not non-negative integers",
                file, who, clip_for_message(off_it->dump(), 80));
  if (*end < *begin)
    throw_error(ErrorCode::invalid_file, "{}: tensor '{}': data_offsets end {} is before begin {}", file, who,
                *end, *begin);
  if (*end > data_bytes)
    throw_error(ErrorCode::invalid_file,
                "{}: tensor '{}': data_offsets [{}, {}] run past the end of the data region ({} bytes; file "
                "truncated?)",
                file, who, *begin, *end, data_bytes);
  std::optional<int64_t> expect = dtype_bytes(t.dtype, t.numel);
  if (!expect)
    throw_error(ErrorCode::invalid_file,
                "{}: tensor '{}': {} × {} does not give a whole number of bytes in 64 bits", file, who,
                shape_text(t.shape), dtype_name(t.dtype));
  t.begin = *begin;
  t.nbytes = *end - *begin;
  if (t.nbytes != *expect)
    throw_error(ErrorCode::invalid_file,
                "{}: tensor '{}': data_offsets [{}, {}] hold {} bytes but shape {} of {} needs {} bytes",
                file, who, *begin, *end, t.nbytes, shape_text(t.shape), dtype_name_st, *expect);
  return t;
}

}  // namespace

SafetensorsHeader parse_safetensors_header(const uint8_t* data, int64_t size, std::string_view file) {
  if (size < 8)
    throw_error(ErrorCode::invalid_file,
                "{}: {} bytes is too short for a safetensors file (needs an 8-byte header length)", file,
                size);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
  if (n < 2 || n > static_cast<uint64_t>(kMaxSafetensorsHeaderBytes))
    throw_error(ErrorCode::invalid_file, "{}: header length {} is outside [2, {}]; not a safetensors file?",
                file, n, kMaxSafetensorsHeaderBytes);
  int64_t header_bytes = static_cast<int64_t>(n);
  if (header_bytes > size - 8)
    throw_error(ErrorCode::invalid_file,
                "{}: header length {} runs past the end of the file ({} bytes; truncated?)", file,
                header_bytes, size);
  if (data[8] != '{')
    throw_error(ErrorCode::invalid_file, "{}: header does not start with '{{'; not a safetensors file?",
                file);

  std::string_view text(reinterpret_cast<const char*>(data + 8), static_cast<size_t>(header_bytes));
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    throw_error(ErrorCode::invalid_file, "{}: header is not valid JSON: {}", file, e.what());
  }
  if (!root.is_object()) throw_error(ErrorCode::invalid_file, "{}: header is not a JSON object", file);

  SafetensorsHeader header;
  header.data_start = 8 + header_bytes;
  const int64_t data_bytes = size - header.data_start;
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      if (!value.is_object())
        throw_error(ErrorCode::invalid_file, "{}: \"__metadata__\" is not a JSON object", file);
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
          throw_error(ErrorCode::invalid_file, "{}: \"__metadata__\" value for '{}' is not a string", file,
                      clip_for_message(mk));
        header.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    header.tensors.push_back(parse_tensor_entry(key, value, data_bytes, file));
  }

  // No overlaps: sorted by begin, each non-empty tensor starts at or after the previous non-empty one's end.
  std::vector<const TensorRecord*> order;
  for (const TensorRecord& t : header.tensors)
    if (t.nbytes > 0) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < order.size(); ++i) {
    const TensorRecord& prev = *order[i - 1];
    const TensorRecord& cur = *order[i];
    if (cur.begin < prev.begin + prev.nbytes)
      throw_error(ErrorCode::invalid_file, "{}: tensors '{}' [{}, {}) and '{}' [{}, {}) overlap", file,
                  clip_for_message(prev.name), prev.begin, prev.begin + prev.nbytes,
                  clip_for_message(cur.name), cur.begin, cur.begin + cur.nbytes);
  }
  return header;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(path) {
  header_ = parse_safetensors_header(file_.data(), file_.size(), file_.path());
}

}  // namespace keel
