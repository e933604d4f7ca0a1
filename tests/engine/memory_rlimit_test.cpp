// Under a real limit, where allocations truly fail (the kernel refuses them, not the pool): `keel bench` runs
// as a child under `prlimit --as=…` (util-linux) with a --memory-limit far above it, so the pool believes it
// has room. Address-space limits from where keel's own main is reached up to where it runs without a hitch:
// every run ends by exit (0: served, reclaiming by smaller steps where needed; 1: refused with a message
// naming the memory) — never by a signal (SIGSEGV, SIGABRT, the OOM killer's SIGKILL) and never by hanging.
// Needs the keel binary beside the tests (the `keel` target).

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../load/test_files.h"
#include "memory_test_util.h"

namespace keel::testing {
namespace {

TEST(MemoryRlimit, BenchUnderAddressSpaceLimitsExitsCleanlyNeverBySignal) {
  const std::string keel = std::string(KEEL_BINARY_DIR) + "/keel", prlimit = "/usr/bin/prlimit";
  ASSERT_TRUE(std::filesystem::exists(keel)) << keel << " is missing: build the keel target first";
  ASSERT_TRUE(std::filesystem::exists(prlimit)) << "prlimit (util-linux) is missing";
  // nemotron_h's tiny config with a Mamba2 and an MLP layer only: work linear in the prompt, so a 16K-token
  // one-chunk step is quick yet needs tens of MB of transient memory.
  TempDir dir;
  {
    std::ifstream in(fixture_dir("nemotron_h") + "/config.json");
    nlohmann::json cfg = nlohmann::json::parse(in);
    cfg.erase("layers_block_type");
    cfg["hybrid_override_pattern"] = "M-";
    cfg["num_hidden_layers"] = 2;
    cfg["max_position_embeddings"] = 1 << 16;
    write_file(dir.file("config.json"), cfg.dump());
  }
  auto bench = [&](int64_t as_bytes) {
    std::vector<std::string> argv;
    if (as_bytes > 0) argv = {prlimit, "--as=" + std::to_string(as_bytes)};
    for (const char* a : {"bench", "-m"}) argv.push_back(a);
    argv.push_back(dir.path());
    for (const char* a : {"--random-weights", "--prompt-lengths", "16384", "--prefill-chunk-size", "16384",
                          "--gen", "2", "-t", "2", "--memory-limit", "100GiB"})
      argv.push_back(a);
    argv.insert(argv.begin() + (as_bytes > 0 ? 2 : 0), keel);
    return run_child(argv, dir.file("log.txt"), 120);
  };

  const ChildResult free_run = bench(0);
  ASSERT_TRUE(free_run.exited && free_run.code == 0) << free_run.output;

  int refused = 0, reclaimed = 0, runs = 0;
  bool reached_main = false;
  // From the first limit that holds keel's own file (its image, CUDA kernels included: ~9.5 MiB with them):
  // below it execve cannot map the program, and the kernel ends the process with SIGSEGV before any of
  // keel's code or the dynamic loader runs.
  const int64_t image_mb = static_cast<int64_t>(std::filesystem::file_size(keel) >> 20) + 1;
  for (int64_t mb = std::max<int64_t>(8, image_mb); mb <= 1024; mb += 6) {
    const ChildResult r = bench(mb << 20);
    SCOPED_TRACE("--as=" + std::to_string(mb) + "MiB:\n" + r.output);
    ASSERT_FALSE(r.timed_out) << "no end within 120 s";
    ASSERT_TRUE(r.exited) << "killed by signal " << r.signal;
    if (!reached_main &&
        r.code == 127) {  // the dynamic loader could not map keel's libraries: below keel's reach
      EXPECT_NE(r.output.find("shared libraries"), std::string::npos);
      continue;
    }
    reached_main = true;
    ++runs;
    const bool retried = r.output.find("retrying with at most") != std::string::npos;
    if (r.code == 1) {
      ++refused;
      EXPECT_NE(r.output.find("keel: error:"), std::string::npos);
      EXPECT_TRUE(r.output.find("memory") != std::string::npos ||
                  r.output.find("refused") != std::string::npos);
    } else {
      ASSERT_EQ(r.code, 0);
      reclaimed += retried ? 1 : 0;
      if (!retried) break;  // enough room: nothing left to see above
    }
  }
  std::printf("%d runs under a limit: %d refused cleanly, %d served after smaller steps\n", runs, refused,
              reclaimed);
  EXPECT_TRUE(reached_main);
  EXPECT_GT(refused, 0);
  EXPECT_GT(reclaimed, 0);
}

}  // namespace
}  // namespace keel::testing
