// keel's one error type. Errors are values that travel as exceptions up to a request boundary (the scheduler,
// a CLI command, an HTTP handler), where they become a message for the user. Nothing in src/ aborts the
// process.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace keel {

enum class ErrorCode {
  invalid_argument,         // a caller passed something malformed (flag, request field, shape)
  invalid_file,             // a model file, config or tokenizer is corrupt or inconsistent
  unsupported,              // valid input keel does not handle (model type, dtype, feature)
  out_of_memory,            // the memory pool refused an allocation (retryable)
  context_length_exceeded,  // a prompt that can never fit the context
  cancelled,                // the client went away
  internal,                 // a broken invariant inside keel: a bug
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string message) : std::runtime_error(std::move(message)), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

// throw_error(ErrorCode::invalid_file, "{}: tensor {} ...", path, name)
template <typename... Args>
[[noreturn]] void throw_error(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(code, fmt::format(format, std::forward<Args>(args)...));
}

// KEEL_CHECK(cond, "message {}", x): an internal invariant; throws ErrorCode::internal, never aborts.
#define KEEL_CHECK(cond, ...)                                                                             \
  do {                                                                                                    \
    if (!(cond))                                                                                          \
      ::keel::throw_error(::keel::ErrorCode::internal, "{}:{}: check failed: {}: {}", __FILE__, __LINE__, \
                          #cond, fmt::format(__VA_ARGS__));                                               \
  } while (0)

}  // namespace keel
