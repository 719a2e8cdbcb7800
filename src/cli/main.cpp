#include <string>
#include <vector>

#include "app.hpp"

int main(int argc, char** argv) {
  auto io = gpufeed::cli::process_io();
  return gpufeed::cli::run(std::vector<std::string>(argv + 1, argv + argc), io);
}
