// gpufeed monitor against the real kernel and a real Prometheus server: the
// starving PyTorch job on the FUSE fixture, its workers re-forked every
// epoch, scraped each second; clean endings on the job's exit and on
// SIGINT/SIGTERM. Needs root and BTF (and Debian's prometheus for the
// scrape); each test skips with its reason where the machine lacks them.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/ebpf_host.hpp"
#include "support/latencyfs_mount.hpp"
#include "support/python_fixtures.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {

using nlohmann::json;
using testing::ChildProcess;
using testing::kPython;
using testing::TempDir;

const std::string kPrometheus = "/usr/bin/prometheus";
const std::string kPromtool = "/usr/bin/promtool";

// A loop that waits on a pipe for a "batch" its child writes every 50 ms,
// then steps for 20 ms: the waits monitor times as the loop's data waits.
std::vector<std::string> pipe_loop_job() {
  return {kPython, "-c",
          "import os, select, time\nr, w = os.pipe()\nif os.fork() == 0:\n    while True:\n        time.sleep(0.05)\n"
          "        os.write(w, b'x')\np = select.poll()\np.register(r, select.POLLIN)\nwhile True:\n    p.poll()\n"
          "    os.read(r, 1)\n    time.sleep(0.02)\n"};
}

// A port nobody listens on now (the kernel's pick).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

std::optional<std::string> http_get(int port, const std::string& path) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(5, 0);
  auto res = c.Get(path.c_str());
  if (!res || res->status != 200) return std::nullopt;
  return res->body;
}

class Monitor : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::ebpf_unavailable_reason()) GTEST_SKIP() << *why;
    ASSERT_TRUE(testing::loaded_bpf_programs("gf_", 5).empty()) << "gpufeed programs loaded before the test";
  }
  std::unique_ptr<ChildProcess> gpufeed(std::vector<std::string> args, const std::string& log = "gpufeed.out") {
    args.insert(args.begin(), GPUFEED_BINARY);
    return std::make_unique<ChildProcess>(args, dir_ / log);
  }
  std::string output(const std::string& log = "gpufeed.out") { return testing::read_file(dir_ / log); }
  // Waits for monitor's announce line; returns its metrics port (0: none).
  int wait_until_monitoring(const std::string& log = "gpufeed.out") {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < limit) {
      const std::string out = output(log);
      if (out.find("gpufeed: monitoring pid") != std::string::npos) {
        std::smatch m;
        if (std::regex_search(out, m, std::regex("http://127\\.0\\.0\\.1:([0-9]+)/metrics"))) return std::stoi(m[1]);
        return 0;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "monitor never announced itself\n" << output(log);
    return -1;
  }
  void expect_detached() { EXPECT_TRUE(testing::loaded_bpf_programs("gf_", 5).empty()) << "BPF programs left loaded"; }

  TempDir dir_;
};

class MonitorEnding : public Monitor, public ::testing::WithParamInterface<int> {};

