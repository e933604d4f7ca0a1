// keel bench -m DIR [--random-weights [--quantize B [--group-size G]]] [--prompt-lengths 1024,4096,…] [--gen
// N] [--prefill-chunk-size N] [--depth D | --parallel P,…]
//            [--memory-limit X] [-t N] [--seed S] [--json FILE] [--plot FILE.png]
// For each prompt length L: a fresh sequence prefilled through the Scheduler (the server's path), then N
// decode tokens. --depth D (llama-bench's -d): the sequence first holds D tokens of context (prefilled in the
// same request, untimed: D a multiple of the chunk, so the L new tokens start on a step boundary), and the
// row's prefill figure is L new tokens after D, its decode after D + L. --parallel P,…: a row per P and
// length, P sequences of L tokens each at once (P slots), prefill P·L tokens over the time to the last first
// token, decode the tokens of all P from then on over the time to the last (aggregate tok/s: the scheduler's
// batched decode steps). Each row: prefill and decode tokens/s, and memory as the pool and the kernel see it:
//   loaded      the pool's bytes before the row (weights: reserved when mmap'd, allocated when random)
//   peak        the pool's high-water mark over the prefill steps
//   VmHWM       the process's peak resident set over the prefill (reset at the row's start, after
//               malloc_trim gave freed heap back to the kernel)
//   state       the sequence's persistent state (KV for its capacity, SSM/conv states)
//   transient   peak − loaded − state: what the steps themselves used
//   planned     the largest transient the scheduler planned for a prefill step (Model::step_transient_bytes)
//   VmHWM tr.   VmHWM − VmRSS at the row's start − state: the transient as the kernel saw it
//   outside     on a GPU: the most device memory taken outside the pool during the row (cudaMemGetInfo's
//               free bytes at the row's start less those after each step; 0 when everything is in the pool)
// --random-weights needs only config.json (models/random_weights.h); --quantize B packs its matrices in MLX's
// affine format (an MLX-quantized folder is benched as it is, with -m).
#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "cli/bench_plot.h"
#include "cli/commands.h"
#include "cli/model_session.h"
#include "core/error.h"
#include "core/sysmem.h"
#include "engine/scheduler.h"
#include "models/loader.h"
#include "models/random_weights.h"

namespace keel::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct BenchArgs {
  std::string dir;
  bool random_weights = false;
  int quantize_bits = 0, group_size = 64;  // --quantize B [--group-size G]: random weights MLX-packed
  std::vector<int64_t> prompt_lengths{1024, 2048, 4096};
  int64_t gen = 16;
  int64_t depth = 0;  // --depth: context tokens before the measured prompt (a multiple of the chunk)
  std::vector<int> parallel{1};  // --parallel: sequences at once (a row per value and length)
  int64_t prefill_chunk = 512;
  std::string memory_limit;
  int threads = 0;
  std::string device = "cpu";
  std::string cache_type = "f32";  // --cache-type
  uint64_t seed = 1;
  std::string json_path, plot_path;
};

struct Row {
  int64_t prompt_tokens = 0;  // new tokens per sequence
  int64_t depth = 0;          // context before them
  int parallel = 1;           // sequences
  double prefill_tok_s = 0, decode_tok_s = 0;
  int64_t loaded = 0, peak = 0, process_peak = 0, process_before = 0, state = 0, planned = 0;
  int64_t measured_max = 0;  // largest per-step transient the scheduler measured in the prefill
  int64_t outside = -1;      // device bytes taken outside the pool (−1: a CPU)
  int64_t prefill_steps = 0, shrunk_steps = 0, failed_steps = 0, plan_exceeded = 0;
  std::string error;  // the row's refusal or failure; the numbers are then partial
  int64_t transient() const { return peak - loaded - state; }
  int64_t process_transient() const { return process_peak - process_before - state; }
};

// Greedy: on the model's backend through prepare() (as serve's sampler: only the ids cross), else on the
// host row.
class ArgmaxChooser final : public TokenChooser {
 public:
  bool prepare(std::span<const int32_t>, ops::RowSampling& row) override {
    row.params.temperature = 0;
    return true;
  }
  GeneratedToken choose(std::span<const float> logits, std::span<const int32_t>) override {
    GeneratedToken t;
    t.id = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    return t;
  }
};

class BenchSink final : public RequestSink {
 public:
  bool on_token(const GeneratedToken&) override {
    const Clock::time_point now = Clock::now();
    if (n_tokens++ == 0) first = now;
    last = now;
    times.push_back(now);
    return true;
  }
  std::vector<Clock::time_point> times;  // each token's arrival
  void on_finish(FinishReason, const Error* e) override {
    if (e) error = e->what();
  }
  int64_t n_tokens = 0;
  Clock::time_point first, last;
  std::string error;
};

