#include "core/sysmem.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"

using namespace keel;

TEST(SysMem, ParsesLimits) {
  EXPECT_EQ(parse_memory_limit("12GiB", 0), int64_t{12} << 30);
  EXPECT_EQ(parse_memory_limit("512M", 0), 512000000);
  EXPECT_EQ(parse_memory_limit("4096B", 0), 4096);
  EXPECT_EQ(parse_memory_limit("2000000", 0), 2000000);
  // A bare number below 1 MiB is a unit left off (or "1.0" meant as all of it), not a few bytes.
  for (const char* text : {"1.0", "1", "64", "4096", "1048575"})
    EXPECT_THROW(parse_memory_limit(text, int64_t(1) << 34), Error) << text;
  EXPECT_EQ(parse_memory_limit("1048576", 0), 1048576);
  EXPECT_EQ(parse_memory_limit("0.5GiB", 0), int64_t(1) << 29);
  EXPECT_EQ(parse_memory_limit("1.5 KiB", 0), 1536);
  EXPECT_EQ(parse_memory_limit("0.5", 1000), 500);
  EXPECT_EQ(parse_memory_limit("80%", 1000), 800);
  for (const char* bad : {"", "x", "12 parsecs", "-3G", "nan", "1e30"})
    EXPECT_THROW(parse_memory_limit(bad, 1000), Error) << bad;
}

TEST(SysMem, BudgetFromFacts) {
  MemoryFacts f;
  f.mem_available = int64_t{20} << 30;
  f.process_rss = int64_t{1} << 30;
  // no cgroup: room 21 GiB, margin 5 % of it
  int64_t room = int64_t{21} << 30;
  EXPECT_EQ(default_cpu_budget(f), room - room / 20);
  f.cgroup_limit = int64_t{4} << 30;
  f.cgroup_usage = int64_t{3} << 30;  // 1 GiB left in the cgroup + our own 1 GiB
  EXPECT_EQ(default_cpu_budget(f), (int64_t{2} << 30) - (int64_t{512} << 20));
}

TEST(SysMem, ReadsThisMachine) {
  MemoryFacts f = read_memory_facts();
  EXPECT_GT(f.mem_total, 0);
  EXPECT_GT(f.mem_available, 0);
  EXPECT_GT(f.process_rss, 0);
  {  // touch 64 MiB: VmRSS and VmHWM must see it
    std::vector<char> big(64 << 20, 1);
    int64_t rss = process_rss();
    EXPECT_GE(rss, 60 << 20);
    EXPECT_GE(process_peak_rss(), rss);
    EXPECT_EQ(big[12345], 1);
  }
}
