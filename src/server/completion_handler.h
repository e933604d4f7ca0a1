// The generation endpoints, in two dialects over one request life: POST /v1/chat/completions and
// /v1/completions (OpenAI), POST /v1/messages and /v1/messages/count_tokens (Anthropic). Each request is
// validated, prepared, admitted before any header (400/503 are real status codes), then streamed (SSE) or
// answered (a chunked JSON body with leading-whitespace keep-alives). After the headers a failure is an error
// event (or an error body), never a dropped connection or an empty 200; a client that goes away cancels its
// request at once. What differs between dialects is only the bytes: a ResponseWriter. The handlers see only
// keel's own HTTP request and response (server/http/message.h).
#pragma once
#include "server/http/message.h"
#include "server/http_server.h"

namespace keel::server {

struct HandlerEnv {
  const ModelContext& model;
  ServerMetrics& metrics;
  const ServerOptions& options;
  const std::atomic<bool>& stopping;  // the server is stopping: cancel, and end the response with an error
};

void handle_chat_completions(const http::Request& req, http::Response& res, const HandlerEnv& env);
void handle_completions(const http::Request& req, http::Response& res, const HandlerEnv& env);
void handle_messages(const http::Request& req, http::Response& res, const HandlerEnv& env);
void handle_count_tokens(const http::Request& req, http::Response& res, const HandlerEnv& env);

// The error dialect of a path: Anthropic's shape under /v1/messages, OpenAI's elsewhere.
bool is_anthropic_path(const std::string& path);

// An error response: the status, the OpenAI error body, Retry-After when the error has one.
void send_error(http::Response& res, const ApiError& error);
using ErrorSender = void (*)(http::Response&, const ApiError&);  // send_error or send_anthropic_error
// The same in Anthropic's shape ({"type": "error", "error": {...}}).
void send_anthropic_error(http::Response& res, const ApiError& error);

}  // namespace keel::server
