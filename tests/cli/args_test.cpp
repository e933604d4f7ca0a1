#include "cli/args.h"

#include <gtest/gtest.h>

using keel::cli::normalize_short_flags;

TEST(Args, MultiLetterShortFlagsBecomeLong) {
  std::vector<std::string> in = {"serve", "-np", "4", "-ngl=99", "-c", "8192", "-n", "5", "--parallel", "2"};
  std::vector<std::string> want = {"serve", "--parallel", "4", "--n-gpu-layers=99", "-c",
                                   "8192",  "-n",         "5", "--parallel",        "2"};
  EXPECT_EQ(normalize_short_flags(in), want);
}

TEST(Args, ValuesThatLookLikeFlagsAreOnlyRewrittenWhenExact) {
  std::vector<std::string> in = {"-npx", "--np", "-n", "-fa"};
  std::vector<std::string> want = {"-npx", "--np", "-n", "--flash-attn"};
  EXPECT_EQ(normalize_short_flags(in), want);
}
