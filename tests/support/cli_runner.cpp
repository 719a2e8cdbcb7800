#include "support/cli_runner.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <cstdio>
#include <sstream>

#include "app.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed::testing {

CliResult run_cli(const std::vector<std::string>& args, const CliSetup& setup) {
  std::ostringstream out, err;
  cli::Io io(out, err);
  io.out_is_tty = setup.tty;
  io.env = [env = setup.env](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  io.host.root = setup.host_root;
  CliResult r;
  r.code = cli::run(args, io);
  r.out = out.str();
  r.err = err.str();
  return r;
}

CliResult run_binary(const std::string& args) {
  TempDir dir;
  const auto out = dir / "out", err = dir / "err";
  const std::string cmd = std::string(GPUFEED_BINARY) + " " + args + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

SpawnResult run_binary_argv(const std::vector<std::string>& args, const SpawnOptions& options) {
  TempDir dir;
  const auto out = options.stdout_to.empty() ? dir / "out" : options.stdout_to;
  const auto err = dir / "err";
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) _exit(126);
    const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0) _exit(126);
    dup2(o, 1);
    dup2(e, 2);
    std::vector<char*> argv{const_cast<char*>(GPUFEED_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  SpawnResult r;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - start > std::chrono::duration<double>(options.timeout_s)) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (options.stdout_to.empty()) r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

}  // namespace gpufeed::testing
