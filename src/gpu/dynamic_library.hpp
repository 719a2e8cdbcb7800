#pragma once
// A dlopen() handle that closes itself, and typed dlsym(). Private to the GPU
// adapters (src/gpu/).
#include <dlfcn.h>

#include "gpufeed/probe/dl_keep.hpp"

#include <string>
#include <utility>

namespace gpufeed::gpu {

class DynamicLibrary {
 public:
  DynamicLibrary() = default;
  // Loads `name` (RTLD_NOW | RTLD_LOCAL). On failure the object is empty and
  // error() says why, as dlerror() put it.
  explicit DynamicLibrary(const std::string& name) {
    dlerror();
    handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | kDlopenKeep);
    if (handle_ == nullptr) {
      const char* why = dlerror();
      error_ = why != nullptr ? why : name + ": cannot be loaded";
    }
  }
  ~DynamicLibrary() { reset(); }
  DynamicLibrary(DynamicLibrary&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)), error_(std::move(other.error_)) {}
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
      error_ = std::move(other.error_);
    }
    return *this;
  }
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  explicit operator bool() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }

  // The symbol as a function pointer of type F; nullptr when absent.
  template <class F>
  F symbol(const char* name) const {
    if (handle_ == nullptr) return nullptr;
    return reinterpret_cast<F>(dlsym(handle_, name));
  }

  void reset() {
    if (handle_ != nullptr) dlclose(handle_);
    handle_ = nullptr;
  }

 private:
  void* handle_ = nullptr;
  std::string error_;
};

}  // namespace gpufeed::gpu
