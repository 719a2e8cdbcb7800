#include "gpufeed/text.hpp"

#include <cstdint>

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

namespace {

// Length of the UTF-8 sequence at text[i], or 0 when it is not one (bad lead
// byte, missing or bad continuation, overlong form, surrogate, past U+10FFFF).
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t n = 0;
  std::uint32_t code = 0;
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) n = 2, code = lead & 0x1F;
  else if ((lead & 0xF0) == 0xE0) n = 3, code = lead & 0x0F;
  else if ((lead & 0xF8) == 0xF0) n = 4, code = lead & 0x07;
  else return 0;
  if (i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kMin[n] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t n = utf8_length(text, i);
    if (n == 0 || c < 0x20 || c == 0x7F) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace gpufeed
