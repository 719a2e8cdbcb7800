#pragma once
// Which mount (and filesystem type) a traced path or file lives on, from the
// traced process's /proc/PID/mountinfo.
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/process_view.hpp"

namespace gpufeed {

enum class StorageClass { Local, Fuse, Network, Memory, Overlay, Pseudo };
StorageClass storage_class(const std::string& fs_type);
std::string storage_class_name(StorageClass c);
bool is_remote_like(StorageClass c);  // FUSE or network: per-request latency dominates

class MountTable {
 public:
  explicit MountTable(std::vector<Mount> mounts);
  // Longest mount point that is a path prefix of an absolute path.
  const Mount* by_path(const std::string& absolute) const;
  // The mount whose device matches a kernel dev_t (major << 20 | minor).
  const Mount* by_kernel_dev(unsigned dev) const;
  const std::vector<Mount>& mounts() const { return mounts_; }

 private:
  std::vector<Mount> mounts_;
};

// Lexically normalised absolute path: "a/../b" folded, "//" collapsed.
std::string normalise_path(const std::string& path);
// The directory prefix used to group slow calls: the mount point plus up to
// `extra` directory components below it ("/mnt/s3/imagenet/train").
std::string group_prefix(const std::string& path, const std::string& mount_point, int extra = 2);

}  // namespace gpufeed
