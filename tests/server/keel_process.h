// `keel serve` as a child process on 127.0.0.1 at a free port, its output in a log file; and the parrot
// models (tools/make_parrot_model.py), generated once per test binary into the build folder.
#pragma once
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "raw_http.h"

namespace keel::testing {

inline std::string keel_binary() {
  return std::string(KEEL_BINARY_DIR) + "/keel";
}

// A port nothing listens on now (the kernel's pick for a socket bound to port 0).
inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// The parrot model of `mode` ("tool" or "text"), written by tools/make_parrot_model.py; its folder. One
// folder per process: ctest runs tests of one binary in parallel processes, which must not rewrite a folder
// another reads.
inline std::string parrot_model(const std::string& mode) {
  std::string dir =
      std::string(KEEL_BINARY_DIR) + "/tests/server/parrot-" + mode + "-" + std::to_string(::getpid());
  std::string cmd =
      "python3 " + std::string(KEEL_SOURCE_DIR) + "/tools/make_parrot_model.py " + dir + " --mode " + mode;
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
  return dir;
}

class KeelServe {
 public:
  // Runs `keel serve ARGS --port P` (P free, or `port_in_args` when ARGS already name it) and, when
  // `wait_ready`, waits for GET /health to answer 200.
  explicit KeelServe(std::vector<std::string> args, bool wait_ready = true, int port_in_args = 0) {
    port = port_in_args;
    if (port == 0) {
      port = free_port();
      args.push_back("--port");
      args.push_back(std::to_string(port));
    }
    static int counter = 0;
    log_path = std::string(KEEL_BINARY_DIR) + "/tests/server/keel_serve_" + std::to_string(getpid()) + "_" +
               std::to_string(counter++) + ".log";
    std::vector<std::string> argv_s{keel_binary(), "serve"};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid = ::fork();
    if (pid == 0) {
      ::dup2(log_fd, 1);
      ::dup2(log_fd, 2);
      if (::chdir(KEEL_SOURCE_DIR) != 0) _exit(126);  // as `make serve` runs it: from the repository's root
      ::execv(argv[0], argv.data());
      _exit(127);
    }
    ::close(log_fd);
    if (wait_ready) ready = wait_health(std::chrono::seconds(60));
  }
  ~KeelServe() {
    stop();
    std::remove(log_path.c_str());  // a failing test printed what it needed from it
  }
  KeelServe(const KeelServe&) = delete;
  KeelServe& operator=(const KeelServe&) = delete;

  bool wait_health(std::chrono::seconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (exited()) return false;
      HttpClient c("127.0.0.1", port);
      c.set_connection_timeout(1);
      auto res = c.Get("/health");
      if (res && res->status == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // The exit status once the process has ended (waits up to `timeout`), nullopt while it runs.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    do {
      if (exited()) return exit_code;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    return std::nullopt;
  }

  // SIGTERM, then the exit status (SIGKILL after 10 s).
  std::optional<int> stop() {
    if (pid <= 0) return exit_code;
    if (!exited()) ::kill(pid, SIGTERM);
    if (!wait_exit(std::chrono::seconds(10))) {
      ::kill(pid, SIGKILL);
      wait_exit(std::chrono::seconds(5));
    }
    pid = -1;
    return exit_code;
  }

  std::string log() const {
    std::ifstream in(log_path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  HttpClient client() const {
    HttpClient c("127.0.0.1", port);
    c.set_read_timeout(120);
    return c;
  }

  int port = 0;
  pid_t pid = -1;
  bool ready = false;
  std::string log_path;
  std::optional<int> exit_code;

 private:
  bool exited() {
    if (exit_code) return true;
    if (pid <= 0) return false;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return true;
    }
    return false;
  }
};

}  // namespace keel::testing
