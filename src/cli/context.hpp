#pragma once
// What every subcommand gets: the I/O bundle and the shared output options.
#include <CLI/CLI.hpp>
#include <string>

#include "app.hpp"
#include "gpufeed/document.hpp"
#include "gpufeed/text.hpp"

namespace gpufeed::cli {

struct OutputOptions {
  std::string json_path;  // empty: no JSON; "-": JSON on stdout instead of text
  bool quiet = false;
  bool verbose = false;
};

// --json FILE, --quiet, --verbose on a subcommand.
void add_output_options(CLI::App& cmd, OutputOptions& options);

struct Context {
  Io& io;
  TextStyle style;
  // Text goes to stdout unless --quiet, or --json - puts JSON there.
  bool wants_text(const OutputOptions& o) const { return !o.quiet && o.json_path != "-"; }
  // Fails fast on an --json target that cannot be written, before the work.
  void check_json_target(const OutputOptions& o) const;
  // Writes a finished document to the --json target (atomically for a file).
  void emit_json(const OutputOptions& o, const Json& document) const;
};

// Colour only on a terminal, never with NO_COLOR set or TERM=dumb.
TextStyle style_for(const Io& io);

// A subcommand's runner: called after a successful parse, returns the exit code.
using Runner = std::function<int(Context&)>;
struct Command {
  CLI::App* app = nullptr;
  Runner run;
};

Command add_probe_command(CLI::App& app);
Command add_diagnose_command(CLI::App& app);
Command add_monitor_command(CLI::App& app);
Command add_gpu_command(CLI::App& app);       // gpu + gpu record
Command add_gpu_show_command(CLI::App& gpu);  // gpu show
Command add_bench_command(CLI::App& app);
Command add_tune_command(CLI::App& app);
Command add_check_command(CLI::App& app);

}  // namespace gpufeed::cli
