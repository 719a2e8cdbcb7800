#include "process_group.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <thread>

namespace gpufeed::cli {

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

}  // namespace gpufeed::cli