// Prompt ids spread over the vocabulary, the same for every run with the same seed.
std::vector<int32_t> bench_prompt(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int32_t& id : ids) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    id = static_cast<int32_t>(x % static_cast<uint64_t>(vocab));
  }
  return ids;
}

Row bench_one(Model& model, MemoryPool& pool, const BenchArgs& a, int64_t L, int P) {
  Row row;
  const int64_t free0 = device_free_bytes(a.device);
  if (free0 >= 0) row.outside = 0;
  row.prompt_tokens = L;
  row.depth = a.depth;
  row.parallel = P;
  row.loaded = pool.in_use();
  const int64_t ctx = a.depth + L + a.gen + 1;
  SchedulerConfig sc;
  sc.n_slots = P;
  sc.ctx_size = ctx;
  sc.prefill_chunk_size = a.prefill_chunk;
  sc.prompt_cache_entries = 0;  // every row starts cold and ends at the baseline
  Scheduler sched(model, pool, sc);
  std::vector<std::shared_ptr<BenchSink>> sinks;
  std::vector<Request> reqs;
  for (int64_t s = 0; s < P; ++s) {
    sinks.push_back(std::make_shared<BenchSink>());
    Request req;
    // one prompt per sequence (no prefix shared between them, and none with another row's)
    req.prompt =
        bench_prompt(a.depth + L, model.vocab_size(),
                     a.seed + static_cast<uint64_t>(a.depth + L) + 1000003ull * static_cast<uint64_t>(s));
    req.max_new_tokens = a.gen + 1;  // the prefill's token, then `gen` decode tokens
    req.chooser = std::make_unique<ArgmaxChooser>();
    req.sink = sinks.back();
    reqs.push_back(std::move(req));
  }
  row.state = P * model.state_bytes(a.depth + L, ctx);

  malloc_trim(0);
  reset_process_peak_rss();
  row.process_before = process_rss();
  const Clock::time_point start = Clock::now();
  try {
    for (Request& r : reqs) sched.submit(std::move(r));
  } catch (const Error& e) {
    row.error = e.what();
    return row;
  }
  const auto all_started = [&] {
    for (const auto& k : sinks)
      if (k->n_tokens == 0 && k->error.empty()) return false;
    return true;
  };
  // --depth: the new tokens' prefill starts after the depth / chunk steps that hold the context.
  const int64_t depth_steps = a.depth / a.prefill_chunk;
  Clock::time_point new_start = start;
  bool prefilling = true;
  int64_t steps = 0;
  while (sched.step()) {
    ++steps;
    if (steps == depth_steps) {
      new_start = Clock::now();
      if (sched.stats().shrunk_steps > 0)
        row.error = "a context step was cut to fit memory: the depth does not end on a step boundary";
    }
    if (free0 >= 0) row.outside = std::max(row.outside, free0 - device_free_bytes(a.device));
    if (!prefilling) continue;
    const SchedulerStats& st = sched.stats();
    row.peak = std::max(row.peak, pool.peak());
    row.planned = std::max(row.planned, st.last_planned_transient);
    row.measured_max = std::max(row.measured_max, st.last_measured_transient);
    if (all_started()) {
      prefilling = false;
      row.process_peak = process_peak_rss();
    }
  }
  const SchedulerStats& st = sched.stats();
  row.prefill_steps = st.steps;
  row.shrunk_steps = st.shrunk_steps;
  row.failed_steps = st.failed_steps;
  row.plan_exceeded = st.plan_exceeded;
  for (const auto& k : sinks)
    if (!k->error.empty()) row.error += (row.error.empty() ? "" : "; ") + k->error;
  const auto secs = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  Clock::time_point first = start, last = start;  // the last sequence's first token; the last token
  int64_t decode_steps = 0;
  bool started = true;
  for (const auto& k : sinks) {
    if (k->n_tokens == 0) {
      started = false;
      continue;
    }
    first = std::max(first, k->first);
    last = std::max(last, k->last);
    decode_steps = std::max(decode_steps, k->n_tokens - 1);
  }
  if (started) {
    row.prefill_tok_s = static_cast<double>(P * L) / secs(first - new_start);
    int64_t decoded = 0;  // tokens of every sequence after `first` (each a decode step's)
    for (const auto& k : sinks)
      for (const Clock::time_point t : k->times) decoded += t > first;
    if (decoded > 0 && last > first) row.decode_tok_s = static_cast<double>(decoded) / secs(last - first);
    row.prefill_steps -= decode_steps;  // the steps after the last first token decode (P at a time)
  }
  if (pool.in_use() != row.loaded)
    row.error += fmt::format("{}pool holds {} bytes after the row, {} before", row.error.empty() ? "" : "; ",
                             pool.in_use(), row.loaded);
  return row;
}

