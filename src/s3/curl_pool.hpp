#pragma once
// libcurl easy handles for many threads. Connection reuse comes from reusing
// the handles: each keeps its own live connection between requests, and the
// pool lends at most `max_handles` at once, which bounds both the requests in
// flight and the connections kept open. A CURLSH shares the DNS cache and TLS
// sessions among the handles, but not connections: libcurl does not support
// sharing its connection cache between concurrent threads
// (CURLSHOPT_SHARE(3), CURL_LOCK_DATA_CONNECT).
#include <curl/curl.h>

#include <array>
#include <condition_variable>
#include <mutex>
#include <vector>

namespace gpufeed::loader::s3 {

class CurlPool {
 public:
  explicit CurlPool(int max_handles);
  ~CurlPool();
  CurlPool(const CurlPool&) = delete;
  CurlPool& operator=(const CurlPool&) = delete;

  // A handle on loan; returned to the pool when destroyed.
  class Lease {
   public:
    Lease(CurlPool& pool, CURL* handle) : pool_(&pool), handle_(handle) {}
    ~Lease() { pool_->release(handle_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    CURL* get() const { return handle_; }

   private:
    CurlPool* pool_;
    CURL* handle_;
  };

  // Waits until fewer than max_handles are on loan. The handle keeps its
  // options from its last use: set every option a request depends on.
  Lease acquire();

  // A fresh handle on the shared caches that is not counted against the
  // bound (for one-off requests); the caller cleans it up before the pool dies.
  CURL* make_handle();

  int max_handles() const { return max_handles_; }

 private:
  static void lock(CURL* handle, curl_lock_data data, curl_lock_access access, void* user);
  static void unlock(CURL* handle, curl_lock_data data, void* user);
  void release(CURL* handle);

  const int max_handles_;
  CURLSH* share_ = nullptr;
  std::array<std::mutex, CURL_LOCK_DATA_LAST> share_locks_;
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<CURL*> idle_;
  std::vector<CURL*> all_;
  int on_loan_ = 0;
};

}  // namespace gpufeed::loader::s3
