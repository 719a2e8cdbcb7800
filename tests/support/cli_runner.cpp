#include "support/cli_runner.hpp"

#include <sys/wait.h>

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

}  // namespace gpufeed::testing
