#!/usr/bin/python3
"""A built-in starving 'training job' for the demo: the loop takes items
from a producer process through a pipe (as PyTorch's loop takes batches from
its workers), steps 5 ms per item, and the producer needs 40 ms per item.
The loop therefore waits about 87% of the time. Standard library only."""
import os
import sys
import time

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
r, w = os.pipe()
if os.fork() == 0:
    os.close(r)
    end = time.time() + seconds
    while time.time() < end:
        time.sleep(0.04)  # the "worker": 40 ms per item
        os.write(w, b"x" * 64)
    os._exit(0)
os.close(w)
items = 0
while os.read(r, 64):
    time.sleep(0.005)  # the "step": 5 ms per item
    items += 1
os.wait()
print(f"demo job: {items} items in {seconds:.0f} s", file=sys.stderr)
