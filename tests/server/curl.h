// curl as the outside client for the error cases: the request is written to a file, curl sends it, and the
// status, headers and body come back from curl's own output files.
#pragma once
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace keel::testing {

struct CurlReply {
  int status = 0;
  std::string headers;  // raw header block, as curl -D writes it
  std::string body;
  double seconds = 0;  // curl's time_total
};

inline std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// method GET/POST; `body` sent as is (it may be malformed on purpose); `headers` like "Authorization: Bearer
// x".
inline CurlReply curl(int port, const std::string& method, const std::string& path,
                      const std::string& body = "", const std::vector<std::string>& headers = {}) {
  static int counter = 0;
  auto dir = std::filesystem::temp_directory_path() /
             ("keel_curl_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
  std::filesystem::create_directories(dir);
  std::string cmd = "curl -s -S --max-time 60 -X " + method + " -o " + shell_quote((dir / "body").string()) +
                    " -D " + shell_quote((dir / "headers").string()) + " -w '%{http_code} %{time_total}'";
  if (method == "POST") {
    std::ofstream(dir / "request", std::ios::binary) << body;
    cmd += " -H 'Content-Type: application/json' --data-binary @" + shell_quote((dir / "request").string());
  }
  for (const auto& h : headers) cmd += " -H " + shell_quote(h);
  cmd += " " + shell_quote("http://127.0.0.1:" + std::to_string(port) + path);
  CurlReply r;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[128] = {};
    size_t n = fread(buf, 1, sizeof(buf) - 1, p);
    pclose(p);
    std::istringstream in(std::string(buf, n));
    in >> r.status >> r.seconds;
  }
  r.body = read_all(dir / "body");
  r.headers = read_all(dir / "headers");
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace keel::testing
