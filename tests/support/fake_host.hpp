#pragma once
// A staged /proc and /sys tree for the host inspector: cgroup layouts,
// capabilities and unreadable files without touching the real host.
#include <string>

#include "support/temp_dir.hpp"

namespace gpufeed::testing {

class FakeHost {
 public:
  FakeHost();
  const std::filesystem::path& root() const { return dir_.path(); }
  void file(const std::string& absolute, const std::string& text) const { dir_.write(absolute.substr(1), text); }
  void unreadable(const std::string& absolute) const;  // a directory where a file should be
  // A cgroup v2 host with the process in /job.
  void cgroup_v2(const std::string& cpu_max, const std::string& memory_max) const;

 private:
  TempDir dir_;
};

}  // namespace gpufeed::testing
