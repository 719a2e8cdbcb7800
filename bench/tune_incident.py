#!/usr/bin/python3
"""Issue 6's acceptance benchmark: tune against an exhaustive grid on a real
PyTorch DataLoader job, on a reproduction of the incident and on local files.

Scenarios:
  fuse  ~50 KB JPEGs behind the latencyfs FUSE fixture (heavy-tailed lookup,
        getattr and open latency: tens of ms with a long tail); the job reads
        raw bytes (--decode none), so storage latency is the limit;
  local the same files on local disk, decoded with PIL (--decode pil): the
        CPU is the limit.
For each:
  grid   every (num_workers, prefetch_factor) of tune's space run on the job
         once -> the grid's wall time; then its --top best configs re-run
         --repeat times each, and G = the best of their medians (the maximum
         of 24 single noisy runs is biased upward: the chosen configs are
         graded by medians too, so the reference is a median as well);
  (a)    tune --search model (built-in loader target); its config applied to
         the job (median of --repeat runs, pooled with the grid's re-runs
         of the same config when it is one of the top ones) -> >= 95% of G?
  (b)    tune --search model --exec (the job itself) -> the same;
  (a+)   (a) with the step taken from a diagnosis of the job (gpufeed
         diagnose on it with --diagnose-workers workers, then tune --from):
         the built-in target's model then knows what the job's loop costs
         besides its sleep. The diagnose run counts in its wall time;
  (c)    tune's wall time <= 25% of the grid's?
  (d)    the model's predicted throughput for the chosen config
         (model_samples_per_s) within +-10% of the job's measured one?
         Also printed: the model against tune's own full trial of that
         config (for the built-in target: the built-in loader, which is what
         that target's model describes).

Run as root (FUSE) from the repository root after scripts/setup.sh:
  /usr/bin/python3 bench/tune_incident.py [--scenarios fuse,local] [--seconds 8]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPUFEED = os.path.join(ROOT, "build", "gpufeed")
LATENCYFS = os.path.join(ROOT, "build", "tests", "fixtures", "latencyfs", "gpufeed-latencyfs")
JOB = os.path.join(ROOT, "tests", "fixtures", "slow_job.py")
PY = "/usr/bin/python3"


def job_cmd(data, workers, prefetch, a, decode, seconds):
    return [PY, JOB, "--data", data, "--workers", str(workers), "--prefetch", str(prefetch), "--batch-size",
            str(a.batch_size), "--step-ms", str(a.step_ms), "--duration", str(seconds), "--decode", decode,
            "--persistent"]


def run_job(data, workers, prefetch, a, decode):
    out = subprocess.run(job_cmd(data, workers, prefetch, a, decode, a.seconds), capture_output=True, text=True,
                         timeout=a.seconds + 60).stdout
    m = re.findall(r"final samples/s: ([0-9.]+)", out)
    return float(m[-1]) if m else 0.0


def diagnose(data, a, decode, path):
    """gpufeed diagnose attached (--pid) to the job while it starves, past
    its start-up (imports, listing), as a user would: the loop's step and
    the CPU its processes spend per sample."""
    job = subprocess.Popen(job_cmd(data, a.diagnose_workers, 2, a, decode, a.diagnose_seconds + 30),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(a.job_startup_seconds)
        cmd = [GPUFEED, "diagnose", "--pid", str(job.pid), "--duration", str(a.diagnose_seconds), "--json", path]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"diagnose failed ({r.returncode}): {r.stderr.strip()}")
    finally:
        job.terminate()
        job.wait(timeout=30)
    with open(path) as f:
        ev = json.load(f)["evidence"]
    step = ev["loop_step"]
    print(f"  diagnose ({a.diagnose_workers} workers): loop step {step['median_ms']} ms "
          f"(spread {step['spread_ms']}, {step['cycles']} cycles; the job sleeps {a.step_ms} ms); workers "
          f"{ev['workers']['cpu_s']:.2f} s CPU over {ev['workers']['files_opened']} files", flush=True)


def tune(data, a, decode, extra):
    out_path = tempfile.mktemp(suffix=".json")
    # PIL decodes at full size and Image.resize filters bicubic (antialiased):
    # so does the built-in loader here, at the same CPU cost.
    work = ["--decode", "jpeg", "--full-decode", "--filter", "bicubic"] if decode == "pil" else ["--decode", "none"]
    step = [] if "--from" in extra else ["--step-ms", str(a.step_ms)]
    cmd = [GPUFEED, "tune", "--data", data, "--batch-size", str(a.batch_size)] + step + [
           "--device", "host", "--out", out_path, "--trial-seconds", str(a.trial_seconds), "--first-round-seconds",
           str(a.first_round_seconds), "--measure-seconds", "1"] + work + extra
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"tune failed ({r.returncode}): {r.stderr.strip()}\n{r.stdout}")
    with open(out_path) as f:
        cfg = json.load(f)
    os.unlink(out_path)
    return cfg, wall


def scenario(name, data, decode, a):
    print(f"\n=== {name}: {data} (job --decode {decode}, batch {a.batch_size}, step {a.step_ms} ms)", flush=True)
    space_w = [w for w in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32) if w <= a.max_workers]
    space_p = [1, 2, 4, 8]
    t0 = time.monotonic()
    grid = {}
    for w in space_w:
        for p in space_p:
            grid[(w, p)] = run_job(data, w, p, a, decode)
            print(f"  grid {w:2} workers, prefetch {p}: {grid[(w, p)]:7.1f} samples/s", flush=True)
    grid_wall = time.monotonic() - t0
    single_best = max(grid.values())
    top = sorted(grid, key=grid.get, reverse=True)[:a.top]
    medians = {}
    top_runs = {}  # the re-runs of each grid top config, pooled with a chosen config's own
    for cfg in top:
        runs = [run_job(data, cfg[0], cfg[1], a, decode) for _ in range(a.repeat)]
        medians[cfg] = statistics.median(runs)
        top_runs[cfg] = runs
        print(f"  grid top {cfg}: single run {grid[cfg]:.1f}, re-runs {['%.1f' % x for x in runs]} -> median "
              f"{medians[cfg]:.1f}", flush=True)
    best_cfg = max(medians, key=medians.get)
    best = medians[best_cfg]
    print(f"  grid best {best:.1f} samples/s (median of {a.repeat}) at {best_cfg}; best single run {single_best:.1f}; "
          f"grid wall {grid_wall:.0f} s (single runs only)")

    results = {}
    job_exec = " ".join(job_cmd(data, "{num_workers}", "{prefetch_factor}", a, decode, a.trial_seconds + 2))
    diag_path = tempfile.mktemp(suffix=".diag.json")
    for label, extra in (("(a) built-in", ["--max-workers", str(a.max_workers)]),
                         ("(a+) --from", ["--max-workers", str(a.max_workers), "--from", diag_path]),
                         ("(b) --exec", ["--max-workers", str(a.max_workers), "--exec", job_exec, "--metric-regex",
                                         r"samples/s: ([0-9.]+)"])):
        t_diag = 0.0
        if "--from" in extra:
            t0 = time.monotonic()
            diagnose(data, a, decode, diag_path)
            t_diag = time.monotonic() - t0
        cfg, wall = tune(data, a, decode, extra)
        tune_only = wall
        wall += t_diag
        dl = cfg["dataloader"]
        w, p = dl["num_workers"], dl["prefetch_factor"]
        runs = [run_job(data, w, p, a, decode) for _ in range(a.repeat)]
        # A chosen config the grid also re-ran is graded by all its runs: one
        # config's runs differ by ~5% on this VM, so 6 runs say more than 3.
        pooled = runs + top_runs.get((w, p), [])
        measured = statistics.median(pooled)
        model = cfg["prediction"]["model_samples_per_s"]
        trial = cfg["prediction"]["samples_per_s"]  # tune's own full trial of the chosen config
        # The raw model against every trial tune ran (its ranking's error).
        per_trial = [abs(t["model_samples_per_s"] / t["samples_per_s"] - 1) for t in cfg["search"]["trials"]
                     if t["ok"] and t["samples_per_s"] > 0 and t.get("model_samples_per_s", 0) > 0]
        raw_trial_err = statistics.median(per_trial) if per_trial else float("nan")
        results[label] = dict(w=w, p=p, measured=measured, ratio=measured / best, wall=wall, tune_only=tune_only,
                              diag=t_diag, model=model,
                              model_err=(model / measured - 1) if measured else float("inf"),
                              trial=trial, trial_err=(model / trial - 1) if trial else float("inf"),
                              raw_trial_err=raw_trial_err, calibration=cfg["prediction"].get("calibration"))
        r = results[label]
        also = f" + the grid's re-runs {['%.1f' % x for x in top_runs[(w, p)]]}" if (w, p) in top_runs else ""
        print(f"  {label}: chose {w} workers, prefetch {p}; job runs {['%.1f' % x for x in runs]}{also} -> "
              f"{measured:.1f} samples/s = {r['ratio']:.3f} of the grid's best (>= 0.95: "
              f"{'yes' if r['ratio'] >= 0.95 else 'NO'}); tune wall {wall:.0f} s"
              f"{f' (diagnose {t_diag:.0f} s + tune {tune_only:.0f} s = {tune_only / grid_wall:.3f} alone)' if t_diag else ''}"
              f" = {wall / grid_wall:.3f} of the grid's "
              f"(<= 0.25: {'yes' if wall / grid_wall <= 0.25 else 'NO'}); model {model:.1f} -> error "
              f"{r['model_err'] * 100:+.1f}% (within 10%: {'yes' if abs(r['model_err']) <= 0.10 else 'NO'}); "
              f"against tune's own trial {trial:.1f}: {r['trial_err'] * 100:+.1f}%; the raw model's median error "
              f"over tune's {len(per_trial)} trials {raw_trial_err * 100:.1f}%; calibration {r['calibration']}",
              flush=True)
    return dict(best=best, best_cfg=best_cfg, grid_wall=grid_wall, results=results)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", default="fuse,local")
    ap.add_argument("--files", type=int, default=400)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--step-ms", type=float, default=60, help="the fuse scenario's step")
    ap.add_argument("--local-step-ms", type=float, default=10, help="the local scenario's step")
    ap.add_argument("--seconds", type=float, default=10, help="each job run (grid and checks)")
    ap.add_argument("--repeat", type=int, default=3, help="job runs of a chosen config and of each grid top config")
    ap.add_argument("--top", type=int, default=3, help="grid configs re-run for the reference")
    ap.add_argument("--max-workers", type=int, default=8)
    ap.add_argument("--trial-seconds", type=float, default=10)
    ap.add_argument("--first-round-seconds", type=float, default=6,
                    help="a PyTorch job needs ~3 s to start and print its first rate")
    ap.add_argument("--diagnose-workers", type=int, default=1,
                    help="the job's workers while diagnose watches it (few enough that the loop waits every batch)")
    ap.add_argument("--diagnose-seconds", type=float, default=8)
    ap.add_argument("--job-startup-seconds", type=float, default=5,
                    help="diagnose attaches this long after the job starts")
    ap.add_argument("--lookup-ms", type=float, default=5)
    ap.add_argument("--getattr-ms", type=float, default=5)
    ap.add_argument("--open-ms", type=float, default=5)
    ap.add_argument("--sigma", type=float, default=0.8)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="gpufeed-tune-bench-")
    mount = None
    try:
        src = os.path.join(tmp, "src")
        subprocess.run([PY, os.path.join(ROOT, "tests", "fixtures", "make_dataset.py"), src, "--files", str(a.files),
                        "--classes", "4", "--size-kb", "50"], check=True, capture_output=True)
        out = {}
        for name in a.scenarios.split(","):
            if name == "fuse":
                mnt = os.path.join(tmp, "mnt")
                os.makedirs(mnt)
                mount = subprocess.Popen([LATENCYFS, src, mnt, "--lookup-ms", str(a.lookup_ms), "--getattr-ms",
                                          str(a.getattr_ms), "--open-ms", str(a.open_ms), "--sigma", str(a.sigma),
                                          "--threads", "64"])
                for _ in range(100):
                    if os.path.ismount(mnt):
                        break
                    time.sleep(0.1)
                out[name] = scenario("fuse (the incident)", mnt, "none", a)
            elif name == "local":
                local = argparse.Namespace(**vars(a))
                local.step_ms = a.local_step_ms  # a short step: 2 cores of PIL decode cannot keep up
                out[name] = scenario("local (CPU decode is the limit)", src, "pil", local)
        print("\nSummary")
        for name, s in out.items():
            for label, r in s["results"].items():
                print(f"  {name:5} {label:13} {r['ratio']:.3f} of grid best | wall {r['wall'] / s['grid_wall']:.3f} of grid "
                      f"| model error {r['model_err'] * 100:+.1f}% on the job, {r['trial_err'] * 100:+.1f}% on tune's trial "
                      f"| raw model on all trials: median {r['raw_trial_err'] * 100:.1f}%")
    finally:
        if mount:
            subprocess.run(["fusermount3", "-u", os.path.join(tmp, "mnt")], capture_output=True)
            mount.terminate()
            mount.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
