#include "server/metrics.h"

#include <fmt/format.h>

namespace keel::server {

void ServerMetrics::count_request(const std::string& endpoint, const std::string& outcome) {
  std::lock_guard lock(mutex_);
  ++requests_[{endpoint, outcome}];
}

void ServerMetrics::record_generation(int64_t prompt_tokens, int64_t cached_tokens, int64_t generated_tokens,
                                      std::optional<double> ttft_seconds,
                                      std::optional<double> decode_seconds) {
  std::lock_guard lock(mutex_);
  ++generations_;
  prompt_tokens_ += prompt_tokens;
  cached_tokens_ += cached_tokens;
  generated_tokens_ += generated_tokens;
  if (cached_tokens > 0) ++cache_hits_;
  if (ttft_seconds) {
    ttft_sum_ += *ttft_seconds;
    ++ttft_count_;
    int64_t computed = prompt_tokens - cached_tokens;
    prefill_seconds_ += *ttft_seconds;
    prefill_tokens_timed_ += computed;
    if (*ttft_seconds > 0) last_prefill_rate_ = static_cast<double>(computed) / *ttft_seconds;
  }
  if (decode_seconds && generated_tokens > 1) {
    decode_seconds_ += *decode_seconds;
    decode_tokens_timed_ += generated_tokens - 1;
    if (*decode_seconds > 0) last_decode_rate_ = static_cast<double>(generated_tokens - 1) / *decode_seconds;
  }
}

namespace {

void metric(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

template <typename T>
void sample(std::string& out, const char* name, T value, const std::string& labels = {}) {
  if (labels.empty())
    out += fmt::format("{} {}\n", name, value);
  else
    out += fmt::format("{}{{{}}} {}\n", name, labels, value);
}

}  // namespace

std::string ServerMetrics::render(const EngineStats* engine) const {
  std::string out;
  {
    std::lock_guard lock(mutex_);
    metric(out, "keel_requests_total", "counter", "HTTP requests by endpoint and outcome");
    for (const auto& [key, n] : requests_)
      sample(out, "keel_requests_total", n,
             fmt::format("endpoint=\"{}\",outcome=\"{}\"", key.first, key.second));
    metric(out, "keel_prompt_tokens_total", "counter", "Prompt tokens of generations that ran");
    sample(out, "keel_prompt_tokens_total", prompt_tokens_);
    metric(out, "keel_generated_tokens_total", "counter", "Tokens generated");
    sample(out, "keel_generated_tokens_total", generated_tokens_);
    metric(out, "keel_prompt_cache_hits_total", "counter", "Generations that reused a cached prompt prefix");
    sample(out, "keel_prompt_cache_hits_total", cache_hits_);
    metric(out, "keel_prompt_cached_tokens_total", "counter", "Prompt tokens taken from the prompt cache");
    sample(out, "keel_prompt_cached_tokens_total", cached_tokens_);
    metric(out, "keel_time_to_first_token_seconds", "summary",
           "Submission to first generated token, queueing included");
    sample(out, "keel_time_to_first_token_seconds_sum", ttft_sum_);
    sample(out, "keel_time_to_first_token_seconds_count", ttft_count_);
    metric(out, "keel_prefill_tokens_per_second", "gauge",
           "Prompt tokens computed per second (not cached), over all generations");
    sample(out, "keel_prefill_tokens_per_second",
           prefill_seconds_ > 0 ? prefill_tokens_timed_ / prefill_seconds_ : 0);
    metric(out, "keel_decode_tokens_per_second", "gauge",
           "Tokens generated per second after the first, over all");
    sample(out, "keel_decode_tokens_per_second",
           decode_seconds_ > 0 ? decode_tokens_timed_ / decode_seconds_ : 0);
    metric(out, "keel_last_prefill_tokens_per_second", "gauge", "Prefill rate of the last generation");
    sample(out, "keel_last_prefill_tokens_per_second", last_prefill_rate_);
    metric(out, "keel_last_decode_tokens_per_second", "gauge", "Decode rate of the last generation");
    sample(out, "keel_last_decode_tokens_per_second", last_decode_rate_);
  }
  metric(out, "keel_model_loaded", "gauge", "1 once the model is loaded and requests are served");
  sample(out, "keel_model_loaded", engine ? 1 : 0);
  if (!engine) return out;
  const EngineStats& e = *engine;
  const SchedulerStats& s = e.scheduler;
  metric(out, "keel_pool_device_info", "gauge",
         "The device whose pool the keel_pool_* figures count (cpu, cuda:N)");
  sample(out, "keel_pool_device_info", 1, fmt::format("device=\"{}\"", e.device));
  metric(out, "keel_pool_bytes_in_use", "gauge", "Bytes the device pool hands out now (weights included)");
  sample(out, "keel_pool_bytes_in_use", e.pool.in_use);
  metric(out, "keel_pool_bytes_peak", "gauge", "Highest pool bytes in use since the last peak reset");
  sample(out, "keel_pool_bytes_peak", e.pool.peak);
  metric(out, "keel_pool_bytes_limit", "gauge", "The pool's enforced limit (--memory-limit)");
  sample(out, "keel_pool_bytes_limit", e.pool.limit);
  metric(out, "keel_pool_bytes_baseline", "gauge",
         "Pool bytes of the loaded model; idle, the pool holds this plus keel_prompt_cache_bytes");
  sample(out, "keel_pool_bytes_baseline", e.baseline_bytes);
  metric(out, "keel_pool_allocations_refused_total", "counter", "Allocations the pool refused");
  sample(out, "keel_pool_allocations_refused_total", e.pool.refusals);
  metric(out, "keel_step_transient_planned_bytes", "gauge", "Planned transient bytes of the last step");
  sample(out, "keel_step_transient_planned_bytes", s.last_planned_transient);
  metric(out, "keel_step_transient_measured_bytes", "gauge", "Measured transient bytes of the last step");
  sample(out, "keel_step_transient_measured_bytes", s.last_measured_transient);
  metric(out, "keel_step_transient_measured_over_planned_max", "gauge",
         "Largest measured/planned transient ratio over all steps (above 1 is a planning bug)");
  sample(out, "keel_step_transient_measured_over_planned_max",
         static_cast<double>(s.max_measured_over_planned_permille) / 1000.0);
  metric(out, "keel_steps_total", "counter", "Engine steps by result");
  sample(out, "keel_steps_total", s.steps, "result=\"run\"");
  sample(out, "keel_steps_total", s.failed_steps, "result=\"failed_out_of_memory\"");
  sample(out, "keel_steps_total", s.shrunk_steps, "result=\"shrunk_to_fit\"");
  sample(out, "keel_steps_total", s.plan_exceeded, "result=\"plan_exceeded\"");
  metric(out, "keel_requests_deferred_total", "counter",
         "Times a waiting request could not start for lack of memory");
  sample(out, "keel_requests_deferred_total", s.deferred, "reason=\"memory\"");
  metric(out, "keel_requests_refused_total", "counter",
         "Requests refused or failed by the engine, by reason");
  sample(out, "keel_requests_refused_total", s.refused_context, "reason=\"context_length_exceeded\"");
  sample(out, "keel_requests_refused_total", s.failed_memory, "reason=\"insufficient_memory\"");
  metric(out, "keel_prompt_cache_entries", "gauge", "States the prompt cache holds now");
  sample(out, "keel_prompt_cache_entries", s.prompt_cache_entries);
  metric(out, "keel_prompt_cache_bytes", "gauge",
         "Pool bytes the prompt cache holds now (part of the baseline)");
  sample(out, "keel_prompt_cache_bytes", s.prompt_cache_bytes);
  metric(out, "keel_prompt_cache_evictions_total", "counter", "Prompt cache entries evicted");
  sample(out, "keel_prompt_cache_evictions_total", s.prompt_cache_evictions);
  metric(out, "keel_preemptions_total", "counter", "Sequences dropped to free memory and re-prefilled later");
  sample(out, "keel_preemptions_total", s.preemptions);
  metric(out, "keel_requests_waiting", "gauge", "Requests waiting for a slot or memory");
  sample(out, "keel_requests_waiting", e.waiting);
  metric(out, "keel_requests_running", "gauge", "Requests holding a slot");
  sample(out, "keel_requests_running", e.running);
  return out;
}

}  // namespace keel::server
