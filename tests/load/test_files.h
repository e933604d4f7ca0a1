// Test helpers for tests/load: a scratch folder and a small safetensors writer that follows the format
// description (8-byte little-endian header length, JSON header padded with spaces to 8 bytes, data region)
// independently of keel's reader.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace keel::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "keel-load-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

inline std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// A file from raw parts: the length prefix (defaults to header.size()), the header text, then the data.
inline std::string raw_safetensors(const std::string& header, const std::string& data, int64_t length = -1) {
  return le64(length < 0 ? header.size() : static_cast<uint64_t>(length)) + header + data;
}

// Builds a well-formed file: tensors laid out in the order added, each starting at an 8-byte-aligned offset.
class SafetensorsBuilder {
 public:
  // `bytes` must hold exactly the tensor's data.
  SafetensorsBuilder& add(const std::string& name, const std::string& dtype,
                          const std::vector<int64_t>& shape, const std::string& bytes) {
    while (data_.size() % 8) data_.push_back('\0');
    std::string entry = "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":[";
    for (size_t i = 0; i < shape.size(); ++i) {
      if (i) entry += ",";
      entry += std::to_string(shape[i]);
    }
    entry += "],\"data_offsets\":[" + std::to_string(data_.size()) + "," +
             std::to_string(data_.size() + bytes.size()) + "]}";
    entries_.push_back(entry);
    data_ += bytes;
    return *this;
  }
  SafetensorsBuilder& metadata(const std::string& json_object) {
    metadata_ = json_object;
    return *this;
  }
  std::string build() const {
    std::string header = "{";
    if (!metadata_.empty()) header += "\"__metadata__\":" + metadata_ + (entries_.empty() ? "" : ",");
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (i) header += ",";
      header += entries_[i];
    }
    header += "}";
    while ((8 + header.size()) % 8) header.push_back(' ');
    return raw_safetensors(header, data_);
  }

 private:
  std::vector<std::string> entries_;
  std::string metadata_;
  std::string data_;
};

template <typename T>
std::string bytes_of(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

}  // namespace keel::testing
