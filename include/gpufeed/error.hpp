#pragma once
// The one error type gpufeed throws for anything a user can act on. The CLI
// maps it to a one-line message and an exit code in exactly one place
// (src/cli/exit_status.cpp); see docs/exit-codes.md.
#include <stdexcept>
#include <string>

namespace gpufeed {

enum class ErrorKind {
  Runtime = 1,    // the work failed: I/O error, library failure, bad data
  Usage = 2,      // the request is wrong: option, argument, input file
  Privilege = 3,  // a privilege or capability is missing
  Findings = 4,   // diagnose findings at or above --fail-on / check failed
};

class Error : public std::runtime_error {
 public:
  // what: what went wrong, naming the input. hint: what to do about it.
  Error(ErrorKind kind, std::string what, std::string hint = {})
      : std::runtime_error(std::move(what)), kind_(kind), hint_(std::move(hint)) {}

  ErrorKind kind() const noexcept { return kind_; }
  const std::string& hint() const noexcept { return hint_; }

 private:
  ErrorKind kind_;
  std::string hint_;
};

inline Error usage_error(std::string what, std::string hint = {}) {
  return {ErrorKind::Usage, std::move(what), std::move(hint)};
}
inline Error runtime_error(std::string what, std::string hint = {}) {
  return {ErrorKind::Runtime, std::move(what), std::move(hint)};
}

}  // namespace gpufeed
