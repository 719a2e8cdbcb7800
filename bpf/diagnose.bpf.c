// SPDX-License-Identifier: GPL-2.0
/* gpufeed diagnose: syscall latency of a training job and its DataLoader
 * workers, kept in the kernel as log2 histograms; slow path/file calls and
 * the training loop's data-wait spans sent to user space; forks followed.
 *
 * Only tracepoints (tp_btf): this project's kernels have no kprobes or fentry.
 * Hot path: every syscall on the machine pays one hash lookup of its tgid;
 * only traced processes go further. */
#include "gf_vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "diagnose.h"
#include "syscall_nrs.h"

char LICENSE[] SEC("license") = "GPL";

/* Settings, written by user space between open and load. */
const volatile __u64 slow_call_ns = 1000000;  /* report path/file calls slower than this */
const volatile __u64 wait_span_ns = 500000;   /* report loop waits longer than this */
const volatile __u32 follow_forks = 1;        /* trace the new processes of traced ones */

#define AT_EMPTY_PATH 0x1000
#define O_CREAT 0100
#define S_IFMT 00170000
#define S_IFREG 0100000
#define S_IFIFO 0010000
#define S_IFSOCK 0140000

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32); /* tgid */
  __type(value, struct gf_proc);
} procs SEC(".maps");

/* A call in flight, from sys_enter to sys_exit. */
struct gf_start {
  __u64 ts;
  __u64 path_ptr;  /* user pointer of the path argument */
  __u64 file_ptr;  /* struct file * of the fd argument */
  __u32 syscall;
  __s32 fd;
  __u16 kind;
  __u16 role;
  __u32 rank;
};

/* Calls in flight, by thread. Two homes; user space loads one pair of
 * syscall programs (gf_sys_*_ts or gf_sys_*) and creates only its map:
 * - task_starts, task-local storage: a pointer off the task, no hashing,
 *   no insert or delete per call (kernels >= 5.11);
 * - starts, a hash by tid: the fallback. */
struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct gf_start);
} task_starts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __type(key, __u32); /* tid */
  __type(value, struct gf_start);
} starts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 4096);
  __type(key, struct gf_hist_key);
  __type(value, struct gf_hist);
} hists SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 8 << 20);
} events SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, GF_COUNTERS);
  __type(key, __u32);
  __type(value, __u64);
} counters SEC(".maps");

static const struct gf_hist zero_hist;

static __always_inline void count(__u32 which) {
  __u64 *c = bpf_map_lookup_elem(&counters, &which);
  if (c) *c += 1;
}

static __always_inline __u32 log2_u64(__u64 v) {
  __u32 r = 0, shift;
  shift = (v > 0xFFFFFFFF) << 5; v >>= shift; r |= shift;
  shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
  shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
  shift = (v > 0xF) << 2; v >>= shift; r |= shift;
  shift = (v > 0x3) << 1; v >>= shift; r |= shift;
  r |= (v >> 1);
  return r;
}

static __always_inline bool is_path_call(__u32 nr) {
  switch (nr) {
    case GF_NR_open: case GF_NR_stat: case GF_NR_lstat: case GF_NR_access:
    case GF_NR_openat: case GF_NR_openat2: case GF_NR_newfstatat: case GF_NR_statx:
    case GF_NR_faccessat: case GF_NR_faccessat2:
      return true;
  }
  return false;
}

/* Which argument holds the path, for the path-taking calls. */
static __always_inline unsigned long path_arg(struct pt_regs *regs, __u32 nr) {
  switch (nr) {
    case GF_NR_open: case GF_NR_stat: case GF_NR_lstat: case GF_NR_access:
      return PT_REGS_PARM1_SYSCALL(regs);
  }
  return PT_REGS_PARM2_SYSCALL(regs); /* the *at() calls: (dirfd, path, ...) */
}

/* An open that may create its file: PyTorch's workers open one per batch
 * in /dev/shm for the batch's tensors, and jobs write outputs; neither is
 * a dataset file read. open_how.flags is the first field of openat2's. */
