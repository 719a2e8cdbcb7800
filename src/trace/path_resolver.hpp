#pragma once
// Resolves a traced call's path for diagnose and monitor (see the class).
#include <map>
#include <string>

#include <fmt/format.h>

#include "gpufeed/diagnose/evidence.hpp"
#include "gpufeed/diagnose/mounts.hpp"
#include "gpufeed/trace/bpf_tracer.hpp"
#include "gpufeed/trace/proc_reader.hpp"

namespace gpufeed {

// Turns a traced call's path (relative, or dentry names) into an absolute
// path and finds its mount, per process, caching mount tables.
class PathResolver {
 public:
  explicit PathResolver(const ProcSource& proc) : proc_(proc) {}

  // A slow-call event as evidence, `t_s` its start in the session's time.
  SlowCall slow_call(const TraceEvent& ev, double t_s) {
    SlowCall c;
    c.t_s = t_s;
    c.dur_ms = static_cast<double>(ev.dur_ns) / 1e6;
    c.pid = ev.tgid;
    c.tid = ev.tid;
    c.rank = ev.rank;
    c.role = ev.role;
    c.nr = ev.nr;
    c.kind = ev.kind;
    c.ret = ev.ret;
    resolve(ev, c);
    return c;
  }

  // Drops an exited process's mount table (monitor sees endless workers).
  void forget(int tgid) { tables_.erase(tgid); }

  void resolve(const TraceEvent& ev, SlowCall& out) {
    const MountTable& mounts = table(ev.tgid);
    if (!ev.path.empty()) {
      std::string p = ev.path;
      if (p.front() != '/') {
        const bool at_cwd = ev.fd == -100 || ev.fd == -1;  // AT_FDCWD, or open()/stat()
        auto base = at_cwd ? proc_.readlink(fmt::format("/proc/{}/cwd", ev.tgid))
                           : proc_.readlink(fmt::format("/proc/{}/fd/{}", ev.tgid, ev.fd));
        p = base ? *base + "/" + p : p;
      }
      if (p.front() == '/') p = normalise_path(p);
      out.path = p;
      if (const Mount* m = p.front() == '/' ? mounts.by_path(p) : nullptr) {
        out.mount_point = m->mount_point;
        out.fs_type = m->fs_type;
      }
      return;
    }
    if (!ev.components.empty()) {
      const Mount* m = mounts.by_kernel_dev(ev.dev);
      std::string rel;
      bool complete = false;
      for (auto it = ev.components.rbegin(); it != ev.components.rend(); ++it) {
        if (*it == "/") {
          complete = true;  // reached the filesystem's root
          continue;
        }
        rel += "/" + *it;
      }
      if (m) {
        out.mount_point = m->mount_point;
        out.fs_type = m->fs_type;
        if (complete && m->root != "/" && rel.rfind(m->root, 0) == 0) rel = rel.substr(m->root.size());
        out.path = complete ? normalise_path(m->mount_point + rel) : m->mount_point + "/..." + rel;
      } else {
        out.path = (complete ? "" : "...") + rel;
      }
    }
  }

 private:
  const MountTable& table(int tgid) {
    auto it = tables_.find(tgid);
    if (it != tables_.end()) return it->second;
    auto text = proc_.read(fmt::format("/proc/{}/mountinfo", tgid));
    if (!text) text = proc_.read("/proc/self/mountinfo");
    return tables_.emplace(tgid, MountTable(parse_mountinfo(text.value_or("")))).first->second;
  }

  const ProcSource& proc_;
  std::map<int, MountTable> tables_;
};

}  // namespace gpufeed