nlohmann::json row_json(const Row& r) {
  nlohmann::json j = {{"prompt_tokens", r.prompt_tokens},
                      {"depth", r.depth},
                      {"parallel", r.parallel},
                      {"prefill_tok_s", r.prefill_tok_s},
                      {"decode_tok_s", r.decode_tok_s},
                      {"loaded_bytes", r.loaded},
                      {"peak_bytes", r.peak},
                      {"process_peak_bytes", r.process_peak},
                      {"process_rss_before_bytes", r.process_before},
                      {"process_transient_bytes", r.process_transient()},
                      {"state_bytes", r.state},
                      {"transient_bytes", r.transient()},
                      {"planned_transient_bytes", r.planned},
                      {"measured_step_transient_bytes", r.measured_max},
                      {"device_outside_pool_bytes", r.outside},
                      {"prefill_steps", r.prefill_steps},
                      {"shrunk_steps", r.shrunk_steps},
                      {"failed_steps", r.failed_steps},
                      {"plan_exceeded", r.plan_exceeded}};
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

std::string mib(int64_t bytes) {
  return fmt::format("{:.2f}", static_cast<double>(bytes) / (1 << 20));
}

void print_table(const std::vector<Row>& rows) {
  if (!rows.empty() && rows[0].depth > 0)
    fmt::print("after {} tokens of context: prefill of the new tokens, decode after both\n", rows[0].depth);
  // seqs: sequences at once (--parallel); their tokens/s are the aggregate, their memory that of all of them
  const char* head =
      "{:>4} {:>8} {:>11} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>8}\n";
  fmt::print(fmt::runtime(head), "seqs", "prompt", "prefill t/s", "decode t/s", "loaded", "peak", "VmHWM",
             "state", "transient", "planned", "VmHWM tr.", "steps", "outside");
  fmt::print(fmt::runtime(head), "", "tokens", "", "", "MiB", "MiB", "MiB", "MiB", "MiB", "MiB", "MiB", "",
             "MiB");
  for (const Row& r : rows) {
    if (r.prefill_steps == 0 && !r.error.empty()) {
      fmt::print("{:>4} {:>8} refused: {}\n", r.parallel, r.prompt_tokens, r.error);
      continue;
    }
    fmt::print(
        "{:>4} {:>8} {:>11.1f} {:>10.2f} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>8}\n",
        r.parallel, r.prompt_tokens, r.prefill_tok_s, r.decode_tok_s, mib(r.loaded), mib(r.peak),
        mib(r.process_peak), mib(r.state), mib(r.transient()), mib(r.planned), mib(r.process_transient()),
        r.prefill_steps, r.outside < 0 ? "-" : mib(r.outside));
    if (!r.error.empty()) fmt::print("{:>13} error: {}\n", "", r.error);
  }
  const Row* lo = nullptr;
  const Row* hi = nullptr;
  for (const Row& r : rows)
    if (r.error.empty() && r.transient() > 0 && r.parallel == rows[0].parallel) (lo ? hi : lo) = &r;
  if (lo && hi)
    fmt::print("transient {} tokens → {} tokens: ×{:.3f}\n", lo->prompt_tokens, hi->prompt_tokens,
               static_cast<double>(hi->transient()) / static_cast<double>(lo->transient()));
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

std::string command_line(const BenchArgs& a) {
  std::string s =
      "keel bench -m " + a.dir + (a.random_weights ? " --random-weights" : "") +
      (a.quantize_bits ? fmt::format(" --quantize {} --group-size {}", a.quantize_bits, a.group_size) : "") +
      " --prompt-lengths ";
  for (size_t i = 0; i < a.prompt_lengths.size(); ++i)
    s += (i ? "," : "") + std::to_string(a.prompt_lengths[i]);
  s += fmt::format(" --gen {} --prefill-chunk-size {}", a.gen, a.prefill_chunk);
  if (a.depth > 0) s += fmt::format(" --depth {}", a.depth);
  if (a.parallel != std::vector<int>{1}) {
    s += " --parallel ";
    for (size_t i = 0; i < a.parallel.size(); ++i) s += (i ? "," : "") + std::to_string(a.parallel[i]);
  }
  if (!a.memory_limit.empty()) s += " --memory-limit " + a.memory_limit;
  if (a.threads > 0) s += fmt::format(" -t {}", a.threads);
  if (a.device != "cpu") s += " --device " + a.device;
  if (a.cache_type != "f32") s += " --cache-type " + a.cache_type;
  return s;
}

void bench(const BenchArgs& a) {
  const MemoryFacts facts = read_memory_facts();
  Compute compute = make_compute(a.device, a.memory_limit, 0, a.threads);
  MemoryPool& pool = *compute.pool;
  Backend& be = *compute.be;
  const int64_t limit = pool.limit();
  const DType kv = parse_cache_type(a.cache_type);
  check_cache_type(be, kv);
  const Clock::time_point t0 = Clock::now();
  models::LoadedModel m =
      a.random_weights
          ? models::random_weights_model(a.dir, be, a.seed, QuantParams{a.quantize_bits, a.group_size}, kv)
          : models::load_model(a.dir, be, kv);
  const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
  Model& model = *m.model;
  check_startup_memory(model, pool);
  fmt::print(stderr,
             "keel bench: {}: {} ({} layers, {:.2f} M parameters{}), loaded {} in {:.1f} s; limit {}; {}\n",
             a.dir, model.model_type(), m.config.num_layers(),
             static_cast<double>(m.weights->parameter_count()) / 1e6,
             a.random_weights ? (a.quantize_bits ? fmt::format(", random weights packed at {} bits, group {}",
                                                               a.quantize_bits, a.group_size)
                                                 : std::string(", random weights"))
                              : std::string(),
             format_bytes(pool.in_use()), load_s, format_bytes(limit), be.name());

  // Warm-up, not reported: a short request touches the mmap'd weights and the workers' stacks once, so the
  // first row's process peak (VmHWM − RSS at its start) does not count them as transient.
  {
    BenchArgs warm = a;
    warm.gen = 1;
    warm.depth = 0;
    warm.parallel = {1};
    bench_one(model, pool, warm, std::min<int64_t>(a.prefill_chunk, 64), 1);
  }
  std::vector<Row> rows;
  for (const int P : a.parallel)
    for (int64_t L : a.prompt_lengths) {
      if (model.context_limit() > 0 && a.depth + L + a.gen + 1 > model.context_limit())
        fmt::print(
            stderr,
            "keel bench: note: {} tokens is past the model's {} positions (memory is still measured)\n",
            a.depth + L + a.gen + 1, model.context_limit());
      rows.push_back(bench_one(model, pool, a, L, P));
      const Row& r = rows.back();
      if (r.prefill_steps == 0 && !r.error.empty())
        fmt::print(stderr, "keel bench: {} tokens: refused: {}\n", L, r.error);
      else
        fmt::print(stderr,
                   "keel bench: {} tokens: prefill {:.1f} tok/s, peak {}, transient {} (planned {}){}\n", L,
                   r.prefill_tok_s, format_bytes(r.peak), format_bytes(r.transient()),
                   format_bytes(r.planned), r.error.empty() ? "" : " — " + r.error);
    }
  print_table(rows);

  if (!a.json_path.empty()) {
    nlohmann::json out;
    out["command"] = command_line(a);
    out["machine"] = {{"cpu", cpu_model_name()},
                      {"cores", std::thread::hardware_concurrency()},
                      {"backend", be.name()},
                      {"mem_total_bytes", facts.mem_total},
                      {"mem_available_bytes", facts.mem_available}};
    out["model"] = {{"dir", a.dir},
                    {"model_type", model.model_type()},
                    {"layers", m.config.num_layers()},
                    {"parameters", m.weights->parameter_count()},
                    {"weight_bytes", m.weights->total_bytes()},
                    {"random_weights", a.random_weights},
                    {"quantize_bits", a.quantize_bits ? nlohmann::json(a.quantize_bits) : nlohmann::json()},
                    {"group_size", a.quantize_bits ? nlohmann::json(a.group_size) : nlohmann::json()}};
    out["settings"] = {{"gen", a.gen},
                       {"prefill_chunk_size", a.prefill_chunk},
                       {"depth", a.depth},
                       {"parallel", a.parallel},
                       {"memory_limit_bytes", limit},
                       {"threads", be.threads() ? be.threads()->size() : 0}};
    out["rows"] = nlohmann::json::array();
    for (const Row& r : rows) out["rows"].push_back(row_json(r));
    std::ofstream f(a.json_path);
    f << out.dump(2) << "\n";
    if (!f) throw_error(ErrorCode::invalid_argument, "--json: cannot write {}", a.json_path);
  }
  if (!a.plot_path.empty()) {
    std::vector<PlotSeries> series(4);
    series[0].label = "peak (pool)";
    series[1].label = "VmHWM (process)";
    series[2].label = "transient (pool)";
    series[3].label = "planned transient";
    series[3].width = 1;  // drawn over the measured transient, which it equals when the plan is exact
    for (const Row& r : rows) {
      if (r.prefill_steps == 0) continue;
      const double x = static_cast<double>(r.prompt_tokens);
      const int64_t ys[4] = {r.peak, r.process_peak, r.transient(), r.planned};
      for (int i = 0; i < 4; ++i)
        series[static_cast<size_t>(i)].points.push_back({x, static_cast<double>(ys[i]) / (1 << 20)});
    }
    write_plot_png(a.plot_path,
                   fmt::format("{} prefill memory, chunk {}", model.model_type(), a.prefill_chunk),
                   "prompt tokens", "MiB", series);
  }
  for (const Row& r : rows)
    if (!r.error.empty())
      throw_error(ErrorCode::out_of_memory, "bench: the {}-token row did not complete: {}", r.prompt_tokens,
                  r.error);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("bench", "Prefill and decode speed and memory (pool and process) per prompt length");
  auto a = std::make_shared<BenchArgs>();
  cmd->add_option(
      "-m,--model", a->dir,
      "Hugging Face model folder (config.json alone with --random-weights); default: the bundled model");
  cmd->add_flag("--random-weights", a->random_weights,
                "Build the model from config.json with random weights");
  cmd->add_option(
         "--quantize", a->quantize_bits,
         "With --random-weights: pack every matrix in MLX's affine format at this many bits (2, 3, 4, 5, "
         "6, 8)")
      ->check(CLI::IsMember({2, 3, 4, 5, 6, 8}));
  cmd->add_option("--group-size", a->group_size, "With --quantize: elements per scale and bias (32, 64, 128)")
      ->check(CLI::IsMember({32, 64, 128}));
  cmd->add_option("--prompt-lengths", a->prompt_lengths, "Prompt lengths to measure (default 1024,2048,4096)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  cmd->add_option("--gen", a->gen, "Decode tokens after each prefill (default 16)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--prefill-chunk-size", a->prefill_chunk, "Prompt tokens per step at most (default 512)")
      ->check(CLI::PositiveNumber);
  cmd->add_option(
         "--depth", a->depth,
         "Context tokens before each row's prompt (llama-bench -d; a multiple of the prefill chunk): "
         "prefill is then of the new tokens after them, decode after both")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--parallel", a->parallel,
                  "Sequences at once (slots), a row per value and length (default 1): prefill and decode "
                  "figures are their aggregate tokens/s")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
  cmd->add_option(
      "--memory-limit", a->memory_limit,
      "Memory budget: bytes (\"12GiB\") or a fraction of RAM (\"0.5\"); default: what is free now, less a "
      "margin");
  cmd->add_option("-t,--threads", a->threads, "CPU threads (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--device", a->device, "cpu or cuda[:N]")->capture_default_str();
  add_cache_type_option(*cmd, a->cache_type);
  cmd->add_option("--seed", a->seed, "Seed of the prompts and the random weights (default 1)");
  cmd->add_option("--json", a->json_path,
                  "Also write the rows, machine, model and command as JSON to this file");
  cmd->add_option("--plot", a->plot_path, "Draw peak and transient memory against prompt length to this PNG");
  cmd->callback([a] {
    if (a->dir.empty()) a->dir = default_model_dir();
    if (a->depth % a->prefill_chunk != 0)
      throw_error(ErrorCode::invalid_argument,
                  "bench: --depth {} is not a multiple of --prefill-chunk-size {} (the new tokens must start "
                  "on a step boundary to be timed alone)",
                  a->depth, a->prefill_chunk);
    if (a->depth > 0 && a->parallel != std::vector<int>{1})
      throw_error(ErrorCode::invalid_argument, "bench: --depth with one sequence (--parallel 1) only");
    if (a->quantize_bits && !a->random_weights)
      throw_error(ErrorCode::invalid_argument,
                  "bench: --quantize makes random packed weights (with --random-weights); for a model's own "
                  "weights, bench its MLX-quantized folder");
    // Under a hard limit (ulimit -v, a cgroup) the C++ runtime's own allocations can fail too: a clean error.
    try {
      bench(*a);
    } catch (const std::bad_alloc&) {
      throw_error(ErrorCode::out_of_memory,
                  "bench: the system refused memory (std::bad_alloc) outside the pool");
    } catch (const std::system_error& e) {
      throw_error(ErrorCode::out_of_memory,
                  "bench: the system refused a thread or memory (a hard limit?): {}", e.what());
    }
  });
}

}  // namespace keel::cli
