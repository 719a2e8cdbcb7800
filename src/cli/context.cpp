#include "context.hpp"

#include "gpufeed/atomic_file.hpp"
#include "option_values.hpp"

namespace gpufeed::cli {

void add_output_options(CLI::App& cmd, OutputOptions& options) {
  cmd.add_option("--json", options.json_path, "Also write the result as JSON to FILE ('-' = stdout, instead of text)")
      ->check(output_path("--json", true))
      ->type_name("FILE");
  cmd.add_flag("-q,--quiet", options.quiet, "Print nothing but errors");
  cmd.add_flag("-v,--verbose", options.verbose, "Print more detail");
}

void Context::check_json_target(const OutputOptions& o) const {
  if (!o.json_path.empty() && o.json_path != "-") check_output_path(o.json_path);
}

void Context::emit_json(const OutputOptions& o, const Json& document) const {
  if (o.json_path.empty()) return;
  const std::string text = dump_json(document, 2) + "\n";
  if (o.json_path == "-") {
    io.out << text;
    return;
  }
  io.out.flush();  // the text so far comes first when FILE is /dev/stdout
  write_output(o.json_path, text);
  if (!o.quiet) io.out << style.dim("JSON written to " + o.json_path) << "\n";
}

TextStyle style_for(const Io& io) {
  const auto no_color = io.env("NO_COLOR");
  const auto term = io.env("TERM");
  // NO_COLOR (no-color.org): any non-empty value turns colour off.
  const bool disabled = (no_color && !no_color->empty()) || (term && *term == "dumb");
  return TextStyle{io.out_is_tty && !disabled};
}

}  // namespace gpufeed::cli
