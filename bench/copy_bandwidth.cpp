// Host backend copy bandwidth against plain memcpy: the same page-locked
// source buffers, the same destination slots, the same batch sizes. The
// backend's copy thread should cost next to nothing over a bare memcpy
// (target: ratio >= 0.9).
//   gpufeed_copy_bandwidth [--batch-mib 64] [--batches 16] [--runs 7] [--buffers 4]
// Runs alternate (memcpy, backend, memcpy, ...) so drift on a noisy machine
// hits both; the medians are compared.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpufeed/device/device_host.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::size_t batch_mib = 64;
  int batches = 16;
  int runs = 7;
  int buffers = 4;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    const long value = has_value ? std::strtol(argv[i + 1], nullptr, 10) : 0;
    if (arg == "--batch-mib" && value > 0) o.batch_mib = static_cast<std::size_t>(value);
    else if (arg == "--batches" && value > 0) o.batches = static_cast<int>(value);
    else if (arg == "--runs" && value > 0) o.runs = static_cast<int>(value);
    else if (arg == "--buffers" && value > 0) o.buffers = static_cast<int>(value);
    else {
      std::fprintf(stderr, "usage: %s [--batch-mib N] [--batches N] [--runs N] [--buffers N]\n", argv[0]);
      std::exit(2);
    }
    ++i;
  }
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const std::size_t bytes = o.batch_mib << 20;
  auto backend = gpufeed::loader::make_host_backend();
  std::vector<gpufeed::loader::PinnedBuffer> sources;
  for (int i = 0; i < o.buffers; ++i) {
    sources.push_back(backend->allocate_pinned(bytes));
    std::memset(sources.back().data, i + 1, bytes);  // fault the pages in before timing
  }
  backend->reserve_device_slots(o.buffers, bytes);

  const auto plain_memcpy = [&] {
    const auto start = Clock::now();
    for (int b = 0; b < o.batches; ++b) {
      const int k = b % o.buffers;
      std::memcpy(backend->device_slot(k), sources[k].data, bytes);
    }
    return seconds_since(start);
  };
  std::vector<double> issue_s;  // time spent inside each copy_async: it must return at once
  const auto through_backend = [&] {
    const auto start = Clock::now();
    std::uint64_t last = 0;
    for (int b = 0; b < o.batches; ++b) {
      const int k = b % o.buffers;
      const auto issued = Clock::now();
      last = backend->copy_async(sources[k], bytes, k);
      issue_s.push_back(seconds_since(issued));
    }
    backend->wait(last);
    return seconds_since(start);
  };

  plain_memcpy();  // warm-up: first touch of the slots, CPU frequency
  through_backend();
  issue_s.clear();
  std::vector<double> memcpy_s, backend_s;
  for (int r = 0; r < o.runs; ++r) {
    memcpy_s.push_back(plain_memcpy());
    backend_s.push_back(through_backend());
  }

  const double total_gb = static_cast<double>(bytes) * o.batches / 1e9;
  const double memcpy_gbps = total_gb / median(memcpy_s);
  const double backend_gbps = total_gb / median(backend_s);
  const double ratio = backend_gbps / memcpy_gbps;
  const bool locked = sources.front().page_locked;
  std::printf("host backend copy bandwidth: %d runs of %d x %zu MiB batches over %d buffers%s\n", o.runs, o.batches,
              o.batch_mib, o.buffers, locked ? " (page-locked)" : " (NOT page-locked)");
  std::printf("  plain memcpy        %7.2f GB/s (median)\n", memcpy_gbps);
  std::printf("  host backend        %7.2f GB/s (median)\n", backend_gbps);
  std::printf("  ratio               %7.3f  (target >= 0.9: %s)\n", ratio, ratio >= 0.9 ? "PASS" : "BELOW TARGET");
  std::printf("  copy_async returns  %7.1f us (median), %.1f us (max)\n", median(issue_s) * 1e6,
              *std::max_element(issue_s.begin(), issue_s.end()) * 1e6);
  const auto stats = backend->transfer_stats();
  std::printf("  engine busy         %7.2f GB/s while copying (%llu copies)\n",
              static_cast<double>(stats.bytes) / static_cast<double>(stats.busy_ns),
              static_cast<unsigned long long>(stats.copies));
  for (auto& s : sources) backend->free_pinned(s);
  return 0;
}