TEST_P(MonitorEnding, ASignalDetachesCleanlyAndLeavesTheJobUnharmed) {
  ChildProcess job(testing::stat_loop_job(), dir_ / "job.out");
  auto g = gpufeed({"monitor", "--pid", std::to_string(job.pid()), "--listen", "127.0.0.1:0", "--interval", "0.2"});
  const int port = wait_until_monitoring();
  ASSERT_GT(port, 0);
  // The signal comes once an interval has been published, however slow the machine.
  std::optional<std::string> scrape;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until) {
    scrape = http_get(port, "/metrics");
    if (scrape && scrape->find("gpufeed_loop_data_wait_ratio{") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(scrape) << "no /metrics from the running monitor";
  EXPECT_NE(scrape->find("gpufeed_loop_data_wait_ratio{"), std::string::npos);
  g->signal(GetParam());
  auto code = g->wait(30);
  ASSERT_TRUE(code) << "monitor hung after the signal";
  EXPECT_EQ(*code, 0) << output();
  EXPECT_NE(output().find("monitor stopped (interrupted)"), std::string::npos) << output();
  EXPECT_TRUE(job.running()) << "the watched job was harmed";
  expect_detached();
}

INSTANTIATE_TEST_SUITE_P(Signals, MonitorEnding, ::testing::Values(SIGINT, SIGTERM),
                         [](const ::testing::TestParamInfo<int>& p) { return p.param == SIGINT ? "sigint" : "sigterm"; });

TEST_F(Monitor, ALaunchedCommandThatExitsEndsMonitorWithItsExitCode) {
  auto g = gpufeed({"monitor", "--no-listen", "--jsonl", (dir_ / "m.jsonl").string(), "--interval", "0.1", "--",
                    "/bin/sh", "-c", "sleep 1; exit 3"});
  auto code = g->wait(30);
  ASSERT_TRUE(code) << "monitor did not end with the job";
  EXPECT_EQ(*code, 3) << output();
  EXPECT_NE(output().find("monitor stopped (target exited)"), std::string::npos) << output();
  std::ifstream in(dir_ / "m.jsonl");
  int samples = 0;
  for (std::string line; std::getline(in, line);) samples += json::parse(line)["type"] == "sample";
  EXPECT_GE(samples, 5) << "one record per 0.1 s interval";
  expect_detached();
}

// A job that forks a worker which stats a file for a while (busy: without
// a pause, so its CPU shows), then exits.
std::vector<std::string> forking_job(const std::string& exe, double seconds, bool busy = false) {
  return {exe, "-c",
          "import os, time\npid = os.fork()\nif pid == 0:\n    t = time.time()\n    while time.time() - t < " +
              std::to_string(seconds) + ":\n        os.stat('/etc/hostname')\n" +
              (busy ? "" : "        time.sleep(0.01)\n") + "    os._exit(0)\nos.waitpid(pid, 0)\n"};
}

// Waits until `text` appears `times` times in monitor's output.
bool wait_for_output(const std::function<std::string()>& out, const std::string& text, int times, double seconds) {
  const auto limit = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < limit) {
    const std::string o = out();
    int n = 0;
    for (auto at = o.find(text); at != std::string::npos; at = o.find(text, at + 1)) ++n;
    if (n >= times) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// --comm follows a job that restarts: the same command name (a symlink to
// python named for this test) run twice, one after the other, is followed
// both times as rank 0, and monitor runs on between and after them.
TEST_F(Monitor, CommFollowsAJobThatRestartsAndOutlivesIt) {
  const std::string name = "gfjob" + std::to_string(getpid() % 100000);
  const auto exe = dir_.path() / name;
  std::filesystem::create_symlink(kPython, exe);
  auto g = gpufeed({"monitor", "--comm", name, "--no-listen", "--jsonl", (dir_ / "m.jsonl").string(), "--interval", "0.1"});
  auto out = [this] { return output(); };
  ASSERT_TRUE(wait_for_output(out, "gpufeed: monitoring every process with command name " + name + " (now: none yet)", 1, 30))
      << output();
  for (int run = 1; run <= 2; ++run) {
    ChildProcess job(forking_job(exe.string(), 2.5, true), dir_ / "job.out");
    ASSERT_TRUE(wait_for_output(out, fmt::format("following pid {} as rank 0", job.pid()), 1, 10))
        << "run " << run << " was not found\n" << output();
    auto code = job.wait(30);
    ASSERT_TRUE(code && *code == 0) << "the watched job was harmed";
    ASSERT_TRUE(wait_for_output(out, "rank 0 (pid " + std::to_string(job.pid()) + ") exited", 1, 10)) << output();
  }
  EXPECT_TRUE(g->running()) << "monitor ended with the job in follow mode\n" << output();
  g->signal(SIGINT);
  auto code = g->wait(30);
  ASSERT_TRUE(code) << "monitor hung after the signal";
  EXPECT_EQ(*code, 0) << output();
  expect_detached();
  // The workers were followed too: their CPU (about 2.5 s a run) is in rank 0's total.
  double worker_cpu = 0;
  std::ifstream in(dir_ / "m.jsonl");
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line);
    if (j["type"] != "sample") continue;
    for (const auto& r : j["ranks"]) worker_cpu = std::max(worker_cpu, r.value("worker_cpu_s_total", 0.0));
  }
  EXPECT_GT(worker_cpu, 1.0) << "the forked workers' CPU is missing: were they followed?";
}

