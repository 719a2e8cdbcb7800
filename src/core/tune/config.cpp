// gpufeed.config/v1: to and from JSON, and the Python snippet (config.hpp).
#include "gpufeed/tune/config.hpp"

#include <cmath>

#include <fmt/format.h>

#include "gpufeed/error.hpp"

namespace gpufeed::tune {
namespace {

Json trial_json(const Trial& t) {
  return {{"num_workers", t.candidate.workers}, {"prefetch_factor", t.candidate.prefetch_factor},
          {"pin_memory", t.candidate.pin_memory}, {"samples_per_s", t.samples_per_s},
          {"starvation", t.starvation},           {"seconds", t.seconds},
          {"round", t.round},                     {"ok", t.ok},
          {"note", t.note},                       {"model_samples_per_s", t.model_samples_per_s},
          {"transform_ms", t.transform_samples ? Json(t.transform_ms) : Json(nullptr)},
          {"transform_samples", t.transform_samples},
          {"loop_cpu_ms", t.transform_samples && t.loop_cpu_ms > 0 ? Json(t.loop_cpu_ms) : Json(nullptr)},
          {"too_short", t.too_short},
          {"steady_steps", t.steady_steps},
          {"capped", t.capped}};
}

template <typename T>
T get(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw usage_error(fmt::format("{}: \"{}\" is missing", where, key), "write the config with gpufeed tune");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw usage_error(fmt::format("{}: \"{}\" has the wrong type", where, key), "write the config with gpufeed tune");
  }
}

// A section the config must have: an object under `key`.
const Json& section(const Json& doc, const char* key, const std::string& source) {
  if (!doc.contains(key)) throw usage_error(fmt::format("{}: \"{}\" is missing", source, key), "write the config with gpufeed tune");
  const Json& j = doc.at(key);
  if (!j.is_object()) throw usage_error(fmt::format("{}: \"{}\" is not an object", source, key), "write the config with gpufeed tune");
  return j;
}

// A number read from a config is finite and in its range, or the field is named.
template <typename T>
void check_range(T value, double lo, double hi, const char* field, const std::string& source) {
  const double v = static_cast<double>(value);
  if (std::isfinite(v) && v >= lo && v <= hi) return;
  throw usage_error(fmt::format("{}: {} is {}, outside {:g} to {:g}", source, field, value, lo, hi),
                    "write the config with gpufeed tune");
}

template <typename T>
T get_or(const Json& j, const char* key, T fallback) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    return fallback;
  }
}

}  // namespace

