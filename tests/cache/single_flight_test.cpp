// The single-flight gate: waiters share the leader's bytes or error.
#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <stdexcept>
#include <thread>

#include "single_flight.hpp"

namespace gpufeed::loader::cache {
namespace {

TEST(CacheSingleFlight, WaitersShareTheLeadersBytes) {
  SingleFlight flights;
  std::atomic<int> fetches{0};
  std::latch start(6);
  std::atomic<int> joined{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      std::vector<std::byte> out;
      start.arrive_and_wait();
      if (flights.run("k", out, [&](std::vector<std::byte>& buffer) {
            ++fetches;
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            buffer.assign(3, std::byte{7});
          })) {
        ++joined;
      }
      EXPECT_EQ(out, std::vector<std::byte>(3, std::byte{7}));
    });
  }
  for (auto& t : threads) t.join();
  // Every thread either fetched or joined; the gate forgets a key as soon as
  // its fetch ends, so a latecomer fetches again.
  EXPECT_EQ(fetches.load() + joined.load(), 6);
  EXPECT_GE(joined.load(), 1);
}

TEST(CacheSingleFlight, WaitersGetTheLeadersError) {
  SingleFlight flights;
  std::latch start(4);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<std::byte> out;
      start.arrive_and_wait();
      try {
        flights.run("k", out, [](std::vector<std::byte>&) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          throw std::runtime_error("store down");
        });
      } catch (const std::runtime_error& e) {
        if (std::string(e.what()) == "store down") ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 4);
}

TEST(CacheSingleFlight, DifferentKeysDoNotWait) {
  SingleFlight flights;
  std::vector<std::byte> out;
  int fetches = 0;
  const auto fetch = [&](std::vector<std::byte>&) { ++fetches; };
  EXPECT_FALSE(flights.run("a", out, fetch));
  EXPECT_FALSE(flights.run("b", out, fetch));
  EXPECT_FALSE(flights.run("a", out, fetch));  // the first one has ended
  EXPECT_EQ(fetches, 3);
}

}  // namespace
}  // namespace gpufeed::loader::cache
