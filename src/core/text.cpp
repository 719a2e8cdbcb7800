#include "gpufeed/text.hpp"

#include <algorithm>

#include <fmt/color.h>
#include <fmt/format.h>

namespace gpufeed {
namespace {

std::string styled(bool on, std::string_view s, fmt::text_style ts) {
  if (!on) return std::string(s);
  return fmt::format(ts, "{}", s);
}

size_t visible_width(std::string_view s) {
  // UTF-8: count code points, not bytes (we print "x", "-", "->" and a few "·").
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

}  // namespace

std::string TextStyle::heading(std::string_view s) const { return styled(colour, s, fmt::emphasis::bold); }
std::string TextStyle::good(std::string_view s) const { return styled(colour, s, fmt::fg(fmt::terminal_color::green)); }
std::string TextStyle::warn(std::string_view s) const { return styled(colour, s, fmt::fg(fmt::terminal_color::yellow)); }
std::string TextStyle::bad(std::string_view s) const { return styled(colour, s, fmt::fg(fmt::terminal_color::red)); }
std::string TextStyle::dim(std::string_view s) const {
  return styled(colour, s, fmt::fg(fmt::terminal_color::bright_black));
}

void TextTable::print(std::ostream& out, const TextStyle& style, std::string_view indent) const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], visible_width(row[i]));
  };
  measure(header_);
  for (const auto& row : rows_) measure(row);
  auto line = [&](const std::vector<std::string>& row, bool is_header) {
    std::string text(indent);
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      const bool last = i + 1 == row.size();
      std::string cell = row[i];
      if (!last) cell += std::string(width[i] - visible_width(row[i]) + 2, ' ');
      text += cell;
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << (is_header ? style.heading(text) : text) << '\n';
  };
  line(header_, true);
  for (const auto& row : rows_) line(row, false);
}

}  // namespace gpufeed
