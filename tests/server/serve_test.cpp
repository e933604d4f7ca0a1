// `keel serve` as a desktop app or a user runs it: the exact launch line is accepted, bad flags fail with a
// message, a memory limit too small refuses to start with the numbers, SIGTERM stops it cleanly, the bundled
// model is the default. And tool calls end to end through the normal loader, sampler, detokenizer and parser:
// the parrot model's reply is known in advance (tools/make_parrot_model.py writes it to parrot.json), and the
// API must return it as reasoning_content + tool_calls, streamed as delta.tool_calls, finish_reason
// "tool_calls".
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <limits>

#include "keel_process.h"
#include "raw_http.h"
#include "server/api_error.h"

using namespace keel::testing;
using keel::server::Json;

namespace {

Json weather_tools() {
  return Json::parse(R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                     "required": ["city"]}}}])");
}

Json parrot_expect(const std::string& dir) {
  std::ifstream in(dir + "/parrot.json");
  return Json::parse(in)["expect"];
}

// Runs keel serve with `args` expecting it to fail at start; returns its log.
std::string failing_start(std::vector<std::string> args) {
  KeelServe s(std::move(args), /*wait_ready=*/false);
  std::optional<int> code = s.wait_exit(std::chrono::seconds(30));
  EXPECT_TRUE(code.has_value()) << "still running";
  if (code) {
    EXPECT_NE(*code, 0);
  }
  return s.log();
}

}  // namespace

TEST(Serve, DesktopAppLaunchLine) {
  std::string model = parrot_model("text");
  int port = free_port();
  KeelServe s({"--model", model, "--ctx-size", "8192", "--jinja", "--host", "127.0.0.1", "--port",
               std::to_string(port), "--alias", "repro", "--parallel", "1"},
              true, port);
  ASSERT_TRUE(s.ready) << s.log();
  auto res = s.client().Get("/v1/models");
  ASSERT_TRUE(res);
  Json j = Json::parse(res->body);
  EXPECT_EQ(j["data"][0]["id"], "repro");
  EXPECT_EQ(j["data"][0]["context_length"], 8192);
  Json body = {{"model", "repro"}, {"messages", Json::array({Json{{"role", "user"}, {"content", "hi"}}})}};
  auto chat = s.client().Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 200) << chat->body;
  EXPECT_EQ(Json::parse(chat->body)["choices"][0]["message"]["content"], parrot_expect(model)["content"]);
  EXPECT_EQ(s.stop(), 0) << "SIGTERM ends keel serve with status 0\n" << s.log();
}

