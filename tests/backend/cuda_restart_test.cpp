// keel serve on a GPU survives a sticky CUDA error: a kernel that faults (KEEL_CUDA_FAULT_AT_SYNC, the third
// step of the process) makes the context unusable; the request in flight fails with a message saying so,
// keel restarts itself (the same process id and port), /health answers 200 again, and the same request then
// gives the same greedy completion as a server that never faulted (the oracle: a separate process).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "../server/keel_process.h"
#include "require_gpu.h"

namespace {

using namespace keel::testing;
using Json = nlohmann::json;

const std::string kBody = Json{{"prompt", "Once upon a time"}, {"max_tokens", 12}, {"temperature", 0}}.dump();

TEST(CudaRestart, StickyErrorFailsTheRequestAndTheServerRestartsItself) {
  REQUIRE_GPU();
  const std::vector<std::string> args{"--device", "cuda", "-c", "1024", "--no-prompt-cache", "-t", "2"};
  std::string want;
  {
    KeelServe clean(args);
    ASSERT_TRUE(clean.ready) << clean.log();
    auto r = clean.client().Post("/v1/completions", kBody, "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    want = Json::parse(r->body)["choices"][0]["text"];
  }

  setenv("KEEL_CUDA_FAULT_AT_SYNC", "3", 1);  // the child inherits it
  KeelServe s(args);
  unsetenv("KEEL_CUDA_FAULT_AT_SYNC");
  ASSERT_TRUE(s.ready) << s.log();
  auto failed = s.client().Post("/v1/completions", kBody, "application/json");
  ASSERT_TRUE(failed);
  // (the status may be 200: the response's headers were sent when its prefill step succeeded; the body is
  // then the error)
  EXPECT_NE(failed->body.find("cudaErrorIllegalAddress"), std::string::npos) << failed->body;
  EXPECT_NE(failed->body.find("sticky"), std::string::npos) << failed->body;
  EXPECT_FALSE(Json::parse(failed->body).contains("choices")) << failed->body;

  bool healthy = false;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
       !healthy && std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(std::chrono::milliseconds(100))) {
    auto h = s.client().Get("/health");
    healthy =
        h && h->status == 200 && s.log().find("restarted (the CUDA context was lost)") != std::string::npos;
  }
  ASSERT_TRUE(healthy) << s.log();
  EXPECT_FALSE(s.wait_exit(std::chrono::milliseconds(0))) << "the same process serves on";
  auto again = s.client().Post("/v1/completions", kBody, "application/json");
  ASSERT_TRUE(again);
  ASSERT_EQ(again->status, 200) << again->body << "\n" << s.log();
  EXPECT_EQ(Json::parse(again->body)["choices"][0]["text"], want);
  // and again: the rebuilt context keeps serving
  auto third = s.client().Post("/v1/completions", kBody, "application/json");
  ASSERT_TRUE(third);
  EXPECT_EQ(third->status, 200) << third->body;
}

}  // namespace
