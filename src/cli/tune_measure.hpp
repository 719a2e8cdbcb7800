#pragma once
// Phase 2 of `gpufeed tune`: measure what the model needs on this machine:
// the store's read latency at rising concurrency, the per-sample CPU cost,
// the step time and the pin-memory copy bandwidth.
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "gpufeed/app/tune_session.hpp"
#include "gpufeed/loader/sample_source.hpp"
#include "gpufeed/loader/step.hpp"
#include "gpufeed/loader/storage_table.hpp"
#include "gpufeed/loader/transform.hpp"
#include "gpufeed/tune/dataloader_model.hpp"

namespace gpufeed::cli {

using app::Measured;
using app::MeasureRequest;

Measured measure_for_tune(const MeasureRequest& r);

}  // namespace gpufeed::cli
