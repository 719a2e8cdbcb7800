#pragma once
#include <exception>
#include <ostream>

namespace gpufeed::cli {

// The one place that turns a failure into a one-line message on `err` and an
// exit code (docs/exit-codes.md). Call from a catch block.
int report_failure(std::exception_ptr failure, std::ostream& err);

}  // namespace gpufeed::cli
