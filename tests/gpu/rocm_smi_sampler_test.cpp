// The rocm-smi sampler against the real librocm_smi64 (Debian's
// librocm-smi64-1). Without an AMD GPU, rsmi_init fails and prints to
// stderr; the sampler must say "no AMD GPU found" and keep that noise from
// the user. On a machine with AMD GPUs it must list and sample them.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "gpufeed/gpu/vendor_samplers.hpp"

namespace gpufeed {
namespace {

// Everything written to fd 2 while alive goes to a temporary file; text()
// restores fd 2 and returns what was written.
class CaptureStderr {
 public:
  CaptureStderr() {
    std::fflush(stderr);
    file_ = std::tmpfile();
    saved_ = dup(STDERR_FILENO);
    if (file_ == nullptr || saved_ < 0 || dup2(fileno(file_), STDERR_FILENO) < 0) {
      ADD_FAILURE() << "cannot capture fd 2";
    }
  }
  ~CaptureStderr() { restore(); }
  CaptureStderr(const CaptureStderr&) = delete;
  CaptureStderr& operator=(const CaptureStderr&) = delete;

  std::string text() {
    restore();
    std::string out;
    if (file_ == nullptr) return out;
    std::rewind(file_);
    char buffer[4096];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, file_)) > 0) out.append(buffer, n);
    return out;
  }

 private:
  void restore() {
    std::fflush(stderr);
    if (saved_ >= 0) {
      dup2(saved_, STDERR_FILENO);
      close(saved_);
      saved_ = -1;
    }
  }
  std::FILE* file_ = nullptr;
  int saved_ = -1;
};

// Why the real library cannot be tested here, if it cannot.
std::optional<std::string> library_missing() {
  void* handle = dlopen("librocm_smi64.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return std::string("librocm_smi64.so.1 cannot be loaded: ") + (why ? why : "?");
  }
  dlclose(handle);
  return std::nullopt;
}

TEST(RocmSmi, WithoutAnAmdGpuIsUnavailableAndQuiet) {
  if (auto why = library_missing()) GTEST_SKIP() << *why;
  // Twice: rocm-smi 5.2.3 retries (and prints again) on every rsmi_init.
  for (int round = 0; round < 2; ++round) {
    CaptureStderr capture;
    GpuOpenResult r = open_rocm_smi();
    // fd 2 is ours again after the call: this line is captured.
    const char after[] = "after open_rocm_smi\n";
    ASSERT_EQ(write(STDERR_FILENO, after, sizeof after - 1), static_cast<ssize_t>(sizeof after - 1));
    const std::string written = capture.text();
    EXPECT_EQ(written, after) << "the library's stderr reached the user";

    if (r.sampler != nullptr) {
      // An AMD GPU is here: the sampler must work instead.
      EXPECT_EQ(r.sampler->backend(), "rocm-smi");
      const auto devices = r.sampler->devices();
      ASSERT_FALSE(devices.empty());
      for (const auto& d : devices) EXPECT_EQ(d.vendor, "AMD");
      EXPECT_EQ(r.sampler->sample(1.0).size(), devices.size());
      GTEST_SKIP() << "this machine has an AMD GPU; checked the sampler instead of the unavailable path";
    }
    EXPECT_EQ(r.unavailable.rfind("no AMD GPU found (", 0), 0u) << r.unavailable;
    EXPECT_NE(r.unavailable.find("rsmi_init"), std::string::npos) << r.unavailable;
    EXPECT_EQ(r.unavailable.find('\n'), std::string::npos) << r.unavailable;
  }
}

TEST(RocmSmi, AnExplicitLibraryNameIsUsed) {
  if (auto why = library_missing()) GTEST_SKIP() << *why;
  CaptureStderr capture;
  GpuOpenResult r = open_rocm_smi("librocm_smi64.so.1");
  EXPECT_EQ(capture.text(), "");
  if (r.sampler != nullptr) GTEST_SKIP() << "this machine has an AMD GPU";
  EXPECT_EQ(r.unavailable.rfind("no AMD GPU found (", 0), 0u) << r.unavailable;
}

TEST(RocmSmi, AMissingLibraryIsUnavailable) {
  GpuOpenResult r = open_rocm_smi("librocm_smi64.so.999");
  EXPECT_EQ(r.sampler, nullptr);
  EXPECT_EQ(r.unavailable.rfind("rocm-smi not found (", 0), 0u) << r.unavailable;
  EXPECT_NE(r.unavailable.find("librocm_smi64.so.999"), std::string::npos) << r.unavailable;
  EXPECT_EQ(r.unavailable.find('\n'), std::string::npos) << r.unavailable;
}

TEST(RocmSmi, ALibraryThatIsNotRocmSmiIsUnavailable) {
  GpuOpenResult r = open_rocm_smi("libm.so.6");
  EXPECT_EQ(r.sampler, nullptr);
  EXPECT_NE(r.unavailable.find("lacks rsmi_init"), std::string::npos) << r.unavailable;
}

TEST(RocmSmiBusId, DecodesTheBdfId) {
  EXPECT_EQ(rocm_smi_bus_id(0xc100), "0000:c1:00.0");
  EXPECT_EQ(rocm_smi_bus_id((std::uint64_t{1} << 32) | (0x41 << 8) | (0x1f << 3) | 5), "0001:41:1f.5");
  EXPECT_EQ(rocm_smi_bus_id(0x0308), "0000:03:01.0");
}

}  // namespace
}  // namespace gpufeed
