// A real server in the test process: a model folder loaded by the normal loader, its tokenizer and chat
// template, the engine, and HttpServer listening on 127.0.0.1 at a free port. Tokens are chosen by
// ExactGreedy, written here: argmax with log-probabilities from a float64 log-softmax, so logprobs have an
// oracle keel did not compute.
#pragma once
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <thread>

#include "chat/parsers/output_format.h"
#include "cli/model_session.h"
#include "engine/engine.h"
#include "models/loader.h"
#include "raw_http.h"
#include "server/http_server.h"

namespace keel::testing {

inline std::string fixture_dir(const std::string& name) {
  return std::string(KEEL_SOURCE_DIR) + "/tests/fixtures/" + name;
}
// The device the in-process servers compute on: KEEL_TEST_DEVICE (cpu, cuda, cuda:N), cpu when unset. The
// GPU machine runs the server tests with KEEL_TEST_DEVICE=cuda (scripts/gpu-build.sh).
inline std::string test_device() {
  const char* d = std::getenv("KEEL_TEST_DEVICE");
  return d && *d ? d : "cpu";
}

inline std::string default_model_dir() {
  return std::string(KEEL_SOURCE_DIR) + "/models/keel-brown-nemotron-h-8m";
}

// Greedy (ties: lowest id), with log p from a float64 log-softmax of the logits and the top-k alternatives.
class ExactGreedy final : public TokenChooser {
 public:
  explicit ExactGreedy(int top) : top_(top) {}
  GeneratedToken choose(std::span<const float> logits, std::span<const int32_t>) override {
    size_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i)
      if (logits[i] > logits[best]) best = i;
    double mx = logits[best], sum = 0;
    for (float x : logits) sum += std::exp(static_cast<double>(x) - mx);
    double lse = mx + std::log(sum);
    GeneratedToken t;
    t.id = static_cast<int32_t>(best);
    t.logprob = static_cast<float>(logits[best] - lse);
    if (top_ > 0) {
      std::vector<int32_t> order(logits.size());
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + top_, order.end(), [&](int32_t a, int32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
      });
      for (int k = 0; k < top_; ++k) t.top.push_back({order[k], static_cast<float>(logits[order[k]] - lse)});
    }
    return t;
  }

 private:
  int top_;
};

// Delegates to a real model; from the `fail_from`-th forward call on (0-based), every forward throws
// Error(out_of_memory), as a pool that keeps refusing would make it.
class FailingModel final : public Model {
 public:
  explicit FailingModel(Model& inner) : inner_(inner) {}
  std::atomic<int64_t> fail_from{-1};  // −1: never
  std::atomic<int64_t> calls{0};
  const std::string& model_type() const override { return inner_.model_type(); }
  int64_t vocab_size() const override { return inner_.vocab_size(); }
  int64_t context_limit() const override { return inner_.context_limit(); }
  int64_t state_bytes(int64_t tokens, int64_t capacity) const override {
    return inner_.state_bytes(tokens, capacity);
  }
  int64_t step_transient_bytes(std::span<const StepShapeItem> step) const override {
    return inner_.step_transient_bytes(step);
  }
  std::unique_ptr<SequenceState> new_state(int64_t capacity) override { return inner_.new_state(capacity); }
  Tensor forward(std::span<const StepItem> step) override {
    int64_t n = calls++;
    if (fail_from >= 0 && n >= fail_from) throw_error(ErrorCode::out_of_memory, "injected: the pool refused");
    return inner_.forward(step);
  }
  std::span<const float> host_logits(const Tensor& logits, std::vector<float>& buffer) const override {
    return inner_.host_logits(logits, buffer);
  }
  Backend* sampling_backend() const override { return inner_.sampling_backend(); }
  bool state_survives_failed_step() const override { return inner_.state_survives_failed_step(); }
  std::unique_ptr<SequenceState> copy_state(const SequenceState& s, int64_t capacity) override {
    return inner_.copy_state(s, capacity);
  }
  bool can_truncate_states() const override { return inner_.can_truncate_states(); }
  bool truncate_state(SequenceState& s, int64_t tokens) override { return inner_.truncate_state(s, tokens); }
  bool checkpoint_state(SequenceState& s) override { return inner_.checkpoint_state(s); }
  int64_t truncation_point(const SequenceState& s, int64_t tokens) const override {
    return inner_.truncation_point(s, tokens);
  }
  int64_t drop_checkpoints(SequenceState& s) override { return inner_.drop_checkpoints(s); }
  bool restore_checkpoint(SequenceState& s) override { return inner_.restore_checkpoint(s); }

