#pragma once
// Human output helpers: optional colour and aligned tables. Colour is decided
// by the CLI (a TTY and no NO_COLOR); the core only applies it.
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace gpufeed {

struct TextStyle {
  bool colour = false;
  std::string heading(std::string_view s) const;  // bold
  std::string good(std::string_view s) const;     // green
  std::string warn(std::string_view s) const;     // yellow
  std::string bad(std::string_view s) const;      // red
  std::string dim(std::string_view s) const;      // grey
};

// A plain left-aligned table; the header row is drawn in the heading style.
// Widths come from the visible text, so styled cells must be styled after
// measuring: cells are plain text here.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  void print(std::ostream& out, const TextStyle& style, std::string_view indent = "  ") const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// `text` for a one-line message: control characters and bytes that are not
// UTF-8 become \xNN, so a hostile file name cannot break the line or the
// terminal; valid UTF-8 is kept as it is.
std::string printable(std::string_view text);

}  // namespace gpufeed
