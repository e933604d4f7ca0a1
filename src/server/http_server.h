// The HTTP transport: cpp-httplib routes for the OpenAI-compatible API and the Anthropic Messages API, the
// API key (Authorization: Bearer or x-api-key), size limits, and a worker pool sized so long streams never
// starve new connections. The server listens before the model is loaded: /health answers 503 until
// set_model(), then 200.
#pragma once
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "server/metrics.h"
#include "server/model_context.h"

namespace keel::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                             // 0: any free port (tests); port() tells which
  std::string api_key;                         // empty: no key needed
  int parallel = 1;                            // --parallel; sizes the worker pool
  bool metrics = false;                        // --metrics: serve GET /metrics
  size_t max_body_bytes = size_t{64} << 20;    // larger bodies get 413
  size_t max_header_bytes = size_t{64} << 10;  // all headers together; larger get 431
  // Keep-alives (SSE comments, or whitespace before a JSON body) when nothing was written for this long.
  std::chrono::milliseconds keepalive_interval{2000};
  // How often a waiting handler checks whether its client went away.
  std::chrono::milliseconds poll_interval{50};
};

// Worker threads: every request waiting or generating holds one, so the pool is much larger than --parallel
// (cpp-httplib's default is 8, which 8 open streams would exhaust).
int http_worker_threads(int parallel);

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (throws Error(invalid_argument) naming them when it cannot) and serves on its own thread.
  void start();
  int port() const { return port_; }
  // The model is loaded: the API answers from now on. `ctx` must outlive the server (or a
  // set_model(nullptr)).
  void set_model(const ModelContext* ctx);
  void stop();
  ServerMetrics& metrics() { return metrics_; }

 private:
  struct Impl;
  // The pieces of start(), in order.
  void configure_transport();
  void install_guards();  // header size, API key, error bodies (each in its path's dialect)
  void install_api_routes();
  void install_service_routes();  // health, metrics
  void bind_and_listen();

  ServerOptions options_;
  ServerMetrics metrics_;
  std::atomic<const ModelContext*> model_{nullptr};
  std::atomic<bool> stopping_{false};  // stop(): handlers cancel their requests and end their responses
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace keel::server
