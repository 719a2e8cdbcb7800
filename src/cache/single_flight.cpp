#include "single_flight.hpp"

#include <condition_variable>
#include <exception>

namespace gpufeed::loader::cache {

struct SingleFlight::Flight {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  int waiters = 0;  // guarded by SingleFlight::mutex_
  std::shared_ptr<const Bytes> result;
  std::exception_ptr error;
};

bool SingleFlight::run(const std::string& key, Bytes& out, const std::function<void(Bytes&)>& fetch) {
  std::shared_ptr<Flight> flight;
  bool leader = false;
  {
    std::lock_guard lock(mutex_);
    auto [it, inserted] = flights_.try_emplace(key);
    if (inserted) it->second = std::make_shared<Flight>();
    flight = it->second;
    leader = inserted;
    if (!leader) ++flight->waiters;
  }

  if (!leader) {
    std::unique_lock lock(flight->mutex);
    flight->done_cv.wait(lock, [&] { return flight->done; });
    if (flight->error) std::rethrow_exception(flight->error);
    out.assign(flight->result->begin(), flight->result->end());
    return true;
  }

  std::exception_ptr error;
  try {
    fetch(out);
  } catch (...) {
    error = std::current_exception();
  }
  int waiters = 0;
  {
    // Once the key is gone nobody can join, so `waiters` is final.
    std::lock_guard lock(mutex_);
    flights_.erase(key);
    waiters = flight->waiters;
  }
  if (waiters > 0) {
    {
      std::lock_guard lock(flight->mutex);
      if (error) {
        flight->error = error;
      } else {
        flight->result = std::make_shared<const Bytes>(out);
      }
      flight->done = true;
    }
    flight->done_cv.notify_all();
  }
  if (error) std::rethrow_exception(error);
  return false;
}

}  // namespace gpufeed::loader::cache
