// The interpreter and fixture scripts that root tests run as traced jobs.
// Debian's python3 is the one scripts/setup.sh gives torch to, so tests name it
// by path rather than trusting PATH.
#pragma once

#include <string>

namespace gpufeed::testing {

inline const std::string kPython = "/usr/bin/python3";

inline std::string fixture_script(const std::string& name) {
  return std::string(GPUFEED_SOURCE_DIR) + "/tests/fixtures/" + name;
}

}  // namespace gpufeed::testing
