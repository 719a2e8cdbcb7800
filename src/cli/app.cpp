#include "app.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "context.hpp"
#include "exit_status.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/setting.hpp"
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

// Edits (insert, delete, replace) from a to b: how close a typo is.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The command's long option closest to `word`, when it is a likely typo.
std::string closest_option(const CLI::App& command, const std::string& word) {
  const std::string name = word.substr(0, word.find('='));
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, name.size() / 4) + 1;
  for (const CLI::Option* opt : command.get_options()) {
    for (const auto& long_name : opt->get_lnames()) {
      const std::size_t d = edit_distance(name, "--" + long_name);
      if (d < best_distance) best_distance = d, best = "--" + long_name;
    }
  }
  return best;
}

// Words no option or command took. CLI11's own error lists them in reverse
// and, after a mistyped option and `--`, names the launched command's words
// (they land with the top level): this names an unknown option first.
void refuse_extras(const CLI::App& app) {
  const CLI::App* command = &app;
  std::vector<std::string> extras = app.remaining(false);
  for (const CLI::App* sub = &app; sub;) {
    const CLI::App* next = nullptr;
    for (const CLI::App* s : sub->get_subcommands()) next = s;  // the parsed one
    if (next) {
      command = next;
      const auto more = next->remaining(false);
      extras.insert(extras.end(), more.begin(), more.end());
    }
    sub = next;
  }
  // With extras allowed CLI11 also keeps the `--` that ends the options.
  extras.erase(std::remove(extras.begin(), extras.end(), "--"), extras.end());
  if (extras.empty()) return;
  const auto option = std::find_if(extras.begin(), extras.end(), [](const std::string& w) { return w.rfind('-', 0) == 0; });
  const std::string& word = option != extras.end() ? *option : extras.front();
  const std::string help = command == &app ? "gpufeed help" : "gpufeed help " + command->get_name();
  if (command == &app && word.rfind('-', 0) != 0) {
    throw usage_error(fmt::format("unknown command '{}'", word), "run 'gpufeed help' to list the commands");
  }
  if (word.rfind('-', 0) != 0) {
    throw usage_error(fmt::format("unexpected argument '{}'", word), fmt::format("see '{}' for the arguments", help));
  }
  const std::string near = closest_option(*command, word);
  throw usage_error(fmt::format("unknown option '{}'{}", word, near.empty() ? "" : fmt::format(" (did you mean {}?)", near)),
                    fmt::format("see '{}' for the options", help));
}

// A report that did not reach stdout (a full disk, a closed pipe) is a
// failed run, whatever the command concluded.
int finish(int code, Io& io) {
  errno = 0;
  io.out.flush();
  if (!io.out) {
    const int err = errno;
    throw runtime_error(fmt::format("cannot write standard output: {}", err ? std::strerror(err) : "the write failed"),
                        "check where stdout goes (a full disk, a closed pipe)");
  }
  return code;
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

namespace {

// The flags a setting may go by: its field name dashed (--batch-size), and
// the shorter names the loader's commands use for the DataLoader's fields.
std::vector<std::string> flag_aliases(Setting s, const std::string& dashed) {
  switch (s) {
    case Setting::workers: return {"--workers", dashed};
    case Setting::prefetch: return {"--prefetch", dashed};
    default: return {dashed};
  }
}

}  // namespace

int run(const std::vector<std::string>& args, Io& io) {
  try {
    CLI::App app{"gpufeed finds out why a training job's GPUs starve for data, and tunes the data loader.",
                 "gpufeed"};
    app.set_version_flag("--version", version_line(), "Print the version and exit");
    app.require_subcommand(0, 1);
    app.allow_extras();  // the commands inherit it; refuse_extras names what was not taken
    app.footer(
        "Run 'gpufeed help COMMAND' (or 'gpufeed COMMAND --help') for a command's options and examples.\n"
        "Exit codes: 0 ok, 1 runtime error, 2 usage error, 3 missing privilege, 4 findings/check failed.");

    std::vector<Command> commands;
    commands.push_back(add_probe_command(app));
    commands.push_back(add_diagnose_command(app));
    commands.push_back(add_monitor_command(app));
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
      refuse_extras(app);
    } catch (const CLI::CallForHelp&) {
      io.out << app.help();
      return 0;
    } catch (const CLI::CallForAllHelp&) {
      io.out << app.help("", CLI::AppFormatMode::All);
      return 0;
    } catch (const CLI::CallForVersion& e) {
      io.out << e.what() << '\n';
      return 0;
    } catch (const CLI::RequiredError&) {
      // "--confg x" leaves --config missing: the typo is the error to name.
      refuse_extras(app);
      throw;
    }

    Context ctx{io, style_for(io)};
    if (help->parsed()) return finish(run_help(app, help_topic, io), io);
    for (auto& command : commands) {
      if (!command.app->parsed()) continue;
      // The core names settings; a message spells each as this command's flag where it has one.
      SettingSpelling spelling([&command](Setting s) -> std::optional<std::string> {
        const std::string flag = "--" + field_name(s);
        std::string dashed = flag;
        std::replace(dashed.begin(), dashed.end(), '_', '-');
        for (const std::string& name : flag_aliases(s, dashed)) {
          if (command.app->get_option_no_throw(name) != nullptr) return name;
        }
        return std::nullopt;
      });
      return finish(command.run(ctx), io);
    }
    io.out << app.help();  // no command: show what there is
    return finish(0, io);
  } catch (...) {
    io.out.flush();
    return report_failure(std::current_exception(), io.err);
  }
}

}  // namespace gpufeed::cli
