#pragma once
// Which samples make up batch k: PyTorch's BatchSampler over a sequential or
// (per epoch, seeded) random sampler, with drop_last. Batches are numbered
// across epochs, as persistent workers see them.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace gpufeed::loader {

class BatchOrder {
 public:
  BatchOrder(std::size_t samples, std::size_t batch_size, bool drop_last, bool shuffle, std::uint64_t seed);
  std::uint64_t batches_per_epoch() const { return per_epoch_; }
  std::uint64_t epoch_of(std::uint64_t batch) const { return per_epoch_ ? batch / per_epoch_ : 0; }
  // Indices into the dataset of the samples of global batch `batch`.
  // Thread-safe.
  std::vector<std::size_t> batch(std::uint64_t batch) const;

 private:
  std::shared_ptr<const std::vector<std::size_t>> permutation(std::uint64_t epoch) const;

  std::size_t samples_;
  std::size_t batch_size_;
  bool shuffle_;
  std::uint64_t seed_;
  std::uint64_t per_epoch_;
  mutable std::mutex mu_;
  mutable std::map<std::uint64_t, std::shared_ptr<const std::vector<std::size_t>>> permutations_;
};

// A measured window of steps with its fair share of epoch refills. The
// pipeline drains at each epoch's end (pipeline.hpp), so the first batch of
// every epoch waits for a refill; a window of part of an epoch holds one
// refill too many or too few (a 6 s trial on 400 files: 0 or 1 in 1.3
// epochs), and its rate reads up to ~15% off the job's long-run one. The
// refills seen are replaced by their mean times the epochs the window
// spans (steps / per_epoch). `waits_s[i]` is the wait of global step
// `first + i`; no refill seen (or no epochs): the window as measured.
struct FairWindow {
  double seconds = 0;     // the window's wall time, refills made fair
  double waited_s = 0;    // its waits for data, likewise
  int refills_seen = 0;
};
FairWindow epoch_fair_window(const std::vector<double>& waits_s, std::uint64_t first, double seconds, double waited_s,
                             std::uint64_t per_epoch);

}  // namespace gpufeed::loader
