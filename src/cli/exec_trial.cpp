// The user's job as tune's (and check's) trial target: run once per trial
// in its own process group, its figure read from its output or, with
// --metric data-wait, from a trace of its training loop.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "gpufeed/os/process_group.hpp"
#include "gpufeed/stats.hpp"
#include "gpufeed/trace/job_wait_trace.hpp"
#include "gpufeed/tune/job_cpu.hpp"
#include "gpufeed/tune/printed_metric.hpp"
#include "gpufeed/tune/wait_metric.hpp"
#include "exec_job.hpp"
#include "tune_trials.hpp"

namespace gpufeed::cli {

using Clock = std::chrono::steady_clock;
using tune::has_figure;
using tune::last_figure;
using tune::PrintedFigure;

// Past its first figure a trial runs until the figures cover the length's
// steady steps at the job's own rate (and two of its reporting intervals),
// for at most the length's cap. A job that ends by itself ends its trial.
tune::Trial ExecTrialRunner::run(const tune::Candidate& c, const tune::TrialLength& length) {
  tune::Trial trial;
  trial.candidate = c;
  // A job that runs {steps} batches and reports at its end is asked for
  // what fits the round's cap (job_pacing.hpp), its warm-up cut first.
  const bool asks_steps = setup_.command.find("{steps}") != std::string::npos;
  const std::uint64_t all_steps = warmup_batches(c) + static_cast<std::uint64_t>(std::max(1, length.steps));
  const double model_rate = asks_steps && setup_.model_rate ? setup_.model_rate(c) : 0.0;
  const double sized_by = pacing_.sizing_rate(model_rate);
  const bool by_model = sized_by > 0 && sized_by == model_rate && !pacing_.figures_seen;
  const std::uint64_t steps =
      asks_steps ? pacing_.batches_to_ask(warmup_batches(c), static_cast<std::uint64_t>(std::max(1, c.workers)),
                                          length.steps, setup_.batch_size, length.max_seconds, model_rate)
                 : all_steps;
  const std::string command = expand_command(setup_.command, c, setup_.batch_size, steps);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw runtime_error("cannot create a pipe for --exec");
  const auto start = Clock::now();
  pid_t pid = -1;
  try {
    // Its own group: the job and its workers are stopped together.
    os::Launched job({"/bin/sh", "-c", command}, os::LaunchOptions{true, false, fds[1], fds[1]});
    pid = job.pid();
  } catch (...) {
    close(fds[0]);
    close(fds[1]);
    throw;
  }
  close(fds[1]);
  // Whatever throws from here on (the tracer, /proc, the output) must not
  // leave the job running in a group of its own, out of Ctrl-C's reach.
  JobGuard guard{pid, fds[0]};
  // --metric data-wait: the tracer loads while the job starts up.
  std::unique_ptr<JobWaitTrace> trace;
  if (setup_.data_wait) trace = std::make_unique<JobWaitTrace>(pid, setup_.ranks);
  std::optional<Evidence> traced;  // the trace's window, taken before the job is stopped
  std::string output;
  bool exited = false;
  bool asked_to_stop = false;
  bool out_of_time = false;  // the trial's time ran out while the job still ran
  int status = 0;
  const double startup_cap = pacing_.startup_cap_s(length.max_seconds, setup_.most_seconds);
  auto deadline = start + std::chrono::duration<double>(startup_cap);
  bool capped = false;  // the steady part was cut at the length's cap
  // The job's CPU by role: a look at its processes when it first prints
  // its metric (past its start-up: imports, spawning workers), and the
  // latest one, each second (a walk of /proc costs a little CPU), until its
  // time is up; JobCpuTrack says which looks count.
  bool metric_seen = false;
  tune::JobCpuTrack cpu;
  Clock::time_point last_figure_at, cpu_looked_at;
  std::vector<double> gaps_s;  // between the job's figures
  auto since_start = [&](Clock::time_point t) { return std::chrono::duration<double>(t - start).count(); };
  auto snapshot = [&] {
    auto procs = snapshot_job(pid);
    cpu_looked_at = Clock::now();
    cpu.look(std::move(procs), since_start(cpu_looked_at));
  };
  // Past the first figure: the steady steps at the job's rate (a traced
  // loop: at its known step), and two reporting intervals, within the cap.
  auto steady_deadline = [&](double rate) {
    double need = 1.0;
    if (rate > 0) need = std::max(need, length.steps * setup_.batch_size / rate);
    if (trace) need = std::max(need, known_step_ms() > 0 ? length.steps * known_step_ms() / 1e3 : length.max_seconds / 2);
    if (!gaps_s.empty()) need = std::max(need, 2 * gaps_s.back());
    else if (pacing_.interval_s > 0) need = std::max(need, 2 * pacing_.interval_s);
    // A job of {steps} batches that may report at its end (not yet seen
    // reporting periodically) gets the cap to end by itself after its
    // figure: a SIGTERM while its workers shut down would read as a job
    // that runs on, and lose what sizes its later trials. A second figure
    // shows a periodic reporter, and the rules above take over.
    else if (asks_steps && (!pacing_.figures_seen || pacing_.ends_by_itself)) need = std::max(need, length.max_seconds);
    capped = need > length.max_seconds;
    return start + std::chrono::duration<double>(cpu.first_t_s() + std::min(need, length.max_seconds));
  };
  auto on_figure = [&](double rate) {
    const auto now = Clock::now();
    if (!metric_seen) {
      metric_seen = true;
      snapshot();
      cpu.first_figure();
      const double in = since_start(now);
      if (in > length.max_seconds) {
        trial.note = fmt::format("ran on to its first figure, {:.1f} s in, past the round's {:g} s cap", in, length.max_seconds);
      }
    } else {
      gaps_s.push_back(std::chrono::duration<double>(now - last_figure_at).count());
    }
    last_figure_at = now;
    deadline = steady_deadline(rate);
  };
  for (;;) {
    if (trace && !asked_to_stop) {
      trace->tick();
      if (!metric_seen && trace->window_open()) on_figure(0);
    }
    if (metric_seen && !asked_to_stop && Clock::now() - cpu_looked_at >= std::chrono::seconds(1)) snapshot();
    const bool stopping = setup_.stop && setup_.stop->load();
    if (!asked_to_stop && (stopping || Clock::now() >= deadline)) {
      if (metric_seen) snapshot();
      if (trace) traced = trace->finish();  // detach before the job is signalled
      // Time is up: SIGTERM the job's group and keep reading a little, so a
      // job that reports its steady-state figure on SIGTERM is heard.
      siginfo_t info{};  // peek, without reaping: is the job itself still running?
      const bool running = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0;
      out_of_time = running && !(setup_.stop && setup_.stop->load());
      if (out_of_time && (capped || !metric_seen)) {
        trial.capped = true;
        const std::string why = metric_seen ? fmt::format("the {:g} s cap ended it before its {} steady steps",
                                                          length.max_seconds, length.steps)
                                            : fmt::format("no figure within {:.0f} s", startup_cap);
        trial.note += (trial.note.empty() ? "" : "; ") + why;
      }
      kill(-pid, SIGTERM);
      asked_to_stop = true;
      deadline = Clock::now() + std::chrono::seconds(5);
    } else if (asked_to_stop && Clock::now() >= deadline) {
      break;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fds[0], POLLIN, 0};
    // A trace's events are taken between reads: wake often enough for them.
    if (poll(&p, 1, static_cast<int>(std::clamp<long>(left, 1, trace ? 50 : 200))) > 0) {
      char buf[4096];
      const ssize_t n = read(fds[0], buf, sizeof buf);
      if (n > 0) {
        // The new text, from the start of its first line (a line can arrive in pieces).
        const auto line_start = output.rfind('\n');
        const std::size_t scan_from = line_start == std::string::npos ? 0 : line_start + 1;
        output.append(buf, static_cast<std::size_t>(n));
        if (!trace && !asked_to_stop &&
            has_figure(output.cbegin() + static_cast<std::ptrdiff_t>(scan_from), output.cend(), metric_)) {
          on_figure(last_figure(output, metric_).last.value_or(0));
        }
        if (output.size() > (1 << 20)) output.erase(0, output.size() - (1 << 19));  // keep the tail
        continue;
      }
      if (n == 0) {  // the job closed its output: it has ended (or is ending)
        break;
      }
    }
  }
  close(fds[0]);
  guard.fd = -1;
  // A job that ended by itself before its time was up: the trace's window ends here.
  if (trace && !traced) traced = trace->finish();
  trace.reset();
  // Reap the job; SIGKILL what is left of its group (children, stragglers).
  guard.pid = -1;
  exited = os::end_process_group(pid, status, std::chrono::seconds(3)) && WIFEXITED(status);
  trial.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (interrupted(trial, setup_.stop)) return trial;
  const bool job_failed = !out_of_time && exited && (!WIFEXITED(status) || WEXITSTATUS(status) != 0);
  const double figure_at_s = cpu.first_t_s();
  // How it reports, not how it exited: a job that printed its figure and
  // then failed in its shut-down (a DataLoader whose workers outlive its
  // join) still ended by itself.
  if (metric_seen) pacing_.learn(figure_at_s, gaps_s, !asked_to_stop, trial.seconds);
  auto record_cpu = [&] {
    if (auto by_role = cpu.cpu()) {
      tune::record_job_cpu(trial, *by_role, trial.samples_per_s, cpu.window_s(), setup_.batch_size, setup_.ranks);
    }
  };
  if (setup_.data_wait) {
    const bool interrupted = setup_.stop && setup_.stop->load();
    read_wait_metric(trial, *traced, out_of_time, job_failed, interrupted, output);
    if (trial.ok) record_cpu();
    return trial;
  }
  // The last value the job printed is its latest steady-state figure.
  const PrintedFigure printed = last_figure(output, metric_);
  std::optional<double> value = printed.last;
  if (value && *value <= 0 && printed.moved) {
    trial.ok = false;
    trial.note = "the job's metric fell to 0 by the end of its trial: it stalled at this config";
    return trial;
  }
  // A job that reports before its first batch arrives (PyTorch's workers
  // still importing) prints 0: no figure yet, as if it had printed none.
  if (value && *value <= 0) value.reset();
  if (!value) {
    trial.ok = false;
    const auto last_line_start = output.find_last_of('\n', output.size() > 1 ? output.size() - 2 : 0);
    // Still running when its time was up: whatever it did after the SIGTERM
    // is ours, and a longer trial can still measure it. Not so a job that
    // had already failed (its workers holding the output open), nor Ctrl-C.
    trial.too_short = out_of_time;
    if (job_failed) {
      trial.note = fmt::format("the job failed (status {}) before printing the metric: {}", WEXITSTATUS(status),
                               output.substr(last_line_start == std::string::npos ? 0 : last_line_start + 1));
      return trial;
    }
    // A job that never printed a figure in the whole of its first trial
    // (it ran to its end, or to the first-figure cap) will print none in
    // the next: one error, naming the metric that needs no output.
    if (!pacing_.figures_seen && !std::regex_search(output, metric_)) {
      throw usage_error(
          fmt::format("--exec: the job printed no line matching --metric-regex '{}' {} ({:.0f} s, {} bytes of output)",
                      setup_.metric_regex, out_of_time ? "within the first-figure cap (--first-figure-seconds)" : "in its whole run",
                      trial.seconds, output.size()),
          "have it print its throughput (e.g. 'samples/s: 123'), give --metric-regex for a line it prints, or use "
          "--metric data-wait to read it from the job's waits for data (eBPF, as root)");
    }
    trial.note = !std::regex_search(output, metric_)
                     ? fmt::format("no output line matched --metric-regex within the trial's {:.0f} s", startup_cap)
                     : "the job's metric read only 0 within the trial (still starting up?)";
    return trial;
  }
  trial.samples_per_s = *value;
  if (job_failed) {
    trial.note += fmt::format("{}the job exited with status {} after its figure", trial.note.empty() ? "" : "; ",
                              WEXITSTATUS(status));
  }
  if (asks_steps && pacing_.ends_by_itself) pacing_.learn_run(*value, steps, setup_.batch_size, figure_at_s);
  if (steps < all_steps) {
    trial.note += fmt::format("{}asked for {} batches, not {}: {} of its {} warm-up batches fit the {:g} s cap{}",
                              trial.note.empty() ? "" : "; ", steps, all_steps, steps - (all_steps - warmup_batches(c)),
                              warmup_batches(c), length.max_seconds,
                              by_model ? fmt::format(" at the model's {:.0f} samples/s", sized_by) : "");
  }
  record_cpu();
  return trial;
}

double ExecTrialRunner::known_step_ms() const {
  if (steps_ms_.empty()) return setup_.step_ms_hint > 0 ? setup_.step_ms_hint : 0.0;
  std::vector<double> sorted = steps_ms_;
  std::sort(sorted.begin(), sorted.end());
  return quantile_sorted(sorted, 0.5);
}

void ExecTrialRunner::read_wait_metric(tune::Trial& trial, const Evidence& traced, bool out_of_time, bool job_failed,
                                       bool interrupted, const std::string& output) {
  const auto last_line_start = output.find_last_of('\n', output.size() > 1 ? output.size() - 2 : 0);
  const std::string last_line = output.substr(last_line_start == std::string::npos ? 0 : last_line_start + 1);
  if (!traced.ebpf) {  // never attached: no loop with workers appeared
    trial.ok = false;
    trial.too_short = out_of_time;
    trial.note = job_failed    ? fmt::format("the job failed before starting its DataLoader workers: {}", last_line)
                 : interrupted ? "interrupted before the job's loop was traced"
                               : "the job started no DataLoader workers within the trial (no process of it whose "
                                 "children are all leaves and forks of it): raise --trial-seconds?";
    return;
  }
  const double step = known_step_ms();
  const std::optional<double> known_step = step > 0 ? std::optional<double>(step) : std::nullopt;
  const tune::WaitMetric m = tune::wait_metric(traced, setup_.batch_size, known_step, !steps_ms_.empty());
  trial.starvation = m.starvation;
  if (!m.samples_per_s) {
    trial.ok = false;
    trial.too_short = out_of_time && m.more_time_helps;
    trial.note = job_failed    ? fmt::format("the job failed: {}", last_line)
                 : interrupted ? "interrupted before the trace counted enough of the job's steps"
                               : "data-wait metric: " + m.unavailable;
    return;
  }
  if (traced.events_dropped > 0) {
    // A lost wait merges two gaps into one of two steps: still counted.
    trial.note += fmt::format("{}{} trace events lost", trial.note.empty() ? "" : "; ", traced.events_dropped);
  }
  trial.note += (trial.note.empty() ? "" : "; ") + m.how;
  if (m.step_ms) steps_ms_.push_back(*m.step_ms);
  trial.samples_per_s = *m.samples_per_s;
  // A job that also prints a figure: both, so the trace can be checked
  // against it (over the whole run; the trace from a second after the
  // workers started).
  const std::optional<double> printed = last_figure(output, metric_).last;
  if (printed && *printed > 0) trial.note += fmt::format("; the job printed {:g} samples/s", *printed);
}

}  // namespace gpufeed::cli
