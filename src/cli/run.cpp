// keel run [-m DIR] (-p TEXT | --prompt-ids 1,2,3) [-n N] [--temp T] [--top-p P] [--seed S] [--chat]
//          [--prefill-chunk-size N] [--ctx N] [--json] [-t N] [--memory-limit X]
// One request through the Scheduler (the server's path): the text streams to stdout as it is generated;
// prompt and generation speed go to stderr at the end. --json prints {"ids": [...], "text": "..."} for the
// generated tokens only (the stop token's id included, special tokens left out of the text), once done.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "chat/chat_template.h"
#include "cli/commands.h"
#include "cli/model_session.h"
#include "core/error.h"
#include "engine/sampler.h"
#include "engine/scheduler.h"
#include "load/generation_config.h"
#include "tokenizer/stream_decoder.h"

namespace keel::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct RunArgs {
  SessionOptions session;
  std::string prompt;
  std::vector<int32_t> prompt_ids;
  int64_t n_predict = 128;
  float temperature = 0.0f;
  float top_p = 1.0f;
  uint64_t seed = 0;
  bool chat = false;
  int64_t prefill_chunk = 512;
  int64_t ctx = 0;  // 0: the model's max positions (or prompt + n when it states none)
  bool json = false;
};

// Streams tokens to stdout (unless --json) and keeps what the summary needs.
class RunSink final : public RequestSink {
 public:
  RunSink(const tokenizer::Tokenizer* tok, bool stream) : tok_(tok), stream_(stream && tok) {
    if (tok_) decoder_ = std::make_unique<tokenizer::StreamDecoder>(*tok_, /*skip_special=*/true);
  }
  bool on_token(const GeneratedToken& t) override {
    if (ids.empty()) first_token = Clock::now();
    last_token = Clock::now();
    ids.push_back(t.id);
    if (stream_) {
      std::string piece = decoder_->step(t.id);
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  }
  void on_finish(FinishReason r, const Error* e) override {
    reason = r;
    if (e) error = std::make_unique<Error>(*e);
    if (stream_) {
      std::string rest = decoder_->flush();
      std::fwrite(rest.data(), 1, rest.size(), stdout);
      std::fputc('\n', stdout);
      std::fflush(stdout);
    }
  }
  std::vector<int32_t> ids;
  Clock::time_point first_token, last_token;
  FinishReason reason = FinishReason::error;
  std::unique_ptr<Error> error;

 private:
  const tokenizer::Tokenizer* tok_;
  bool stream_;
  std::unique_ptr<tokenizer::StreamDecoder> decoder_;
};

// eos ids: config.json's, generation_config.json's (one id or a list) and the tokenizer's.
std::vector<int32_t> stop_tokens(const ModelSession& s, const std::string& dir) {
  std::set<int32_t> ids;
  for (int64_t id : s.loaded.config.eos_token_ids) ids.insert(static_cast<int32_t>(id));
  for (int32_t id : load_generation_config(dir).eos_token_ids) ids.insert(id);
  if (s.tok && s.tok->eos_id()) ids.insert(*s.tok->eos_id());
  return {ids.begin(), ids.end()};
}

void run(const RunArgs& a) {
  if (a.prompt.empty() == a.prompt_ids.empty())
    throw_error(ErrorCode::invalid_argument, "run: give exactly one of -p/--prompt and --prompt-ids");
  if (a.chat && !a.prompt_ids.empty())
    throw_error(ErrorCode::invalid_argument, "run: --chat needs -p/--prompt text");
  ModelSession s = open_session(a.session, !a.prompt.empty());
  Model& model = s.model();

  std::vector<int32_t> prompt = a.prompt_ids;
  if (a.chat) {
    chat::ChatTemplate tmpl = chat::ChatTemplate::from_model_dir(s.dir);
    chat::ChatInputs in;
    in.messages.push_back({{"role", "user"}, {"content", a.prompt}});
    const std::string text = tmpl.render(in);
    prompt = s.tok->encode(text, {.allow_special = true, .add_special_tokens = false});
  } else if (!a.prompt.empty()) {
    prompt = s.tok->encode(a.prompt, {.allow_special = false, .add_special_tokens = true});
  }
  for (int32_t id : prompt)
    if (id < 0 || id >= model.vocab_size())
      throw_error(ErrorCode::invalid_argument, "run: token id {} is outside the model's vocabulary of {}", id,
                  model.vocab_size());

  SchedulerConfig sc;
  sc.n_slots = 1;
  const int64_t want = static_cast<int64_t>(prompt.size()) + a.n_predict;
  sc.ctx_size = a.ctx > 0 ? a.ctx : model.context_limit() > 0 ? model.context_limit() : want;
  sc.prefill_chunk_size = a.prefill_chunk;
  Scheduler sched(model, *s.pool, sc);

  auto sink = std::make_shared<RunSink>(s.tok.get(), !a.json);
  Request req;
  req.prompt = prompt;
  req.max_new_tokens = a.n_predict;
  req.stop_tokens = stop_tokens(s, s.dir);
  SamplerConfig smp;
  smp.params.temperature = a.temperature;
  smp.params.top_p = a.top_p;
  smp.seed = a.seed;
  req.chooser = make_sampler(s.host_backend(), smp);
  req.sink = sink;
  const Clock::time_point start = Clock::now();
  sched.submit(std::move(req));
  sched.run_until_idle();
  if (sink->error) throw Error(sink->error->code(), sink->error->what());

  if (a.json) {
    nlohmann::json out;
    out["ids"] = sink->ids;
    out["text"] = s.tok ? s.tok->decode(sink->ids, /*skip_special=*/true) : "";
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  const auto secs = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  const double t_prompt = sink->ids.empty() ? secs(Clock::now() - start) : secs(sink->first_token - start);
  const double t_gen = sink->ids.size() > 1 ? secs(sink->last_token - sink->first_token) : 0.0;
  fmt::print(
      stderr,
      "keel: prompt {} tokens in {:.3f} s ({:.1f} tokens/s); generated {} tokens, {:.1f} tokens/s ({})\n",
      prompt.size(), t_prompt, t_prompt > 0 ? double(prompt.size()) / t_prompt : 0.0, sink->ids.size(),
      t_gen > 0 ? double(sink->ids.size() - 1) / t_gen : 0.0, finish_reason_name(sink->reason));
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Generate text from a prompt (one request through the scheduler)");
  auto a = std::make_shared<RunArgs>();
  add_session_options(*cmd, a->session);
  cmd->add_option("-p,--prompt", a->prompt, "Prompt text");
  cmd->add_option("--prompt-ids", a->prompt_ids, "Prompt as token ids: 1,2,3")->delimiter(',');
  cmd->add_option("-n,--n-predict", a->n_predict, "Tokens to generate at most (default 128)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--temp", a->temperature, "Sampling temperature; 0 is greedy (default 0)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-p", a->top_p,
                  "Nucleus sampling: keep the smallest set reaching this probability (default 1)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--seed", a->seed, "Sampling seed (default 0)");
  cmd->add_flag("--chat", a->chat, "Wrap the prompt in the model's chat template as one user message");
  cmd->add_option("--prefill-chunk-size", a->prefill_chunk, "Prompt tokens per step at most (default 512)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--ctx", a->ctx, "Context length per sequence (default: the model's max positions)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", a->json, "Print {\"ids\": [...], \"text\": \"...\"} for the generated tokens only");
  cmd->callback([a] { run(*a); });
}

}  // namespace keel::cli