Json to_json(const TunedConfig& c) {
  Json ranks = Json::array();
  for (const auto& r : c.ranks) {
    ranks.push_back({{"rank", r.rank},
                     {"gpu", r.gpu.empty() ? Json(nullptr) : Json(r.gpu)},
                     {"numa_node", r.numa_node ? Json(*r.numa_node) : Json(nullptr)},
                     {"worker_cpus", r.worker_cpus}});
  }
  Json env = Json::array();
  for (const auto& e : c.environment) env.push_back({{"name", e.name}, {"value", e.value}, {"because", e.because}});
  Json cache = Json::array();
  for (const auto& a : c.cache) {
    cache.push_back({{"tier", a.tier}, {"bytes", a.bytes}, {"samples", a.samples},
                     {"share_of_dataset", a.share_of_dataset}, {"predicted_gain", a.predicted_gain},
                     {"because", a.because}});
  }
  Json trials = Json::array();
  for (const auto& t : c.trials) trials.push_back(trial_json(t));
  const auto& w = c.workload;
  return {
      {"dataloader",
       {{"num_workers", c.chosen.workers},
        {"prefetch_factor", c.chosen.prefetch_factor},
        {"persistent_workers", c.persistent_workers},
        {"pin_memory", c.chosen.pin_memory},
        {"batch_size", c.batch_size},
        {"drop_last", c.drop_last}}},
      {"ranks", ranks},
      {"environment", env},
      {"cache", cache},
      {"prediction",
       {{"samples_per_s", c.prediction.samples_per_s},
        {"interval", c.prediction.interval_given ? Json::array({c.prediction.low, c.prediction.high}) : Json(nullptr)},
        {"node_samples_per_s", c.prediction.node_samples_per_s},
        {"starvation", c.prediction.starvation},
        {"model_samples_per_s", c.prediction.model_samples_per_s},
        {"model_raw_samples_per_s", c.prediction.model_raw_samples_per_s},
        {"interval_because", c.prediction.interval_because},
        {"calibration",
         {{"sample_factor", c.prediction.sample_factor},
          {"step_factor", c.prediction.step_factor},
          {"trials", c.prediction.calibration_trials}}}}},
      {"search",
       {{"mode", c.search},
        {"wall_s", c.search_wall_s},
        {"grid_equivalent_s", c.grid_equivalent_s},
        {"space_workers_max", c.space_workers_max},
        {"worker_cap", c.worker_cap},
        {"worker_cap_because", c.worker_cap_because},
        {"limited_by_cap", c.limited_by_cap},
        {"reason", c.reason},
        {"partial", c.partial},
        {"trials", trials}}},
      {"memory", {{"pinned_bytes_per_rank", c.pinned_bytes_per_rank}}},
      {"workload",
       {{"target", w.target},
        {"data", w.data},
        {"exec", w.exec.empty() ? Json(nullptr) : Json(w.exec)},
        {"metric_regex", w.metric_regex.empty() ? Json(nullptr) : Json(w.metric_regex)},
        {"metric", w.metric.empty() ? Json(nullptr) : Json(w.metric)},
        {"data_wait_step_ms", w.data_wait_step_ms > 0 ? Json(w.data_wait_step_ms) : Json(nullptr)},
        {"step", w.step},
        {"step_ms", w.step_ms},
        {"step_cpu_ms", w.step_cpu_ms},
        {"stats_per_sample", w.stats_per_sample},
        {"extra_opens_per_sample", w.extra_opens_per_sample},
        {"decode", w.decode},
        {"full_decode", w.full_decode},
        {"filter", w.filter},
        {"crop", w.crop},
        {"cpu_us", w.cpu_us},
        {"cpu_scale", w.cpu_scale},
        {"image_size", w.image_size},
        {"sample_bytes", w.sample_bytes},
        {"ranks", w.ranks}}},
      {"machine",
       {{"hostname", c.machine.hostname},
        {"cpu_model", c.machine.cpu_model},
        {"cpus", c.machine.cpus},
        {"memory_bytes", c.machine.memory_bytes},
        {"gpus", c.machine.gpus},
        {"kernel", c.machine.kernel}}},
  };
}

TunedConfig parse_config(const Json& doc, const std::string& source);

TunedConfig config_from_json(const Json& doc, const std::string& source) {
  try {
    return parse_config(doc, source);
  } catch (const nlohmann::json::exception&) {
    throw usage_error(fmt::format("{} is not a valid gpufeed config: a field has the wrong type", source),
                      "write the config with gpufeed tune");
  }
}

