// keel perplexity -m DIR (--file F | --ids-file F) [--ctx N] [--prefill-chunk-size N] [--bos-id N | --no-bos]
//                 [--json] [-t N] [--memory-limit X]
// Scores text under the model (models/scoring.h). Documents: --file is one document (its text encoded without
// special tokens); --ids-file holds whitespace-separated ids, one document per line. Each document is cut
// into windows of --ctx tokens, each window run from a fresh state: [BOS] + (ctx − 1) document tokens, so
// every token is scored once (the BOS is the config's bos_token_id, else the tokenizer's; --no-bos drops it,
// and then the first token of each window is context only). ppl = exp(mean nll). --json prints {"nll": [...],
// "argmax": [...], "ppl": x}: nll[i] = −log p(scored token i | what precedes it in its window), argmax[i] the
// model's most likely token at that position.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/model_session.h"
#include "core/error.h"
#include "models/scoring.h"

namespace keel::cli {

namespace {

struct PerplexityArgs {
  SessionOptions session;
  std::string file, ids_file;
  int64_t ctx = 512;
  int64_t chunk = 512;
  int64_t bos_id = -1;
  bool no_bos = false;
  bool json = false;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorCode::invalid_argument, "perplexity: cannot read {}", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::vector<int32_t>> read_id_documents(const std::string& path, int64_t vocab) {
  std::istringstream lines(read_text(path));
  std::vector<std::vector<int32_t>> docs;
  std::string line;
  for (int64_t line_no = 1; std::getline(lines, line); ++line_no) {
    std::istringstream words(line);
    std::vector<int32_t> doc;
    std::string w;
    while (words >> w) {
      size_t used = 0;
      long long v = -1;
      try {
        v = std::stoll(w, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != w.size() || v < 0 || v >= vocab)
        throw_error(ErrorCode::invalid_argument,
                    "{}:{}: \"{}\" is not a token id of this model (vocabulary {})", path, line_no, w, vocab);
      doc.push_back(static_cast<int32_t>(v));
    }
    if (!doc.empty()) docs.push_back(std::move(doc));
  }
  return docs;
}

void run_perplexity(const PerplexityArgs& a) {
  if (a.file.empty() == a.ids_file.empty())
    throw_error(ErrorCode::invalid_argument, "perplexity: give exactly one of --file and --ids-file");
  ModelSession s = open_session(a.session, !a.file.empty());
  std::vector<std::vector<int32_t>> docs;
  if (!a.file.empty())
    docs.push_back(s.tok->encode(read_text(a.file), {.allow_special = false, .add_special_tokens = false}));
  else
    docs = read_id_documents(a.ids_file, s.model().vocab_size());

  models::ScoreOptions opt;
  opt.ctx = a.ctx;
  opt.chunk = a.chunk;
  if (a.bos_id >= 0) {
    opt.bos = static_cast<int32_t>(a.bos_id);
  } else if (!a.no_bos) {
    if (s.loaded.config.bos_token_id)
      opt.bos = static_cast<int32_t>(*s.loaded.config.bos_token_id);
    else if (s.tok && s.tok->bos_id())
      opt.bos = *s.tok->bos_id();
  }
  models::Scores scores;
  const auto start = std::chrono::steady_clock::now();
  for (const auto& d : docs) models::score_document(s.model(), d, opt, scores);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double sum = 0;
  for (double v : scores.nll) sum += v;
  const double ppl = scores.nll.empty() ? std::nan("") : std::exp(sum / double(scores.nll.size()));
  if (a.json) {
    nlohmann::json out;
    out["nll"] = scores.nll;
    out["argmax"] = scores.argmax;
    out["ppl"] = ppl;
    std::cout << out.dump() << "\n";
  } else {
    std::cout << fmt::format("perplexity {:.4f} over {} tokens ({} documents, windows of {} tokens, {})\n",
                             ppl, scores.nll.size(), docs.size(), a.ctx,
                             opt.bos ? fmt::format("BOS {}", *opt.bos) : std::string("no BOS"));
  }
  fmt::print(stderr, "keel: scored {} tokens in {:.2f} s ({:.1f} tokens/s)\n", scores.nll.size(), secs,
             secs > 0 ? double(scores.nll.size()) / secs : 0.0);
}

}  // namespace

void add_perplexity_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("perplexity", "Score a text under the model: per-token NLL and perplexity");
  auto a = std::make_shared<PerplexityArgs>();
  add_session_options(*cmd, a->session);
  cmd->add_option("--file", a->file, "Text file: one document, encoded without special tokens");
  cmd->add_option("--ids-file", a->ids_file, "Token ids, whitespace-separated; one document per line");
  cmd->add_option("--ctx", a->ctx,
                  "Tokens per window, BOS included; each window starts from a fresh state (512)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--prefill-chunk-size", a->chunk, "Tokens per forward step (512)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--bos-id", a->bos_id, "Token prepended to every window (default: the model's BOS)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--no-bos", a->no_bos, "Prepend nothing: the first token of each window is context only");
  cmd->add_flag("--json", a->json, "Print {\"nll\": [...], \"argmax\": [...], \"ppl\": x}");
  cmd->callback([a] { run_perplexity(*a); });
}

}  // namespace keel::cli
