/* The few kernel types gpufeed's BPF programs read, declared by hand with
 * CO-RE relocations (preserve_access_index). libbpf matches each field by name
 * against the running kernel's BTF at load time, so this header builds on any
 * host (no /sys/kernel/btf needed at build time) and the object runs on any
 * kernel with BTF. Only the members we touch are declared; x86_64 only. */
#ifndef GF_VMLINUX_H
#define GF_VMLINUX_H

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

struct pt_regs {
  unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};

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