TunedConfig parse_config(const Json& doc, const std::string& source) {
  if (!doc.is_object()) throw usage_error(fmt::format("{} is not a gpufeed config (not a JSON object)", source));
  const std::string schema = get_or<std::string>(doc, "schema", "");
  if (schema != "gpufeed.config/v1") {
    throw usage_error(fmt::format("{} has schema \"{}\", not gpufeed.config/v1", source, schema),
                      "this gpufeed reads gpufeed.config/v1: write the config again with this version's gpufeed tune");
  }
  TunedConfig c;
  const Json& dl = section(doc, "dataloader", source);
  c.chosen.workers = get<int>(dl, "num_workers", source);
  c.chosen.prefetch_factor = get<int>(dl, "prefetch_factor", source);
  c.chosen.pin_memory = get<bool>(dl, "pin_memory", source);
  c.batch_size = get<int>(dl, "batch_size", source);
  c.drop_last = get_or<bool>(dl, "drop_last", true);
  c.persistent_workers = get_or<bool>(dl, "persistent_workers", true);
  check_range(c.chosen.workers, 0, 4096, "dataloader.num_workers", source);
  check_range(c.chosen.prefetch_factor, 1, 65536, "dataloader.prefetch_factor", source);
  check_range(c.batch_size, 1, 1048576, "dataloader.batch_size", source);
  for (const auto& r : doc.value("ranks", Json::array())) {
    RankBinding b;
    b.rank = get_or<int>(r, "rank", 0);
    b.gpu = get_or<std::string>(r, "gpu", "");
    if (r.contains("numa_node") && r["numa_node"].is_number_integer()) b.numa_node = r["numa_node"].get<int>();
    b.worker_cpus = get_or<std::string>(r, "worker_cpus", "");
    c.ranks.push_back(b);
  }
  for (const auto& e : doc.value("environment", Json::array())) {
    c.environment.push_back({get_or<std::string>(e, "name", ""), get_or<std::string>(e, "value", ""),
                             get_or<std::string>(e, "because", "")});
  }
  for (const auto& a : doc.value("cache", Json::array())) {
    c.cache.push_back({get_or<std::string>(a, "tier", ""), get_or<std::uint64_t>(a, "bytes", 0),
                       get_or<std::uint64_t>(a, "samples", 0), get_or<double>(a, "share_of_dataset", 0),
                       get_or<double>(a, "predicted_gain", 0), get_or<std::string>(a, "because", "")});
  }
  const Json& p = section(doc, "prediction", source);
  c.prediction.samples_per_s = get<double>(p, "samples_per_s", source);
  check_range(c.prediction.samples_per_s, 0, 1e12, "prediction.samples_per_s", source);
  if (p.contains("interval") && p["interval"].is_array() && p["interval"].size() == 2) {
    c.prediction.low = p["interval"][0].get<double>();
    c.prediction.high = p["interval"][1].get<double>();
  } else {
    c.prediction.interval_given = false;
  }
  c.prediction.node_samples_per_s = get_or<double>(p, "node_samples_per_s", 0);
  c.prediction.starvation = get_or<double>(p, "starvation", 0);
  c.prediction.model_samples_per_s = get_or<double>(p, "model_samples_per_s", 0);
  c.prediction.model_raw_samples_per_s = get_or<double>(p, "model_raw_samples_per_s", 0);
  c.prediction.interval_because = get_or<std::string>(p, "interval_because", "");
  const Json cal = p.value("calibration", Json::object());
  c.prediction.sample_factor = get_or<double>(cal, "sample_factor", 1);
  c.prediction.step_factor = get_or<double>(cal, "step_factor", 1);
  c.prediction.calibration_trials = get_or<int>(cal, "trials", 0);
  const Json search = doc.value("search", Json::object());
  c.search = get_or<std::string>(search, "mode", "model");
  c.search_wall_s = get_or<double>(search, "wall_s", 0);
  c.grid_equivalent_s = get_or<double>(search, "grid_equivalent_s", 0);
  c.space_workers_max = get_or<int>(search, "space_workers_max", 0);
  c.worker_cap = get_or<int>(search, "worker_cap", 0);
  c.worker_cap_because = get_or<std::string>(search, "worker_cap_because", "");
  c.limited_by_cap = get_or<bool>(search, "limited_by_cap", false);
  c.reason = get_or<std::string>(search, "reason", "");
  c.partial = get_or<bool>(search, "partial", false);
  for (const auto& t : search.value("trials", Json::array())) {
    Trial trial;
    trial.candidate = {get_or<int>(t, "num_workers", 0), get_or<int>(t, "prefetch_factor", 1),
                       get_or<bool>(t, "pin_memory", true)};
    trial.samples_per_s = get_or<double>(t, "samples_per_s", 0);
    trial.starvation = get_or<double>(t, "starvation", 0);
    trial.seconds = get_or<double>(t, "seconds", 0);
    trial.round = get_or<int>(t, "round", 1);
    trial.ok = get_or<bool>(t, "ok", true);
    trial.note = get_or<std::string>(t, "note", "");
    trial.model_samples_per_s = get_or<double>(t, "model_samples_per_s", 0);
    trial.transform_ms = get_or<double>(t, "transform_ms", 0);
    trial.transform_samples = get_or<std::uint64_t>(t, "transform_samples", 0);
    trial.loop_cpu_ms = get_or<double>(t, "loop_cpu_ms", 0);
    trial.too_short = get_or<bool>(t, "too_short", false);
    trial.steady_steps = get_or<int>(t, "steady_steps", 0);
    trial.capped = get_or<bool>(t, "capped", false);
    c.trials.push_back(trial);
  }
  c.pinned_bytes_per_rank = get_or<std::uint64_t>(doc.value("memory", Json::object()), "pinned_bytes_per_rank", 0);
  const Json w = doc.value("workload", Json::object());
  c.workload.target = get_or<std::string>(w, "target", "loader");
  c.workload.data = get_or<std::string>(w, "data", "");
  c.workload.exec = get_or<std::string>(w, "exec", "");
  c.workload.metric_regex = get_or<std::string>(w, "metric_regex", "");
  c.workload.metric = get_or<std::string>(w, "metric", "");
  c.workload.data_wait_step_ms = w.contains("data_wait_step_ms") && w["data_wait_step_ms"].is_number()
                                     ? w["data_wait_step_ms"].get<double>()
                                     : 0.0;
  c.workload.step = get_or<std::string>(w, "step", "");
  c.workload.step_ms = get_or<std::string>(w, "step_ms", "0");
  c.workload.step_cpu_ms = get_or<double>(w, "step_cpu_ms", 0);
  c.workload.stats_per_sample = get_or<int>(w, "stats_per_sample", 0);
  c.workload.extra_opens_per_sample = get_or<int>(w, "extra_opens_per_sample", 0);
  c.workload.decode = get_or<std::string>(w, "decode", "none");
  c.workload.full_decode = get_or<bool>(w, "full_decode", false);
  c.workload.filter = get_or<std::string>(w, "filter", "fast");
  c.workload.crop = get_or<std::string>(w, "crop", "center");
  c.workload.cpu_us = get_or<double>(w, "cpu_us", 0);
  c.workload.cpu_scale = get_or<double>(w, "cpu_scale", 1);
  if (!(c.workload.cpu_scale >= 1 && c.workload.cpu_scale <= 100)) {
    throw usage_error(fmt::format("{}: workload.cpu_scale {} is out of range (1-100)", source, c.workload.cpu_scale),
                      "write the config with gpufeed tune");
  }
  c.workload.image_size = get_or<int>(w, "image_size", 224);
  c.workload.sample_bytes = get_or<std::uint64_t>(w, "sample_bytes", 0);
  c.workload.ranks = get_or<int>(w, "ranks", 1);
  check_range(c.workload.ranks, 1, 1024, "workload.ranks", source);
  check_range(c.workload.cpu_us, 0, 1e7, "workload.cpu_us", source);
  check_range(c.workload.step_cpu_ms, 0, 3.6e6, "workload.step_cpu_ms", source);
  check_range(c.workload.stats_per_sample, 0, 16, "workload.stats_per_sample", source);
  check_range(c.workload.extra_opens_per_sample, 0, 16, "workload.extra_opens_per_sample", source);
  check_range(c.workload.image_size, 1, 16384, "workload.image_size", source);
  const Json m = doc.value("machine", Json::object());
  c.machine.hostname = get_or<std::string>(m, "hostname", "");
  c.machine.cpu_model = get_or<std::string>(m, "cpu_model", "");
  c.machine.cpus = get_or<int>(m, "cpus", 0);
  c.machine.memory_bytes = get_or<std::uint64_t>(m, "memory_bytes", 0);
  c.machine.gpus = get_or<std::vector<std::string>>(m, "gpus", {});
  c.machine.kernel = get_or<std::string>(m, "kernel", "");
  return c;
}

