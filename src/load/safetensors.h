// safetensors files: an 8-byte little-endian header length N, N bytes of JSON, then the data region. Each
// tensor's data_offsets [begin, end) are relative to the data region's start (byte 8 + N).
// https://github.com/huggingface/safetensors (format description in its README).
//
// The header is validated completely before any tensor is used: every error is Error(invalid_file) (or
// Error(unsupported) for a dtype keel does not read) naming the file and the tensor, never an out-of-bounds
// read.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/mmap_file.h"

namespace keel {

// One tensor as its header describes it.
struct TensorRecord {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;  // outermost first; empty for a scalar
  int64_t numel = 0;           // product of shape (1 for a scalar)
  int64_t begin = 0;           // bytes from the start of the data region
  int64_t nbytes = 0;          // end − begin = dtype bytes for numel elements
};

struct SafetensorsHeader {
  int64_t data_start = 0;                       // byte offset of the data region in the file (8 + N)
  std::vector<TensorRecord> tensors;            // in the header's (sorted-key) order
  std::map<std::string, std::string> metadata;  // "__metadata__", string → string
};

// Header length limit: the safetensors reference implementation refuses headers over 100 MB.
constexpr int64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// Validates and parses the header of a safetensors file held in bytes [data, data + size). `file` names the
// file in errors. Checks: the length prefix (≥ 2, ≤ the limit, inside the file); JSON object of objects;
// "__metadata__" of strings; each tensor has exactly dtype (known), shape (non-negative integers) and
// data_offsets ([begin, end] integers, begin ≤ end, end inside the data region, end − begin = shape × dtype
// bytes with overflow-checked int64 math); no two tensors' bytes overlap.
SafetensorsHeader parse_safetensors_header(const uint8_t* data, int64_t size, std::string_view file);

// A mapped, validated safetensors file. Tensor data stays in the mapping (zero-copy); move-only.
class SafetensorsFile {
 public:
  // Maps `path` and validates its header. Throws Error(invalid_file) naming the path.
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const SafetensorsHeader& header() const { return header_; }
  // Start of a tensor's bytes inside the read-only mapping.
  const uint8_t* data(const TensorRecord& t) const { return file_.data() + header_.data_start + t.begin; }
  int64_t file_bytes() const { return file_.size(); }

 private:
  MappedFile file_;
  SafetensorsHeader header_;
};

}  // namespace keel
