#!/usr/bin/python3
"""Does `gpufeed tune` choose well on jobs it was never tuned on? A scenario matrix.

    /usr/bin/python3 bench/tune_matrix.py --list
    /usr/bin/python3 bench/tune_matrix.py --grid NAME[,NAME...]      # compute and store the reference grids
    /usr/bin/python3 bench/tune_matrix.py [--scenarios NAME,...] [--targets builtin,exec] [--keep DIR]

Each scenario is a real PyTorch DataLoader job (tests/fixtures/slow_job.py,
Debian's python3-torch) doing os.stat + open + read (+ PIL decode) per sample,
on the project's FUSE fixture (latencyfs: lookup/getattr/open latency, some
with a heavy tail) or on local disk, with a simulated step and batch. The
matrix spans metadata latency (none, ~5 ms, ~45 ms heavy-tailed, every
metadata op slow), per-sample CPU (none, JPEG decode of 64 px and 224 px
images), steps of 10-550 ms and batches of 16-256.

The reference is an exhaustive grid of the job itself over num_workers in
{0,1,2,4,8,12,16,24,32,48,64} x prefetch_factor in {2,4,8} (num_workers 0
once: no prefetch), every run full length (--run-batches steady batches after
the first prefetch x workers, or --run-seconds, whichever ends first), which
is not the space tune searches. A grid takes minutes to an hour on 2 cores:
--grid computes it once and stores it in bench/tune_matrix/NAME.json with
the command that made it.

A benchmark run then, per scenario with a stored grid: runs `gpufeed tune`
(the built-in target with --pytorch-probe for decoding jobs, and --exec on
the job), and re-measures side by side, in rounds, the grid's best, the
cheapest config within 2% of it, and each tune's choice. It prints, per
scenario and target: the chosen config, its ratio to the grid's best as
re-measured in the same run, how many worker steps (on the grid's worker
list) it lies above the cheapest config within 2%, tune's wall time over
the grid's, and the model's error on the job (tune's model figure against
the re-measured job). The figures go to bench/README.md.
"""
import argparse
import json
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
LATENCYFS = os.path.join(ROOT, "build", "tests", "fixtures", "latencyfs", "gpufeed-latencyfs")
JOB = os.path.join(ROOT, "tests", "fixtures", "slow_job.py")
MAKE_DATASET = os.path.join(ROOT, "tests", "fixtures", "make_dataset.py")
GRIDS = os.path.join(ROOT, "bench", "tune_matrix")
PY = "/usr/bin/python3"
GRID_WORKERS = [0, 1, 2, 4, 8, 12, 16, 24, 32, 48, 64]
GRID_PREFETCH = [2, 4, 8]

# Stores: None is local disk; otherwise latencyfs options.
STORES = {
    "local": None,
    "meta5": ["--lookup-ms", "5", "--getattr-ms", "5", "--open-ms", "5", "--sigma", "0.3"],
    "meta45tail": ["--lookup-ms", "45", "--getattr-ms", "45", "--open-ms", "20", "--sigma", "0.9"],
    "allslow": ["--lookup-ms", "30", "--getattr-ms", "30", "--open-ms", "30", "--readdir-ms", "30", "--read-ms", "10",
                "--sigma", "0.5"],
}
# Per-sample CPU: the images' side (their JPEG size), decoded by PIL and resized to 224x224.
IMAGES = {"none": ("none", 50), "jpeg64": ("pil", 3), "jpeg224": ("pil", 35)}

# name: store, cpu, step ms, batch. Chosen so that several need more than 4
# workers per core (metadata-bound) and some are hurt by too many (CPU-bound).
SCENARIOS = {
    "local-none-s10-b16": ("local", "none", 10, 16),
    "local-jpeg224-s50-b64": ("local", "jpeg224", 50, 64),
    "local-jpeg64-s150-b256": ("local", "jpeg64", 150, 256),
    "local-none-s550-b256": ("local", "none", 550, 256),
    "meta5-none-s50-b64": ("meta5", "none", 50, 64),
    "meta5-jpeg224-s150-b64": ("meta5", "jpeg224", 150, 64),
    "meta5-jpeg64-s550-b256": ("meta5", "jpeg64", 550, 256),
    "meta45tail-jpeg224-s550-b64": ("meta45tail", "jpeg224", 550, 64),
    "meta45tail-none-s150-b16": ("meta45tail", "none", 150, 16),
    "meta45tail-jpeg64-s10-b16": ("meta45tail", "jpeg64", 10, 16),
    "meta45tail-none-s50-b256": ("meta45tail", "none", 50, 256),
    "allslow-none-s550-b64": ("allslow", "none", 550, 64),
    "allslow-jpeg224-s150-b256": ("allslow", "jpeg224", 150, 256),
}


def job_cmd(data, scenario, workers, prefetch, batches):
    _, cpu, step, batch = SCENARIOS[scenario]
    return [PY, JOB, "--data", data, "--workers", str(workers), "--prefetch", str(prefetch), "--batch-size", str(batch),
            "--step-ms", str(step), "--decode", IMAGES[cpu][0], "--stat", "--persistent", "--report-every", "5",
            "--batches", str(batches)]


