// keel serve: load a model folder and serve it over the OpenAI-compatible HTTP API (src/server/). Flags
// follow llama-server where they overlap, so a desktop app's launch line works unchanged:
//   keel serve --model <dir> --ctx-size 8192 --jinja --host 127.0.0.1 --port 39913 --alias repro --parallel 1
// The port is bound first, so /health answers 503 while the model loads and 200 once requests are served.
#include <fcntl.h>
#include <fmt/format.h>
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <thread>

#include "chat/parsers/output_format.h"
#include "cli/commands.h"
#include "cli/model_session.h"
#include "core/error.h"
#include "core/json_depth.h"
#include "core/sysmem.h"
#include "core/text_file.h"
#include "engine/engine.h"
#include "engine/sampler.h"
#include "load/generation_config.h"
#include "load/model_file_checks.h"
#include "server/http_server.h"

namespace keel::cli {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// Sequences at once: each takes a slot and 8 HTTP workers (threads), so a typo must not start millions.
constexpr int kMaxParallel = 256;

struct ServeFlags {
  std::string model;
  int64_t ctx_size = 4096;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string alias;
  int parallel = 1;
  bool jinja = false;  // accepted for llama-server compatibility: templates are always used
  int64_t prefill_chunk_size = 512;
  std::string memory_limit;
  std::string api_key;
  std::string device = "cpu";
  int threads = 0;
  std::string chat_template;
  bool no_prompt_cache = false;
  bool metrics = false;
  bool check_tensors = false;
  std::string cache_type = "f32";  // --cache-type
};

std::string read_text(const fs::path& path) {
  return read_regular_file(path.string(), 64 << 20);
}

Json read_json_or_empty(const fs::path& path) {
  std::error_code ec;
  if (fs::symlink_status(path, ec).type() == fs::file_type::not_found) return Json::object();
  std::string text = read_text(path);
  if (json_too_deep(text))
    throw_error(ErrorCode::invalid_file, "{}: JSON nests deeper than {} levels", path.string(),
                kMaxJsonDepth);
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw_error(ErrorCode::invalid_file, "{}: not a JSON object", path.string());
  return j;
}

// The template's source text, for detect_output_format (which reads the markers a template prints); the same
// order as chat::ChatTemplate::from_model_dir. A template list gives all its entries.
std::string chat_template_source(const std::string& dir, const std::string& file) {
  if (!file.empty()) return read_text(file);
  std::error_code ec;
  if (fs::symlink_status(fs::path(dir) / "chat_template.jinja", ec).type() != fs::file_type::not_found)
    return read_text(fs::path(dir) / "chat_template.jinja");
  Json config = read_json_or_empty(fs::path(dir) / "tokenizer_config.json");
  auto it = config.find("chat_template");
  if (it == config.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  std::string all;
  if (it->is_array())
    for (const auto& e : *it)
      if (e.is_object() && e.contains("template") && e["template"].is_string())
        all += e["template"].get<std::string>();
  return all;
}

// generation_config.json: end-of-generation ids and the model's sampling defaults.
struct GenerationDefaults {
  std::vector<int32_t> eos;
  ops::SamplingParams params;
};

GenerationDefaults read_generation_defaults(const std::string& dir) {
  GenerationDefaults d;
  d.params.temperature = 1.0f;  // OpenAI's default when neither the request nor the model says
  GenerationConfig g = load_generation_config(dir);  // validated: a bad value stops start-up, naming it
  d.eos = g.eos_token_ids;
  if (g.temperature) d.params.temperature = *g.temperature;
  if (g.top_p) d.params.top_p = *g.top_p;
  if (g.min_p) d.params.min_p = *g.min_p;
  if (g.repetition_penalty) d.params.repetition_penalty = *g.repetition_penalty;
  if (g.top_k) d.params.top_k = *g.top_k;
  if (g.do_sample == false) d.params.temperature = 0.0f;
  return d;
}

server::ChooserFactory chooser_factory(Backend& be, ops::SamplingParams defaults) {
  return [&be, defaults](const server::GenerationOptions& g) {
    SamplerConfig c;
    c.params = defaults;
    if (g.temperature) c.params.temperature = *g.temperature;
    if (g.top_p) c.params.top_p = *g.top_p;
    if (g.top_k) c.params.top_k = *g.top_k;
    if (g.min_p) c.params.min_p = *g.min_p;
    if (g.repetition_penalty) c.params.repetition_penalty = *g.repetition_penalty;
    c.params.presence_penalty = g.presence_penalty;
    c.params.frequency_penalty = g.frequency_penalty;
    c.seed = g.seed ? *g.seed : std::random_device{}();
    c.top_logprobs = g.logprobs ? g.top_logprobs : 0;
    c.logit_bias = g.logit_bias;
    return make_sampler(be, c);
  };
}

// Refuses to start when the smallest useful work cannot fit: the loaded weights, one sequence's state at a
// one-token context and a one-token step. Returns the context one request can really use: the most tokens n ≤
// ctx whose state, with the step that generates after them, fits beside the weights (what /v1/models
// reports).
int64_t check_fits(Model& model, MemoryPool& pool, int64_t ctx) {
  StepShapeItem one{1, 0, 1};
  int64_t loaded = pool.in_use(), limit = pool.limit();
  int64_t state = model.state_bytes(1, 1), step = model.step_transient_bytes({&one, 1});
  if (loaded + state + step > limit)
    throw_error(
        ErrorCode::out_of_memory,
        "the model does not fit the memory limit: {} loaded + {} for one sequence's state + {} for one step "
        "= {}, but the limit is {} (--memory-limit less the request budget; raise it, or free memory)",
        format_bytes(loaded), format_bytes(state), format_bytes(step), format_bytes(loaded + state + step),
        format_bytes(limit));
  auto fits = [&](int64_t n) {
    StepShapeItem last{1, n - 1, 1};
    return loaded + model.state_bytes(n, n) + model.step_transient_bytes({&last, 1}) <= limit;
  };
  if (fits(ctx)) return ctx;
  int64_t lo = 1, hi = ctx;  // fits(lo), !fits(hi)
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  spdlog::warn(
      "one sequence at the full context of {} tokens needs {} of state; with {} loaded and a limit of {}, "
      "a request can use {} tokens (longer prompts get context_length_exceeded)",
      ctx, format_bytes(model.state_bytes(ctx, ctx)), format_bytes(loaded), format_bytes(limit), lo);
  return lo;
}

// What serving one loaded model takes: the session (pool, backend, weights, tokenizer), the chat template,
// the engine and the context the HTTP handlers read. Built at start-up and again after a lost CUDA context;
// members are destroyed in reverse order (the engine before the model it runs).
struct Serving {
  ModelSession session;
  std::optional<chat::ChatTemplate> chat_template;
  std::unique_ptr<Engine> engine;
  server::ModelContext model;

  Serving(const ServeFlags& f, const std::string& dir, int64_t request_budget,
          server::RequestMemory& request_memory, const GenerationDefaults& defaults) {
    try {
      session = open_session(SessionOptions{dir, f.device, f.threads, f.check_tensors, f.memory_limit,
                                            request_budget, f.cache_type},
                             /*need_tokenizer=*/true);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::out_of_memory) throw;
      throw_error(ErrorCode::out_of_memory,
                  "the model's weights do not fit the memory limit ({}); raise --memory-limit", e.what());
    }
    MemoryPool& pool = *session.pool;
    Backend& backend = *session.be;
    models::LoadedModel& loaded = session.loaded;
    tokenizer::Tokenizer& tokenizer = *session.tok;

    try {
      chat_template.emplace(chat::ChatTemplate::from_model_dir(dir, f.chat_template));
    } catch (const Error& e) {
      if (!f.chat_template.empty()) throw;
      spdlog::warn("no chat template ({}): /v1/chat/completions will answer 400; /v1/completions works",
                   e.what());
    }

    int64_t ctx = f.ctx_size;
    if (int64_t limit = loaded.model->context_limit(); limit > 0 && ctx > limit) {
      spdlog::warn("--ctx-size {} is larger than the model's context ({}); using {}", ctx, limit, limit);
      ctx = limit;
    }
    int64_t usable = check_fits(*loaded.model, pool, ctx);

    std::vector<int32_t> eos =
        loaded.config.eos_token_ids.empty()
            ? std::vector<int32_t>{}
            : std::vector<int32_t>(loaded.config.eos_token_ids.begin(), loaded.config.eos_token_ids.end());
    for (int32_t id : defaults.eos) eos.push_back(id);
    if (auto id = tokenizer.eos_id()) eos.push_back(*id);
    std::sort(eos.begin(), eos.end());
    eos.erase(std::unique(eos.begin(), eos.end()), eos.end());

    SchedulerConfig sc;
    sc.n_slots = f.parallel;
    sc.ctx_size = ctx;
    sc.prefill_chunk_size = f.prefill_chunk_size;
    if (f.no_prompt_cache) sc.prompt_cache_entries = 0;
    engine = std::make_unique<Engine>(*loaded.model, pool, sc);

    model.engine = engine.get();
    model.tokenizer = &tokenizer;
    model.chat_template = chat_template ? &*chat_template : nullptr;
    model.output_format = chat::detect_output_format(chat_template_source(dir, f.chat_template));
    model.model_id = f.alias.empty() ? fs::path(dir).lexically_normal().filename().string() : f.alias;
    if (model.model_id.empty())
      model.model_id = fs::path(dir).lexically_normal().parent_path().filename().string();
    model.context_tokens = usable;
    model.eos_tokens = eos;
    model.make_chooser = chooser_factory(session.host_backend(), defaults.params);
    model.message_checkpoints = keeps_prompt_checkpoints(*loaded.model, sc);
    model.request_memory = &request_memory;
    spdlog::info(
        "serving {} as '{}': {} ({}), context {} tokens x {} sequences, memory limit {} ({} loaded) + {} for "
        "requests (bodies up to {}), tools {}, prompt cache {}",
        dir, model.model_id, loaded.config.model_type, backend.name(), ctx, f.parallel,
        format_bytes(pool.limit()), format_bytes(pool.in_use()), format_bytes(request_budget),
        format_bytes(server::RequestMemory::max_body_for(request_budget)),
        chat::tool_syntax_name(model.output_format.tools), f.no_prompt_cache ? "off" : "on");
  }
};

enum class Wake { stop, restart, device_lost };

// Waits for SIGINT/SIGTERM (stop), SIGUSR1 (restart) or, on a GPU, for its CUDA context to be lost.
Wake wait_for_event(const sigset_t& signals, const std::string& device, int& sig) {
  for (;;) {
    if (device == "cpu") {
      sigwait(&signals, &sig);
    } else {
      const timespec tick{0, 200'000'000};
      sig = sigtimedwait(&signals, nullptr, &tick);
      if (sig <= 0 && device_context_lost(device)) return Wake::device_lost;
    }
    if (sig == SIGUSR1) return Wake::restart;
    if (sig > 0) return Wake::stop;
  }
}

// Replaces this process by a fresh `keel serve` with the same arguments (the same process id, so whoever
// started keel still holds it), handing over the listening socket: the port never closes, and connections
// that arrive meanwhile wait in its backlog until the new process serves them (the caller has stopped
// accepting). Every other descriptor (idle connections, the GPU driver's) closes. A CUDA context lost to a
// sticky error can only be rebuilt by a new process (the runtime refuses a second context in this one:
// measured cudaErrorDevicesUnavailable for a minute after cudaDeviceReset on the H200).
[[noreturn]] void restart_self(int listen_fd, const char* why) {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string a; std::getline(in, a, '\0');) args.push_back(a);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The environment as it is, less this hand-over's variables (and the test hook that made the fault), plus
  // the new ones: built here rather than by setenv, which other threads' getenv would race.
  std::vector<std::string> env_s{fmt::format("KEEL_LISTEN_FD={}", listen_fd),
                                 fmt::format("KEEL_RESTARTED={}", why)};
  for (char** e = environ; *e; ++e) {
    const std::string_view v(*e);
    if (!v.starts_with("KEEL_LISTEN_FD=") && !v.starts_with("KEEL_RESTARTED=") &&
        !v.starts_with("KEEL_CUDA_FAULT_AT_SYNC="))
      env_s.emplace_back(v);
  }
  std::vector<char*> envp;
  for (std::string& v : env_s) envp.push_back(v.data());
  envp.push_back(nullptr);
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(entry.path().filename().c_str());
    if (fd <= 2 || fd == listen_fd) continue;
    const int flags = fcntl(fd, F_GETFD);
    if (flags >= 0) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);  // (−1: the scan's own descriptor, now closed)
  }
  const int flags = fcntl(listen_fd, F_GETFD);
  if (flags < 0 || fcntl(listen_fd, F_SETFD, flags & ~FD_CLOEXEC) != 0) {
    spdlog::error("restart: the listening socket {} is not usable ({}); exiting", listen_fd,
                  std::strerror(errno));
    std::_Exit(1);
  }
  spdlog::default_logger()->flush();
  execve("/proc/self/exe", argv.data(), envp.data());
  spdlog::error("restart: exec failed ({}); exiting", std::strerror(errno));
  std::_Exit(1);
}

