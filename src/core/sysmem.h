// What the machine really allows. Linux overcommits: malloc succeeds and the OOM killer strikes later, so the
// CPU budget comes from the cgroup limit (memory.max, v2; memory.limit_in_bytes, v1) and MemAvailable, minus
// a margin.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace keel {

struct MemoryFacts {
  int64_t mem_total = 0;                // /proc/meminfo MemTotal, bytes
  int64_t mem_available = 0;            // /proc/meminfo MemAvailable, bytes
  std::optional<int64_t> cgroup_limit;  // bytes; nullopt when unlimited or unknown
  int64_t cgroup_usage = 0;             // bytes charged to the cgroup now (0 when unknown)
  int64_t process_rss = 0;              // VmRSS of this process, bytes
};

MemoryFacts read_memory_facts();

// Bytes keel may use on the CPU from now on, counting its own current RSS as already used by it:
//   room = min(MemAvailable, cgroup_limit − cgroup_usage) + process_rss; budget = room − max(512 MiB, 5 % of
//   room).
int64_t default_cpu_budget(const MemoryFacts& facts);

// This process's peak resident set (VmHWM), bytes — the outside check on the pool's numbers.
int64_t process_peak_rss();
int64_t process_rss();
// Resets VmHWM to the current RSS (writes 5 to /proc/self/clear_refs); false where the kernel refuses.
bool reset_process_peak_rss();

// "12GiB", "512M", "1e9", "4096B" -> bytes; "0.8" (a number < 1, or ending in %) -> that fraction of
// `device_bytes`. A bare number from 1 up to 1 MiB ("1.0", "64") is refused rather than read as a few bytes.
// Throws Error(invalid_argument) naming the text.
int64_t parse_memory_limit(std::string_view text, int64_t device_bytes);
// 1536 -> "1.50 KiB"
std::string format_bytes(int64_t bytes);

}  // namespace keel