static __always_inline bool opens_to_create(struct pt_regs *regs, __u32 nr) {
  __u64 flags = 0;
  if (nr == GF_NR_open) flags = PT_REGS_PARM2_SYSCALL(regs);
  else if (nr == GF_NR_openat) flags = PT_REGS_PARM3_SYSCALL(regs);
  else if (nr == GF_NR_openat2) bpf_probe_read_user(&flags, sizeof(flags), (void *)PT_REGS_PARM3_SYSCALL(regs));
  return flags & O_CREAT;
}

static __always_inline bool is_fd_call(__u32 nr) {
  switch (nr) {
    case GF_NR_read: case GF_NR_pread64: case GF_NR_readv: case GF_NR_preadv: case GF_NR_preadv2:
    case GF_NR_recvfrom: case GF_NR_recvmsg: case GF_NR_close: case GF_NR_fstat: case GF_NR_getdents64:
      return true;
  }
  return false;
}

static __always_inline struct file *fd_file(int fd) {
  /* The task pointer is BTF-typed, so the walk to the fd table is plain
   * loads (no helper calls); only the array slot needs a probe read. */
  struct task_struct *task = bpf_get_current_task_btf();
  struct files_struct *files = task->files;
  if (!files) return 0;
  struct fdtable *fdt = files->fdt;
  if (!fdt || fd < 0 || (unsigned int)fd >= fdt->max_fds) return 0;
  struct file **fds = BPF_CORE_READ(fdt, fd);
  struct file *f = 0;
  bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
  return f;
}

static __always_inline __u16 file_kind(struct file *f) {
  if (!f) return GF_KIND_OTHER_FD;
  umode_t mode = BPF_CORE_READ(f, f_inode, i_mode);
  switch (mode & S_IFMT) {
    case S_IFREG: return GF_KIND_FILE;
    case S_IFIFO: return GF_KIND_PIPE;
    case S_IFSOCK: return GF_KIND_SOCKET;
  }
  return GF_KIND_OTHER_FD;
}

/* Calls the training loop blocks in while it waits for its next batch. */
static __always_inline bool is_wait(__u32 nr, __u16 kind) {
  switch (nr) {
    case GF_NR_poll: case GF_NR_ppoll: case GF_NR_select: case GF_NR_pselect6:
    case GF_NR_epoll_wait: case GF_NR_epoll_pwait: case GF_NR_epoll_pwait2:
    case GF_NR_futex: case GF_NR_futex_waitv:
      return true;
    case GF_NR_read: case GF_NR_readv: case GF_NR_recvfrom: case GF_NR_recvmsg:
      return kind == GF_KIND_PIPE || kind == GF_KIND_SOCKET;
  }
  return false;
}

/* What sys_enter records for a traced thread's call (ts is set last). */
static __always_inline void fill_start(struct gf_start *s, struct gf_proc *proc, struct pt_regs *regs, long id,
                                       __u32 tid, __u32 tgid) {
  s->syscall = (__u32)id;
  s->rank = proc->rank;
  if (proc->is_worker)
    s->role = tid == tgid ? GF_ROLE_WORKER : GF_ROLE_WORKER_THREADS;
  else
    s->role = tid == tgid ? GF_ROLE_LOOP : GF_ROLE_LOOP_THREADS;
  s->fd = -1;
  s->kind = 0;
  s->path_ptr = 0;
  s->file_ptr = 0;
  if (is_path_call(s->syscall)) {
    s->kind = opens_to_create(regs, s->syscall) ? GF_KIND_CREATE : GF_KIND_PATH;
    s->path_ptr = path_arg(regs, s->syscall);
    if (s->syscall != GF_NR_open && s->syscall != GF_NR_stat && s->syscall != GF_NR_lstat && s->syscall != GF_NR_access)
      s->fd = (int)PT_REGS_PARM1_SYSCALL(regs); /* dirfd */
    if (s->syscall == GF_NR_newfstatat || s->syscall == GF_NR_statx) {
      /* fstat(fd) arrives as newfstatat(fd, "", AT_EMPTY_PATH). */
      unsigned long flags = s->syscall == GF_NR_newfstatat ? PT_REGS_PARM4_SYSCALL(regs) : PT_REGS_PARM3_SYSCALL(regs);
      char first = 1;
      /* Read the path's first byte only when the flag makes it matter. */
      if (flags & AT_EMPTY_PATH) bpf_probe_read_user(&first, 1, (void *)s->path_ptr);
      if (first == 0) {
        s->kind = GF_KIND_FD_STAT;
        s->file_ptr = (__u64)fd_file(s->fd);
      }
    }
  } else if (is_fd_call(s->syscall)) {
    s->fd = (int)PT_REGS_PARM1_SYSCALL(regs);
    struct file *f = fd_file(s->fd);
    s->file_ptr = (__u64)f;
    s->kind = s->syscall == GF_NR_fstat ? GF_KIND_FD_STAT : file_kind(f);
  }
}

