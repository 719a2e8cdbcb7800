/* The few kernel types gpufeed's BPF programs read, declared by hand with
 * CO-RE relocations (preserve_access_index). libbpf matches each field by name
 * against the running kernel's BTF at load time, so this header builds on any
 * host (no /sys/kernel/btf needed at build time) and the object runs on any
 * kernel with BTF. Only the members we touch are declared. The one
 * architecture-specific type, struct pt_regs, is declared for x86_64 and
 * arm64 (chosen by -D__TARGET_ARCH_xxx, as libbpf's bpf_tracing.h is). */
#ifndef GF_VMLINUX_H
#define GF_VMLINUX_H
/* What bpftool's generated vmlinux.h defines: bpf_tracing.h then names the
 * kernel's pt_regs members (di, si), not the user-space ones (rdi, rsi). */
#define __VMLINUX_H__

typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
typedef __u32 u32;
typedef __u64 u64;
typedef unsigned short umode_t;
typedef __u32 dev_t;
enum { false = 0, true = 1 };

enum bpf_map_type {
  BPF_MAP_TYPE_HASH = 1,
  BPF_MAP_TYPE_ARRAY = 2,
  BPF_MAP_TYPE_PERCPU_HASH = 5,
  BPF_MAP_TYPE_PERCPU_ARRAY = 6,
  BPF_MAP_TYPE_RINGBUF = 27,
  BPF_MAP_TYPE_TASK_STORAGE = 29,
};

enum {
  BPF_RB_NO_WAKEUP = 1,
};

enum {
  BPF_ANY = 0,
  BPF_NOEXIST = 1,
  BPF_EXIST = 2,
  BPF_F_NO_PREALLOC = 1,
  BPF_LOCAL_STORAGE_GET_F_CREATE = 1,
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

#if defined(__TARGET_ARCH_x86)
struct pt_regs {
  unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};
#elif defined(__TARGET_ARCH_arm64)
/* bpf_tracing.h reads arguments through user_pt_regs (regs[n]) and the first
 * syscall argument from pt_regs' orig_x0, which a syscall's return value does
 * not overwrite. */
struct user_pt_regs {
  __u64 regs[31];
  __u64 sp;
  __u64 pc;
  __u64 pstate;
};
struct pt_regs {
  union {
    struct user_pt_regs user_regs;
    struct {
      __u64 regs[31];
      __u64 sp;
      __u64 pc;
      __u64 pstate;
    };
  };
  __u64 orig_x0;
};
#else
#error "gf_vmlinux.h declares struct pt_regs for x86_64 and arm64; pass -D__TARGET_ARCH_x86 or -D__TARGET_ARCH_arm64"
#endif

struct qstr {
  const unsigned char *name;
};

struct dentry {
  struct dentry *d_parent;
  struct qstr d_name;
};

struct super_block {
  dev_t s_dev;
};

struct inode {
  umode_t i_mode;
  struct super_block *i_sb;
};

struct path {
  struct dentry *dentry;
};

struct file {
  struct path f_path;
  struct inode *f_inode;
};

struct fdtable {
  unsigned int max_fds;
  struct file **fd;
};

struct files_struct {
  struct fdtable *fdt;
};

struct task_struct {
  int pid;
  int tgid;
  int exit_code;
  struct files_struct *files;
};

#pragma clang attribute pop

#endif
