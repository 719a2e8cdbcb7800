#include "gpufeed/tune/printed_metric.hpp"

#include <exception>

namespace gpufeed::tune {

bool has_figure(std::string::const_iterator begin, std::string::const_iterator end, const std::regex& metric) {
  for (std::sregex_iterator it(begin, end, metric), last; it != last; ++it) {
    try {
      if (std::stod((*it)[1].str()) > 0) return true;
    } catch (const std::exception&) {
    }
  }
  return false;
}

PrintedFigure last_figure(const std::string& output, const std::regex& metric) {
  PrintedFigure out;
  for (std::sregex_iterator it(output.begin(), output.end(), metric), end; it != end; ++it) {
    try {
      out.last = std::stod((*it)[1].str());
      out.moved = out.moved || *out.last > 0;
    } catch (const std::exception&) {
    }
  }
  return out;
}

}  // namespace gpufeed::tune