// --cgroup (relative to /sys/fs/cgroup) follows the processes of a cgroup,
// and only those: a twin of the job outside it is left alone.
TEST_F(Monitor, CgroupFollowsTheProcessesOfThatCgroupOnly) {
  std::string hierarchy;
  for (const char* h : {"pids", "unified", ""}) {
    const auto base = std::filesystem::path("/sys/fs/cgroup") / h;
    if (std::filesystem::exists(base / "cgroup.procs") && access(base.c_str(), W_OK) == 0) {
      hierarchy = h;
      break;
    }
  }
  if (!std::filesystem::exists("/sys/fs/cgroup/" + hierarchy + "/cgroup.procs")) {
    GTEST_SKIP() << "no writable cgroup hierarchy under /sys/fs/cgroup";
  }
  const std::string rel = (hierarchy.empty() ? "" : hierarchy + "/") + "gpufeed-test-" + std::to_string(getpid());
  const std::filesystem::path cg = "/sys/fs/cgroup/" + rel;
  ASSERT_TRUE(std::filesystem::create_directory(cg)) << cg;
  struct Remove {
    std::filesystem::path p;
    ~Remove() { rmdir(p.c_str()); }
  } remove{cg};
  ChildProcess outside(forking_job(kPython, 20), dir_ / "outside.out");
  auto g = gpufeed({"monitor", "--cgroup", rel, "--no-listen", "--jsonl", (dir_ / "m.jsonl").string(), "--interval", "0.1"});
  auto out = [this] { return output(); };
  ASSERT_TRUE(wait_for_output(out, "gpufeed: monitoring every process with cgroup " + cg.string(), 1, 30)) << output();
  std::vector<std::string> inside_cmd = {"/bin/sh", "-c", "echo $$ > " + (cg / "cgroup.procs").string() + " && exec \"$0\" \"$@\""};
  for (const auto& a : forking_job(kPython, 2.5)) inside_cmd.push_back(a);
  ChildProcess inside(inside_cmd, dir_ / "inside.out");
  ASSERT_TRUE(wait_for_output(out, fmt::format("following pid {} as rank 0", inside.pid()), 1, 10)) << output();
  auto code = inside.wait(30);
  ASSERT_TRUE(code && *code == 0) << testing::read_file(dir_ / "inside.out");
  EXPECT_EQ(output().find(fmt::format("pid {} ", outside.pid())), std::string::npos) << "the twin outside the cgroup was followed\n"
                                                                                     << output();
  EXPECT_TRUE(outside.running());
  g->signal(SIGTERM);
  auto gcode = g->wait(30);
  ASSERT_TRUE(gcode) << "monitor hung after the signal";
  EXPECT_EQ(*gcode, 0) << output();
  expect_detached();
}

