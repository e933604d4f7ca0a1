// Stop strings over a stream: the output a client sees equals the whole text cut before the first stop
// string, whatever the split into deltas; nothing of a stop string is ever emitted. The oracle is
// std::string::find on the whole text, computed in the test.
#include "server/stop_matcher.h"

#include <gtest/gtest.h>

#include <algorithm>

using keel::server::StopMatcher;

namespace {

// The expected output: the text up to the earliest occurrence of any stop string.
std::string cut_at_first_stop(const std::string& text, const std::vector<std::string>& stops) {
  size_t best = std::string::npos;
  for (const auto& s : stops) best = std::min(best, text.find(s));
  return best == std::string::npos ? text : text.substr(0, best);
}

}  // namespace

TEST(StopMatcher, HoldsBackPrefixesAndCuts) {
  StopMatcher m({"</answer>"});
  EXPECT_EQ(m.feed("The answer is 4</"), "The answer is 4");
  EXPECT_EQ(m.feed("ans"), "");
  EXPECT_EQ(m.feed("wer> and more"), "");
  EXPECT_TRUE(m.matched());
  EXPECT_EQ(m.feed("ignored"), "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, ReleasesWhatCannotBeAStop) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.feed("ST"), "");
  EXPECT_EQ(m.feed("AY"), "STAY");
  EXPECT_EQ(m.feed("S"), "");
  EXPECT_EQ(m.flush(), "S");  // the end decides: it was not a stop string
  EXPECT_FALSE(m.matched());
}

TEST(StopMatcher, NoStopsPassesThrough) {
  StopMatcher m({"", ""});
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.feed("abc"), "abc");
}

TEST(StopMatcher, EverySplitGivesTheWholeTextAnswer) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"hello world\n\nUser: hi", {"\n\nUser:"}},
      {"aaab", {"aab"}},
      {"abcabd", {"abd", "cab"}},
      {"no stop here at all", {"zzz", "stop!"}},
      {"x\xc3\xa9y stop \xe2\x82\xac", {"\xe2\x82\xac", "y s"}},
      {"ends with a prefix ST", {"STOP"}},
  };
  for (const auto& [text, stops] : cases) {
    std::string want = cut_at_first_stop(text, stops);
    // Every way of cutting the text in two and in three pieces.
    for (size_t i = 0; i <= text.size(); ++i) {
      for (size_t j = i; j <= text.size(); ++j) {
        StopMatcher m(stops);
        std::string got = m.feed(text.substr(0, i));
        got += m.feed(text.substr(i, j - i));
        got += m.feed(text.substr(j));
        got += m.flush();
        ASSERT_EQ(got, want) << "text '" << text << "' split at " << i << ", " << j;
        EXPECT_EQ(m.matched(), want.size() != text.size());
      }
    }
  }
}
