#pragma once
// The host's syscall numbers (bpf/syscall_nrs.h, shared with the BPF programs) and what they mean to the
// diagnosis.
#include <string>

namespace gpufeed::sys {

std::string name(int nr);  // "openat"; "syscall_999" when unknown

// Path-taking metadata calls (stat family, access) and opens.
bool is_stat(int nr);
bool is_open(int nr);
// Reads of file contents.
bool is_read(int nr);
// Calls a thread blocks in while it waits for another process or thread:
// the training loop waiting for its next batch, a worker for its next index.
bool is_wait(int nr);
// Reads and receives that are waits when the fd is a pipe or socket.
bool is_pipe_read(int nr);

}  // namespace gpufeed::sys
