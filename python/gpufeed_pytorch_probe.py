"""What a stock PyTorch image pipeline costs on this machine, for `gpufeed tune --pytorch-probe`.

    python3 gpufeed_pytorch_probe.py --samples DIR [--batch-size 8] [--size 224x224]
        [--crop center|random-resized|whole] [--filter bilinear|bicubic|fast] [--seconds 3] [--workers 1]

DIR holds a few of the dataset's image files (tune copies them there, so the
probe measures CPU, not the store). They are read into memory once; then a
real torch.utils.data.DataLoader with --workers worker processes decodes them the way
most image jobs do (PIL open, convert("RGB"), crop/resize, a uint8 CHW tensor,
as torchvision's PILToTensor), batches and sends them to this process, and
nothing else happens per batch, so every worker is busy: with as many
workers as a job's workers have cores, a sample costs what it does in a job
whose workers keep those cores busy (shared caches and memory bandwidth, a
VM's SMT siblings). Two runs of different lengths are timed and subtracted,
so the workers' start-up and shutdown cancel out:

  worker_cpu_ms_per_sample  CPU of the worker processes per sample: decode,
                            transform, collate and handing the batch over;
  loop_cpu_ms_per_batch     CPU of this (the training loop's) process per
                            batch: receiving and unpickling it.

Prints "timing" on a line once the imports are done and the timed runs start,
then one JSON object (schema gpufeed.pytorch-probe/v1) on the last line of stdout. Exit 3
with a one-line reason on stderr when torch or PIL cannot be imported, 2 on
bad arguments or no readable image in DIR.
"""
import argparse
import io
import json
import os
import random
import sys
import time

SCHEMA = "gpufeed.pytorch-probe/v1"


def fail(code, message):
    print(f"gpufeed_pytorch_probe: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--samples", required=True, help="directory of image files (a few of the dataset's)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--size", default="224x224", help="output WIDTHxHEIGHT")
    p.add_argument("--crop", choices=("center", "random-resized", "whole"), default="center")
    p.add_argument("--filter", choices=("bilinear", "bicubic", "fast"), default="bilinear")
    p.add_argument("--center-fraction", type=float, default=0.875, help="Resize(256) + CenterCrop(224)")
    p.add_argument("--seconds", type=float, default=3, help="the longer of the two timed runs, about")
    p.add_argument("--workers", type=int, default=1, help="DataLoader worker processes, all kept busy")
    a = p.parse_args(argv)
    try:
        w, h = (int(v) for v in a.size.lower().split("x"))
    except ValueError:
        p.error(f"--size {a.size}: give WIDTHxHEIGHT, e.g. 224x224")
    if w < 1 or h < 1 or a.batch_size < 1 or a.seconds <= 0 or not 0 < a.center_fraction <= 1 or a.workers < 1:
        p.error("need --size >= 1x1, --batch-size >= 1, --seconds > 0, 0 < --center-fraction <= 1, --workers >= 1")
    a.width, a.height = w, h
    return a


def crop_box(a, width, height, rng):
    """The source region, as gpufeed's --crop of the same name takes it."""
    if a.crop == "whole":
        return (0, 0, width, height)
    aspect = a.width / a.height
    if a.crop == "center":
        side = a.center_fraction * min(width, height)
        cw, ch = (side, side / aspect) if aspect >= 1 else (side * aspect, side)
        left, top = (width - cw) / 2, (height - ch) / 2
        return (round(left), round(top), round(left + cw), round(top + ch))
    for _ in range(10):  # RandomResizedCrop's scale (0.08, 1) and ratio (3/4, 4/3)
        area = width * height * rng.uniform(0.08, 1.0)
        ratio = pow(2.0, rng.uniform(-0.415, 0.415))
        cw, ch = round((area * ratio) ** 0.5), round((area / ratio) ** 0.5)
        if 0 < cw <= width and 0 < ch <= height:
            left, top = rng.randint(0, width - cw), rng.randint(0, height - ch)
            return (left, top, left + cw, top + ch)
    return (0, 0, width, height)