 private:
  Model& inner_;
};

struct HarnessOptions {
  std::string model_dir = fixture_dir("qwen3");
  SchedulerConfig scheduler{.n_slots = 2, .ctx_size = 1024, .prefill_chunk_size = 64};
  server::ServerOptions server{};
  int64_t pool_limit = int64_t{2} << 30;  // bytes of the device's pool (test_device())
  int threads = 1;
  bool ready = true;  // set_model() at once
};

class InProcessServer {
 public:
  explicit InProcessServer(HarnessOptions o = {})
      : options_(o),
        compute_(cli::make_compute(test_device(), std::to_string(o.pool_limit), 0, o.threads)),
        pool_(*compute_.pool) {
    loaded_ = models::load_model(o.model_dir, *compute_.be);
    tokenizer_.emplace(tokenizer::Tokenizer::load(o.model_dir));
    chat_template_.emplace(chat::ChatTemplate::from_model_dir(o.model_dir));
    failing_ = std::make_unique<FailingModel>(*loaded_.model);
    engine_ = std::make_unique<Engine>(*failing_, pool_, o.scheduler);
    ctx_.engine = engine_.get();
    ctx_.tokenizer = &*tokenizer_;
    ctx_.chat_template = &*chat_template_;
    ctx_.output_format = chat::OutputFormat{};
    ctx_.model_id = "test-model";
    ctx_.context_tokens = o.scheduler.ctx_size;
    ctx_.message_checkpoints = keeps_prompt_checkpoints(*failing_, o.scheduler);
    if (auto eos = tokenizer_->eos_id()) ctx_.eos_tokens = {*eos};
    ctx_.make_chooser = [](const server::GenerationOptions& g) {
      return std::make_unique<ExactGreedy>(g.logprobs ? g.top_logprobs : 0);
    };
    o.server.host = "127.0.0.1";
    o.server.port = 0;
    http_ = std::make_unique<server::HttpServer>(o.server);
    http_->start();
    if (o.ready) ready();
  }
  ~InProcessServer() {
    http_->stop();
    engine_.reset();
  }

  void ready() { http_->set_model(&ctx_); }
  int port() const { return http_->port(); }
  HttpClient client() const {
    HttpClient c("127.0.0.1", port());
    c.set_read_timeout(120);
    return c;
  }
  EngineStats stats() const { return engine_->stats(); }
  MemoryPool& pool() { return pool_; }
  const tokenizer::Tokenizer& tokenizer() const { return *tokenizer_; }
  server::ModelContext& context() { return ctx_; }
  server::HttpServer& http() { return *http_; }
  FailingModel& model() { return *failing_; }

  // What the pool holds with no request: the model, plus what the prompt cache keeps.
  static int64_t idle_bytes(const EngineStats& s) {
    return s.baseline_bytes + s.scheduler.prompt_cache_bytes;
  }

  // Waits until the engine is idle and the pool is back at its baseline (or the timeout passes).
  bool wait_idle(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      EngineStats s = engine_->stats();
      if (s.running == 0 && s.waiting == 0 && pool_.in_use() == idle_bytes(s)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  HarnessOptions options_;
  cli::Compute compute_;  // the pool and backend of test_device()
  MemoryPool& pool_;
  models::LoadedModel loaded_;
  std::optional<tokenizer::Tokenizer> tokenizer_;
  std::optional<chat::ChatTemplate> chat_template_;
  std::unique_ptr<FailingModel> failing_;
  std::unique_ptr<Engine> engine_;
  server::ModelContext ctx_;
  std::unique_ptr<server::HttpServer> http_;
};

inline server::Json parse(const std::string& s) {
  return server::Json::parse(s);
}

}  // namespace keel::testing