/* The traced process of the calling thread, or 0 (the hot path: one hash
 * lookup for every syscall on the machine). */
static __always_inline struct gf_proc *traced_proc(__u32 *tgid, __u32 *tid) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  *tgid = pid_tgid >> 32;
  *tid = (__u32)pid_tgid;
  return bpf_map_lookup_elem(&procs, tgid);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(gf_sys_enter_ts, struct pt_regs *regs, long id) {
  __u32 tgid, tid;
  struct gf_proc *proc = traced_proc(&tgid, &tid);
  if (!proc) return 0;
  struct gf_start *s = bpf_task_storage_get(&task_starts, bpf_get_current_task_btf(), 0,
                                            BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (!s) {
    count(GF_COUNTER_STARTS_DROPPED);
    return 0;
  }
  fill_start(s, proc, regs, id, tid, tgid);
  s->ts = bpf_ktime_get_ns();
  return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(gf_sys_enter, struct pt_regs *regs, long id) {
  __u32 tgid, tid;
  struct gf_proc *proc = traced_proc(&tgid, &tid);
  if (!proc) return 0;

  struct gf_start s = {};
  fill_start(&s, proc, regs, id, tid, tgid);
  s.ts = bpf_ktime_get_ns();
  if (bpf_map_update_elem(&starts, &tid, &s, BPF_ANY) != 0) count(GF_COUNTER_STARTS_DROPPED);
  return 0;
}

static __always_inline void fill_components(struct gf_event *e, struct file *f) {
  struct dentry *d = BPF_CORE_READ(f, f_path.dentry);
  e->dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
  e->depth = 0;

  for (int i = 0; i < GF_DENTRY_DEPTH; i++) {
    if (!d) break;
    struct dentry *parent = BPF_CORE_READ(d, d_parent);
    const unsigned char *name = BPF_CORE_READ(d, d_name.name);
    bpf_probe_read_kernel_str(e->components[i], GF_DENTRY_NAME, name);
    e->depth = i + 1;
    if (parent == d) break; /* the filesystem's root */
    d = parent;
  }
}

static __always_inline bool is_reported_slow(__u32 nr, __u16 kind) {
  if (kind == GF_KIND_PATH || kind == GF_KIND_FD_STAT) return true;
  if (kind != GF_KIND_FILE) return false;
  switch (nr) {
    case GF_NR_read: case GF_NR_pread64: case GF_NR_readv: case GF_NR_preadv: case GF_NR_preadv2:
    case GF_NR_close: case GF_NR_getdents64:
      return true;
  }
  return false;
}

/* The histogram update and, for slow calls and long loop waits, the event. */
static __always_inline int finish_call(struct gf_start st, long ret, __u64 dur, __u32 tid) {
  struct gf_hist_key key = {.syscall = st.syscall, .role = st.role, .kind = st.kind};
  struct gf_hist *h = bpf_map_lookup_elem(&hists, &key);
  if (!h) {
    bpf_map_update_elem(&hists, &key, &zero_hist, BPF_NOEXIST);
    h = bpf_map_lookup_elem(&hists, &key);
    if (!h) return 0;
  }
  __u32 slot = log2_u64(dur);
  if (slot >= GF_HIST_SLOTS) slot = GF_HIST_SLOTS - 1;
  h->count += 1;
  h->total_ns += dur;
  h->slots[slot] += 1;
  if (ret > 0 && st.kind == GF_KIND_FILE && st.syscall != GF_NR_close && st.syscall != GF_NR_getdents64) h->bytes += ret;

  bool slow = dur >= slow_call_ns && is_reported_slow(st.syscall, st.kind);
  bool wait = st.role == GF_ROLE_LOOP && dur >= wait_span_ns && is_wait(st.syscall, st.kind);
  if (!slow && !wait) return 0;

  struct gf_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (!e) {
    count(GF_COUNTER_EVENTS_DROPPED);
    return 0;
  }
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  e->type = slow ? GF_EVENT_SLOW_CALL : GF_EVENT_WAIT;
  e->tgid = pid_tgid >> 32;
  e->tid = tid;
  e->other_pid = 0;
  e->syscall = st.syscall;
  e->role = st.role;
  e->kind = st.kind;
  e->ret = ret;
  e->start_ns = st.ts;
  e->dur_ns = dur;
  e->fd = st.fd;
  e->dev = 0;
  e->rank = st.rank;
  e->depth = 0;
  e->path[0] = 0;
  if (slow && st.kind == GF_KIND_PATH) {
    bpf_probe_read_user_str(e->path, sizeof(e->path), (void *)st.path_ptr);
  } else if (slow && st.file_ptr) {
    fill_components(e, (struct file *)st.file_ptr);
  }
  /* No wakeup: user space drains the buffer on its own cadence (<= 100 ms),
   * so the traced job never pays for waking the tracer. */
  bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
  return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(gf_sys_exit_ts, struct pt_regs *regs, long ret) {
  struct gf_start *s = bpf_task_storage_get(&task_starts, bpf_get_current_task_btf(), 0, 0);
  if (!s || !s->ts) return 0;
  __u64 dur = bpf_ktime_get_ns() - s->ts;
  struct gf_start st = *s;
  s->ts = 0; /* the call is over: a later exit without an enter is not timed */
  return finish_call(st, ret, dur, (__u32)bpf_get_current_pid_tgid());
}

SEC("tp_btf/sys_exit")
int BPF_PROG(gf_sys_exit, struct pt_regs *regs, long ret) {
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct gf_start *s = bpf_map_lookup_elem(&starts, &tid);
  if (!s) return 0;
  __u64 now = bpf_ktime_get_ns();
  __u64 dur = now - s->ts;
  struct gf_start st = *s;
  bpf_map_delete_elem(&starts, &tid);
  return finish_call(st, ret, dur, tid);
}

static __always_inline void send_process_event(__u32 type, __u32 tgid, __u32 other, __u32 rank) {
  struct gf_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (!e) {
    count(GF_COUNTER_EVENTS_DROPPED);
    return;
  }
  e->type = type;
  e->tgid = tgid;
  e->tid = tgid;
  e->other_pid = other;
  e->syscall = 0;
  e->role = 0;
  e->kind = 0;
  e->ret = 0;
  e->start_ns = bpf_ktime_get_ns();
  e->dur_ns = 0;
  e->fd = -1;
  e->dev = 0;
  e->rank = rank;
  e->depth = 0;
  e->path[0] = 0;
  bpf_ringbuf_submit(e, 0);
}

/* DataLoader workers are forked after the job starts (and again every epoch
 * without persistent workers): follow every new process of a traced one. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(gf_fork, struct task_struct *parent, struct task_struct *child) {
  __u32 parent_tgid = parent->tgid;
  __u32 child_pid = child->pid, child_tgid = child->tgid;
  if (child_pid != child_tgid || !follow_forks) return 0; /* a thread is covered by its tgid */
  struct gf_proc *p = bpf_map_lookup_elem(&procs, &parent_tgid);
  if (!p) return 0;
  struct gf_proc worker = {.is_worker = 1, .rank = p->rank};
  if (bpf_map_update_elem(&procs, &child_tgid, &worker, BPF_NOEXIST) != 0) count(GF_COUNTER_PROCS_DROPPED);
  send_process_event(GF_EVENT_FORK, parent_tgid, child_tgid, p->rank);
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(gf_exit, struct task_struct *task) {
  __u32 pid = task->pid, tgid = task->tgid;
  if (pid != tgid) return 0; /* a thread, not the process */
  struct gf_proc *p = bpf_map_lookup_elem(&procs, &tgid);
  if (!p) return 0;
  __u32 rank = p->rank;
  bpf_map_delete_elem(&procs, &tgid);
  send_process_event(GF_EVENT_EXIT, tgid, (__u32)task->exit_code, rank);
  return 0;
}
