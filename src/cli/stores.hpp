#pragma once
// The stores `--data` can name, in one list: each kind says which specs are
// its own, registers its option group once (bench, tune and check all get
// it from here) and opens a source. A new store is one entry in
// store_kinds() (stores.cpp) plus its adapter library.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "app.hpp"
#include "gpufeed/app/loader_options.hpp"
#include "gpufeed/loader/sample_source.hpp"

namespace gpufeed::cli {

struct StoreKind {
  std::string name;  // "s3": the option group's name in --help
  std::string spec;  // how --data names it, for help and errors: "s3://bucket/prefix"
  std::string options;  // its options, for errors: "--s3-*"
  bool (*matches)(const std::string& data);
  // Registers the kind's own options (nullptr: it has none).
  void (*add_options)(CLI::App& cmd, app::DataOptions& data);
  // Whether any of those options was given (they apply to this kind's data only).
  bool (*options_given)(const app::DataOptions& data);
  std::unique_ptr<loader::SampleSource> (*open)(const app::DataOptions& data, const Io& io);
};

// Every kind, most specific first; the last (local files) matches any path.
const std::vector<StoreKind>& store_kinds();
const StoreKind& store_kind_of(const std::string& data);

// "a directory, a manifest file (one path per line), s3://bucket/prefix or synthetic:PRESET"
std::string data_specs();

// Every store kind's option group, and with `caches` the cache tiers' group.
void add_store_options(CLI::App& cmd, app::DataOptions& data, bool caches);

}  // namespace gpufeed::cli
