#include "server/http_server.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <csignal>
#include <map>
#include <thread>

#include "chat/parsers/json_tool_calls.h"
#include "server/completion_handler.h"
#include "server/http/transport.h"

namespace keel::server {

int http_worker_threads(int parallel) {
  return std::max(64, 8 * std::max(parallel, 1));
}

namespace {

// Equal strings compare in time that depends only on their lengths, not on where they differ.
bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

void send_json(http::Response& res, const Json& body, int status = 200) {
  res.status = status;
  res.set_content(chat::dump_json(body), "application/json");
}

ApiError loading_error() {
  return ApiError(503, "model_loading", "the model is still loading; retry in a moment", {},
                  "unavailable_error")
      .with_retry_after(1);
}

const char* outcome_of(const ApiError& e) {
  return e.code().empty() ? "error" : e.code().c_str();
}

// An error in the dialect of the request's path.
void send_error_for(const http::Request& req, http::Response& res, const ApiError& e) {
  if (is_anthropic_path(req.path))
    send_anthropic_error(res, e);
  else
    send_error(res, e);
}

// The key a client sent: "Authorization: Bearer <key>" (OpenAI clients, Claude Code's ANTHROPIC_AUTH_TOKEN)
// or "x-api-key: <key>" (Anthropic clients, ANTHROPIC_API_KEY).
std::string given_api_key(const http::Request& req) {
  std::string auth = req.header("Authorization");
  if (auth.size() > 7 && (auth.compare(0, 7, "Bearer ") == 0 || auth.compare(0, 7, "bearer ") == 0))
    return auth.substr(7);
  return req.header("X-Api-Key");
}

void serve_models(const http::Request&, http::Response& res, const ModelContext& m) {
  int64_t limit = m.engine->model().context_limit();
  Json entry = {
      {"id", m.model_id},
      {"object", "model"},
      {"created", 0},
      {"owned_by", "keel"},
      {"context_length", m.context_tokens},
      {"max_model_len", m.context_tokens},
      {"meta",
       {{"n_ctx", m.context_tokens}, {"n_ctx_train", limit}, {"n_vocab", m.engine->model().vocab_size()}}}};
  send_json(res, Json{{"object", "list"}, {"data", Json::array({entry})}});
}

void serve_tokenize(const http::Request& req, http::Response& res, const ModelContext& m) {
  RequestHold hold(m, static_cast<int64_t>(req.body.size()));  // held to the end: the answer is built here
  Json body = parse_json_body(req.body);
  if (!body.is_object() || !body.contains("content") || !body["content"].is_string())
    throw_invalid("content", "'content' must be a string");
  bool add_special = body.value("add_special", false);
  bool with_pieces = body.value("with_pieces", false);
  std::vector<int32_t> ids = m.tokenizer->encode(body["content"].get<std::string>(),
                                                 {.allow_special = true, .add_special_tokens = add_special});
  Json tokens = Json::array();
  for (int32_t id : ids) {
    if (!with_pieces) {
      tokens.push_back(id);
      continue;
    }
    std::vector<int32_t> one{id};
    tokens.push_back(Json{{"id", id}, {"piece", m.tokenizer->decode(one)}});
  }
  send_json(res, Json{{"tokens", std::move(tokens)}});
}

void serve_detokenize(const http::Request& req, http::Response& res, const ModelContext& m) {
  Json body = parse_json_body(req.body);
  if (!body.is_object() || !body.contains("tokens") || !body["tokens"].is_array())
    throw_invalid("tokens", "'tokens' must be an array of token ids");
  std::vector<int32_t> ids;
  for (size_t i = 0; i < body["tokens"].size(); ++i) {
    const Json& id = body["tokens"][i];
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      throw_invalid(fmt::format("tokens[{}]", i), "'tokens[{}]' must be a token id", i);
    ids.push_back(id.get<int32_t>());
  }
  send_json(res, Json{{"content", m.tokenizer->decode(ids)}});
}

}  // namespace

using Route = std::function<void(const http::Request&, http::Response&)>;

struct HttpServer::Impl {
  std::map<std::string, std::map<std::string, Route>> routes;  // path -> method -> handler
  std::unique_ptr<http::Transport> transport;

