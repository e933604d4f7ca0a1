// A read-only memory map of a whole file (zero-copy weights). Owns the mapping; unmapped on destruction.
#pragma once
#include <cstdint>
#include <string>

namespace keel {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws Error(invalid_file) naming the path when it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  int64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  int64_t size_ = 0;
};

}  // namespace keel
