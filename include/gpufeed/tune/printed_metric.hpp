#pragma once
// A job's throughput as it prints it: the matches of --metric-regex (group 1)
// in its output. tune --exec reads a trial's figure this way.
#include <optional>
#include <regex>
#include <string>

namespace gpufeed::tune {

// Whether [begin, end) holds a match whose figure is above 0: a job that
// reports before its first batch prints 0, and is still starting.
bool has_figure(std::string::const_iterator begin, std::string::const_iterator end, const std::regex& metric);

// The last figure the job printed for the metric, and whether any was above 0.
struct PrintedFigure {
  std::optional<double> last;
  bool moved = false;
};
PrintedFigure last_figure(const std::string& output, const std::regex& metric);

}  // namespace gpufeed::tune
