#pragma once
#include <cstdint>
#include <string>

namespace gpufeed {

// Binary units, one decimal where it matters: "512 GiB", "1.5 GiB", "812 KiB".
std::string format_bytes(std::uint64_t bytes);

}  // namespace gpufeed
