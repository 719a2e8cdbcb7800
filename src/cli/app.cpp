#include "app.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "context.hpp"
#include "exit_status.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/version.hpp"

namespace gpufeed::cli {
namespace {

std::string version_line() { return fmt::format("gpufeed {}", kVersion); }

// `gpufeed help [COMMAND]`: the same text as `gpufeed COMMAND --help`.
int run_help(const CLI::App& app, const std::string& topic, Io& io) {
  if (topic.empty()) {
    io.out << app.help();
    return 0;
  }
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == topic) {
      io.out << sub->help(app.get_name());
      return 0;
    }
  }
  throw usage_error(fmt::format("unknown command '{}'", topic), "run 'gpufeed help' to list the commands");
}

}  // namespace

Io process_io() {
  Io io{std::cout, std::cerr};
  io.out_is_tty = isatty(STDOUT_FILENO) == 1;
  io.err_is_tty = isatty(STDERR_FILENO) == 1;
  io.env = [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    return value ? std::optional<std::string>(value) : std::nullopt;
  };
  return io;
}

int run(const std::vector<std::string>& args, Io& io) {
  try {
    CLI::App app{"gpufeed finds out why a training job's GPUs starve for data, and tunes the data loader.",
                 "gpufeed"};
    app.set_version_flag("--version", version_line(), "Print the version and exit");
    app.require_subcommand(0, 1);
    app.footer(
        "Run 'gpufeed help COMMAND' (or 'gpufeed COMMAND --help') for a command's options and examples.\n"
        "Exit codes: 0 ok, 1 runtime error, 2 usage error, 3 missing privilege, 4 findings/check failed.");

    std::vector<Command> commands;
    commands.push_back(add_probe_command(app));
    commands.push_back(add_diagnose_command(app));
    commands.push_back(add_bench_command(app));
    commands.push_back(add_tune_command(app));
    commands.push_back(add_check_command(app));
    commands.push_back(add_gpu_command(app));
    commands.push_back(add_gpu_show_command(*app.get_subcommand("gpu")));

    std::string help_topic;
    CLI::App* help = app.add_subcommand("help", "Show help for gpufeed or one of its commands");
    help->add_option("command", help_topic, "The command to explain");
    help->footer("Examples:\n  gpufeed help\n  gpufeed help probe");

    try {
      std::vector<std::string> reversed(args.rbegin(), args.rend());
      app.parse(reversed);  // CLI11 consumes a reversed vector
    } catch (const CLI::CallForHelp&) {
      io.out << app.help();
      return 0;
    } catch (const CLI::CallForAllHelp&) {
      io.out << app.help("", CLI::AppFormatMode::All);
      return 0;
    } catch (const CLI::CallForVersion& e) {
      io.out << e.what() << '\n';
      return 0;
    }

    Context ctx{io, style_for(io)};
    if (help->parsed()) return run_help(app, help_topic, io);
    for (auto& command : commands) {
      if (command.app->parsed()) return command.run(ctx);
    }
    io.out << app.help();  // no command: show what there is
    return 0;
  } catch (...) {
    return report_failure(std::current_exception(), io.err);
  }
}

}  // namespace gpufeed::cli