// The real NVML sampler, through dlopen() of the fake libnvidia-ml
// (tests/fixtures/fake_nvml), feeds monitor's GPU gauges and energy counter.
TEST_F(Monitor, GpuBusyPowerAndEnergyComeFromTheSampler) {
  const auto script = dir_ / "nvml.script";
  std::ofstream(script) << "init ok\ndevices 1\n"
                           "device 0 name=NVIDIA H200 bus=00000000:41:00.0 mem_total=150000000000 power_mw=250000\n"
                           "busy 0 30 30 70 70 0\n";
  const std::string lib = std::string(GPUFEED_FAKE_NVML_DIR) + "/libnvidia-ml.so.1";
  testing::ScopedEnv nvml("GPUFEED_NVML_LIBRARY", lib.c_str());
  testing::ScopedEnv fake("GPUFEED_FAKE_NVML", script.string().c_str());
  const auto jsonl = dir_ / "m.jsonl";
  ChildProcess job(pipe_loop_job(), dir_ / "job.out");
  auto g = gpufeed({"monitor", "--pid", std::to_string(job.pid()), "--gpu", "nvml", "--no-listen", "--jsonl",
                    jsonl.string(), "--interval", "0.1", "--window", "5", "--duration", "3", "--batch-size", "16"});
  auto code = g->wait(30);
  ASSERT_TRUE(code) << "monitor did not stop after --duration";
  EXPECT_EQ(*code, 0) << output();
  std::ifstream in(jsonl);
  json last;
  for (std::string line; std::getline(in, line);) {
    json rec = json::parse(line);
    if (rec["type"] == "sample") last = rec;
  }
  ASSERT_TRUE(last.contains("gpus")) << "no GPU figures in " << last.dump();
  const json& gpu = last["gpus"][0];
  EXPECT_EQ(gpu["bus_id"], "0000:41:00.0");
  // The script cycles 30, 30, 70, 70, 0: a mean of 40% over whole cycles.
  EXPECT_NEAR(gpu["busy_ratio"].get<double>(), 0.40, 0.05) << gpu.dump();
  // A time-weighted mean of a constant 250 W: equal up to the rounding of
  // the integral, which can exceed DOUBLE_EQ's 4 ulps.
  EXPECT_NEAR(gpu["power_w"].get<double>(), 250, 1e-9) << gpu.dump();
  // 250 W for the ~3 s monitor sampled.
  EXPECT_NEAR(gpu["energy_j_total"].get<double>(), 250 * 3.0, 250 * 0.5) << gpu.dump();
  // Samples per joule: the loop's batches per second x --batch-size over 250 W.
  ASSERT_TRUE(last["batches_per_s"].is_number()) << "the pipe loop's waits were not timed: " << last.dump();
  const double bps = last["batches_per_s"].get<double>();
  EXPECT_NEAR(bps, 1 / 0.05, 4) << "a batch each 50 ms";
  ASSERT_TRUE(last.contains("samples_per_joule")) << last.dump();
  EXPECT_NEAR(last["samples_per_joule"].get<double>(), bps * 16 / 250, 1e-9) << last.dump();
  std::cout << "[ measured ] fake NVML through monitor: busy " << gpu["busy_ratio"] << ", " << gpu["power_w"]
            << " W, " << gpu["energy_j_total"] << " J over 3 s; " << bps << " batches/s of 16 = "
            << last["samples_per_joule"] << " samples/J\n";
  expect_detached();
}

