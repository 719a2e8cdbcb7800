#pragma once
// When and how long to wait before trying a request again: capped
// exponential backoff with full jitter (the wait before retry n is uniform in
// [0, min(cap, base * 2^(n-1))]), so many workers that failed together do
// not all come back together.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <string_view>

namespace gpufeed::loader::s3 {

class Backoff {
 public:
  Backoff(std::chrono::milliseconds base, std::chrono::milliseconds cap, std::uint64_t seed);

  // The longest wait before retry `retry` (1 = after the first failed try).
  std::chrono::milliseconds ceiling(int retry) const;
  // A wait drawn uniformly from [0, ceiling(retry)]. Thread-safe.
  std::chrono::milliseconds delay(int retry);

 private:
  std::chrono::milliseconds base_;
  std::chrono::milliseconds cap_;
  std::mutex mutex_;
  std::mt19937_64 random_;
};

// Whether an HTTP answer may succeed when sent again: any 5xx (500
// InternalError, 503 SlowDown, ...), 429, and S3's 400 RequestTimeout.
bool retryable_status(long status, std::string_view code);

}  // namespace gpufeed::loader::s3
