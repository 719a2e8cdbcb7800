#pragma once
// `gpufeed tune` as one call: the request resolved and checked, then the
// session (app/tune_session.hpp). cmd_tune.cpp turns options into a TuneRequest.
#include <string>
#include <vector>

#include "app.hpp"
#include "bench_setup.hpp"
#include "context.hpp"
#include "gpufeed/app/tune_session.hpp"
#include "gpufeed/tune/config.hpp"

namespace gpufeed::cli {

using app::TuneRequest;

// Runs the whole tune and writes the config; returns the exit code.
int run_tune(const TuneRequest& request, Context& ctx);

}  // namespace gpufeed::cli
