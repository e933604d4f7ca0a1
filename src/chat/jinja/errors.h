// Errors the Jinja engine raises. Each names the Python exception jinja2 would raise in the same place
// ("TypeError: ...", "UndefinedError: ..."), so a template author can compare with what transformers reports.
#pragma once
#include <fmt/format.h>

#include <string>

#include "core/error.h"

namespace keel::chat::jinja {

// raise_exception(msg) called by the template: what() is exactly the template's message.
class TemplateRaisedError : public Error {
 public:
  explicit TemplateRaisedError(std::string message)
      : Error(ErrorCode::invalid_argument, std::move(message)) {}
};

// Any other failure while parsing or rendering. `python_type` is jinja2's exception name.
class TemplateError : public Error {
 public:
  TemplateError(ErrorCode code, std::string python_type, std::string message)
      : Error(code, python_type + ": " + message),
        python_type_(std::move(python_type)),
        message_(std::move(message)) {}
  const std::string& python_type() const { return python_type_; }
  const std::string& message() const { return message_; }  // without the type

 private:
  std::string python_type_;
  std::string message_;
};

template <typename... Args>
[[noreturn]] void raise_error(const char* python_type, fmt::format_string<Args...> format, Args&&... args) {
  throw TemplateError(ErrorCode::invalid_argument, python_type,
                      fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
[[noreturn]] void type_error(fmt::format_string<Args...> format, Args&&... args) {
  raise_error("TypeError", format, std::forward<Args>(args)...);
}
template <typename... Args>
[[noreturn]] void value_error(fmt::format_string<Args...> format, Args&&... args) {
  raise_error("ValueError", format, std::forward<Args>(args)...);
}
template <typename... Args>
[[noreturn]] void syntax_error(int line, fmt::format_string<Args...> format, Args&&... args) {
  throw TemplateError(ErrorCode::invalid_file, "TemplateSyntaxError",
                      fmt::format("{} (line {})", fmt::format(format, std::forward<Args>(args)...), line));
}
template <typename... Args>
[[noreturn]] void unsupported_error(fmt::format_string<Args...> format, Args&&... args) {
  throw TemplateError(ErrorCode::unsupported, "Unsupported",
                      fmt::format(format, std::forward<Args>(args)...));
}
// A render that went past its limits (output size, steps, call depth, nesting): never a crash or a hang.
template <typename... Args>
[[noreturn]] void limit_error(fmt::format_string<Args...> format, Args&&... args) {
  raise_error("LimitError", format, std::forward<Args>(args)...);
}

}  // namespace keel::chat::jinja
