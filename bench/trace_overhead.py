#!/usr/bin/python3
"""Tracing overhead of gpufeed diagnose and monitor, beside strace and syscount.

Two workloads, each run untraced and under every tracer, interleaved, N times:
  (a) syscall_loop: stat + open + read + close of 100 small page-cached files
      (a C program timing its own loop, so tool start-up is not counted);
  (b) the slow-job fixture (a real PyTorch DataLoader job, 2 workers) on a
      local directory at full speed (--step-ms 0), timed by its own
      steady-state samples/s.
Tracers: gpufeed diagnose (follows forks, records slow calls; calls in flight
in task-local storage), monitor (gpufeed monitor at its default 1 s interval,
JSON Lines to /dev/null, no HTTP endpoint), gpufeed-hash (the same with the fallback for kernels
without task storage: a hash by thread id), strace -f -c,
libbpf-tools syscount -L (system-wide; bcc's libbpf port), and bcc's
syscount-bpfcc -L when it runs on this kernel.

Prints medians and the ratio traced/untraced (wall time; for (b) the inverse
throughput ratio). Targets: (a) gpufeed and monitor no worse than syscount;
(b) monitor within 0.03 of syscount (syscount -L is the floor of syscall
tracing on kernels without fentry).

Run as root from the repository root after scripts/setup.sh:
  /usr/bin/python3 bench/trace_overhead.py [--runs 5] [--iterations 200000]
"""
import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPUFEED = os.path.join(ROOT, "build", "gpufeed")
PY = "/usr/bin/python3"


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def ensure_tracefs():
    # libbpf-tools' syscount attaches classic tracepoints, which need tracefs.
    if not os.path.exists("/sys/kernel/tracing/events"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], capture_output=True)


class Background:
    """A system-wide tracer started before the workload and stopped after."""

    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  start_new_session=True)
        time.sleep(1.5)  # let it attach
        if self.p.poll() is not None:
            raise RuntimeError(self.p.stderr.read().strip().splitlines()[-1] if self.p.stderr else "exited")

    def stop(self):
        self.p.send_signal(signal.SIGINT)
        try:
            self.p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()


def measure(workload_argv, parse, tracer, tmp):
    """Runs the workload under `tracer`; returns the workload's own figure."""
    bg = None
    argv = list(workload_argv)
    env = None
    if tracer in ("gpufeed", "gpufeed-hash"):
        argv = [GPUFEED, "diagnose", "--quiet", "--duration", "600", "--json", os.path.join(tmp, "d.json"), "--"] + argv
        if tracer == "gpufeed-hash":  # calls in flight in a hash by tid, the fallback for older kernels
            env = dict(os.environ, GPUFEED_BPF_STARTS="hash")
    elif tracer == "monitor":
        argv = [GPUFEED, "monitor", "--quiet", "--no-listen", "--jsonl", os.devnull, "--"] + argv
    elif tracer == "strace":
        argv = ["strace", "-f", "-c", "-o", os.path.join(tmp, "strace.txt")] + argv
    elif tracer == "syscount":
        bg = Background(["/usr/sbin/syscount", "-L", "-d", "600"])
    elif tracer == "syscount-bpfcc":
        bg = Background(["syscount-bpfcc", "-L", "-d", "600"])
    try:
        out = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=900, env=env).stdout
    finally:
        if bg:
            bg.stop()
    return parse(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=200000)
    ap.add_argument("--batches", type=int, default=300)
    ap.add_argument("--tracers", default="gpufeed,monitor,gpufeed-hash,strace,syscount,syscount-bpfcc",
                    help="comma-separated subset to compare against the untraced run")
    ap.add_argument("--workloads", default="a,b", help="a (syscall loop), b (DataLoader job), or both")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("trace_overhead: run as root (eBPF)")
    if not os.path.exists(GPUFEED):
        sys.exit("trace_overhead: build first (scripts/setup.sh)")
    ensure_tracefs()

    tmp = tempfile.mkdtemp(prefix="gpufeed-bench-")
    try:
        loop = os.path.join(tmp, "syscall_loop")
        sh(["cc", "-O2", "-o", loop, os.path.join(ROOT, "bench", "syscall_loop.c")])
        small = os.path.join(tmp, "small")
        os.makedirs(small)
        for i in range(100):
            with open(os.path.join(small, "f%03d" % i), "wb") as f:
                f.write(os.urandom(4096))
        data = os.path.join(tmp, "data")
        sh([PY, os.path.join(ROOT, "tests", "fixtures", "make_dataset.py"), data, "--files", "400", "--classes", "4"])

        workloads = {
            "a: syscall loop": ([loop, small, str(args.iterations)],
                                lambda out: float(re.search(r"elapsed_s ([0-9.]+)", out).group(1))),
            # Seconds per sample, so that bigger is slower like wall time.
            "b: DataLoader job": ([PY, os.path.join(ROOT, "tests", "fixtures", "slow_job.py"), "--data", data,
                                   "--workers", "2", "--batch-size", "32", "--step-ms", "0", "--persistent",
                                   "--batches", str(args.batches)],
                                  lambda out: 1.0 / float(re.search(r"final samples/s: ([0-9.]+)", out).group(1))),
        }
        wanted = set(args.tracers.split(","))
        tracers = ["none"] + [t for t in ["gpufeed", "monitor", "gpufeed-hash", "strace", "syscount", "syscount-bpfcc"]
                              if t in wanted]
        if "syscount-bpfcc" in tracers and not shutil.which("syscount-bpfcc"):
            tracers.remove("syscount-bpfcc")
        workloads = {k: v for k, v in workloads.items() if k[0] in args.workloads.split(",")}
        results = {(w, t): [] for w in workloads for t in tracers}
        failed = {}
        for run in range(args.runs):
            for w, (argv, parse) in workloads.items():
                for t in tracers:
                    if t in failed:
                        continue
                    try:
                        results[(w, t)].append(measure(argv, parse, t, tmp))
                    except Exception as e:  # a tracer that cannot run here is reported, not fatal
                        failed[t] = str(e).strip().splitlines()[-1][:100] if str(e).strip() else type(e).__name__
            print(f"run {run + 1}/{args.runs} done", file=sys.stderr)

        print(f"\nTracing overhead, median of {args.runs} interleaved runs (ratio = traced / untraced; 1.00 = free)")
        print(f"{'workload':<20} {'tracer':<16} {'median':>12} {'ratio':>7}")
        for w in workloads:
            base = statistics.median(results[(w, "none")])
            for t in tracers:
                if t in failed:
                    print(f"{w:<20} {t:<16} {'failed':>12}  ({failed[t]})")
                    continue
                m = statistics.median(results[(w, t)])
                unit = "s" if w.startswith("a") else "ms/sample"
                shown = m if unit == "s" else m * 1e3
                print(f"{w:<20} {t:<16} {shown:>9.4f} {unit:<3} {m / base:>6.3f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
