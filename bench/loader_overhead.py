#!/usr/bin/python3
"""What gpufeed's loader costs, beside fio and a real PyTorch DataLoader.

On N page-cached small files (default 8000 x 50 KiB), at the same concurrency
W, interleaved, R rounds:
  (1) fio: W jobs, each reading a disjoint share of the files whole (open,
      read, close per file; psync), time-based -> files/s;
  (2) gpufeed bench --decode none --device host, W workers, no step -> samples/s;
  (3) PyTorch DataLoader (Debian python3-torch), W workers, a trivial Dataset
      that reads a file's bytes into a uint8 tensor, batch 32 -> samples/s.
Prints medians and the ratios gpufeed/fio (target >= 0.8) and gpufeed/PyTorch.

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
    # Fixed-size slots like gpufeed's --decode none (files differ by a few bytes).
    out = torch.zeros(len(batch), max(len(b) for b in batch), dtype=torch.uint8)
    for i, b in enumerate(batch): out[i, :len(b)] = b
    return out
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


def make_files(root, count, size):
    os.makedirs(root, exist_ok=True)
    block = os.urandom(size)
    for i in range(count):
        d = os.path.join(root, f"d{i % 16:02d}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i:06d}.bin"), "wb") as f:
            f.write(block[: size - (i % 64)])


def warm_page_cache(root):
    for d, _, fs in os.walk(root):
        for f in fs:
            with open(os.path.join(d, f), "rb") as fh:
                fh.read()


def fio_rate(root, workers, seconds, size):
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
    job = ["[global]", "ioengine=psync", "rw=read", "bs=1M", "time_based", f"runtime={seconds}",
           "file_service_type=sequential", "openfiles=1", "invalidate=0", "group_reporting"]
    for w in range(workers):
        share = files[w::workers]
        job += [f"[r{w}]", "filename=" + ":".join(f.replace(":", "\\:") for f in share)]
    with tempfile.NamedTemporaryFile("w", suffix=".fio", delete=False) as f:
        f.write("\n".join(job) + "\n")
        path = f.name
    try:
        out = subprocess.run(["fio", "--output-format=json", path], check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(path)
    read = json.loads(out)["jobs"][0]["read"]
    return read["bw_bytes"] / size  # files of ~size bytes read per second


def gpufeed_rate(root, workers, seconds):
    out = subprocess.run([GPUFEED, "bench", "--data", root, "--workers", str(workers), "--batch-size", "32",
                          "--decode", "none", "--device", "host", "--duration", str(seconds), "--json", "-"],
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
    ap.add_argument("--workers", type=int, default=2)
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
        make_files(root, a.files, size)
        mean_size = statistics.mean(size - (i % 64) for i in range(a.files))
        rates = {"fio": [], "gpufeed": [], "pytorch": []}
        for r in range(a.rounds):
            warm_page_cache(root)
            rates["fio"].append(fio_rate(root, a.workers, a.seconds, mean_size))
            rates["gpufeed"].append(gpufeed_rate(root, a.workers, a.seconds))
            if not a.skip_torch:
                rates["pytorch"].append(torch_rate(root, a.workers, a.seconds))
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.0f}/s" for k, v in rates.items() if v), flush=True)
        med = {k: statistics.median(v) for k, v in rates.items() if v}
        print(f"\n{a.files} files x {a.size_kib} KiB (page cache), {a.workers} workers/jobs, "
              f"{a.rounds} rounds x {a.seconds} s, medians:")
        for k, v in med.items():
            print(f"  {k:8} {v:10.0f} samples/s")
        print(f"  gpufeed / fio     = {med['gpufeed'] / med['fio']:.2f}  (target >= 0.8)")
        if "pytorch" in med:
            print(f"  gpufeed / PyTorch = {med['gpufeed'] / med['pytorch']:.2f}")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