class InMemoryImages:
    """A map-style dataset cycling over encoded images held in memory."""

    def __init__(self, blobs, length, a, image_module, torch_module, numpy_module):
        self.blobs, self.length, self.a = blobs, length, a
        self.Image, self.torch, self.np = image_module, torch_module, numpy_module
        self.resample = {"bilinear": image_module.BILINEAR, "bicubic": image_module.BICUBIC,
                         "fast": image_module.BILINEAR}[a.filter]
        self.rng = random.Random(1)

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        image = self.Image.open(io.BytesIO(self.blobs[index % len(self.blobs)]))
        if self.a.filter == "fast":  # gpufeed's default decodes at a reduced DCT scale, as PIL's draft mode
            image.draft("RGB", (self.a.width, self.a.height))
        image = image.convert("RGB")
        box = crop_box(self.a, image.width, image.height, self.rng)
        image = image.resize((self.a.width, self.a.height), self.resample, box=box)
        array = self.np.asarray(image, dtype=self.np.uint8).copy()
        return self.torch.from_numpy(array).permute(2, 0, 1)


def worker_init(_worker_id):
    import torch

    torch.set_num_threads(1)


def timed_run(dataset_for, batches, a, torch_module):
    """CPU seconds of the workers (reaped children) and of this process over one epoch of `batches`."""
    loader = torch_module.utils.data.DataLoader(dataset_for(batches * a.batch_size), batch_size=a.batch_size,
                                                num_workers=a.workers, prefetch_factor=2, worker_init_fn=worker_init)
    before, wall = os.times(), time.monotonic()
    loop_cpu = 0.0
    count = 0
    iterator = iter(loader)
    while True:
        t = time.process_time()
        try:
            next(iterator)
        except StopIteration:
            break
        loop_cpu += time.process_time() - t
        count += 1
    del iterator  # joins the worker: its CPU then counts in os.times()'s children
    after = os.times()
    children = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return {"batches": count, "worker_cpu_s": children, "loop_cpu_s": loop_cpu, "wall_s": time.monotonic() - wall}


def main(argv=None):
    a = parse_args(argv)
    try:
        import numpy
        import torch
        from PIL import Image
    except ImportError as e:
        fail(3, f"{sys.executable} cannot import {e.name}: install python3-torch and python3-pil, or give "
                "gpufeed tune --python a Python that has them")
    torch.set_num_threads(1)
    blobs = []
    for name in sorted(os.listdir(a.samples)):
        path = os.path.join(a.samples, name)
        with open(path, "rb") as f:
            data = f.read()
        try:
            Image.open(io.BytesIO(data)).verify()
        except Exception:  # not an image PIL reads: left out
            continue
        blobs.append(data)
    if not blobs:
        fail(2, f"--samples {a.samples}: no image PIL can read")

    def dataset_for(n):
        return InMemoryImages(blobs, n, a, Image, torch, numpy)

    # Imports done: gpufeed tune may now pause this process group in turns
    # to time its own decode in the same seconds (the ratio of the two holds
    # while this VM's speed swings).
    print("timing", flush=True)
    # A short run sizes the long one to about --seconds; the difference of
    # the two cancels what does not grow with the batches.
    short = timed_run(dataset_for, 4 * a.workers, a, torch)
    per_batch_s = max(short["wall_s"] / short["batches"], 1e-4)
    long_batches = max(12 * a.workers, min(4000, int(a.seconds / per_batch_s)))
    short = timed_run(dataset_for, max(2 * a.workers, long_batches // 4), a, torch)
    long = timed_run(dataset_for, long_batches, a, torch)
    extra_batches = long["batches"] - short["batches"]
    worker_ms = (long["worker_cpu_s"] - short["worker_cpu_s"]) * 1e3 / (extra_batches * a.batch_size)
    loop_ms = (long["loop_cpu_s"] - short["loop_cpu_s"]) * 1e3 / extra_batches
    print(json.dumps({
        "schema": SCHEMA,
        "python": sys.executable,
        "torch": torch.__version__,
        "pil": getattr(Image, "__version__", "unknown"),
        "pipeline": f"PIL open + convert(RGB) + {a.crop} crop + {a.filter} resize to {a.width}x{a.height} + "
                    f"uint8 CHW tensor, DataLoader(num_workers={a.workers}, batch_size={a.batch_size})",
        "images": len(blobs),
        "workers": a.workers,
        "batches": [short["batches"], long["batches"]],
        "worker_cpu_ms_per_sample": max(0.0, worker_ms),
        "loop_cpu_ms_per_batch": max(0.0, loop_ms),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
