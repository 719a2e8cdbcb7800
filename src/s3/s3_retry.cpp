#include "s3_retry.hpp"

#include <algorithm>

namespace gpufeed::loader::s3 {

Backoff::Backoff(std::chrono::milliseconds base, std::chrono::milliseconds cap, std::uint64_t seed)
    : base_(base), cap_(cap), random_(seed) {}

std::chrono::milliseconds Backoff::ceiling(int retry) const {
  auto limit = base_;
  for (int n = 1; n < retry && limit < cap_; ++n) limit *= 2;  // stops doubling at the cap: no overflow
  return std::min(limit, cap_);
}

std::chrono::milliseconds Backoff::delay(int retry) {
  const auto limit = ceiling(retry).count();
  std::lock_guard lock(mutex_);
  std::uniform_int_distribution<long long> pick(0, std::max<long long>(limit, 0));
  return std::chrono::milliseconds(pick(random_));
}

bool retryable_status(long status, std::string_view code) {
  if (status >= 500 && status <= 599) return true;
  if (status == 429) return true;
  return status == 400 && code == "RequestTimeout";
}

}  // namespace gpufeed::loader::s3
