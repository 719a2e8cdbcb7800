/* Shared between bpf/diagnose.bpf.c (kernel) and src/trace (user space):
 * plain fixed-width types and constants only. */
#ifndef GPUFEED_BPF_DIAGNOSE_H
#define GPUFEED_BPF_DIAGNOSE_H

#define GF_HIST_SLOTS 40   /* log2 buckets of nanoseconds: slot k holds [2^k, 2^(k+1)) ns */
#define GF_PATH_MAX 256
#define GF_DENTRY_DEPTH 6  /* path components recovered for fd-based calls */
#define GF_DENTRY_NAME 40

/* Who made a call: the training loop's thread, another thread of the
 * training process (e.g. PyTorch's pin-memory thread), a worker process's
 * main thread (where a DataLoader worker loads samples), or another thread of
 * a worker (queue feeder, fd-sharing threads). */
enum gf_role {
  GF_ROLE_LOOP = 0,
  GF_ROLE_LOOP_THREADS = 1,
  GF_ROLE_WORKER = 2,
  GF_ROLE_WORKER_THREADS = 3,
  GF_ROLES = 4,
};

/* What a call's first argument pointed at. PATH: a path-taking call
 * (openat, stat, access ...). FD_STAT: a stat of an open fd (glibc's fstat is
 * newfstatat(fd, "", AT_EMPTY_PATH)), kept apart so fast fd stats do not hide
 * slow path stats. */
enum gf_kind {
  GF_KIND_NONE = 0,
  GF_KIND_FILE = 1,
  GF_KIND_PIPE = 2,
  GF_KIND_SOCKET = 3,
  GF_KIND_OTHER_FD = 4,
  GF_KIND_PATH = 5,
  GF_KIND_FD_STAT = 6,
  GF_KIND_CREATE = 7, /* an open that may create its file (O_CREAT) */
  GF_KINDS = 8,
};

/* A process being traced: the training process of a rank, or a worker. */
struct gf_proc {
  unsigned int is_worker;
  unsigned int rank;
};

struct gf_hist_key {
  unsigned int syscall;
  unsigned short role;
  unsigned short kind;
};

struct gf_hist {
  unsigned long long count;
  unsigned long long total_ns;
  unsigned long long bytes; /* sum of positive results of reads: bytes read */
  unsigned long long slots[GF_HIST_SLOTS];
};

enum gf_event_type {
  GF_EVENT_SLOW_CALL = 1, /* a path or file I/O call above the slow threshold */
  GF_EVENT_WAIT = 2,      /* the loop thread blocked waiting (data wait span) */
  GF_EVENT_FORK = 3,      /* a traced process forked a new process */
  GF_EVENT_EXIT = 4,      /* a traced process exited */
};

struct gf_event {
  unsigned int type;
  unsigned int tgid;
  unsigned int tid;
  unsigned int other_pid; /* FORK: the child; EXIT: the exit code */
  unsigned int syscall;
  unsigned short role;
  unsigned short kind;
  long long ret;
  unsigned long long start_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
  unsigned long long dur_ns;
  int fd;                      /* fd-based calls; dirfd for path calls */
  unsigned int dev;            /* kernel dev_t of the file's superblock (fd-based) */
  unsigned int rank;
  unsigned int depth;          /* components filled in `components` */
  char path[GF_PATH_MAX];      /* path-taking calls: the path argument as given */
  char components[GF_DENTRY_DEPTH][GF_DENTRY_NAME]; /* fd-based: leaf first */
};

/* Counters the user side reports so nothing is silently lost. */
enum gf_counter {
  GF_COUNTER_EVENTS_DROPPED = 0, /* ring buffer full */
  GF_COUNTER_STARTS_DROPPED = 1, /* in-flight call table full */
  GF_COUNTER_PROCS_DROPPED = 2,  /* traced process table full */
  GF_COUNTERS = 3,
};

#endif
