#pragma once
// A reaped wait status (waitpid, or the tracer's exit event) as a shell
// reports it: the exit code, or 128 + the signal.
namespace gpufeed {

int exit_code_of(int wait_status);

}  // namespace gpufeed
