#include "gpufeed/os/process_group.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "gpufeed/error.hpp"

namespace gpufeed::os {

Launched::Launched(const std::vector<std::string>& argv, const LaunchOptions& options) {
  if (argv.empty()) throw runtime_error("cannot start an empty command");
  int go[2] = {-1, -1}, fail[2];
  if ((options.held && pipe2(go, O_CLOEXEC) != 0) || pipe2(fail, O_CLOEXEC) != 0) {
    throw runtime_error("cannot create pipes for " + argv.front() + ": " + std::strerror(errno));
  }
  // Built before fork: the child may only make async-signal-safe calls.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ < 0) {
    const int e = errno;
    for (int fd : {go[0], go[1], fail[0], fail[1]}) {
      if (fd >= 0) close(fd);
    }
    throw runtime_error("cannot start " + argv.front() + ": " + std::strerror(e));
  }
  if (pid_ == 0) {
    if (options.own_group) setpgid(0, 0);
    if (options.held) {
      char c;
      (void)!read(go[0], &c, 1);
    }
    if (options.stdout_fd >= 0) dup2(options.stdout_fd, 1);
    if (options.stderr_fd >= 0) dup2(options.stderr_fd, 2);
    execvp(args[0], args.data());
    const int e = errno;
    (void)!write(fail[1], &e, sizeof e);
    _exit(127);
  }
  if (options.own_group) setpgid(pid_, pid_);  // both sides: no race with a signal to the group
  if (options.held) {
    close(go[0]);
    go_ = go[1];
  }
  close(fail[1]);
  fail_ = fail[0];
}

Launched::~Launched() {
  if (go_ >= 0) close(go_);
  if (fail_ >= 0) close(fail_);
}

int Launched::release() {
  if (go_ >= 0) {
    (void)!write(go_, "g", 1);
    close(go_);
    go_ = -1;
  }
  if (fail_ < 0) return 0;
  int err = 0;
  ssize_t n;
  do {
    n = read(fail_, &err, sizeof err);  // end of file: exec closed the pipe
  } while (n < 0 && errno == EINTR);
  close(fail_);
  fail_ = -1;
  return n == static_cast<ssize_t>(sizeof err) ? err : 0;
}

bool end_process_group(pid_t leader, int& status, std::chrono::milliseconds grace) {
  if (waitpid(leader, &status, WNOHANG) == leader) {
    kill(-leader, SIGKILL);  // stragglers of the group (workers)
    return true;
  }
  kill(-leader, SIGTERM);
  kill(-leader, SIGCONT);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(leader, &status, WNOHANG) == leader) {
      kill(-leader, SIGKILL);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(-leader, SIGKILL);
  waitpid(leader, &status, 0);
  return false;
}

}  // namespace gpufeed::os
