#include "core/error.h"

namespace keel {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument:
      return "invalid_argument";
    case ErrorCode::invalid_file:
      return "invalid_file";
    case ErrorCode::unsupported:
      return "unsupported";
    case ErrorCode::out_of_memory:
      return "out_of_memory";
    case ErrorCode::context_length_exceeded:
      return "context_length_exceeded";
    case ErrorCode::cancelled:
      return "cancelled";
    case ErrorCode::internal:
      return "internal";
  }
  return "unknown";
}

}  // namespace keel
