#include "core/sysmem.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace keel {

namespace {

// Reads "Key:   123 kB" from a /proc status-like file; returns bytes or -1.
int64_t read_kb_field(const char* path, std::string_view key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) == 0 && line.size() > key.size() && line[key.size()] == ':') {
      std::istringstream fields(line.substr(key.size() + 1));
      int64_t kb = -1;
      fields >> kb;
      return kb < 0 ? -1 : kb * 1024;
    }
  }
  return -1;
}

std::optional<int64_t> read_number_file(const char* path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  try {
    long long v = std::stoll(word);
    // cgroup v1 reports "unlimited" as a huge page-rounded number.
    if (v <= 0 || v >= (int64_t{1} << 60)) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

MemoryFacts read_memory_facts() {
  MemoryFacts f;
  f.mem_total = std::max<int64_t>(0, read_kb_field("/proc/meminfo", "MemTotal"));
  f.mem_available = std::max<int64_t>(0, read_kb_field("/proc/meminfo", "MemAvailable"));
  f.process_rss = std::max<int64_t>(0, read_kb_field("/proc/self/status", "VmRSS"));
  if (auto v2 = read_number_file("/sys/fs/cgroup/memory.max")) {
    f.cgroup_limit = v2;
    f.cgroup_usage = read_number_file("/sys/fs/cgroup/memory.current").value_or(0);
  } else if (auto v1 = read_number_file("/sys/fs/cgroup/memory/memory.limit_in_bytes")) {
    f.cgroup_limit = v1;
    f.cgroup_usage = read_number_file("/sys/fs/cgroup/memory/memory.usage_in_bytes").value_or(0);
  }
  return f;
}

int64_t default_cpu_budget(const MemoryFacts& f) {
  int64_t room = f.mem_available;
  if (f.cgroup_limit) room = std::min(room, *f.cgroup_limit - f.cgroup_usage);
  room = std::max<int64_t>(0, room) + f.process_rss;
  int64_t margin = std::max<int64_t>(int64_t{512} << 20, room / 20);
  return std::max<int64_t>(0, room - margin);
}

int64_t process_peak_rss() {
  return read_kb_field("/proc/self/status", "VmHWM");
}
int64_t process_rss() {
  return read_kb_field("/proc/self/status", "VmRSS");
}

bool reset_process_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

int64_t parse_memory_limit(std::string_view text, int64_t device_bytes) {
  std::string s(text);
  auto bad = [&]() -> int64_t {
    throw_error(
        ErrorCode::invalid_argument,
        "memory limit '{}': expected bytes (12GiB, 512M, 4096) or a fraction of the device (0.8, 80%)", text);
  };
  if (s.empty()) bad();
  size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(s, &pos);
  } catch (...) {
    bad();
  }
  std::string unit = s.substr(pos);
  unit.erase(std::remove_if(unit.begin(), unit.end(), [](unsigned char c) { return std::isspace(c); }),
             unit.end());
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!std::isfinite(value) || value <= 0) bad();
  if (unit == "%") return static_cast<int64_t>(static_cast<double>(device_bytes) * value / 100.0);
  if (unit.empty() && value < 1.0) return static_cast<int64_t>(static_cast<double>(device_bytes) * value);
  // A bare "1.0" or "64" is almost surely a fraction or a size with its unit left off, not a few bytes.
  if (unit.empty() && value < 1024.0 * 1024)
    throw_error(ErrorCode::invalid_argument,
                "memory limit '{}': a bare number is bytes, and {} bytes is less than 1 MiB; give a unit "
                "(12GiB, 512M), a fraction below 1 (0.8) or a percentage (100%)",
                text, value);
  double mult = 1;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "k" || unit == "kb")
    mult = 1e3;
  else if (unit == "m" || unit == "mb")
    mult = 1e6;
  else if (unit == "g" || unit == "gb")
    mult = 1e9;
  else if (unit == "t" || unit == "tb")
    mult = 1e12;
  else if (unit == "kib")
    mult = 1024.0;
  else if (unit == "mib")
    mult = 1024.0 * 1024;
  else if (unit == "gib")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "tib")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else
    bad();
  double bytes = value * mult;
  if (bytes >= 9.0e18) bad();
  return static_cast<int64_t>(bytes);
}

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (std::abs(v) >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", v, units[u]);
}

}  // namespace keel
