#include "server/generation.h"

#include <algorithm>

namespace keel::server {

GenerationSink::GenerationSink(TextOptions options)
    : options_(std::move(options)),
      decoder_(*options_.tokenizer, /*skip_special=*/false),
      stop_(options_.stop_strings) {}

bool GenerationSink::shown(int32_t id) const {
  if (std::find(options_.stop_tokens.begin(), options_.stop_tokens.end(), id) != options_.stop_tokens.end())
    return false;
  if (!options_.tokenizer->is_special(id)) return true;
  return std::find(options_.shown_special_tokens.begin(), options_.shown_special_tokens.end(), id) !=
         options_.shown_special_tokens.end();
}

void GenerationSink::push_text_locked(std::string text) {
  if (text.empty()) return;
  pending_.text += text;
  dirty_ = true;
}

void GenerationSink::on_started(int64_t cached_tokens) {
  std::lock_guard lock(mutex_);
  started_ = true;
  pending_.started = true;
  pending_.cached_tokens = cached_tokens;
  pending_.queue_position = -1;
  dirty_ = true;
  changed_.notify_all();
}

void GenerationSink::on_queued(int64_t position) {
  std::lock_guard lock(mutex_);
  pending_.queue_position = position;
  dirty_ = true;
  changed_.notify_all();
}

void GenerationSink::on_prefill(int64_t done, int64_t total) {
  std::lock_guard lock(mutex_);
  pending_.prefill_done = done;
  pending_.prefill_total = total;
  dirty_ = true;
  changed_.notify_all();
}

bool GenerationSink::on_token(const GeneratedToken& token) {
  // Runs on the engine thread and must not throw: a tokenizer error ends this request alone.
  std::string text;
  bool keep_going = true;
  try {
    if (shown(token.id)) {
      text = stop_.feed(decoder_.step(token.id));
      keep_going = !stop_.matched();
    }
  } catch (const std::exception& e) {
    std::lock_guard lock(mutex_);
    if (!pending_.error)
      pending_.error = Error(ErrorCode::internal, fmt::format("detokenizing failed: {}", e.what()));
    keep_going = false;
  }
  std::lock_guard lock(mutex_);
  if (!first_token_) first_token_ = Clock::now();
  ++generated_;
  pending_.tokens.push_back(token);
  push_text_locked(std::move(text));
  dirty_ = true;
  changed_.notify_all();
  return keep_going;
}

void GenerationSink::on_finish(FinishReason reason, const Error* error) {
  std::string tail;
  try {
    if (!stop_.matched()) tail = stop_.feed(decoder_.flush());
    tail += stop_.flush();
  } catch (const std::exception&) {
    // The held-back bytes were not valid text; there is nothing more to show.
  }
  std::lock_guard lock(mutex_);
  push_text_locked(std::move(tail));
  finished_ = true;
  finished_at_ = Clock::now();
  pending_.finished = true;
  pending_.reason = reason;
  pending_.stop_sequence = stop_.matched_stop();
  if (error) {
    pending_.reason = FinishReason::error;
    pending_.error = *error;
  } else if (pending_.error) {
    pending_.reason = FinishReason::error;  // a detokenizer failure stopped it
  }
  dirty_ = true;
  changed_.notify_all();
}

GenerationSink::Update GenerationSink::wait(Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  changed_.wait_until(lock, deadline, [&] { return dirty_; });
  Update out = std::move(pending_);
  pending_ = Update{};
  pending_.started = started_;
  pending_.finished = finished_;
  pending_.reason = out.reason;
  pending_.cached_tokens = out.cached_tokens;
  pending_.prefill_done = out.prefill_done;
  pending_.prefill_total = out.prefill_total;
  pending_.queue_position = out.queue_position;
  pending_.error = out.error;
  pending_.stop_sequence = out.stop_sequence;
  dirty_ = false;
  return out;
}

int64_t GenerationSink::generated_tokens() const {
  std::lock_guard lock(mutex_);
  return generated_;
}

std::optional<double> GenerationSink::seconds_to_first_token() const {
  std::lock_guard lock(mutex_);
  if (!first_token_) return std::nullopt;
  return std::chrono::duration<double>(*first_token_ - created_).count();
}

std::optional<double> GenerationSink::decode_seconds() const {
  std::lock_guard lock(mutex_);
  if (!first_token_ || !finished_at_) return std::nullopt;
  return std::chrono::duration<double>(*finished_at_ - *first_token_).count();
}

}  // namespace keel::server
