#!/usr/bin/python3
"""Memory of gpufeed monitor over a long run, accelerated.

Watches the slow-job fixture (a real PyTorch DataLoader job whose workers are
re-forked every epoch: a new generation every second or so) at a 10 ms
interval, so one hour of this soak publishes as many intervals as 100 hours
at the default 1 s. The metrics endpoint is scraped every second and the
JSON Lines go to /dev/null. Monitor's RSS (VmRSS) is read every 5 s;
the figure is its growth from the end of the first minute to the end.
With --busy-from, one CPU burner per core runs for --busy-minutes from that
minute: the cores are contended as on a node that also builds or trains, and
slow calls pile up in monitor's window meanwhile.

Run as root from the repository root after scripts/setup.sh:
  /usr/bin/python3 bench/monitor_soak.py [--minutes 60] [--interval 0.01] [--gpufeed PATH]
                                     [--busy-from MIN --busy-minutes N]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPUFEED = os.path.join(ROOT, "build", "gpufeed")
PY = "/usr/bin/python3"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1))


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--interval", type=float, default=0.01)
    ap.add_argument("--gpufeed", default=GPUFEED,
                    help="the binary to soak (a copy lets the tree rebuild while it runs)")
    ap.add_argument("--busy-from", type=float, default=None, metavar="MIN",
                    help="start one CPU burner per core at this minute")
    ap.add_argument("--busy-minutes", type=float, default=10)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("monitor_soak: run as root (eBPF)")
    tmp = tempfile.mkdtemp(prefix="gpufeed-soak-")
    job = monitor = None
    burners, busy_done = [], False
    try:
        data = os.path.join(tmp, "data")
        subprocess.run([PY, os.path.join(ROOT, "tests", "fixtures", "make_dataset.py"), data, "--files", "64",
                        "--classes", "4"], check=True, capture_output=True)
        seconds = args.minutes * 60
        job = subprocess.Popen([PY, os.path.join(ROOT, "tests", "fixtures", "slow_job.py"), "--data", data,
                                "--workers", "2", "--batch-size", "8", "--step-ms", "20", "--stat",
                                "--duration", str(seconds + 120), "--report-every", "100000"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        monitor = subprocess.Popen([args.gpufeed, "monitor", "--pid", str(job.pid), "--interval", str(args.interval),
                                    "--listen", "127.0.0.1:0", "--jsonl", os.devnull],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lines = []
        url = None
        while not url and len(lines) < 10:  # notes (no GPU sampler, ...) come before the "monitoring" line
            lines.append(monitor.stderr.readline())
            url = re.search(r"(http://\S+/metrics)", lines[-1])
            if not lines[-1]:
                break
        if not url:
            sys.exit("monitor_soak: monitor did not start: " + " ".join(l.strip() for l in lines))
        start = time.monotonic()
        samples, scrapes, next_read = [], 0, start
        last_scrape = ""
        while time.monotonic() - start < seconds:
            if monitor.poll() is not None:
                sys.exit("monitor_soak: monitor exited early: " + monitor.stderr.read().strip())
            last_scrape = urllib.request.urlopen(url.group(1), timeout=5).read().decode()
            scrapes += 1
            minute = (time.monotonic() - start) / 60
            busy_end = args.busy_from + args.busy_minutes if args.busy_from is not None else None
            if busy_end is not None and not burners and not busy_done and args.busy_from <= minute < busy_end:
                burners = [subprocess.Popen([PY, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
            if burners and minute >= busy_end:
                for b in burners:
                    b.kill()
                    b.wait()
                burners, busy_done = [], True
            if time.monotonic() >= next_read:
                samples.append((time.monotonic() - start, rss_kib(monitor.pid), cpu_s(monitor.pid)))
                next_read += 5
            time.sleep(1)
        samples.append((time.monotonic() - start, rss_kib(monitor.pid), cpu_s(monitor.pid)))
        started = re.search(r'gpufeed_workers_started_total\{[^}]*\} ([0-9.e+]+)', last_scrape)
        after_minute = next(s for s in samples if s[0] >= 60) if samples[-1][0] >= 60 else samples[0]
        end = samples[-1]
        growth = end[1] - after_minute[1]
        intervals = end[0] / args.interval
        print(f"\nmonitor soak: {end[0] / 60:.1f} min at a {args.interval * 1e3:g} ms interval "
              f"= {intervals:.0f} intervals ({intervals / 3600:.1f} h at 1 s), {scrapes} scrapes, "
              f"{started.group(1) if started else '?'} worker processes followed")
        print(f"RSS at 1 min {after_minute[1] / 1024:.2f} MiB, at the end {end[1] / 1024:.2f} MiB: "
              f"growth {growth / 1024:+.3f} MiB after the first minute (max {max(s[1] for s in samples) / 1024:.2f} MiB)")
        # The shape: a leak grows steadily, the allocator's settling does not.
        marks = [samples[0]] + [next(x for x in samples if x[0] >= seconds * k / 6) for k in range(1, 6)] + [end]
        print("RSS over the run: " + ", ".join(f"{m[0] / 60:.0f} min {m[1] / 1024:.2f}" for m in marks) + " MiB")
        if args.busy_from is not None:
            print(f"busy stretch: {os.cpu_count()} CPU burners from minute {args.busy_from:g} "
                  f"for {args.busy_minutes:g} min")
        print(f"monitor CPU: {100 * (end[2] - samples[0][2]) / max(1e-9, end[0] - samples[0][0]):.1f}% of one core")
    finally:
        for p in burners + [monitor, job]:
            if p and p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
