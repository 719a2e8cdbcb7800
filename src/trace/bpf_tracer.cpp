#include "gpufeed/trace/bpf_tracer.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "diagnose.h"
#include "diagnose.skel.h"
#include "gpufeed/error.hpp"

namespace gpufeed {
namespace {

// libbpf prints its own diagnostics to stderr; the user sees gpufeed's one
// line instead. GPUFEED_LIBBPF_DEBUG=1 shows them for development.
int quiet_libbpf(enum libbpf_print_level level, const char* format, va_list args) {
  if (std::getenv("GPUFEED_LIBBPF_DEBUG") == nullptr || level == LIBBPF_DEBUG) return 0;
  return std::vfprintf(stderr, format, args);
}

Error load_error(const char* step, int err) {
  err = err < 0 ? -err : err;
  if (err == EPERM || err == EACCES) {
    return Error(ErrorKind::Privilege, fmt::format("eBPF {} failed: {}", step, std::strerror(err)),
                 "run as root or grant CAP_BPF and CAP_PERFMON (e.g. sudo setcap cap_bpf,cap_perfmon+ep gpufeed), or "
                 "pass --no-ebpf for a /proc-only diagnosis");
  }
  return runtime_error(fmt::format("eBPF {} failed: {}", step, std::strerror(err)),
                       "the kernel needs BTF (/sys/kernel/btf/vmlinux) and tp_btf tracepoints (Linux 5.8+); "
                       "pass --no-ebpf for a /proc-only diagnosis");
}

// Where calls in flight are kept (bpf/diagnose.bpf.c): task-local storage
// where the kernel has it, else a hash by thread id. GPUFEED_BPF_STARTS=hash
// forces the fallback (its tests and the overhead benchmark use it).
bool use_task_storage() {
  const char* forced = std::getenv("GPUFEED_BPF_STARTS");
  if (forced != nullptr && std::strcmp(forced, "hash") == 0) return false;
  return libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, nullptr) == 1;
}

}  // namespace

struct BpfTracer::Impl {
  gf_diagnose* skel = nullptr;
  ring_buffer* rb = nullptr;
  bool task_storage = false;
  const std::function<void(const TraceEvent&)>* sink = nullptr;
  int handled = 0;

  static int on_sample(void* ctx, void* data, size_t size) {
    auto* self = static_cast<Impl*>(ctx);
    if (size < sizeof(gf_event) || self->sink == nullptr) return 0;
    const auto* e = static_cast<const gf_event*>(data);
    TraceEvent ev;
    ev.type = static_cast<TraceEventType>(e->type);
    ev.tgid = static_cast<int>(e->tgid);
    ev.tid = static_cast<int>(e->tid);
    ev.other_pid = static_cast<int>(e->other_pid);
    ev.nr = static_cast<int>(e->syscall);
    ev.role = static_cast<Role>(e->role);
    ev.kind = static_cast<CallKind>(e->kind);
    ev.ret = e->ret;
    ev.start_ns = e->start_ns;
    ev.dur_ns = e->dur_ns;
    ev.fd = e->fd;
    ev.dev = e->dev;
    ev.rank = static_cast<int>(e->rank);
    ev.path.assign(e->path, strnlen(e->path, sizeof e->path));
    for (unsigned i = 0; i < e->depth && i < GF_DENTRY_DEPTH; ++i) {
      ev.components.emplace_back(e->components[i], strnlen(e->components[i], GF_DENTRY_NAME));
    }
    (*self->sink)(ev);
    ++self->handled;
    return 0;
  }

  ~Impl() {
    if (rb) ring_buffer__free(rb);
    if (skel) gf_diagnose__destroy(skel);  // detaches every link, closes every map
  }
};

std::optional<std::string> BpfTracer::unavailable_reason(const ProcessView& view) {
  if (!view.btf) return "the kernel exposes no BTF (/sys/kernel/btf/vmlinux): needs CONFIG_DEBUG_INFO_BTF";
  if (!view.privileges.can_trace()) {
    return "this process lacks CAP_BPF and CAP_PERFMON (or root): run as root or "
           "'sudo setcap cap_bpf,cap_perfmon+ep $(command -v gpufeed)'";
  }
  return std::nullopt;
}

