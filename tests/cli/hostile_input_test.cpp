// Every command's numeric, choice and path options fed a table of hostile
// values (nan, inf, -0, 1e308, empty, a device, a FIFO, a directory, a
// dangling link, bytes that are not UTF-8), through the real binary: each
// must be a usage error (exit 2) with one line on stderr and nothing on
// stdout, change no file, and end at once. The options are given as
// --name=VALUE so that "-inf" or "" reaches the parser as the value.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>

#include "gpufeed/document.hpp"
#include "gpufeed/gpu/trace.hpp"
#include "support/cli_runner.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {

namespace fs = std::filesystem;
using testing::run_binary_argv;
using testing::TempDir;

// What a directory holds: each entry's type and content (a link's target).
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const auto rel = fs::relative(it->path(), root).string();
    const auto status = it->symlink_status();
    std::string what = std::to_string(static_cast<int>(status.type()));
    if (fs::is_symlink(status)) what += " -> " + fs::read_symlink(it->path()).string();
    else if (fs::is_regular_file(status)) what += " " + testing::read_file(it->path());
    out[rel] = what;
  }
  return out;
}

// The place every run happens: files an option may name, and files a
// wrongly accepted value could change.
class Arena {
 public:
  Arena() {
    dir_.write("victim.json", "precious");
    dir_.write("keep.json", "old output");
    fs::create_directory(dir_ / "sub");
    fs::create_symlink(dir_ / "victim.json", dir_ / "link-to-victim.json");
    fs::create_symlink(dir_ / "nowhere", dir_ / "dangling");
    mkfifo((dir_ / "fifo").c_str(), 0600);
    // A socket stays a name in the directory after its descriptor closes.
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", (dir_ / "sock").c_str());
    socket_ok_ = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (fd >= 0) close(fd);
    if (geteuid() == 0) block_ok_ = mknod((dir_ / "block").c_str(), S_IFBLK | 0600, makedev(7, 250)) == 0;
    // A GPU trace and a config that are valid, for the commands that need one.
    GpuTrace trace;
    trace.backend = "nvml";
    trace.sample_hz = 10;
    dir_.write("gpu.trace", write_gpu_trace(trace, HostInfo{}, std::chrono::system_clock::now()));
    const auto made = run_binary_argv({"tune", "--simulate", "--profile", "h100-8", "--profile", "imagenet-resnet50",
                                       "--out", (dir_ / "sim.json").string(), "-q"});
    EXPECT_EQ(made.code, 0) << made.err;
  }
  const fs::path& path() const { return dir_.path(); }
  std::string at(const std::string& name) const { return (dir_ / name).string(); }

  std::vector<std::string> bad_outputs() const {
    std::vector<std::string> v{"", at("sub"), at("dangling"), at("link-to-victim.json"), "--"};
    if (socket_ok_) v.push_back(at("sock"));
    if (block_ok_) v.push_back(at("block"));
    return v;
  }
  std::vector<std::string> bad_inputs() const {
    return {"", at("sub"), at("fifo"), "/dev/zero", at("dangling"), at("missing.json"), at("caf\xff\xfe.json")};
  }

 private:
  TempDir dir_;
  bool socket_ok_ = false;
  bool block_ok_ = false;
};

struct Case {
  std::string command;              // for the report
  std::vector<std::string> before;  // the command and its other arguments
  std::string option;               // "--duration"; "" for a positional argument
  std::vector<std::string> after;   // e.g. "--" and a job
  std::vector<std::string> values;
};

const std::vector<std::string> kBadNumbers = {"nan", "inf", "-inf", "1e308", "-1e308", "", "abc", "\xff\xfe", "1e",
                                              "0x10", "12abc"};
const std::vector<std::string> kBadSizes = {"nanGiB", "inf", "-1k", "1e30GiB", "", "GiB", "\xff", "2 GiB"};
const std::vector<std::string> kBadSteps = {"nan", "inf", "-5", "1e308", "5:nan", "5:inf", "", "x", "\xff"};
const std::vector<std::string> kBadChoices = {"", "\xff", "cuda9", "NONE", " auto"};

std::vector<std::string> numbers(bool zero_is_bad) {
  auto v = kBadNumbers;
  if (zero_is_bad) v.insert(v.end(), {"-0", "0"});
  return v;
}

