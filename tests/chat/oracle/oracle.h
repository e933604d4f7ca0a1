// Helpers for tests that compare keel's Jinja engine with Python's jinja2 (the scripts in this folder), run
// at test time with Debian's /usr/bin/python3 (python3-jinja2). Expected outputs are never stored in the
// tests.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "chat/messages.h"

namespace keel::chat::test_oracle {

inline const char* kPython = "/usr/bin/python3";
inline std::string oracle_dir() {
  return std::string(KEEL_SOURCE_DIR) + "/tests/chat/oracle";
}
inline std::string fixtures_dir() {
  return std::string(KEEL_SHARED_DIR) + "/fixtures/chat-templates";
}

// The clock jinja_oracle.py pins for strftime_now(): Friday 2025-03-07 09:05:02.
inline std::tm pinned_now() {
  std::tm tm{};
  tm.tm_year = 2025 - 1900;
  tm.tm_mon = 2;
  tm.tm_mday = 7;
  tm.tm_hour = 9;
  tm.tm_min = 5;
  tm.tm_sec = 2;
  tm.tm_wday = 5;
  tm.tm_yday = 65;
  tm.tm_isdst = 0;
  return tm;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A scratch path in the build folder, unique to this process.
inline std::string scratch_path(const std::string& name) {
  return std::string(KEEL_BINARY_DIR) + "/" + name + "." + std::to_string(::getpid()) + ".tmp";
}

// Runs a shell command; returns its exit status (and fails the test when it is not 0).
inline int run(const std::string& command) {
  int rc = std::system(command.c_str());
  EXPECT_EQ(rc, 0) << "command failed: " << command;
  return rc;
}

// jinja2's result for each {"template", "context"} job, in order (see jinja_oracle.py for the shape).
inline std::vector<Json> oracle_batch(const std::vector<Json>& jobs) {
  std::string in = scratch_path("jinja_oracle_in"), out = scratch_path("jinja_oracle_out");
  {
    std::ofstream f(in, std::ios::binary);
    for (const auto& job : jobs) f << job.dump() << '\n';
  }
  run(std::string(kPython) + " " + oracle_dir() + "/jinja_oracle.py < " + in + " > " + out);
  std::vector<Json> results;
  std::ifstream f(out, std::ios::binary);
  std::string line;
  while (std::getline(f, line)) results.push_back(Json::parse(line));
  std::remove(in.c_str());
  std::remove(out.c_str());
  EXPECT_EQ(results.size(), jobs.size()) << "the oracle did not answer every job";
  return results;
}

}  // namespace keel::chat::test_oracle
