// The request budget's accounting: what acquire() takes is the stated estimate, refusals are the stated
// statuses, and bytes come back when tickets end or shrink.
#include "server/request_memory.h"

#include <gtest/gtest.h>

#include <thread>

#include "server/api_error.h"

namespace keel::server {
namespace {

constexpr int64_t MiB = int64_t{1} << 20;

TEST(RequestMemory, AcquireTakesTheEstimateAndTheTicketGivesItBack) {
  RequestMemory budget(64 * MiB, std::chrono::milliseconds(0));
  {
    RequestMemory::Ticket t = budget.acquire(1000);
    EXPECT_EQ(t.bytes(), 96 * 1000 + MiB);  // 96 bytes per body byte + 1 MiB, as documented
    EXPECT_EQ(budget.in_use(), 96 * 1000 + MiB);
    t.shrink_to(5000);
    EXPECT_EQ(budget.in_use(), 5000);
    t.shrink_to(9000);  // never grows
    EXPECT_EQ(budget.in_use(), 5000);
  }
  EXPECT_EQ(budget.in_use(), 0);
  EXPECT_EQ(budget.peak(), 96 * 1000 + MiB);
}

TEST(RequestMemory, ABodyLargerThanTheWholeBudgetIsA413NamingTheLargestBody) {
  RequestMemory budget(16 * MiB, std::chrono::milliseconds(0));
  const int64_t largest = (16 * MiB - MiB) / 96;
  EXPECT_EQ(RequestMemory::max_body_for(16 * MiB), largest);
  EXPECT_NO_THROW(budget.acquire(largest));
  try {
    budget.acquire(largest + 1);
    FAIL() << "no refusal";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 413);
    EXPECT_EQ(e.code(), "request_too_large");
    EXPECT_NE(std::string(e.what()).find(std::to_string(largest)), std::string::npos) << e.what();
  }
  EXPECT_EQ(budget.in_use(), 0);
}

TEST(RequestMemory, ABusyBudgetWaitsForAReleaseThenRefusesWithARetryable503) {
  RequestMemory budget(10 * MiB, std::chrono::milliseconds(300));
  const int64_t body = (6 * MiB - MiB) / 96;  // each takes just under 6 MiB: two do not fit at once
  RequestMemory::Ticket first = budget.acquire(body);
  auto t0 = std::chrono::steady_clock::now();
  try {
    budget.acquire(body);
    FAIL() << "no refusal";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 503);
    EXPECT_EQ(e.retry_after_seconds(), 1);
  }
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(300));
  // Released while another waits: the waiter gets it.
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    first.release();
  });
  RequestMemory::Ticket second = budget.acquire(body);
  releaser.join();
  EXPECT_EQ(budget.in_use(), second.bytes());
}

}  // namespace
}  // namespace keel::server
