#pragma once
// The settings a core message can name ("lower the batch size ..."). The
// core names the setting; how a user spells it belongs to the front end:
// the CLI spells each one as the running command's flag (`--batch-size`)
// where that command has it, and otherwise, or with no front end, it reads
// as its config field (`batch_size`).
#include <functional>
#include <optional>
#include <string>

namespace gpufeed {

enum class Setting {
  workers,
  prefetch,
  batch_size,
  io_depth,
  mem_budget,
  data,
  duration,
  batches,
  step_ms,
  device,
  skip_bad,
  ignore_cgroup,
  profile,
  max_workers,
  trial_seconds,
};

// The config field's name: "num_workers", "prefetch_factor", "batch_size" ...
std::string field_name(Setting s);

// How the user spells `s` now: the installed spelling's, else field_name.
std::string spell(Setting s);
// The installed spelling's alone: nullopt where the front end has none (a
// command without that flag), for a hint that only makes sense as a flag.
std::optional<std::string> flag_for(Setting s);

// While alive, spell() uses `spelling` (process-wide: a command's trials on
// other threads name settings as its flags too); nullopt falls back to the
// field name. Nested scopes restore the outer one.
class SettingSpelling {
 public:
  explicit SettingSpelling(std::function<std::optional<std::string>(Setting)> spelling);
  ~SettingSpelling();
  SettingSpelling(const SettingSpelling&) = delete;
  SettingSpelling& operator=(const SettingSpelling&) = delete;

 private:
  std::function<std::optional<std::string>(Setting)> spelling_;
  const SettingSpelling* outer_;
  friend std::optional<std::string> flag_for(Setting s);
};

}  // namespace gpufeed
