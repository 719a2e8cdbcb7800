#pragma once
// Coalesces concurrent fetches of one sample: the first caller for a key
// runs the fetch, later callers wait for it and get a copy of its bytes (or
// its exception). Keys are forgotten as soon as the fetch ends, so this is
// not a cache: a caller that arrives afterwards fetches again, which is why
// the tiers fill their cache inside the fetch.
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpufeed::loader::cache {

class SingleFlight {
 public:
  using Bytes = std::vector<std::byte>;

  // Runs `fetch(out)` unless a fetch of `key` is already running, in which
  // case waits for it and copies its result into `out` (or rethrows its
  // error). Returns true when this call joined another's fetch.
  bool run(const std::string& key, Bytes& out, const std::function<void(Bytes&)>& fetch);

 private:
  struct Flight;
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<Flight>> flights_;
};

}  // namespace gpufeed::loader::cache
