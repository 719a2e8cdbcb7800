#include "gpufeed/wait_status.hpp"

#include <sys/wait.h>

namespace gpufeed {

int exit_code_of(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

}  // namespace gpufeed
