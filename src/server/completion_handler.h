// POST /v1/chat/completions and /v1/completions: validate, prepare, admit before any header (400/503 are real
// status codes), then stream (SSE) or answer (a chunked JSON body with leading-whitespace keep-alives). After
// the headers a failure is an error event (or an error body), never a dropped connection or an empty 200; a
// client that goes away cancels its request at once. Internal to keel_server (it includes httplib.h).
#pragma once
#include <httplib.h>

#include "server/http_server.h"

namespace keel::server {

struct HandlerEnv {
  const ModelContext& model;
  ServerMetrics& metrics;
  const ServerOptions& options;
  const std::atomic<bool>& stopping;  // the server is stopping: cancel, and end the response with an error
};

void handle_chat_completions(const httplib::Request& req, httplib::Response& res, const HandlerEnv& env);
void handle_completions(const httplib::Request& req, httplib::Response& res, const HandlerEnv& env);

// An error response: the status, the OpenAI error body, Retry-After when the error has one.
void send_error(httplib::Response& res, const ApiError& error);

}  // namespace keel::server
