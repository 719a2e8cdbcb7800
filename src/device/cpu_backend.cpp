// The cpu backend: training on the CPU. Nothing moves after collation, so
// this backend only keeps the interface's bookkeeping honest: tickets are
// numbered, buffers are accounted, and the transfer figures stay zero.
#include <atomic>
#include <cstdlib>
#include <new>
#include <stdexcept>

#include "gpufeed/error.hpp"
#include "gpufeed/device/device_host.hpp"

namespace gpufeed::loader {
namespace {

class CpuBackend final : public DeviceBackend {
 public:
  std::string name() const override { return "cpu"; }
  std::string description() const override {
    return "cpu (training on the CPU): no transfer, the step reads the collated batch in place";
  }

  PinnedBuffer allocate_pinned(std::size_t bytes) override {
    // 64-byte aligned like the host allocator's pages would be for a vector
    // load; nothing is page-locked because nothing is ever DMA'd.
    void* data = std::aligned_alloc(64, round_up(bytes));
    if (data == nullptr) {
      throw runtime_error("cannot allocate a batch buffer of " + std::to_string(bytes) + " bytes",
                          "lower --batch-size, --workers or --prefetch");
    }
    allocated_ += bytes;
    return PinnedBuffer{static_cast<std::byte*>(data), bytes, false};
  }
  void free_pinned(PinnedBuffer buffer) noexcept override {
    if (buffer.data == nullptr) return;
    std::free(buffer.data);
    allocated_ -= buffer.bytes;
  }
  std::uint64_t pinned_bytes() const override { return 0; }  // none is page-locked

  void reserve_device_slots(int count, std::size_t) override {
    if (count <= 0) throw std::invalid_argument("cpu backend: slot count must be positive");
  }
  void* device_slot(int) override { return nullptr; }

  std::uint64_t copy_async(const PinnedBuffer&, std::size_t, int) override { return ++issued_; }
  void wait(std::uint64_t ticket) override {
    if (ticket == 0 || ticket > issued_) throw std::invalid_argument("cpu backend: unknown ticket");
  }
  TransferStats transfer_stats() const override { return {}; }
  bool transfers() const override { return false; }

 private:
  static std::size_t round_up(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

  std::atomic<std::uint64_t> issued_{0};
  std::atomic<std::uint64_t> allocated_{0};
};

}  // namespace

std::unique_ptr<DeviceBackend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace gpufeed::loader
