#include "gpufeed/setting.hpp"

#include <atomic>

namespace gpufeed {
namespace {

std::atomic<const SettingSpelling*> g_spelling{nullptr};

}  // namespace

std::string field_name(Setting s) {
  switch (s) {
    case Setting::workers: return "num_workers";
    case Setting::prefetch: return "prefetch_factor";
    case Setting::batch_size: return "batch_size";
    case Setting::io_depth: return "io_depth";
    case Setting::mem_budget: return "mem_budget";
    case Setting::data: return "data";
    case Setting::duration: return "duration";
    case Setting::batches: return "batches";
    case Setting::step_ms: return "step_ms";
    case Setting::device: return "device";
    case Setting::skip_bad: return "skip_bad";
    case Setting::ignore_cgroup: return "ignore_cgroup";
    case Setting::profile: return "profile";
    case Setting::max_workers: return "max_workers";
    case Setting::trial_seconds: return "trial_seconds";
  }
  return "setting";
}

std::optional<std::string> flag_for(Setting s) {
  const SettingSpelling* current = g_spelling.load();
  return current ? current->spelling_(s) : std::nullopt;
}

std::string spell(Setting s) { return flag_for(s).value_or(field_name(s)); }

SettingSpelling::SettingSpelling(std::function<std::optional<std::string>(Setting)> spelling)
    : spelling_(std::move(spelling)), outer_(g_spelling.load()) {
  g_spelling.store(this);
}

SettingSpelling::~SettingSpelling() { g_spelling.store(outer_); }

}  // namespace gpufeed
