/* The syscall numbers gpufeed treats specially, per architecture: one list
 * read by the BPF programs (built with -D__TARGET_ARCH_xxx) and by the core's
 * diagnosis (built for the host, __x86_64__ or __aarch64__), so the two
 * cannot disagree.
 *
 * arm64 uses the generic table, which lacks the legacy calls (open, stat,
 * lstat, access, poll, select, epoll_wait): their libc wrappers issue the *at
 * / p* calls instead. Those get GF_NR_ABSENT numbers, which no system call
 * has, so every comparison with them is false and switch labels stay
 * distinct. */
#ifndef GPUFEED_SYSCALL_NRS_H
#define GPUFEED_SYSCALL_NRS_H

#define GF_NR_ABSENT(k) (0x40000000 + (k))

#if defined(__TARGET_ARCH_x86) || (!defined(__TARGET_ARCH_arm64) && defined(__x86_64__))
#define GF_NR_read 0
#define GF_NR_open 2
#define GF_NR_close 3
#define GF_NR_stat 4
#define GF_NR_fstat 5
#define GF_NR_lstat 6
#define GF_NR_poll 7
#define GF_NR_pread64 17
#define GF_NR_readv 19
#define GF_NR_access 21
#define GF_NR_select 23
#define GF_NR_recvfrom 45
#define GF_NR_recvmsg 47
#define GF_NR_futex 202
#define GF_NR_getdents64 217
#define GF_NR_epoll_wait 232
#define GF_NR_openat 257
#define GF_NR_newfstatat 262
#define GF_NR_faccessat 269
#define GF_NR_pselect6 270
#define GF_NR_ppoll 271
#define GF_NR_epoll_pwait 281
#define GF_NR_preadv 295
#define GF_NR_preadv2 327
#define GF_NR_statx 332
#elif defined(__TARGET_ARCH_arm64) || defined(__aarch64__)
#define GF_NR_epoll_pwait 22
#define GF_NR_faccessat 48
#define GF_NR_openat 56
#define GF_NR_close 57
#define GF_NR_getdents64 61
#define GF_NR_read 63
#define GF_NR_readv 65
#define GF_NR_pread64 67
#define GF_NR_preadv 69
#define GF_NR_pselect6 72
#define GF_NR_ppoll 73
#define GF_NR_newfstatat 79
#define GF_NR_fstat 80
#define GF_NR_futex 98
#define GF_NR_recvfrom 207
#define GF_NR_recvmsg 212
#define GF_NR_preadv2 286
#define GF_NR_statx 291
#define GF_NR_open GF_NR_ABSENT(1)
#define GF_NR_stat GF_NR_ABSENT(2)
#define GF_NR_lstat GF_NR_ABSENT(3)
#define GF_NR_access GF_NR_ABSENT(4)
#define GF_NR_poll GF_NR_ABSENT(5)
#define GF_NR_select GF_NR_ABSENT(6)
#define GF_NR_epoll_wait GF_NR_ABSENT(7)
#else
#error "gpufeed's syscall numbers cover x86_64 and arm64; add this architecture's to bpf/syscall_nrs.h"
#endif

/* The same on every architecture (numbered after the tables were unified). */
#define GF_NR_openat2 437
#define GF_NR_faccessat2 439
#define GF_NR_epoll_pwait2 441
#define GF_NR_futex_waitv 449

#endif
