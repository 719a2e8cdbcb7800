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

}  // namespace gpufeed::loader
