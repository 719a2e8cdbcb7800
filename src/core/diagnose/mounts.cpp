#include "gpufeed/diagnose/mounts.hpp"

#include <algorithm>

namespace gpufeed {

StorageClass storage_class(const std::string& fs) {
  if (fs.rfind("fuse", 0) == 0) return StorageClass::Fuse;  // fuse, fuse.s3fs, fuse.gcsfuse, fuseblk
  static const char* kNetwork[] = {"nfs", "nfs4", "cifs", "smb3", "lustre", "gpfs", "beegfs", "ceph", "9p",
                                   "glusterfs", "afs", "orangefs", "virtiofs", "wekafs"};
  for (const char* n : kNetwork) {
    if (fs == n) return StorageClass::Network;
  }
  if (fs == "tmpfs" || fs == "ramfs") return StorageClass::Memory;
  if (fs == "overlay" || fs == "aufs") return StorageClass::Overlay;
  static const char* kPseudo[] = {"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "tracefs",
                                  "debugfs", "bpf", "securityfs", "pipefs", "sockfs", "mqueue", "hugetlbfs"};
  for (const char* n : kPseudo) {
    if (fs == n) return StorageClass::Pseudo;
  }
  return StorageClass::Local;  // ext4, xfs, btrfs, zfs, ...
}

std::string storage_class_name(StorageClass c) {
  switch (c) {
    case StorageClass::Local: return "local";
    case StorageClass::Fuse: return "FUSE";
    case StorageClass::Network: return "network";
    case StorageClass::Memory: return "memory";
    case StorageClass::Overlay: return "overlay";
    case StorageClass::Pseudo: return "pseudo";
  }
  return "local";
}

bool is_remote_like(StorageClass c) { return c == StorageClass::Fuse || c == StorageClass::Network; }

MountTable::MountTable(std::vector<Mount> mounts) : mounts_(std::move(mounts)) {}

const Mount* MountTable::by_path(const std::string& absolute) const {
  const Mount* best = nullptr;
  for (const auto& m : mounts_) {
    const auto& mp = m.mount_point;
    const bool prefix = absolute.rfind(mp, 0) == 0 &&
                        (mp == "/" || absolute.size() == mp.size() || absolute[mp.size()] == '/');
    // Later entries shadow earlier ones at the same mount point (mounted over).
    if (prefix && (!best || mp.size() >= best->mount_point.size())) best = &m;
  }
  return best;
}

const Mount* MountTable::by_kernel_dev(unsigned dev) const {
  const unsigned major = dev >> 20, minor = dev & 0xfffff;
  const Mount* found = nullptr;
  for (const auto& m : mounts_) {
    if (m.dev_major == major && m.dev_minor == minor && (!found || m.root.size() < found->root.size())) found = &m;
  }
  return found;
}

std::string normalise_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string part = path.substr(i, j - i);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    i = j + 1;
  }
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

std::string group_prefix(const std::string& path, const std::string& mount_point, int extra) {
  // Directory of the path, cut to `extra` components below the mount point.
  const size_t slash = path.rfind('/');
  const std::string dir = (slash == 0 || slash == std::string::npos) ? std::string(1, '/') : path.substr(0, slash);
  if (dir.size() <= mount_point.size()) return mount_point;
  size_t pos = mount_point == "/" ? 0 : mount_point.size();
  for (int i = 0; i < extra; ++i) {
    size_t next = dir.find('/', pos + 1);
    if (next == std::string::npos) return dir;
    pos = next;
  }
  return dir.substr(0, pos);
}

}  // namespace gpufeed