std::string emit_python(const TunedConfig& c) {
  std::string cpus = "{";
  for (std::size_t i = 0; i < c.ranks.size(); ++i) {
    cpus += fmt::format("{}{}: \"{}\"", i ? ", " : "", c.ranks[i].rank, c.ranks[i].worker_cpus);
  }
  cpus += "}";
  std::string env;
  for (const auto& e : c.environment) env += fmt::format("os.environ.setdefault(\"{}\", \"{}\")  # {}\n", e.name, e.value, e.because);
  return fmt::format(
      R"(# DataLoader settings chosen by gpufeed tune ({search} search): {reason}
# Predicted {pred:.0f} samples/s per rank ({interval}).
import os
{env}
DATALOADER_KWARGS = dict(
    num_workers={w},
    prefetch_factor={p},
    persistent_workers={persist},
    pin_memory={pin},
    batch_size={b},
    drop_last={drop},
)

# Each rank's workers run on that rank's NUMA-local cores.
WORKER_CPUS = {cpus}


def _cpulist(text):
    cpus = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def worker_init_fn(worker_id, rank=int(os.environ.get("LOCAL_RANK", "0"))):
    cpus = WORKER_CPUS.get(rank)
    if cpus:
        os.sched_setaffinity(0, _cpulist(cpus))

# loader = torch.utils.data.DataLoader(dataset, worker_init_fn=worker_init_fn, **DATALOADER_KWARGS)
)",
      fmt::arg("search", c.search), fmt::arg("reason", c.reason), fmt::arg("pred", c.prediction.samples_per_s),
      fmt::arg("interval", c.prediction.interval_given
                               ? fmt::format("interval {:.0f}-{:.0f}", c.prediction.low, c.prediction.high)
                               : "no interval: " + c.prediction.interval_because),
      fmt::arg("env", env),
      fmt::arg("w", c.chosen.workers), fmt::arg("p", c.chosen.prefetch_factor),
      fmt::arg("persist", c.persistent_workers ? "True" : "False"), fmt::arg("pin", c.chosen.pin_memory ? "True" : "False"),
      fmt::arg("b", c.batch_size), fmt::arg("drop", c.drop_last ? "True" : "False"), fmt::arg("cpus", cpus));
}

}  // namespace gpufeed::tune
