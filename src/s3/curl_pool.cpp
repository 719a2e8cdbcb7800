#include "curl_pool.hpp"

#include <mutex>
#include <new>

#include "gpufeed/error.hpp"

namespace gpufeed::loader::s3 {
namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      throw gpufeed::runtime_error("libcurl failed to initialise", "check the libcurl and OpenSSL installation");
    }
  });
}

}  // namespace

CurlPool::CurlPool(int max_handles) : max_handles_(max_handles) {
  global_init();
  share_ = curl_share_init();
  if (share_ == nullptr) throw std::bad_alloc();
  curl_share_setopt(share_, CURLSHOPT_LOCKFUNC, &CurlPool::lock);
  curl_share_setopt(share_, CURLSHOPT_UNLOCKFUNC, &CurlPool::unlock);
  curl_share_setopt(share_, CURLSHOPT_USERDATA, this);
  for (auto data : {CURL_LOCK_DATA_DNS, CURL_LOCK_DATA_SSL_SESSION}) {
    curl_share_setopt(share_, CURLSHOPT_SHARE, data);
  }
}

CurlPool::~CurlPool() {
  // Every lease has been returned by now (leases do not outlive the store).
  for (CURL* handle : all_) curl_easy_cleanup(handle);
  curl_share_cleanup(share_);
}

void CurlPool::lock(CURL*, curl_lock_data data, curl_lock_access, void* user) {
  static_cast<CurlPool*>(user)->share_locks_[data].lock();
}

void CurlPool::unlock(CURL*, curl_lock_data data, void* user) {
  static_cast<CurlPool*>(user)->share_locks_[data].unlock();
}

CURL* CurlPool::make_handle() {
  CURL* handle = curl_easy_init();
  if (handle == nullptr) throw std::bad_alloc();
  curl_easy_setopt(handle, CURLOPT_SHARE, share_);
  return handle;
}

CurlPool::Lease CurlPool::acquire() {
  std::unique_lock lock(mutex_);
  available_.wait(lock, [this] { return on_loan_ < max_handles_; });
  CURL* handle = nullptr;
  if (!idle_.empty()) {
    handle = idle_.back();
    idle_.pop_back();
  } else {
    handle = make_handle();
    all_.push_back(handle);
  }
  ++on_loan_;
  return Lease(*this, handle);
}

void CurlPool::release(CURL* handle) {
  {
    std::lock_guard lock(mutex_);
    idle_.push_back(handle);
    --on_loan_;
  }
  available_.notify_one();
}

}  // namespace gpufeed::loader::s3
