#include "server/stop_matcher.h"

#include <algorithm>

#include "chat/parsers/marker_scan.h"

namespace keel::server {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (auto& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

std::string StopMatcher::feed(std::string_view delta) {
  if (matched_) return {};
  if (stops_.empty()) return std::string(delta);
  held_.append(delta);
  std::vector<std::string_view> views(stops_.begin(), stops_.end());
  chat::markers::Found found = chat::markers::find_first(held_, views);
  if (found.pos != chat::markers::npos) {
    matched_ = true;
    matched_stop_ = std::string(found.marker);
    std::string out = held_.substr(0, found.pos);
    held_.clear();
    return out;
  }
  size_t keep = chat::markers::partial_marker_suffix(held_, views);
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  if (matched_) return {};
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace keel::server
