// The server's counters, and /metrics in Prometheus text format (exposition format 0.0.4): requests by
// outcome, tokens, time to first token, prefill and decode rates, prompt-cache reuse, and the engine's memory
// numbers (pool in use / peak / limit / baseline, planned vs measured step transient, deferred and refused
// requests).
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "engine/engine.h"

namespace keel::server {

class ServerMetrics {
 public:
  // outcome: stop, length, tool_calls, cancelled, error, invalid_request, unauthorized,
  // context_length_exceeded, insufficient_memory, ...
  void count_request(const std::string& endpoint, const std::string& outcome);
  // A generation that ran: its prompt, the part of it the prompt cache supplied, what it generated, and
  // timings (ttft: submission → first token, queueing included; decode: first token → finish).
  void record_generation(int64_t prompt_tokens, int64_t cached_tokens, int64_t generated_tokens,
                         std::optional<double> ttft_seconds, std::optional<double> decode_seconds);

  // The Prometheus text; `engine` null while the model loads.
  std::string render(const EngineStats* engine) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, int64_t> requests_;  // (endpoint, outcome) → count
  int64_t prompt_tokens_ = 0, cached_tokens_ = 0, generated_tokens_ = 0;
  int64_t cache_hits_ = 0, generations_ = 0;
  double ttft_sum_ = 0;
  int64_t ttft_count_ = 0;
  double prefill_seconds_ = 0, decode_seconds_ = 0;
  int64_t prefill_tokens_timed_ = 0, decode_tokens_timed_ = 0;
  double last_prefill_rate_ = 0, last_decode_rate_ = 0;
};

}  // namespace keel::server
