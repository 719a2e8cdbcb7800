#pragma once
// The per-sample CPU work a worker does between reading a sample and placing
// it in the batch buffer: nothing (copy the bytes), a fixed CPU cost, or a
// JPEG decode plus crop/resize (src/decode). Instances are shared by all
// workers: apply() must be thread-safe (keep per-thread state thread_local or
// in a pool).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace gpufeed::loader {

class SampleTransform {
 public:
  virtual ~SampleTransform() = default;
  virtual std::string describe() const = 0;  // "jpeg decode + resize to 224x224x3"
  // Bytes one sample occupies in the batch buffer.
  virtual std::size_t output_bytes() const = 0;
  // Shape of one output sample for a model step ({224, 224, 3}: HWC uint8 for images,
  // {output_bytes()} otherwise).
  virtual std::vector<std::int64_t> sample_shape() const = 0;
  // Writes the sample into `out` (exactly output_bytes() long). Throws
  // SampleError (with `key`) for a corrupt sample.
  virtual void apply(const std::string& key, std::span<const std::byte> in, std::span<std::byte> out) = 0;

  // True when the transform keeps the bytes as they are: the pipeline then
  // reads samples straight into their batch slots and calls finish_in_place.
  virtual bool in_place() const { return false; }
  // The slot holds `filled` bytes of the sample; do the rest of the work
  // (zero the tail, spend the CPU).
  virtual void finish_in_place(const std::string& key, std::span<std::byte> slot, std::size_t filled);
};

}  // namespace gpufeed::loader