def run_job(data, scenario, workers, prefetch, a):
    """One full-length run: the warm-up (prefetch x workers batches) plus --run-batches, at most --run-seconds.

    The job's own --duration ends a run at the cap, so its final figure (the rate after the first batch) is
    what every run reports; the timeout only guards against a job that hangs."""
    batches = max(1, workers) * prefetch + a.run_batches
    cmd = job_cmd(data, scenario, workers, prefetch, batches) + ["--duration", f"{a.run_seconds:g}"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=a.run_seconds + 120).stdout
    except subprocess.TimeoutExpired:
        return 0.0
    m = re.findall(r"final samples/s: ([0-9.]+)", out)
    return float(m[-1]) if m else 0.0


def grid_configs():
    return [(0, 2)] + [(w, p) for w in GRID_WORKERS if w > 0 for p in GRID_PREFETCH]


class Store:
    """The scenario's dataset, generated once per image kind, behind the FUSE fixture when the store says so."""

    def __init__(self, tmp, scenario, files):
        store, cpu, _, _ = SCENARIOS[scenario]
        src = os.path.join(tmp, f"src-{cpu}")
        if not os.path.isdir(src):
            subprocess.run([PY, MAKE_DATASET, src, "--files", str(files), "--classes", "4", "--size-kb",
                            str(IMAGES[cpu][1])], check=True, capture_output=True)
        self.mount = None
        self.path = src
        if STORES[store] is not None:
            self.path = os.path.join(tmp, f"mnt-{scenario}")
            os.makedirs(self.path, exist_ok=True)
            self.mount = subprocess.Popen([LATENCYFS, src, self.path, "--threads", "256"] + STORES[store])
            for _ in range(100):
                if os.path.ismount(self.path):
                    break
                time.sleep(0.1)
            else:
                sys.exit(f"latencyfs did not mount {self.path}")

    def close(self):
        if self.mount:
            subprocess.run(["fusermount3", "-u", self.path], capture_output=True)
            self.mount.terminate()
            self.mount.wait()


