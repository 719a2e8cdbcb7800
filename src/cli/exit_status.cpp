#include "exit_status.hpp"

#include <new>

#include <CLI/Error.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include "gpufeed/error.hpp"

namespace gpufeed::cli {
namespace {

void print(std::ostream& err, std::string_view what, std::string_view hint) {
  // One line: what went wrong (naming the input), then what to do.
  std::string line = fmt::format("gpufeed: error: {}", what);
  if (!hint.empty()) line += fmt::format("; {}", hint);
  for (char& c : line) {
    if (c == '\n') c = ' ';
  }
  err << line << '\n';
}

}  // namespace

int report_failure(std::exception_ptr failure, std::ostream& err) {
  try {
    std::rethrow_exception(failure);
  } catch (const Error& e) {
    print(err, e.what(), e.hint());
    return static_cast<int>(e.kind());
  } catch (const CLI::ParseError& e) {
    print(err, e.what(), "run 'gpufeed help' or 'gpufeed help COMMAND' for the options");
    return static_cast<int>(ErrorKind::Usage);
  } catch (const std::bad_alloc&) {
    print(err, "out of memory", "free memory or lower the memory budget");
    return static_cast<int>(ErrorKind::Runtime);
  } catch (const std::exception& e) {
    print(err, fmt::format("internal error: {}", e.what()), "please report this with the command line you ran");
    return static_cast<int>(ErrorKind::Runtime);
  } catch (...) {
    print(err, "internal error", "please report this with the command line you ran");
    return static_cast<int>(ErrorKind::Runtime);
  }
}

}  // namespace gpufeed::cli
