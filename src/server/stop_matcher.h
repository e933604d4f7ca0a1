// Stop strings over a stream of text deltas. Text that could be the start of a stop string is held back until
// the next delta decides it, so a stop string never reaches the client, not even in part; the first match
// ends the output just before it (OpenAI and llama-server leave the stop string out).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace keel::server {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);  // empty strings are ignored

  // The text that is safe to emit now. After a match, it ends where the stop string began; matched() turns
  // true and later input is ignored.
  std::string feed(std::string_view delta);
  // At the end of generation: the text still held back (no stop string can complete any more).
  std::string flush();
  bool matched() const { return matched_; }
  // The stop string that matched (empty before a match).
  const std::string& matched_stop() const { return matched_stop_; }
  bool empty() const { return stops_.empty(); }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool matched_ = false;
  std::string matched_stop_;
};

}  // namespace keel::server
