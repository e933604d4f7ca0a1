#include "server/api_error.h"

namespace keel::server {

namespace {
std::string default_type(int status) {
  if (status == 401) return "authentication_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}
}  // namespace

ApiError::ApiError(int status, std::string code, std::string message, std::string param, std::string type)
    : std::runtime_error(std::move(message)),
      status_(status),
      code_(std::move(code)),
      param_(std::move(param)),
      type_(type.empty() ? default_type(status) : std::move(type)) {}

Json ApiError::to_json() const {
  Json e = Json::object();
  e["message"] = what();
  e["type"] = type_;
  e["code"] = code_.empty() ? Json() : Json(code_);
  e["param"] = param_.empty() ? Json() : Json(param_);
  return Json{{"error", std::move(e)}};
}

ApiError api_error_from(const Error& error) {
  switch (error.code()) {
    case ErrorCode::context_length_exceeded:
      return ApiError(400, "context_length_exceeded", error.what(), "messages");
    case ErrorCode::invalid_argument:
      return ApiError(400, "invalid_value", error.what());
    case ErrorCode::unsupported:
      return ApiError(400, "unsupported", error.what());
    case ErrorCode::invalid_file:
      return ApiError(400, "invalid_value", error.what());
    case ErrorCode::out_of_memory:
      return ApiError(503, "insufficient_memory",
                      fmt::format("not enough memory for this request now; retry later ({})", error.what()),
                      {}, "server_error")
          .with_retry_after(2);
    case ErrorCode::cancelled:
      return ApiError(499, "cancelled", error.what());
    case ErrorCode::internal:
      return ApiError(500, "internal_error", error.what());
  }
  return ApiError(500, "internal_error", error.what());
}

const char* json_kind_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

}  // namespace keel::server
