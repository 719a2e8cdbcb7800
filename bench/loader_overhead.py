#!/usr/bin/python3
"""What gpufeed's loader costs, beside fio and a real PyTorch DataLoader.

On N page-cached small files (default 8000 x 50 KiB), at the same concurrency
W, interleaved, R rounds:
  (1) fio: W jobs, each reading a disjoint share of the files whole (open,
      read, close per file; psync), time-based -> files/s;
  (2) gpufeed bench --decode none, W workers, no step -> samples/s, twice:
      --device cpu (the loader alone: the step reads the collated batch, as
      a CPU job or a GPU whose DMA engine does the copy) and --device host
      (plus the host backend's copy thread, which plays the DMA engine on a
      core: on a GPU-less machine every batch is copied once more);
  (3) PyTorch DataLoader (Debian python3-torch), W workers, a trivial Dataset
      that reads a file's bytes into a uint8 tensor, batch 32 -> samples/s.
Prints medians and the ratios gpufeed/fio (target >= 0.8, on the loader
alone) and gpufeed/PyTorch (the PyTorch job copies nothing to a device either).

  /usr/bin/python3 bench/loader_overhead.py [--files 8000] [--size-kib 50]
      [--workers 2] [--rounds 5] [--seconds 5]
Needs fio (scripts/setup.sh --with-bench) and build/gpufeed.
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPUFEED = os.path.join(ROOT, "build", "gpufeed")
PY = "/usr/bin/python3"

TORCH_JOB = r"""
import os, sys, time, torch
from torch.utils.data import DataLoader, Dataset
root, workers, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
class Files(Dataset):
    def __len__(self): return len(files)
    def __getitem__(self, i):
        with open(files[i], 'rb') as f:
            return torch.frombuffer(bytearray(f.read()), dtype=torch.uint8)
def collate(batch):
    return torch.stack(batch)  # like gpufeed's --decode none: the bytes, one row per sample
loader = DataLoader(Files(), batch_size=32, num_workers=workers, prefetch_factor=2,
                    persistent_workers=True, collate_fn=collate, drop_last=True)
warm, n, start = 2 * workers, 0, None
end = time.monotonic() + seconds + 3
while time.monotonic() < end:
    for k, batch in enumerate(loader):
        if start is None and k >= warm: start, n = time.monotonic(), 0
        elif start is not None: n += batch.shape[0]
        if time.monotonic() >= end: break
print(f"samples/s: {n / (time.monotonic() - start):.1f}")
"""


def fio_job(root, workers, count, size, seconds):
    """W jobs, each with its own share of the files (fio names them rW.0.N)."""
    per_job = count // workers
    return "\n".join([
        "[global]", f"directory={root}", "ioengine=psync", "rw=read", f"bs={size}", f"filesize={size}",
        f"nrfiles={per_job}", f"size={per_job * size}", "file_service_type=sequential", "openfiles=1",
        "invalidate=0", "group_reporting", "time_based", f"runtime={seconds}",
    ] + [f"[r{w}]" for w in range(workers)]) + "\n"


def run_fio(job):
    with tempfile.NamedTemporaryFile("w", suffix=".fio", delete=False) as f:
        f.write(job)
        path = f.name
    try:
        r = subprocess.run(["fio", "--output-format=json", path], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("fio failed: " + (r.stderr or r.stdout).strip()[-500:])
        return json.loads(r.stdout[r.stdout.index("{"):])
    finally:
        os.unlink(path)


def make_files(root, workers, count, size):
    """fio lays the files out itself (a 1-second run creates them all)."""
    os.makedirs(root, exist_ok=True)
    run_fio(fio_job(root, workers, count, size, 1))


def warm_page_cache(root):
    for d, _, fs in os.walk(root):
        for f in fs:
            with open(os.path.join(d, f), "rb") as fh:
                fh.read()


def fio_rate(root, workers, count, size, seconds):
    # One read of the whole file per open (bs = file size), as the loaders do.
    read = run_fio(fio_job(root, workers, count, size, seconds))["jobs"][0]["read"]
    return read["bw_bytes"] / size  # files read per second


def gpufeed_rate(root, workers, seconds, device):
    out = subprocess.run([GPUFEED, "bench", "--data", root, "--workers", str(workers), "--batch-size", "32",
                          "--decode", "none", "--device", device, "--duration", str(seconds), "--json", "-"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["throughput"]["samples_per_s"]


def torch_rate(root, workers, seconds):
    out = subprocess.run([PY, "-c", TORCH_JOB, root, str(workers), str(seconds)], check=True, capture_output=True,
                         text=True).stdout
    return float(re.search(r"samples/s: ([0-9.]+)", out).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=8000)
    ap.add_argument("--size-kib", type=int, default=50)
    ap.add_argument("--workers", default="1,2", help="concurrency levels, e.g. 1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--skip-torch", action="store_true")
    a = ap.parse_args()
    if not shutil.which("fio"):
        sys.exit("fio is missing: run scripts/setup.sh --with-bench")
    if not os.access(GPUFEED, os.X_OK):
        sys.exit("build/gpufeed is missing: run scripts/setup.sh")
    size = a.size_kib * 1024
    tmp = tempfile.mkdtemp(prefix="gpufeed-loader-bench-")
    try:
        root = os.path.join(tmp, "files")
        levels = [int(w) for w in a.workers.split(",")]
        # fio names files after its jobs: lay them out for the largest level;
        # every level reads the same files (gpufeed and PyTorch read them all).
        make_files(root, max(levels), a.files, size)
        for workers in levels:
            rates = {"fio": [], "gpufeed": [], "gf+copy": [], "pytorch": []}
            for r in range(a.rounds):
                warm_page_cache(root)
                rates["fio"].append(fio_rate(root, workers, a.files, size, a.seconds))
                rates["gpufeed"].append(gpufeed_rate(root, workers, a.seconds, "cpu"))
                rates["gf+copy"].append(gpufeed_rate(root, workers, a.seconds, "host"))
                if not a.skip_torch:
                    rates["pytorch"].append(torch_rate(root, workers, a.seconds))
                print(f"{workers} workers, round {r + 1}: " + ", ".join(f"{k} {v[-1]:.0f}/s" for k, v in rates.items() if v),
                      flush=True)
            med = {k: statistics.median(v) for k, v in rates.items() if v}
            print(f"\n{a.files} files x {a.size_kib} KiB (page cache), {workers} workers/jobs, "
                  f"{a.rounds} rounds x {a.seconds} s, medians:")
            for k, v in med.items():
                print(f"  {k:8} {v:10.0f} samples/s")
            print("  (gpufeed: --device cpu, the loader alone; gf+copy: --device host, plus a copy thread as DMA engine)")
            print(f"  gpufeed / fio     = {med['gpufeed'] / med['fio']:.2f}  (target >= 0.8)")
            print(f"  gf+copy / fio     = {med['gf+copy'] / med['fio']:.2f}")
            if "pytorch" in med:
                print(f"  gpufeed / PyTorch = {med['gpufeed'] / med['pytorch']:.2f}")
                print(f"  gf+copy / PyTorch = {med['gf+copy'] / med['pytorch']:.2f}")
            print(flush=True)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
