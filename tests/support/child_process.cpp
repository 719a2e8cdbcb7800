#include "support/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <thread>

namespace gpufeed::testing {
namespace {

int code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

std::string run_capture(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  if (!pipe) return out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  return out;
}

}  // namespace

bool sleeping_in_a_step(pid_t pid) {
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/syscall").c_str(), "r");
  if (!f) return false;
  long nr = -1;
  const bool read = std::fscanf(f, "%ld", &nr) == 1;
  std::fclose(f);
#ifdef SYS_nanosleep
  if (read && nr == SYS_nanosleep) return true;
#endif
  return read && nr == SYS_clock_nanosleep;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::filesystem::path& output) {
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int fd = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !status_) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

bool ChildProcess::running() {
  if (status_) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    status_ = code_of(status);
    return false;
  }
  return true;
}

void ChildProcess::signal(int sig) const {
  if (!status_) kill(pid_, sig);
}

std::optional<int> ChildProcess::wait(double timeout_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (running()) {
    if (std::chrono::steady_clock::now() > end) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status_;
}

std::vector<std::string> loaded_bpf_programs(const std::string& prefix, double settle_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(settle_s);
  for (;;) {
    std::vector<std::string> names;
    const std::string out = run_capture("bpftool prog list 2>/dev/null");
    size_t pos = 0;
    while ((pos = out.find(" name ", pos)) != std::string::npos) {
      pos += 6;
      const std::string name = out.substr(pos, out.find_first_of(" \n", pos) - pos);
      if (name.rfind(prefix, 0) == 0) names.push_back(name);
    }
    if (names.empty() || std::chrono::steady_clock::now() > end) return names;
    // Programs of an exited process are freed after an RCU grace period.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::optional<std::string> ebpf_unavailable_reason() {
  if (geteuid() != 0) return "needs root for eBPF (run the tests as root)";
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) return "the kernel has no BTF (/sys/kernel/btf/vmlinux)";
  if (run_capture("command -v bpftool || ls /usr/sbin/bpftool 2>/dev/null").empty()) return "bpftool is not installed";
  return std::nullopt;
}

std::string demo_job_command(int seconds) {
  return "/usr/bin/python3 " + std::string(GPUFEED_SOURCE_DIR) + "/scripts/demo_job.py " + std::to_string(seconds);
}

std::optional<std::string> torch_unavailable_reason() {
  if (access("/usr/bin/python3", X_OK) != 0) return "no /usr/bin/python3";
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    return "Debian's python3-torch is not installed for /usr/bin/python3";
  }
  return std::nullopt;
}

const TempDir* shared_jpeg_dataset() {
  static const std::unique_ptr<TempDir> dataset = [] {
    auto dir = std::make_unique<TempDir>();
    const std::string cmd = "/usr/bin/python3 " + std::string(GPUFEED_SOURCE_DIR) +
                            "/tests/fixtures/make_dataset.py " + dir->path().string() +
                            " --files 240 --classes 4 --size-kb 50 --seed 7 >/dev/null";
    return std::system(cmd.c_str()) == 0 ? std::move(dir) : nullptr;
  }();
  return dataset.get();
}

}  // namespace gpufeed::testing
