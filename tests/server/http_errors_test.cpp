// Every error case of ../shared/specs/api.md through curl against a real server on 127.0.0.1: the OpenAI
// error shape, the status the spec names, `param` naming the field, 401 for the API key, 503 while loading,
// size limits, and a prompt too long for the context refused within 100 ms with no prefill work.
#include <gtest/gtest.h>

#include "curl.h"
#include "server_harness.h"

using namespace keel;
using namespace keel::testing;

namespace {

const char* kUser = R"({"role": "user", "content": "hello"})";

std::string chat_body(const std::string& extra) {
  return std::string(R"({"messages": [)") + kUser + "]" + (extra.empty() ? "" : ", " + extra) + "}";
}

void expect_error(const CurlReply& r, int status, const std::string& code, const std::string& param,
                  const std::string& what) {
  EXPECT_EQ(r.status, status) << what << ": " << r.body;
  server::Json j = server::Json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << what << ": " << r.body;
  const server::Json& e = j["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << what;
  EXPECT_TRUE(e.contains("type") && e.contains("code") && e.contains("param")) << what << ": " << r.body;
  if (!code.empty()) {
    EXPECT_EQ(e["code"], code) << what << ": " << r.body;
  }
  if (!param.empty()) {
    EXPECT_EQ(e["param"], param) << what << ": " << r.body;
  }
}

}  // namespace

TEST(HttpErrors, RequestErrorsAre400NamingTheField) {
  InProcessServer srv;
  struct Case {
    std::string path, body, param;
  };
  const std::vector<Case> cases = {
      {"/v1/chat/completions", "{not json", "body"},
      {"/v1/chat/completions", "[]", "body"},
      {"/v1/chat/completions", "{}", "messages"},
      {"/v1/chat/completions", R"({"messages": "hi"})", "messages"},
      {"/v1/chat/completions", chat_body(R"("temperature": "warm")"), "temperature"},
      {"/v1/chat/completions", chat_body(R"("max_tokens": "ten")"), "max_tokens"},
      {"/v1/chat/completions", chat_body(R"("stream": 1)"), "stream"},
      {"/v1/chat/completions", chat_body(R"("n": 2)"), "n"},
      {"/v1/chat/completions", chat_body(R"("model": "gpt-4o")"), "model"},
      {"/v1/chat/completions", chat_body(R"("tool_choice": "required")"), "tool_choice"},
      {"/v1/chat/completions", chat_body(R"("response_format": {"type": "json_object"})"), "response_format"},
      {"/v1/chat/completions", chat_body(R"("logprobs": true, "top_logprobs": 99)"), "top_logprobs"},
      {"/v1/completions", R"({"prompt": 12})", "prompt"},
      {"/v1/completions", R"({"prompt": "x", "model": "other"})", "model"},
      {"/v1/completions", R"({"prompt": [1, 99999]})", "prompt[1]"},
      {"/tokenize", R"({"content": 5})", "content"},
      {"/tokenize", R"({"content": "x", "add_special": "yes"})", "body"},
      {"/detokenize", R"({"tokens": ["a"]})", "tokens[0]"},
  };
  for (const Case& c : cases) {
    CurlReply r = curl(srv.port(), "POST", c.path, c.body);
    expect_error(r, 400, "", c.param, c.path + " " + c.body);
  }
  // The model's own name is accepted.
  CurlReply ok = curl(srv.port(), "POST", "/v1/chat/completions",
                      chat_body(R"("model": "test-model", "max_tokens": 2)"));
  EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST(HttpErrors, PromptTooLongIs400Within100msWithNoPrefill) {
  HarnessOptions o;
  o.scheduler.ctx_size = 256;
  InProcessServer srv(o);
  // Warm up once so the timing below measures the refusal, not a first-use cost.
  curl(srv.port(), "POST", "/tokenize", R"({"content": "warm up"})");
  int64_t steps_before = srv.stats().scheduler.steps;
  std::string long_text;
  for (int i = 0; i < 400; ++i) long_text += "word" + std::to_string(i) + " ";
  std::string body =
      R"({"max_tokens": 32000, "messages": [{"role": "user", "content": ")" + long_text + "\"}]}";
  auto t0 = std::chrono::steady_clock::now();
  CurlReply r = curl(srv.port(), "POST", "/v1/chat/completions", body);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  expect_error(r, 400, "context_length_exceeded", "messages", "long prompt");
  EXPECT_LT(r.seconds, 0.1) << "curl's time_total";
  EXPECT_LT(seconds, 0.5) << "including curl's own start";
  // Both token counts are in the message: the prompt's and the context's.
  std::string msg = server::Json::parse(r.body)["error"]["message"];
  size_t n = srv.tokenizer().encode(long_text).size();
  EXPECT_NE(msg.find("256"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tokens"), std::string::npos) << msg;
  EXPECT_GT(n, 256u);
  EXPECT_EQ(srv.stats().scheduler.steps, steps_before) << "no step ran for the refused prompt";

  // max_tokens beyond the room left is not an error: generation stops at the context's end with "length".
  std::string fits =
      R"({"max_tokens": 32000, "temperature": 0, "messages": [{"role": "user", "content": "hi"}]})";
  CurlReply ok = curl(srv.port(), "POST", "/v1/chat/completions", fits);
  ASSERT_EQ(ok.status, 200) << ok.body;
  server::Json j = server::Json::parse(ok.body);
  std::string reason = j["choices"][0]["finish_reason"];
  int64_t total = j["usage"]["total_tokens"];
  EXPECT_TRUE(reason == "length" ? total == 256 : reason == "stop") << ok.body;
}

TEST(HttpErrors, ApiKeyIsRequiredWhenSet) {
  HarnessOptions o;
  o.server.api_key = "s3cret-key";
  InProcessServer srv(o);
  std::string body = chat_body(R"("max_tokens": 1)");
  expect_error(curl(srv.port(), "POST", "/v1/chat/completions", body), 401, "invalid_api_key", "", "no key");
  expect_error(curl(srv.port(), "POST", "/v1/chat/completions", body, {"Authorization: Bearer s3cret-kez"}),
               401, "invalid_api_key", "", "wrong key");
  expect_error(
      curl(srv.port(), "POST", "/v1/chat/completions", body, {"Authorization: Bearer s3cret-key-longer"}),
      401, "invalid_api_key", "", "longer key");
  expect_error(curl(srv.port(), "GET", "/v1/models"), 401, "invalid_api_key", "", "models without key");
  EXPECT_EQ(
      curl(srv.port(), "POST", "/v1/chat/completions", body, {"Authorization: Bearer s3cret-key"}).status,
      200);
  EXPECT_EQ(curl(srv.port(), "GET", "/v1/models", "", {"X-Api-Key: s3cret-key"}).status, 200);
  EXPECT_EQ(curl(srv.port(), "GET", "/health").status, 200) << "health needs no key";
}

TEST(HttpErrors, LoadingThenReady) {
  HarnessOptions o;
  o.ready = false;
  InProcessServer srv(o);
  CurlReply h = curl(srv.port(), "GET", "/health");
  expect_error(h, 503, "model_loading", "", "health while loading");
  expect_error(curl(srv.port(), "POST", "/v1/chat/completions", chat_body("")), 503, "model_loading", "",
               "chat while loading");
  expect_error(curl(srv.port(), "GET", "/v1/models"), 503, "model_loading", "", "models while loading");
  srv.ready();
  CurlReply ok = curl(srv.port(), "GET", "/health");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(server::Json::parse(ok.body)["status"], "ok");
}

TEST(HttpErrors, SizeLimitsAndUnknownPaths) {
  HarnessOptions o;
  o.server.max_body_bytes = 4096;
  o.server.max_header_bytes = 2048;
  InProcessServer srv(o);
  std::string big = chat_body(R"("user": ")" + std::string(8000, 'x') + "\"");
  CurlReply r = curl(srv.port(), "POST", "/v1/chat/completions", big);
  EXPECT_EQ(r.status, 413) << r.body;
  std::vector<std::string> many;
  for (int i = 0; i < 40; ++i) many.push_back("X-Pad-" + std::to_string(i) + ": " + std::string(100, 'p'));
  CurlReply h = curl(srv.port(), "POST", "/v1/chat/completions", chat_body(""), many);
  expect_error(h, 431, "headers_too_large", "", "headers");
  expect_error(curl(srv.port(), "GET", "/v1/nothing"), 404, "not_found", "", "unknown path");
  // /metrics is off unless --metrics.
  EXPECT_EQ(curl(srv.port(), "GET", "/metrics").status, 501);
}

TEST(HttpErrors, OutOfMemoryBeforeHeadersIs503WithRetryAfter) {
  InProcessServer srv;
  srv.model().fail_from =
      0;  // every step fails: the scheduler retries a bounded number of times, then gives up
  for (bool stream : {false, true}) {
    std::string body = chat_body(std::string(R"("max_tokens": 4, "stream": )") + (stream ? "true" : "false"));
    CurlReply r = curl(srv.port(), "POST", "/v1/chat/completions", body);
    expect_error(r, 503, "insufficient_memory", "", stream ? "stream" : "json");
    EXPECT_NE(r.headers.find("Retry-After: "), std::string::npos) << r.headers;
  }
  EXPECT_TRUE(srv.wait_idle());
}

TEST(HttpErrors, FailureAfterHeadersIsAnSseErrorEventThenTheEnd) {
  InProcessServer srv;
  // A long generation; once its headers are here, every later step fails.
  RawHttp c(srv.port());
  c.send("POST", "/v1/chat/completions", chat_body(R"("max_tokens": 1000, "stream": true)"));
  ASSERT_TRUE(c.read_headers());
  EXPECT_EQ(c.status, 200);
  srv.model().fail_from = srv.model().calls.load();
  std::string body = c.read_body();
  EXPECT_TRUE(c.body_done()) << "the stream ended properly (chunked terminator), not a dropped connection";
  std::vector<std::string> events = sse_data(body);
  ASSERT_GE(events.size(), 2u) << body;
  server::Json last = server::Json::parse(events.back());
  ASSERT_TRUE(last.contains("error")) << body;
  EXPECT_EQ(last["error"]["code"], "insufficient_memory");
  EXPECT_EQ(body.find("[DONE]"), std::string::npos);

  // Not streaming: the body that follows the keep-alive whitespace is the error object.
  srv.model().fail_from = -1;
  RawHttp j(srv.port());
  j.send("POST", "/v1/chat/completions", chat_body(R"("max_tokens": 1000)"));
  ASSERT_TRUE(j.read_headers());
  EXPECT_EQ(j.status, 200);
  srv.model().fail_from = srv.model().calls.load();
  server::Json err = server::Json::parse(j.read_body());
  EXPECT_EQ(err["error"]["code"], "insufficient_memory") << err;
  srv.model().fail_from = -1;
  EXPECT_TRUE(srv.wait_idle());
}