std::vector<Case> cases(const Arena& a) {
  const std::vector<std::string> diagnose{"diagnose", "--no-ebpf", "--gpu", "none"};
  const std::vector<std::string> job{"--", "/bin/true"};
  const std::vector<std::string> bench{"bench", "--data", "synthetic:memory", "--batches", "2"};
  const std::vector<std::string> bench_timed{"bench", "--data", "synthetic:memory", "--duration", "0.2"};
  const std::vector<std::string> tune{"tune", "--simulate", "--profile", "h100-8", "--profile", "imagenet-resnet50",
                                      "--out", a.at("tune-out.json")};
  const std::vector<std::string> check{"check", "--config", a.at("sim.json")};
  const std::vector<std::string> record{"gpu", "record", "--out", a.at("g.trace")};
  std::vector<Case> c;
  auto add = [&](std::string name, std::vector<std::string> before, std::string option, std::vector<std::string> after,
                 std::vector<std::string> values) {
    c.push_back({std::move(name), std::move(before), std::move(option), std::move(after), std::move(values)});
  };
  for (const auto& [opt, zero_bad] : std::vector<std::pair<std::string, bool>>{
           {"--duration", true}, {"--slow-ms", true}, {"--sample-hz", true}, {"--gpu-hz", true}, {"--samples-per-s", true}}) {
    add("diagnose", diagnose, opt, job, numbers(zero_bad));
  }
  add("diagnose", {"diagnose", "--no-ebpf"}, "--pid", {}, numbers(true));
  for (const auto& [opt, zero_bad] : std::vector<std::pair<std::string, bool>>{
           {"--workers", true}, {"--prefetch", true}, {"--batch-size", true}, {"--io-depth", true}, {"--seed", false},
           {"--rank", false}, {"--cpu-us", false}, {"--image-size", true}, {"--duration", true}, {"--warmup", false},
           {"--s3-connections", true}, {"--concurrency", true}, {"--level-seconds", true}, {"--level-samples", true}}) {
    add("bench", bench, opt, {}, numbers(zero_bad));
  }
  add("bench", bench_timed, "--batches", {}, numbers(true));
  for (const auto& opt : {"--mem-budget", "--sample-bytes", "--cache-mem", "--cache-size"}) add("bench", bench, opt, {}, kBadSizes);
  add("bench", bench, "--step-ms", {}, kBadSteps);
  for (const auto& opt : {"--device", "--decode", "--filter", "--crop"}) add("bench", bench, opt, {}, kBadChoices);
  for (const auto& [opt, zero_bad] : std::vector<std::pair<std::string, bool>>{
           {"--batch-size", true}, {"--gpus", true}, {"--trial-seconds", true}, {"--first-round-seconds", true},
           {"--measure-seconds", true}, {"--budget", true}, {"--tolerance", false}, {"--max-workers", true},
           {"--cpu-us", false}, {"--image-size", true}}) {
    add("tune", tune, opt, {}, numbers(zero_bad));
  }
  add("tune", tune, "--mem-budget", {}, kBadSizes);
  add("tune", tune, "--step-ms", {}, kBadSteps);
  for (const auto& opt : {"--search", "--metric", "--emit", "--device", "--decode", "--filter", "--crop"}) {
    add("tune", tune, opt, {}, kBadChoices);
  }
  add("check", check, "--tolerance", {}, numbers(false));
  add("check", check, "--seconds", {}, numbers(true));
  add("check", check, "--device", {}, kBadChoices);
  add("gpu record", record, "--duration", {}, numbers(true));
  add("gpu record", record, "--hz", {}, numbers(true));
  add("gpu record", record, "--backend", {}, kBadChoices);
  add("diagnose", diagnose, "--fail-on", job, kBadChoices);
  add("diagnose", {"diagnose", "--no-ebpf"}, "--gpu", job, kBadChoices);
  add("probe", {"probe"}, "--gpu", {}, kBadChoices);

  const auto outputs = a.bad_outputs();
  add("probe", {"probe"}, "--json", {}, outputs);
  add("diagnose", diagnose, "--json", job, outputs);
  add("diagnose", diagnose, "--trace", job, outputs);
  add("bench", bench, "--json", {}, outputs);
  add("tune", {"tune", "--simulate", "--profile", "h100-8", "--profile", "imagenet-resnet50"}, "--out", {}, outputs);
  add("check", check, "--json", {}, outputs);
  add("gpu record", {"gpu", "record"}, "--out", {}, outputs);
  add("gpu show", {"gpu", "show", a.at("gpu.trace")}, "--json", {}, outputs);

  const auto inputs = a.bad_inputs();
  add("probe", {"probe"}, "--topology", {}, inputs);
  add("check", {"check"}, "--config", {}, inputs);
  add("tune", tune, "--from", {}, inputs);
  add("tune", tune, "--model", {}, inputs);
  add("bench", bench, "--model", {}, inputs);
  add("diagnose", diagnose, "--gpu-trace", job, inputs);
  add("gpu show", {"gpu", "show"}, "", {}, inputs);
  return c;
}

TEST(HostileInput, EveryOptionRefusesEveryHostileValueAtOnce) {
  if (geteuid() != 0) std::cout << "[ NOTE     ] not root: the block-device value is left out\n";
  Arena arena;
  const auto before = snapshot(arena.path());
  const auto start = std::chrono::steady_clock::now();
  int runs = 0;
  for (const auto& c : cases(arena)) {
    for (const auto& value : c.values) {
      std::vector<std::string> args = c.before;
      // --name=VALUE keeps "-inf" a value; an empty one goes apart, as "--name=" takes the next word.
      if (c.option.empty()) {
        args.push_back(value);
      } else if (value.empty()) {
        args.insert(args.end(), {c.option, value});
      } else {
        args.push_back(c.option + "=" + value);
      }
      args.insert(args.end(), c.after.begin(), c.after.end());
      const std::string label = c.command + " " + (c.option.empty() ? "(argument)" : c.option) + " '" + value + "'";
      const auto r = run_binary_argv(args, {arena.path(), {}, 10});
      ++runs;
      EXPECT_FALSE(r.timed_out) << label << " did not end";
      EXPECT_EQ(r.code, 2) << label << "\n" << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << label << "\n" << r.err;
      EXPECT_EQ(r.err.rfind("gpufeed: error: ", 0), 0U) << label << "\n" << r.err;
      if (!c.option.empty()) EXPECT_NE(r.err.find(c.option), std::string::npos) << label << "\n" << r.err;
      EXPECT_EQ(r.out, "") << label;
      ASSERT_EQ(snapshot(arena.path()), before) << label << " changed a file";
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ NOTE     ] " << runs << " hostile values refused in " << seconds << " s\n";
  EXPECT_LT(seconds, 240) << "the whole run must stay bounded";
  EXPECT_GT(runs, 500);
}

}  // namespace
}  // namespace gpufeed
