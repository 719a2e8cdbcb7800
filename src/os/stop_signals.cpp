#include "gpufeed/os/stop_signals.hpp"

#include <csignal>

namespace gpufeed::os {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
std::atomic<int> g_depth{0};  // StopOnSignal scopes alive
struct sigaction g_old_int {};
struct sigaction g_old_term {};

void on_stop(int sig) {
  g_signal.store(sig);
  g_stop.store(true);
}

}  // namespace

StopOnSignal::StopOnSignal() {
  if (g_depth.fetch_add(1) > 0) return;  // the outer scope's handlers and flag hold
  g_stop.store(false);
  g_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

StopOnSignal::~StopOnSignal() {
  if (g_depth.fetch_sub(1) > 1) return;
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

const std::atomic<bool>& StopOnSignal::flag() const { return g_stop; }

int StopOnSignal::last_signal() const { return g_signal.load(); }

bool stop_requested() { return g_depth.load() > 0 && g_stop.load(); }

}  // namespace gpufeed::os
