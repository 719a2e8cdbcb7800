#include "gpufeed/loader/batch_order.hpp"

#include <algorithm>
#include <numeric>
#include <random>

namespace gpufeed::loader {

BatchOrder::BatchOrder(std::size_t samples, std::size_t batch_size, bool drop_last, bool shuffle, std::uint64_t seed)
    : samples_(samples), batch_size_(std::max<std::size_t>(batch_size, 1)), shuffle_(shuffle), seed_(seed),
      per_epoch_(drop_last ? samples / batch_size_ : (samples + batch_size_ - 1) / batch_size_) {}

std::shared_ptr<const std::vector<std::size_t>> BatchOrder::permutation(std::uint64_t epoch) const {
  std::lock_guard lock(mu_);
  auto it = permutations_.find(epoch);
  if (it != permutations_.end()) return it->second;
  auto perm = std::make_shared<std::vector<std::size_t>>(samples_);
  std::iota(perm->begin(), perm->end(), std::size_t{0});
  std::mt19937_64 rng(seed_ * 0x9E3779B97F4A7C15ull + epoch);
  std::shuffle(perm->begin(), perm->end(), rng);
  // Workers are at most a few epochs apart: keep the newest few.
  while (permutations_.size() >= 4) permutations_.erase(permutations_.begin());
  permutations_.emplace(epoch, perm);
  return perm;
}

std::vector<std::size_t> BatchOrder::batch(std::uint64_t batch) const {
  if (per_epoch_ == 0) return {};
  const std::uint64_t epoch = batch / per_epoch_;
  const std::size_t first = static_cast<std::size_t>(batch % per_epoch_) * batch_size_;
  const std::size_t last = std::min(first + batch_size_, samples_);
  std::vector<std::size_t> out;
  out.reserve(last - first);
  if (!shuffle_) {
    for (std::size_t i = first; i < last; ++i) out.push_back(i);
    return out;
  }
  const auto perm = permutation(epoch);
  out.assign(perm->begin() + static_cast<std::ptrdiff_t>(first), perm->begin() + static_cast<std::ptrdiff_t>(last));
  return out;
}

FairWindow epoch_fair_window(const std::vector<double>& waits_s, std::uint64_t first, double seconds, double waited_s,
                             std::uint64_t per_epoch) {
  FairWindow out{seconds, waited_s, 0};
  if (per_epoch == 0 || waits_s.empty()) return out;
  double refills = 0;
  for (std::size_t i = 0; i < waits_s.size(); ++i) {
    const std::uint64_t step = first + i;
    if (step > 0 && step % per_epoch == 0) {  // an epoch's first batch (epoch 0's is the start-up)
      refills += waits_s[i];
      ++out.refills_seen;
    }
  }
  if (out.refills_seen == 0) return out;
  const double fair = static_cast<double>(waits_s.size()) / static_cast<double>(per_epoch) * refills / out.refills_seen;
  out.seconds = std::max(0.0, seconds - refills + fair);
  out.waited_s = std::max(0.0, waited_s - refills + fair);
  return out;
}

}  // namespace gpufeed::loader