void run_serve(const ServeFlags& f) {
  // Two malloc arenas for the whole process, set before any thread starts. glibc gives each of the HTTP
  // workers (64 or more) its own arena up to 8 per core, and each keeps the peak of the requests it parsed:
  // on 16 cores the request_memory_hwm shapes peaked up to 147 MiB higher than with two arenas (measured
  // here with MALLOC_ARENA_MAX=128: 184–209 MiB VmHWM against 58–62 MiB), past the request budget's bound.
  mallopt(M_ARENA_MAX, 2);
  check_device(f.device);
  if (f.parallel < 1 || f.parallel > kMaxParallel)
    throw_error(ErrorCode::invalid_argument, "--parallel {}: expected 1 to {}", f.parallel, kMaxParallel);
  if (f.threads < 0 || f.threads > kMaxThreads)
    throw_error(ErrorCode::invalid_argument, "--threads {}: expected 0 (all cores) to {}", f.threads,
                kMaxThreads);
  std::string dir = f.model.empty() ? default_model_dir() : f.model;
  check_model_dir(dir);
  // Start-up files are checked before the port is bound or a weight is mapped: a bad one is one line.
  GenerationDefaults defaults = read_generation_defaults(dir);
  check_config_values(dir);
  if (!f.chat_template.empty()) read_text(f.chat_template);

  // SIGINT/SIGTERM are taken by sigwait below; every thread started from here on inherits the block.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  server::ServerOptions options;
  options.host = f.host;
  options.port = f.port;
  options.api_key = f.api_key;
  options.parallel = f.parallel;
  options.metrics = f.metrics;
  if (const char* fd = std::getenv("KEEL_LISTEN_FD")) {  // restart_self's hand-over
    options.listen_fd = std::atoi(fd);
    unsetenv("KEEL_LISTEN_FD");
  }
  if (const char* why = std::getenv("KEEL_RESTARTED")) {
    spdlog::info("restarted ({}): loading the model again", why);
    unsetenv("KEEL_RESTARTED");
  }
  // Request handling (bodies, parsed JSON, renderings, token ids) gets a budget of its own out of the limit,
  // so the process stays within --memory-limit whatever the requests; the engine plans with the rest. A
  // body its budget could never take is refused from its Content-Length, before it is read.
  // (On a GPU, --memory-limit is the device's; request handling stays on the host, under its default.)
  const int64_t request_budget = std::clamp(memory_limit_bytes(f.device == "cpu" ? f.memory_limit : "") / 8,
                                            int64_t{16} << 20, int64_t{2} << 30);
  server::RequestMemory request_memory(request_budget);
  options.max_body_bytes = static_cast<size_t>(server::RequestMemory::max_body_for(request_budget));
  server::HttpServer http(options);
  http.start();
  spdlog::info("listening on http://{}:{} (loading {})", f.host, http.port(), dir);

  auto serving = std::make_unique<Serving>(f, dir, request_budget, request_memory, defaults);
  http.set_model(&serving->model);
  int sig = 0;
  const Wake wake = wait_for_event(signals, f.device, sig);
  if (wake == Wake::stop) {
    spdlog::info("signal {}: stopping", sig);
    http.stop();  // handlers cancel their requests and finish their responses
    http.set_model(nullptr);
    return;
  }
  // SIGUSR1, or a sticky CUDA error (logged with the step that failed: every later call on the context
  // fails, so the requests in flight end with that error). New requests get 503 "loading"; once no request
  // holds the model (their responses written), keel stops accepting and restarts itself. SIGINT/SIGTERM
  // meanwhile stop it as always.
  if (wake == Wake::device_lost)
    spdlog::error("{}: the CUDA context is lost; the requests in flight fail, then keel restarts itself",
                  f.device);
  else
    spdlog::info("SIGUSR1: finishing the requests in flight, then restarting");
  while (!http.retire_model(std::chrono::milliseconds(100))) {
    const timespec now{0, 0};
    const int s = sigtimedwait(&signals, nullptr, &now);
    if (s == SIGINT || s == SIGTERM) {
      spdlog::info("signal {}: stopping", s);
      http.stop();
      return;
    }
  }
  http.stop_accepting();
  restart_self(http.listen_fd(), wake == Wake::device_lost ? "the CUDA context was lost" : "SIGUSR1");
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
  cmd->add_option("-m,--model", flags->model,
                  "Model folder (Hugging Face layout); default: the bundled model");
  cmd->add_option("-c,--ctx-size", flags->ctx_size,
                  "Context tokens per sequence (not divided among --parallel)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--host", flags->host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", flags->port, "Port to listen on")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--alias", flags->alias, "Model name for the API (default: the folder's name)");
  cmd->add_option("--parallel", flags->parallel, "Sequences generated at once (-np)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--jinja", flags->jinja,
                "Accepted for llama-server compatibility (templates are always used)");
  cmd->add_option("--prefill-chunk-size", flags->prefill_chunk_size,
                  "Most prompt tokens per step (the scheduler may use fewer to fit memory)")
      ->check(CLI::PositiveNumber);
  cmd->add_option(
      "--memory-limit", flags->memory_limit,
      "Memory keel may use: bytes (12GiB, 512M) or a fraction of the machine's (0.8); default: a safe "
      "share of what is available now");
  cmd->add_option("--api-key", flags->api_key, "Require this key (Authorization: Bearer KEY)");
  cmd->add_option("--device", flags->device, "cpu or cuda[:N]")->capture_default_str();
  cmd->add_option("-t,--threads", flags->threads, "CPU threads for the kernels (default: all cores)");
  cmd->add_option("--chat-template", flags->chat_template,
                  "A Jinja chat template file overriding the model's");
  cmd->add_flag("--no-prompt-cache", flags->no_prompt_cache, "Do not keep prompt states for reuse");
  cmd->add_flag("--metrics", flags->metrics, "Serve Prometheus metrics at GET /metrics");
  cmd->add_flag("--check-tensors", flags->check_tensors, "Scan every weight for NaN and infinity at load");
  add_cache_type_option(*cmd, flags->cache_type);
  cmd->callback([flags] { run_serve(*flags); });
}

}  // namespace keel::cli
