// The OpenAI error shape: {"error": {"message", "type", "code", "param"}} with an HTTP status. Request
// validation throws ApiError naming the field (`param`); keel::Error from the engine, tokenizer or templates
// maps to one.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "chat/messages.h"
#include "core/error.h"

namespace keel::server {

using Json = chat::Json;

class ApiError : public std::runtime_error {
 public:
  // `code` and `param` empty → JSON null. `type` follows OpenAI: invalid_request_error (4xx),
  // authentication_error (401), server_error (5xx).
  ApiError(int status, std::string code, std::string message, std::string param = {}, std::string type = {});
  int status() const { return status_; }
  const std::string& code() const { return code_; }
  const std::string& param() const { return param_; }
  const std::string& type() const { return type_; }
  int retry_after_seconds() const { return retry_after_; }  // > 0: a Retry-After header goes with it
  ApiError& with_retry_after(int seconds) {
    retry_after_ = seconds;
    return *this;
  }
  Json to_json() const;  // {"error": {...}}

 private:
  int status_;
  std::string code_, param_, type_;
  int retry_after_ = 0;
};

// 400 invalid_request_error naming `param` (a JSON path such as "messages[2].content").
template <typename... Args>
[[noreturn]] void throw_invalid(std::string param, fmt::format_string<Args...> format, Args&&... args) {
  throw ApiError(400, "invalid_value", fmt::format(format, std::forward<Args>(args)...), std::move(param));
}

// What a JSON value is, for "expected X, got Y" messages: "null", "a boolean", "an integer", "a number", "a
// string", "an array", "an object".
const char* json_kind_name(const Json& v);

// The HTTP answer for a keel::Error: context_length_exceeded → 400, invalid_argument / unsupported /
// invalid_file → 400, out_of_memory → 503 insufficient_memory with Retry-After, cancelled → 499, internal →
// 500.
ApiError api_error_from(const Error& error);

}  // namespace keel::server