// The incident's job, its workers re-forked every epoch (no persistent
// workers), watched for five epochs and more and scraped by Prometheus each
// second; diagnose traces the same job for a window in the middle.
TEST_F(Monitor, PrometheusScrapesTheStarvingJobAcrossEpochsAndAgreesWithDiagnose) {
  if (auto why = testing::torch_unavailable_reason()) GTEST_SKIP() << *why;
  if (auto why = testing::LatencyFsMount::unavailable_reason()) GTEST_SKIP() << *why;
  if (access(kPrometheus.c_str(), X_OK) != 0 || access(kPromtool.c_str(), X_OK) != 0) {
    GTEST_SKIP() << "Debian's prometheus package is not installed (scripts/setup.sh installs it)";
  }
  const TempDir* dataset = testing::shared_jpeg_dataset();
  ASSERT_NE(dataset, nullptr);
  std::filesystem::create_directory(dir_ / "mnt");
  constexpr double kInjectedStatMs = 20.0;
  testing::LatencyFsOptions opt;
  opt.lookup_ms = kInjectedStatMs;  // a stat of a file costs one lookup
  opt.open_ms = 5;
  opt.read_ms = 2;
  testing::LatencyFsMount mount(dataset->path(), dir_ / "mnt", opt);

  // 240 files in batches of 8 with 2 workers: an epoch of 30 batches takes
  // about 5 s, so 40 s hold at least 5 epochs, each with new workers.
  ChildProcess job({kPython, testing::fixture_script("slow_job.py"), "--data", mount.path().string(), "--workers", "2",
                    "--batch-size", "8", "--step-ms", "20", "--stat", "--duration", "40", "--report-every", "1000"},
                   dir_ / "job.out");
  const int metrics_port = free_port();
  auto monitor = gpufeed({"monitor", "--pid", std::to_string(job.pid()), "--listen",
                          "127.0.0.1:" + std::to_string(metrics_port), "--window", "10", "--jsonl",
                          (dir_ / "m.jsonl").string(), "--job", "incident"});
  ASSERT_EQ(wait_until_monitoring(), metrics_port);

  const int prom_port = free_port();
  {
    std::ofstream cfg(dir_ / "prometheus.yml");
    cfg << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        << "rule_files:\n  - " << GPUFEED_SOURCE_DIR << "/profiles/prometheus/gpufeed-rules.yml\n"
        << "scrape_configs:\n  - job_name: gpufeed\n    honor_labels: true\n    static_configs:\n"
        << "      - targets: ['127.0.0.1:" << metrics_port << "']\n";
  }
  ChildProcess prometheus({kPrometheus, "--config.file=" + (dir_ / "prometheus.yml").string(),
                           "--storage.tsdb.path=" + (dir_ / "tsdb").string(),
                           "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
                          dir_ / "prometheus.out");
  auto query = [&](const std::string& promql) -> std::optional<double> {
    auto body = http_get(prom_port, "/api/v1/query?query=" + httplib::detail::encode_query_param(promql));
    if (!body) return std::nullopt;
    const json r = json::parse(*body);
    if (r["status"] != "success" || r["data"]["result"].empty()) return std::nullopt;
    return std::stod(r["data"]["result"][0]["value"][1].get<std::string>());
  };

  // Diagnose's window: from 14 s to 24 s of the job, monitor's window the
  // same 10 s when diagnose ends.
  std::this_thread::sleep_for(std::chrono::seconds(14));
  auto diagnose = gpufeed({"diagnose", "--pid", std::to_string(job.pid()), "--duration", "10", "--json",
                           (dir_ / "d.json").string(), "--quiet"},
                          "diagnose.out");
  auto dcode = diagnose->wait(60);
  ASSERT_TRUE(dcode && *dcode == 0) << output("diagnose.out");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // one more interval and scrape
  std::ifstream din(dir_ / "d.json");
  const json doc = json::parse(din);
  const double diagnosed = doc["summary"]["data_wait_fraction"].get<double>();
  const auto watched = query("gpufeed_loop_data_wait_ratio{job=\"incident\",rank=\"0\"}");
  ASSERT_TRUE(watched) << "Prometheus has no data-wait ratio\n" << output("prometheus.out");
  std::cout << "[ measured ] data wait: monitor " << *watched << ", diagnose " << diagnosed << "\n";
  EXPECT_NEAR(*watched, diagnosed, 0.05);
  const auto stat_p50 = query("gpufeed_mount_call_p50_seconds{job=\"incident\",call=\"stat\"}");
  ASSERT_TRUE(stat_p50);
  std::cout << "[ measured ] stat p50 on the FUSE mount " << *stat_p50 * 1e3 << " ms for an injected "
            << kInjectedStatMs << " ms\n";
  EXPECT_NEAR(*stat_p50 * 1e3, kInjectedStatMs, kInjectedStatMs * 0.25);
  EXPECT_EQ(query("gpufeed_finding_active{job=\"incident\",finding=\"loop.starved\"}").value_or(0), 1);

  auto scrape = http_get(metrics_port, "/metrics");
  ASSERT_TRUE(scrape);
  std::ofstream(dir_ / "scrape.txt") << *scrape;
  EXPECT_EQ(std::system((kPromtool + " check metrics < " + (dir_ / "scrape.txt").string() + " > " +
                         (dir_ / "promtool.out").string() + " 2>&1").c_str()),
            0)
      << testing::read_file(dir_ / "promtool.out");

  // The job ends by itself: monitor ends too, exit 0, nothing left loaded.
  auto mcode = monitor->wait(60);
  ASSERT_TRUE(mcode) << "monitor did not end with the job";
  EXPECT_EQ(*mcode, 0) << output();
  expect_detached();
  const auto started = query("max_over_time(gpufeed_workers_started_total{job=\"incident\"}[2m])");
  ASSERT_TRUE(started);
  std::cout << "[ measured ] " << *started << " workers started over the job's epochs\n";
  EXPECT_GE(*started, 10) << "5 epochs x 2 workers, each generation followed";
  // The last epochs' workers were traced too: slow stats in the last 5 s.
  std::ifstream in(dir_ / "m.jsonl");
  std::vector<json> samples;
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line);
    if (j["type"] == "sample") samples.push_back(std::move(j));
  }
  ASSERT_GT(samples.size(), 30U);
  const double end = samples.back()["uptime_s"].get<double>();
  int late_with_workers = 0;
  for (const auto& s : samples) {
    if (s["uptime_s"].get<double>() < end - 6) continue;
    late_with_workers += s["ranks"][0]["workers"].get<int>() > 0 && !s["slow_calls"].empty();
  }
  EXPECT_GT(late_with_workers, 0) << "the last generation of workers was not followed";
}

}  // namespace
}  // namespace gpufeed