// SIGUSR1: the request in flight completes, then keel re-executes itself — the same process id, the same
// listening socket (the port never closes) — loads the model again and answers as before. The oracle for the
// second answer is the first one (greedy, no prompt cache: nothing carries over but the weights' bytes).
TEST(Serve, Sigusr1FinishesTheRequestInFlightThenRestartsOnTheSamePort) {
  KeelServe s({"-c", "2048", "-t", "1", "--no-prompt-cache"});
  ASSERT_TRUE(s.ready) << s.log();
  const Json body = {{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 0}};
  auto first = s.client().Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200) << first->body;
  const std::string want = Json::parse(first->body)["choices"][0]["text"];

  Json streamed = body;
  streamed["stream"] = true;
  streamed["max_tokens"] = 400;
  std::optional<HttpReply> in_flight;
  std::thread t([&] { in_flight = s.client().Post("/v1/completions", streamed.dump(), "application/json"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  ASSERT_EQ(::kill(s.pid, SIGUSR1), 0);
  t.join();
  ASSERT_TRUE(in_flight);
  EXPECT_EQ(in_flight->status, 200);
  EXPECT_NE(in_flight->body.find("data: [DONE]"), std::string::npos) << in_flight->body;
  EXPECT_EQ(in_flight->body.find("error"), std::string::npos) << in_flight->body;

  bool back = false;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       !back && std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(std::chrono::milliseconds(50))) {
    auto h = s.client().Get("/health");
    back = h && h->status == 200 && s.log().find("restarted (SIGUSR1)") != std::string::npos;
  }
  ASSERT_TRUE(back) << s.log();
  EXPECT_FALSE(s.wait_exit(std::chrono::milliseconds(0))) << "the same process serves on";
  auto second = s.client().Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(second);
  ASSERT_EQ(second->status, 200) << second->body;
  EXPECT_EQ(Json::parse(second->body)["choices"][0]["text"], want);
}

TEST(Serve, BadFlagsFailWithAMessage) {
  std::string model = parrot_model("text");
  std::string log = failing_start({"--model", model, "--no-such-flag"});
  EXPECT_NE(log.find("--no-such-flag"), std::string::npos) << log;
  // A device this machine does not have: one line naming it, whatever the build (without CUDA / no device
  // / not that many devices).
  log = failing_start({"--model", model, "--device", "cuda:99"});
  EXPECT_NE(log.find("cuda:99"), std::string::npos) << log;
  EXPECT_TRUE(log.find("without CUDA") != std::string::npos ||
              log.find("no CUDA device") != std::string::npos ||
              log.find("this machine has") != std::string::npos)
      << log;
  log = failing_start({"--model", model, "--device", "tpu"});
  EXPECT_NE(log.find("expected cpu or cuda[:N]"), std::string::npos) << log;
  log = failing_start({"--model", "/nonexistent/folder"});
  EXPECT_NE(log.find("/nonexistent/folder"), std::string::npos) << log;
  log = failing_start({"--model", model, "--memory-limit", "lots"});
  EXPECT_NE(log.find("lots"), std::string::npos) << log;
}

TEST(Serve, MemoryLimitTooSmallRefusesToStartWithTheNumbers) {
  // Smaller than the weights: the loader refuses them.
  std::string log = failing_start({"--model", parrot_model("text"), "--memory-limit", "64KiB"});
  EXPECT_NE(log.find("65536"), std::string::npos) << log;
  EXPECT_NE(log.find("--memory-limit"), std::string::npos) << log;
  // The weights fit (1,088,592-byte file), one sequence and one step do not: refused before serving. The
  // engine's share is the limit less the request budget (16 MiB at least): 1,100,000 bytes here.
  log = failing_start(
      {"--model", parrot_model("text"), "--memory-limit", std::to_string(1100000 + (16 << 20))});
  EXPECT_NE(log.find("one sequence"), std::string::npos) << log;
  EXPECT_NE(log.find("1.05 MiB"), std::string::npos) << "the limit, in the message: " << log;
}

TEST(Serve, ModelsReportsTheContextMemoryAllows) {
  // Weights 1.04 MiB; the limit leaves room for a few hundred tokens of KV, far fewer than --ctx-size.
  // (The engine's share: --memory-limit less the request budget of 16 MiB.)
  KeelServe s({"--model", parrot_model("text"), "--ctx-size", "65536", "--memory-limit",
               std::to_string(1500000 + (16 << 20))});
  ASSERT_TRUE(s.ready) << s.log();
  Json j = Json::parse(s.client().Get("/v1/models")->body);
  int64_t usable = j["data"][0]["context_length"];
  EXPECT_GT(usable, 16);
  EXPECT_LT(usable, 65536);
  EXPECT_NE(s.log().find("a request can use"), std::string::npos) << s.log();
  // A prompt of `usable` tokens is refused at once (no room for a generated token); a shorter one runs.
  Json tokens = Json::array();
  for (int64_t i = 0; i < usable; ++i) tokens.push_back(300 + i % 100);
  auto r = s.client().Post("/v1/completions", Json{{"prompt", tokens}, {"max_tokens", 1}}.dump(),
                           "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(Json::parse(r->body)["error"]["code"], "context_length_exceeded");
  tokens.erase(tokens.end() - 8, tokens.end());
  r = s.client().Post("/v1/completions", Json{{"prompt", tokens}, {"max_tokens", 4}}.dump(),
                      "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

TEST(Serve, LlamaServerShortFlagsAndTheBundledDefaultModel) {
  KeelServe s({"-c", "2048", "-np", "2", "-t", "1", "--metrics", "--no-prompt-cache"});
  ASSERT_TRUE(s.ready) << s.log();
  Json j = Json::parse(s.client().Get("/v1/models")->body);
  EXPECT_EQ(j["data"][0]["id"], "keel-brown-nemotron-h-8m");
  EXPECT_EQ(j["data"][0]["context_length"], 2048);
  auto m = s.client().Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_NE(m->body.find("keel_pool_bytes_limit"), std::string::npos);
  EXPECT_NE(m->body.find("keel_pool_device_info{device=\"cpu\"} 1"), std::string::npos) << m->body;
}

TEST(ToolCalls, ParrotNonStreaming) {
  std::string model = parrot_model("tool");
  Json expect = parrot_expect(model);
  KeelServe s({"--model", model, "--ctx-size", "4096"});
  ASSERT_TRUE(s.ready) << s.log();
  Json body = {
      {"messages", Json::array({Json{{"role", "user"}, {"content", "What is the weather in Paris?"}}})},
      {"tools", weather_tools()}};
  auto res = s.client().Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  Json r = Json::parse(res->body);
  const Json& msg = r["choices"][0]["message"];
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(msg["reasoning_content"], expect["reasoning_content"]);
  EXPECT_TRUE(msg["content"].is_null()) << msg;
  ASSERT_EQ(msg["tool_calls"].size(), 1u) << msg;
  const Json& call = msg["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["function"]["name"], expect["tool_calls"][0]["name"]);
  EXPECT_EQ(Json::parse(call["function"]["arguments"].get<std::string>()),
            expect["tool_calls"][0]["arguments"]);

  // The conversation goes on: the call and its result go back in, arguments as the string the API gave.
  Json turn2 = body;
  turn2["messages"].push_back(msg);
  turn2["messages"].push_back(
      Json{{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", "sunny, 21 C"}});
  auto res2 = s.client().Post("/v1/chat/completions", turn2.dump(), "application/json");
  ASSERT_TRUE(res2);
  EXPECT_EQ(res2->status, 200) << res2->body;
  EXPECT_GT(Json::parse(res2->body)["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), 0);

  // tool_choice "none": the template still sees the tools, the output is not parsed for calls.
  body["tool_choice"] = "none";
  Json plain = Json::parse(s.client().Post("/v1/chat/completions", body.dump(), "application/json")->body);
  EXPECT_EQ(plain["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(plain["choices"][0]["message"].contains("tool_calls"));
  EXPECT_NE(plain["choices"][0]["message"]["content"].get<std::string>().find("<tool_call>"),
            std::string::npos);
}

TEST(ToolCalls, ParrotStreaming) {
  std::string model = parrot_model("tool");
  Json expect = parrot_expect(model);
  KeelServe s({"--model", model, "--ctx-size", "4096"});
  ASSERT_TRUE(s.ready) << s.log();
  Json body = {{"messages", Json::array({Json{{"role", "user"}, {"content", "Weather in Paris, please."}}})},
               {"tools", weather_tools()},
               {"stream", true}};
  RawHttp c(s.port);
  c.send("POST", "/v1/chat/completions", body.dump());
  ASSERT_TRUE(c.read_headers());
  ASSERT_EQ(c.status, 200);
  std::string reasoning, content, name, arguments, id, finish;
  int calls_begun = 0;
  for (const std::string& d : sse_data(c.read_body())) {
    if (d == "[DONE]") continue;
    Json e = Json::parse(d);
    ASSERT_FALSE(e.contains("error")) << d;
    const Json& ch = e["choices"][0];
    const Json& delta = ch["delta"];
    if (delta.contains("reasoning_content")) reasoning += delta["reasoning_content"].get<std::string>();
    if (delta.contains("content")) content += delta["content"].get<std::string>();
    if (delta.contains("tool_calls")) {
      for (const Json& tc : delta["tool_calls"]) {
        EXPECT_EQ(tc["index"], 0);
        if (tc.contains("id")) {
          ++calls_begun;
          id = tc["id"];
          name = tc["function"]["name"];
        }
        arguments += tc["function"]["arguments"].get<std::string>();
      }
    }
    if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
  }
  EXPECT_EQ(reasoning, expect["reasoning_content"].get<std::string>());
  EXPECT_EQ(content, "");
  EXPECT_EQ(calls_begun, 1);
  EXPECT_EQ(name, expect["tool_calls"][0]["name"].get<std::string>());
  EXPECT_EQ(Json::parse(arguments), expect["tool_calls"][0]["arguments"]);
  EXPECT_EQ(finish, "tool_calls");
}

// Start-up failures (issue 15, items 7, 8, 11): each is one line naming the file or the flag, and exit status
// 1 — never a signal (an uncaught exception was exit 134), a hang (a FIFO) or an unbounded read (/dev/zero).
namespace {

namespace fs = std::filesystem;

// A copy of model folder `src` to change one file in.
std::string model_copy(const std::string& src, const std::string& tag) {
  std::string dir = src + "-" + tag;
  fs::remove_all(dir);
  fs::copy(src, dir, fs::copy_options::recursive);
  return dir;
}

void write_file(const std::string& path, const std::string& text) {
  fs::remove(path);
  std::ofstream(path, std::ios::binary) << text;
}

// keel serve ARGS must exit with status 1 within 30 s, printing one error line that contains `needle`.
void expect_clean_failure(std::vector<std::string> args, const std::string& needle) {
  SCOPED_TRACE(needle);
  KeelServe s(std::move(args), /*wait_ready=*/false);
  std::optional<int> code = s.wait_exit(std::chrono::seconds(30));
  ASSERT_TRUE(code.has_value()) << "still running after 30 s\n" << s.log();
  const std::string log = s.log();
  EXPECT_EQ(*code, 1) << log;
  int error_lines = 0;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("error") == std::string::npos) continue;
    ++error_lines;
    EXPECT_NE(line.find(needle), std::string::npos) << "the error line names " << needle << ": " << line;
  }
  EXPECT_EQ(error_lines, 1) << log;
  EXPECT_EQ(log.find("terminate called"), std::string::npos) << log;
}

// Sets element 0 of the first float tensor in dir/model.safetensors to NaN; returns the tensor's name.
std::string poison_first_float_tensor(const std::string& dir) {
  std::fstream f(dir + "/model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
  uint64_t n = 0;
  f.read(reinterpret_cast<char*>(&n), 8);
  std::string header(n, '\0');
  f.read(header.data(), static_cast<std::streamsize>(n));
  Json h = Json::parse(header);
  for (const auto& [name, info] : h.items()) {
    if (name == "__metadata__") continue;
    const std::string dtype = info["dtype"];
    if (dtype != "F32" && dtype != "BF16" && dtype != "F16") continue;
    const uint64_t at = 8 + n + info["data_offsets"][0].get<uint64_t>();
    f.seekp(static_cast<std::streamoff>(at));
    if (dtype == "F32") {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      f.write(reinterpret_cast<const char*>(&nan), 4);
    } else {
      const uint16_t nan = dtype == "BF16" ? 0x7FC0 : 0x7E00;
      f.write(reinterpret_cast<const char*>(&nan), 2);
    }
    return name;
  }
  return "";
}

}  // namespace

TEST(ServeStartup, BadGenerationConfigIsOneLineNamingTheField) {
  const std::string base = parrot_model("text");
  struct Case {
    const char* json;
    const char* field;
  };
  for (const Case& c : std::vector<Case>{{R"({"do_sample": 0})", "do_sample"},
                                         {R"({"do_sample": "no"})", "do_sample"},
                                         {R"({"temperature": -5})", "temperature"},
                                         {R"({"top_p": 0})", "top_p"},
                                         {R"({"top_p": 5})", "top_p"},
                                         {R"({"min_p": 7})", "min_p"},
                                         {R"({"repetition_penalty": 0})", "repetition_penalty"},
                                         {R"({"top_k": -3})", "top_k"},
                                         {R"({"eos_token_id": "2"})", "eos_token_id"},
                                         {R"({"temperature": )", "generation_config.json"}}) {
    std::string dir = model_copy(base, "genconfig");
    write_file(dir + "/generation_config.json", c.json);
    expect_clean_failure({"--model", dir}, c.field);
    expect_clean_failure({"--model", dir}, "generation_config.json");
  }
}

TEST(ServeStartup, UnreadableFilesAndOutOfRangeFlagsAreOneLine) {
  const std::string base = parrot_model("text");
  std::string dir = model_copy(base, "loop");
  fs::remove(dir + "/config.json");
  fs::create_symlink("config.json", dir + "/config.json");  // a symlink loop
  expect_clean_failure({"--model", dir}, "config.json");
  dir = model_copy(base, "fifo");
  fs::remove(dir + "/config.json");
  ASSERT_EQ(::mkfifo((dir + "/config.json").c_str(), 0644), 0);
  expect_clean_failure({"--model", dir}, "config.json");  // used to wait for a writer forever
  expect_clean_failure({"--model", base, "--chat-template", "/dev/zero"}, "/dev/zero");
  expect_clean_failure({"--model", base, "--chat-template", base}, base);  // a directory
  expect_clean_failure({"--model", base, "--parallel", "1000000"}, "--parallel");
  expect_clean_failure({"--model", base, "--threads", "100000"}, "--threads");
  expect_clean_failure({"--model", base, "--memory-limit", "1.0"}, "'1.0'");
}

TEST(ServeStartup, ConfigValuesThatServeNonsenseAreRefused) {
  const std::string src = std::string(KEEL_SOURCE_DIR) + "/tests/fixtures/nemotron_h";
  const std::string tmp = std::string(KEEL_BINARY_DIR) + "/tests/server/nemotron-" + std::to_string(getpid());
  fs::remove_all(tmp);
  fs::copy(src, tmp, fs::copy_options::recursive);
  Json config = Json::parse(std::ifstream(tmp + "/config.json"));
  for (const auto& [key, value] : std::vector<std::pair<std::string, Json>>{
           {"rope_theta", 0}, {"mamba_ssm_cache_dtype", "int8"}, {"rope_theta", -1.0}}) {
    std::string dir = model_copy(tmp, "cfg");
    Json c = config;
    c[key] = value;
    write_file(dir + "/config.json", c.dump(2));
    expect_clean_failure({"--model", dir}, key);
  }
  fs::remove_all(tmp);
}

TEST(ServeStartup, CheckTensorsFindsANaNWeight) {
  std::string dir = model_copy(parrot_model("text"), "nan");
  const std::string tensor = poison_first_float_tensor(dir);
  ASSERT_FALSE(tensor.empty());
  expect_clean_failure({"--model", dir, "--check-tensors"}, tensor);
  KeelServe unchecked({"--model", dir});  // without the flag the scan does not run
  EXPECT_TRUE(unchecked.ready) << unchecked.log();
  KeelServe clean({"--model", parrot_model("text"), "--check-tensors"});
  EXPECT_TRUE(clean.ready) << clean.log();
}

TEST(ServeSampling, LogitBiasBansTheGreedyToken) {
  std::string model = parrot_model("text");
  Json expect = parrot_expect(model);
  KeelServe s({"--model", model});
  ASSERT_TRUE(s.ready) << s.log();
  Json chain = Json::parse(std::ifstream(model + "/parrot.json"))["chain_ids"];
  auto chat = [&](Json extra) {
    Json body = {{"temperature", 0},
                 {"max_tokens", 4},
                 {"messages", Json::array({Json{{"role", "user"}, {"content", "hi"}}})}};
    body.update(extra);
    auto r = s.client().Post("/v1/chat/completions", body.dump(), "application/json");
    EXPECT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    return Json::parse(r->body)["choices"][0]["message"]["content"];
  };
  EXPECT_EQ(chat(Json::object()), expect["content"]);
  // The reply is the chain's piece tokens: banning them (OpenAI's object form, and llama-server's pairs)
  // changes it.
  Json bias = Json::object(), pairs = Json::array();
  for (const Json& id : chain) {
    bias[std::to_string(id.get<int>())] = -100;
    pairs.push_back(Json::array({id, false}));
  }
  EXPECT_NE(chat(Json{{"logit_bias", bias}}), expect["content"]) << "a banned token was chosen";
  EXPECT_NE(chat(Json{{"logit_bias", pairs}}), expect["content"]) << "a banned token was chosen";
}