def compute_grid(name, a, tmp):
    store = Store(tmp, name, a.files)
    try:
        runs = {}
        t0 = time.monotonic()
        for w, p in grid_configs():
            runs[f"{w}:{p}"] = run_job(store.path, name, w, p, a)
            print(f"  {name} {w:2}w p{p}: {runs[f'{w}:{p}']:8.1f} samples/s", flush=True)
        wall = time.monotonic() - t0
    finally:
        store.close()
    os.makedirs(GRIDS, exist_ok=True)
    doc = {"scenario": name, "spec": dict(zip(("store", "cpu", "step_ms", "batch"), SCENARIOS[name])),
           "store_options": STORES[SCENARIOS[name][0]], "files": a.files, "run_batches": a.run_batches,
           "run_seconds": a.run_seconds, "wall_s": wall, "samples_per_s": runs,
           "command": f"/usr/bin/python3 bench/tune_matrix.py --grid {name} --files {a.files} "
                      f"--run-batches {a.run_batches} --run-seconds {a.run_seconds:g}"}
    with open(os.path.join(GRIDS, name + ".json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(f"  {name}: grid of {len(runs)} runs in {wall:.0f} s -> bench/tune_matrix/{name}.json")


def best_and_cheapest(grid):
    runs = {tuple(map(int, k.split(":"))): v for k, v in grid["samples_per_s"].items()}
    best = max(runs, key=lambda c: runs[c])
    within = [c for c in runs if runs[c] >= 0.98 * runs[best]]
    cheapest = min(within, key=lambda c: (c[0], c[1]))
    return best, cheapest


def tune(name, data, target, a):
    _, cpu, step, batch = SCENARIOS[name]
    out_path = tempfile.mktemp(suffix=".json")
    decode = IMAGES[cpu][0] == "pil"
    work = (["--decode", "jpeg", "--full-decode", "--filter", "bicubic", "--crop", "whole"] if decode
            else ["--decode", "none"])
    cmd = [GPUFEED, "tune", "--data", data, "--batch-size", str(batch), "--step-ms", str(step), "--device", "host",
           "--out", out_path, "--access", "stat-open-read"] + work
    if target == "builtin" and decode:
        cmd.append("--pytorch-probe")
    if target == "exec":
        job = " ".join([PY, JOB, "--data", data, "--workers", "{num_workers}", "--prefetch", "{prefetch_factor}",
                        "--batch-size", str(batch), "--step-ms", str(step), "--decode", IMAGES[cpu][0], "--stat",
                        "--persistent", "--report-every", "5", "--batches", "{steps}"])
        cmd += ["--exec", job, "--metric-regex", "final samples/s: ([0-9.]+)"]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        print(f"  {name} {target}: tune failed ({r.returncode}): {r.stderr.strip()}", flush=True)
        return None, wall
    with open(out_path) as f:
        cfg = json.load(f)
    if a.keep:
        stem = os.path.join(a.keep, f"{name}-{target}")
        with open(stem + ".txt", "w") as f:
            f.write(" ".join(cmd) + "\n\n" + r.stdout + r.stderr)
        shutil.copy(out_path, stem + ".json")
    os.unlink(out_path)
    return cfg, wall


def worker_steps(workers, above):
    ladder = GRID_WORKERS
    def index(w):  # a count between the grid's workers sits at the next one up
        return next((i for i, x in enumerate(ladder) if x >= w), len(ladder))
    return index(workers) - index(above)


def bench(name, a, tmp):
    grid_path = os.path.join(GRIDS, name + ".json")
    if not os.path.exists(grid_path):
        print(f"  {name}: no stored grid (run --grid {name})")
        return None
    with open(grid_path) as f:
        grid = json.load(f)
    best, cheapest = best_and_cheapest(grid)
    store = Store(tmp, name, grid["files"])
    rows = []
    try:
        chosen = {}
        for target in a.targets.split(","):
            cfg, wall = tune(name, store.path, target, a)
            if cfg:
                chosen[target] = (cfg, wall)
        configs = {best, cheapest} | {(c["dataloader"]["num_workers"], c["dataloader"]["prefetch_factor"])
                                      for c, _ in chosen.values()}
        measured = {c: [] for c in configs}
        for _ in range(a.rounds):  # side by side: each round runs every config once
            for c in sorted(configs):
                measured[c].append(run_job(store.path, name, c[0], c[1], a))
        med = {c: statistics.median(v) for c, v in measured.items()}
        best_now = max(med[best], max(med.values()))
        for target, (cfg, wall) in chosen.items():
            c = (cfg["dataloader"]["num_workers"], cfg["dataloader"]["prefetch_factor"])
            model = cfg["prediction"]["model_samples_per_s"]
            rows.append({"scenario": name, "target": target, "grid_best": f"{best[0]}w p{best[1]}",
                         "grid_best_now": med[best], "cheapest_within_2pct": f"{cheapest[0]}w p{cheapest[1]}",
                         "chosen": f"{c[0]}w p{c[1]}", "chosen_now": med[c], "ratio": med[c] / best_now,
                         "steps_above_cheapest": worker_steps(c[0], cheapest[0]),
                         "wall_ratio": wall / grid["wall_s"], "model_error": model / med[c] - 1 if med[c] else None,
                         "tune_wall_s": wall, "grid_wall_s": grid["wall_s"]})
    finally:
        store.close()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="print the scenarios and whether each has a stored grid")
    ap.add_argument("--grid", help="compute and store these scenarios' reference grids (comma-separated)")
    ap.add_argument("--scenarios", help="benchmark these (default: every scenario with a stored grid)")
    ap.add_argument("--targets", default="builtin,exec")
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--run-batches", type=int, default=40, help="steady batches of a full-length run")
    ap.add_argument("--run-seconds", type=float, default=60, help="the cap of a full-length run")
    ap.add_argument("--rounds", type=int, default=3, help="side-by-side re-measurements per config")
    ap.add_argument("--keep", help="keep tune's reports and configs here")
    ap.add_argument("--json", help="write the table here")
    a = ap.parse_args()
    for n in (a.grid or "").split(",") + (a.scenarios or "").split(","):
        if n and n not in SCENARIOS:
            ap.error(f"unknown scenario {n}; --list shows them")
    if a.list:
        for n, spec in SCENARIOS.items():
            have = "grid stored" if os.path.exists(os.path.join(GRIDS, n + ".json")) else "no grid"
            print(f"{n:30} store {spec[0]:10} cpu {spec[1]:7} step {spec[2]:3} ms batch {spec[3]:3}  {have}")
        return
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="gpufeed-tune-matrix-")
    try:
        subprocess.run([PY, "-c", "import numpy, torch, PIL.Image"], check=True, capture_output=True)
        if a.grid:
            for n in a.grid.split(","):
                compute_grid(n, a, tmp)
            return
        names = a.scenarios.split(",") if a.scenarios else [
            n for n in SCENARIOS if os.path.exists(os.path.join(GRIDS, n + ".json"))]
        rows = []
        for n in names:
            rows += bench(n, a, tmp) or []
        print(f"\n{'scenario':30} {'target':7} {'grid best':>10} {'chosen':>9} {'ratio':>6} {'steps':>5} "
              f"{'wall':>6} {'model':>7}")
        for r in rows:
            err = f"{r['model_error'] * 100:+.1f}%" if r["model_error"] is not None else "-"
            print(f"{r['scenario']:30} {r['target']:7} {r['grid_best']:>10} {r['chosen']:>9} {r['ratio']:6.3f} "
                  f"{r['steps_above_cheapest']:5d} {r['wall_ratio']:6.3f} {err:>7}")
        if rows:
            ratios = sorted(r["ratio"] for r in rows)
            print(f"median ratio {statistics.median(ratios):.3f}, lowest {ratios[0]:.3f}, over {len(rows)} runs")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(rows, f, indent=1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _interrupt)
    main()
