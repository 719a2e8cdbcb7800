#pragma once
// Libraries gpufeed loads at run time (GPU samplers, GPU runtimes, the
// LibTorch step plugin, the libraries probe looks for), so that one binary
// builds without any vendor SDK and starts on hosts without one. Every
// dlopen() in gpufeed goes through here.
#include <string>

namespace gpufeed::os {

class DynamicLibrary {
 public:
  enum class Lifetime {
    Unload,      // dlclose() unmaps it (a sampler's library)
    StayMapped,  // RTLD_NODELETE: it starts threads or registers exit handlers
                 // (a GPU runtime, LibTorch), so unmapping it under them is a
                 // crash at exit; dlclose() only drops the reference
  };
  enum class Binding { Now, Lazy };  // Lazy: probe only asks whether it loads

  DynamicLibrary() = default;
  // Loads `name` (a soname or a path) with RTLD_LOCAL. On failure the object
  // is empty and error() says why, as dlerror() put it.
  explicit DynamicLibrary(const std::string& name, Lifetime lifetime = Lifetime::Unload,
                          Binding binding = Binding::Now);
  ~DynamicLibrary() { reset(); }
  DynamicLibrary(DynamicLibrary&& other) noexcept;
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  explicit operator bool() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }
  // The file the loader mapped ("/usr/lib/.../libnvidia-ml.so.1"); empty
  // when not loaded.
  std::string path() const;

  // The symbol as a function pointer of type F; nullptr when absent.
  template <class F>
  F symbol(const char* name) const {
    return reinterpret_cast<F>(raw_symbol(name));
  }

  void reset();
  // Keeps the library loaded for the rest of the process (the LibTorch
  // plugin, whose functions outlive any one owner).
  void keep_for_the_process() { handle_ = nullptr; }

 private:
  void* raw_symbol(const char* name) const;
  void* handle_ = nullptr;
  std::string error_;
};

// Sanitizer builds only (a no-op otherwise): re-flags already loaded
// libraries whose path contains `part` as RTLD_NODELETE. Libraries that
// gpufeed or hwloc dlclose() otherwise leave memory that only their globals
// referenced, which LeakSanitizer reports as "<unknown module>": noise, not
// gpufeed leaks. Libraries loaded through DynamicLibrary get the same flag
// in those builds.
void keep_loaded_under_sanitizers(const std::string& part);

}  // namespace gpufeed::os