  void add(const char* method, const char* path, Route r) { routes[path][method] = std::move(r); }
};

HttpServer::HttpServer(ServerOptions options)
    : options_(std::move(options)), impl_(std::make_unique<Impl>()) {}

HttpServer::~HttpServer() {
  stop();
}

void HttpServer::set_model(const ModelContext* ctx) {
  model_.store(ctx);
}

bool HttpServer::retire_model(std::chrono::milliseconds timeout) {
  model_.store(nullptr);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (model_users_.load() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void HttpServer::stop_accepting() {
  if (impl_->transport) impl_->transport->stop_accepting();
}

void HttpServer::start() {
  // A client that closes its socket mid-write must cost one request, not the process.
  std::signal(SIGPIPE, SIG_IGN);
  install_api_routes();
  install_service_routes();
  bind_and_listen();
}

void HttpServer::serve(const http::Request& req, http::Response& res) {
  try {
    if (!options_.api_key.empty() && req.path != "/health" && req.path != "/v1/health") {
      std::string given = given_api_key(req);
      if (!constant_time_equal(given, options_.api_key)) {
        metrics_.count_request("auth", "unauthorized");
        throw ApiError(401, "invalid_api_key",
                       given.empty()
                           ? "an API key is required: send Authorization: Bearer <key> or x-api-key: <key>"
                           : "the API key is not valid");
      }
    }
    auto path = impl_->routes.find(req.path);
    if (path == impl_->routes.end())
      throw ApiError(404, "not_found", fmt::format("no endpoint {} {}", req.method, req.path));
    auto route = path->second.find(req.method);
    if (route == path->second.end()) {
      std::string allow;
      for (const auto& [method, r] : path->second) allow += (allow.empty() ? "" : ", ") + method;
      ApiError e(405, "method_not_allowed", fmt::format("{} takes {}, not {}", req.path, allow, req.method));
      send_error_for(req, res, e);
      res.set_header("Allow", allow);
      return;
    }
    route->second(req, res);
  } catch (const ApiError& e) {
    send_error_for(req, res, e);
  } catch (const Error& e) {
    send_error_for(req, res, api_error_from(e));
  } catch (const std::exception& e) {
    spdlog::error("request failed: {}", e.what());
    send_error_for(req, res, ApiError(500, "internal_error", e.what()));
  }
}

void HttpServer::install_api_routes() {
  Impl& r = *impl_;
  // Each API handler needs the model; ApiError and keel::Error become error bodies in the endpoint's dialect.
  auto api = [this](const char* endpoint, ErrorSender send, auto body) {
    return [this, endpoint, send, body](const http::Request& req, http::Response& res) {
      // Held until the response has been written: a streamed body (every completion's) is produced after
      // this returns, and still reads the model.
      auto use = std::make_shared<const ModelUse>(*this);
      const ModelContext* model = use->model;
      auto fail = [&](const ApiError& e) {
        metrics_.count_request(endpoint, outcome_of(e));
        send(res, e);
      };
      try {
        if (!model) throw loading_error();
        body(req, res, *model);
        if (res.stream)
          res.stream = [inner = std::move(res.stream), use](http::BodyWriter& w) { return inner(w); };
      } catch (const ApiError& e) {
        fail(e);
      } catch (const Error& e) {
        fail(api_error_from(e));
      } catch (const Json::exception& e) {  // a field of the wrong type read by a small endpoint
        fail(ApiError(400, "invalid_value",
                      fmt::format("the request body has a field of the wrong type: {}", e.what()), "body"));
      }
    };
  };
  auto handler = [this](auto fn) {
    return [this, fn](const http::Request& req, http::Response& res, const ModelContext& m) {
      fn(req, res, HandlerEnv{m, metrics_, options_, stopping_});
    };
  };

  auto chat = api("chat", send_error, handler(handle_chat_completions));
  auto completions = api("completions", send_error, handler(handle_completions));
  auto messages = api("messages", send_anthropic_error, handler(handle_messages));
  auto count_tokens = api("count_tokens", send_anthropic_error, handler(handle_count_tokens));
  auto models = api("models", send_error, serve_models);
  auto tokenize = api("tokenize", send_error, serve_tokenize);
  auto detokenize = api("detokenize", send_error, serve_detokenize);

  for (const char* path : {"/v1/chat/completions", "/chat/completions"}) r.add("POST", path, chat);
  for (const char* path : {"/v1/completions", "/completions"}) r.add("POST", path, completions);
  // Claude Code appends ?beta=true; the query is not part of the route.
  r.add("POST", "/v1/messages", messages);
  r.add("POST", "/v1/messages/count_tokens", count_tokens);
  for (const char* path : {"/v1/models", "/models"}) r.add("GET", path, models);
  r.add("POST", "/tokenize", tokenize);
  r.add("POST", "/detokenize", detokenize);
}

void HttpServer::install_service_routes() {
  Impl& r = *impl_;
  for (const char* path : {"/health", "/v1/health"}) {
    r.add("GET", path, [this](const http::Request&, http::Response& res) {
      const ModelUse use(*this);
      if (use.model)
        send_json(res, Json{{"status", "ok"}});
      else
        send_error(res, loading_error());
    });
  }
  r.add("GET", "/metrics", [this](const http::Request&, http::Response& res) {
    if (!options_.metrics) {
      send_error(res, ApiError(501, "not_enabled", "metrics are off: start keel serve with --metrics"));
      return;
    }
    const ModelUse use(*this);
    const ModelContext* model = use.model;
    std::optional<EngineStats> stats;
    if (model) stats = model->engine->stats();
    res.set_content(metrics_.render(stats ? &*stats : nullptr), "text/plain; version=0.0.4; charset=utf-8");
  });
}

void HttpServer::bind_and_listen() {
  http::TransportOptions t;
  t.host = options_.host;
  t.port = options_.port;
  t.max_body_bytes = options_.max_body_bytes;
  t.max_header_bytes = options_.max_header_bytes;
  t.workers = http_worker_threads(options_.parallel);
  t.idle_timeout = options_.idle_timeout;
  t.head_timeout = options_.head_timeout;
  t.body_timeout = options_.body_timeout;
  t.write_timeout = options_.write_timeout;
  t.listen_fd = options_.listen_fd;
  // The transport's own errors (malformed or oversized requests, timeouts) in the path's dialect.
  auto errors = [](int status, const std::string& code, const std::string& message, std::string_view path) {
    http::Response res;
    ApiError e(status, code, message);
    if (is_anthropic_path(std::string(path)))
      send_anthropic_error(res, e);
    else
      send_error(res, e);
    return res;
  };
  impl_->transport = std::make_unique<http::Transport>(
      t, [this](const http::Request& req, http::Response& res) { serve(req, res); }, errors);
  impl_->transport->start();
  port_ = impl_->transport->port();
}

int HttpServer::listen_fd() const {
  return impl_->transport ? impl_->transport->listen_fd() : -1;
}

size_t HttpServer::open_connections() const {
  return impl_->transport ? impl_->transport->open_connections() : 0;
}

void HttpServer::stop() {
  if (!impl_->transport) return;
  stopping_.store(true);
  impl_->transport->stop();
}

}  // namespace keel::server
