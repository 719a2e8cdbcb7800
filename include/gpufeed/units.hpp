#pragma once
#include <cstdint>
#include <string>

namespace gpufeed {

// Binary units, one decimal where it matters: "512 GiB", "1.5 GiB", "812 KiB".
std::string format_bytes(std::uint64_t bytes);

// Parses sizes such as "50KiB", "1.5GiB", "110k", "4096" (bytes); a usage
// error naming `option` otherwise.
std::uint64_t parse_size(const std::string& text, const std::string& option);

}  // namespace gpufeed
