#include "server/http/message.h"

#include <strings.h>

namespace keel::server::http {

std::string header_value(const std::vector<Header>& headers, std::string_view name) {
  for (const Header& h : headers)
    if (h.name.size() == name.size() && strncasecmp(h.name.data(), name.data(), name.size()) == 0)
      return h.value;
  return {};
}

}  // namespace keel::server::http
