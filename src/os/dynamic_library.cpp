#include "gpufeed/os/dynamic_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <utility>

namespace gpufeed::os {
namespace {

#ifdef GPUFEED_SANITIZE_BUILD
constexpr int kSanitizerKeep = RTLD_NODELETE;
#else
constexpr int kSanitizerKeep = 0;
#endif

}  // namespace

DynamicLibrary::DynamicLibrary(const std::string& name, Lifetime lifetime, Binding binding) {
  int flags = RTLD_LOCAL | kSanitizerKeep;
  flags |= binding == Binding::Now ? RTLD_NOW : RTLD_LAZY;
  if (lifetime == Lifetime::StayMapped) flags |= RTLD_NODELETE;
  dlerror();
  handle_ = dlopen(name.c_str(), flags);
  if (handle_ == nullptr) {
    const char* why = dlerror();
    error_ = why != nullptr ? why : name + ": cannot be loaded";
  }
}

DynamicLibrary::DynamicLibrary(DynamicLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), error_(std::move(other.error_)) {}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    reset();
    handle_ = std::exchange(other.handle_, nullptr);
    error_ = std::move(other.error_);
  }
  return *this;
}

std::string DynamicLibrary::path() const {
  link_map* map = nullptr;
  if (handle_ == nullptr || dlinfo(handle_, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr) {
    return "";
  }
  return map->l_name;
}

void* DynamicLibrary::raw_symbol(const char* name) const {
  return handle_ != nullptr ? dlsym(handle_, name) : nullptr;
}

void DynamicLibrary::reset() {
  if (handle_ != nullptr) dlclose(handle_);
  handle_ = nullptr;
}

void keep_loaded_under_sanitizers(const std::string& part) {
  if constexpr (kSanitizerKeep != 0) {
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* want) {
          const std::string name = info->dlpi_name ? info->dlpi_name : "";
          // RTLD_NOLOAD: only re-flags what is loaded already; never closed.
          if (name.find(*static_cast<const std::string*>(want)) != std::string::npos) {
            dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD | kSanitizerKeep);
          }
          return 0;
        },
        const_cast<std::string*>(&part));
  }
}

}  // namespace gpufeed::os
