#pragma once
// The one progress line every command draws: on stderr, redrawn in place,
// only on a terminal (and not with --quiet), cleared before anything else
// is printed and when it goes out of scope.
#include <ostream>
#include <string>

namespace gpufeed::cli {

class ProgressLine {
 public:
  ProgressLine(std::ostream& err, bool enabled) : err_(err), enabled_(enabled) {}
  ~ProgressLine() { clear(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void show(const std::string& line) {
    if (!enabled_) return;
    err_ << "\r\33[2K" << line << std::flush;
    shown_ = true;
  }
  void clear() {
    if (shown_) err_ << "\r\33[2K" << std::flush;
    shown_ = false;
  }

 private:
  std::ostream& err_;
  bool enabled_;
  bool shown_ = false;
};

}  // namespace gpufeed::cli
