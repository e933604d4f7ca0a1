// The HTTP server: routes for the OpenAI-compatible API and the Anthropic Messages API, the API key
// (Authorization: Bearer or x-api-key) and error bodies in each path's dialect, over keel's event-driven
// transport (http/transport.h: Boost.Asio + Beast; idle connections hold no worker, malformed requests get
// their 4xx at once). The server listens before the model is loaded: /health answers 503 until set_model(),
// then 200.
#pragma once
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "server/http/message.h"
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
  size_t max_header_bytes = size_t{64} << 10;  // the request line and headers together; larger get 431
  // Transport deadlines (http/transport.h): a keep-alive connection idle between requests is closed; a head
  // must arrive whole within head_timeout (slowloris); a body that stalls, or a write that does not reach the
  // socket, ends the connection.
  std::chrono::milliseconds idle_timeout{60000};
  std::chrono::milliseconds head_timeout{10000};
  std::chrono::milliseconds body_timeout{30000};
  std::chrono::milliseconds write_timeout{30000};
  // Keep-alives (SSE comments, or whitespace before a JSON body) when nothing was written for this long.
  std::chrono::milliseconds keepalive_interval{2000};
  // How often a waiting handler checks whether its client went away.
  std::chrono::milliseconds poll_interval{50};
  int listen_fd = -1;  // a listening socket to serve instead of binding host:port (keel serve's restart)
};

// Request workers: every request waiting or generating holds one (idle connections hold none), so the pool is
// much larger than --parallel.
int http_worker_threads(int parallel);

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (throws Error(invalid_argument) naming them when it cannot) and serves on its own
  // threads.
  void start();
  int port() const { return port_; }
  int listen_fd() const;  // the listening socket (after start())
  // The model is loaded: the API answers from now on. `ctx` must outlive the server (or a
  // set_model(nullptr)).
  void set_model(const ModelContext* ctx);
  // No model (the API answers 503 "loading" again); true once no request uses the one it had (their
  // responses, streamed ones included, have been written), false when `timeout` passed first (call again).
  // After true the old model may be destroyed while the server goes on (keel serve's restart).
  bool retire_model(std::chrono::milliseconds timeout);
  // No more connections are accepted (the listening socket stays open: what arrives waits in its backlog).
  void stop_accepting();
  void stop();
  ServerMetrics& metrics() { return metrics_; }
  size_t open_connections() const;  // accepted and not yet closed

 private:
  struct Impl;
  // The pieces of start(), in order.
  void install_api_routes();
  void install_service_routes();  // health, metrics
  void bind_and_listen();
  // Every complete request, on a request worker: the API key, the route, error bodies in the path's dialect.
  void serve(const http::Request& req, http::Response& res);

  ServerOptions options_;
  ServerMetrics metrics_;
  // A handler's hold on the model: model_users_ counts the holds, so retire_model() knows when none is left.
  class ModelUse {
   public:
    explicit ModelUse(HttpServer& s) : s_(s) {
      ++s_.model_users_;  // before the load: retire_model() then sees either the hold or nullptr here
      model = s_.model_.load();
    }
    ~ModelUse() { --s_.model_users_; }
    ModelUse(const ModelUse&) = delete;
    ModelUse& operator=(const ModelUse&) = delete;
    const ModelContext* model = nullptr;

   private:
    HttpServer& s_;
  };
  std::atomic<const ModelContext*> model_{nullptr};
  std::atomic<int> model_users_{0};
  std::atomic<bool> stopping_{false};  // stop(): handlers cancel their requests and end their responses
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace keel::server
