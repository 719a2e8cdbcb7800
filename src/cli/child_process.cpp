#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <thread>

#include "gpufeed/error.hpp"
#include "gpufeed/os/process_group.hpp"

namespace gpufeed::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Drains what is ready on `fd` into `into`; false at end of file.
bool drain(int fd, std::string& into) {
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    return false;
  }
}

}  // namespace

ChildResult run_child(const std::vector<std::string>& argv, double timeout_s, const std::atomic<bool>* stop,
                      const ChildTick& on_tick) {
  ChildResult r;
  int out_fds[2], err_fds[2];
  if (pipe2(out_fds, O_CLOEXEC) != 0 || pipe2(err_fds, O_CLOEXEC) != 0) {
    throw runtime_error("cannot create pipes for " + argv.front());
  }
  auto close_writers = [&] {
    close(out_fds[1]);
    close(err_fds[1]);
  };
  std::unique_ptr<os::Launched> child;
  try {
    child = std::make_unique<os::Launched>(argv, os::LaunchOptions{true, false, out_fds[1], err_fds[1]});
  } catch (...) {
    close_writers();
    close(out_fds[0]);
    close(err_fds[0]);
    throw;
  }
  const pid_t pid = child->pid();
  close_writers();
  r.started = child->release() == 0;
  fcntl(out_fds[0], F_SETFL, O_NONBLOCK);
  fcntl(err_fds[0], F_SETFL, O_NONBLOCK);
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  bool out_open = true, err_open = true;
  int status = 0;
  bool reaped = false;
  while (out_open || err_open) {
    if (stop && stop->load()) {
      r.stopped = true;
      break;
    }
    if (Clock::now() >= deadline) {
      r.timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_fds[0], POLLIN, 0}, {err_fds[0], POLLIN, 0}};
    if (poll(fds, 2, 100) < 0 && errno != EINTR) break;
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP))) out_open = drain(out_fds[0], r.out);
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP))) err_open = drain(err_fds[0], r.err);
    if (on_tick && (out_open || err_open)) {
      try {
        on_tick(pid, r);
      } catch (...) {  // the hook failed: the child goes with it
        kill(-pid, SIGCONT);
        os::end_process_group(pid, status, std::chrono::seconds(2));
        close(out_fds[0]);
        close(err_fds[0]);
        throw;
      }
    }
  }
  if (r.stopped || r.timed_out) {
    os::end_process_group(pid, status, std::chrono::seconds(2));
    reaped = true;
  }
  if (!reaped) {
    waitpid(pid, &status, 0);
    kill(-pid, SIGKILL);  // anything it left behind in its group
  }
  close(out_fds[0]);
  close(err_fds[0]);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace gpufeed::cli