BpfTracer::BpfTracer(const TracerSettings& settings) : impl_(std::make_unique<Impl>()) {
  libbpf_set_print(quiet_libbpf);
  impl_->skel = gf_diagnose__open();
  if (!impl_->skel) throw load_error("open", errno);
  impl_->skel->rodata->slow_call_ns = static_cast<__u64>(settings.slow_call_ms * 1e6);
  impl_->skel->rodata->wait_span_ns = static_cast<__u64>(settings.wait_span_ms * 1e6);
  impl_->skel->rodata->follow_forks = settings.follow_forks ? 1 : 0;
  // One pair of syscall programs, and only the map it uses.
  const bool ts = impl_->task_storage = use_task_storage();
  bpf_program__set_autoload(impl_->skel->progs.gf_sys_enter_ts, ts);
  bpf_program__set_autoload(impl_->skel->progs.gf_sys_exit_ts, ts);
  bpf_program__set_autoload(impl_->skel->progs.gf_sys_enter, !ts);
  bpf_program__set_autoload(impl_->skel->progs.gf_sys_exit, !ts);
  bpf_map__set_autocreate(impl_->skel->maps.task_starts, ts);
  bpf_map__set_autocreate(impl_->skel->maps.starts, !ts);
  if (int err = gf_diagnose__load(impl_->skel)) throw load_error("load", err);
  if (int err = gf_diagnose__attach(impl_->skel)) throw load_error("attach", err);
  impl_->rb = ring_buffer__new(bpf_map__fd(impl_->skel->maps.events), &Impl::on_sample, impl_.get(), nullptr);
  if (!impl_->rb) throw load_error("ring buffer setup", errno);
}

BpfTracer::~BpfTracer() = default;

std::string BpfTracer::call_store() const { return impl_->task_storage ? "task storage" : "hash by thread id"; }

void BpfTracer::add_process(int tgid, bool worker, int rank) {
  const __u32 key = static_cast<__u32>(tgid);
  gf_proc value{worker ? 1U : 0U, static_cast<unsigned>(rank)};
  // BPF_NOEXIST: a worker the fork hook already added keeps its entry.
  bpf_map__update_elem(impl_->skel->maps.procs, &key, sizeof key, &value, sizeof value, BPF_NOEXIST);
}

int BpfTracer::poll(int timeout_ms, const std::function<void(const TraceEvent&)>& on_event) {
  impl_->sink = &on_event;
  impl_->handled = 0;
  // Events are submitted without wakeups, so epoll only times out: wait,
  // then drain whatever the kernel side queued meanwhile.
  int rc = ring_buffer__poll(impl_->rb, timeout_ms);
  if (rc >= 0 || rc == -EINTR) rc = ring_buffer__consume(impl_->rb);
  impl_->sink = nullptr;
  if (rc < 0 && rc != -EINTR) throw runtime_error(fmt::format("reading trace events failed: {}", std::strerror(-rc)));
  return impl_->handled;
}

std::vector<SyscallStat> BpfTracer::histograms() const {
  const int ncpus = libbpf_num_possible_cpus();
  std::vector<gf_hist> values(static_cast<size_t>(std::max(ncpus, 1)));
  std::vector<SyscallStat> out;
  const bpf_map* map = impl_->skel->maps.hists;
  gf_hist_key key{}, next{};
  const void* prev = nullptr;
  while (bpf_map__get_next_key(map, prev, &next, sizeof next) == 0) {
    key = next;
    prev = &key;
    if (bpf_map__lookup_elem(map, &key, sizeof key, values.data(), values.size() * sizeof(gf_hist), 0) != 0) continue;
    SyscallStat s;
    s.nr = static_cast<int>(key.syscall);
    s.role = static_cast<Role>(key.role);
    s.kind = static_cast<CallKind>(key.kind);
    for (const auto& v : values) {
      s.hist.count += v.count;
      s.hist.total_ns += v.total_ns;
      s.hist.bytes += v.bytes;
      for (int i = 0; i < GF_HIST_SLOTS && i < kHistogramSlots; ++i) s.hist.slots[static_cast<size_t>(i)] += v.slots[i];
    }
    out.push_back(s);
  }
  return out;
}

TracerCounters BpfTracer::counters() const {
  const int ncpus = std::max(libbpf_num_possible_cpus(), 1);
  auto read = [&](__u32 which) {
    std::vector<__u64> per_cpu(static_cast<size_t>(ncpus));
    std::uint64_t sum = 0;
    if (bpf_map__lookup_elem(impl_->skel->maps.counters, &which, sizeof which, per_cpu.data(),
                             per_cpu.size() * sizeof(__u64), 0) == 0) {
      for (auto v : per_cpu) sum += v;
    }
    return sum;
  };
  return {read(GF_COUNTER_EVENTS_DROPPED), read(GF_COUNTER_STARTS_DROPPED), read(GF_COUNTER_PROCS_DROPPED)};
}

}  // namespace gpufeed
