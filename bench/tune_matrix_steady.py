#!/usr/bin/python3
"""24w p4 against 32w p4 on allslow-none-s550-b64 with a 300 s cap, side by side.

At this store's ~2 samples/s per worker a 60 s grid run holds about two
batches per worker; with a 300 s cap each run reaches its 40 steady batches.
Usage: /usr/bin/python3 bench/tune_matrix_steady.py   (about 15 minutes on 2 cores)
"""
import os
import statistics
import sys
import tempfile
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tune_matrix as tm  # noqa: E402

a = types.SimpleNamespace(run_batches=40, run_seconds=300)
name = "allslow-none-s550-b64"
with tempfile.TemporaryDirectory() as tmp:
    store = tm.Store(tmp, name, 2000)
    try:
        res = {c: [] for c in [(24, 4), (32, 4)]}
        for r in range(2):
            for c in res:
                v = tm.run_job(store.path, name, c[0], c[1], a)
                res[c].append(v)
                print(r, c, v, flush=True)
        for c, v in res.items():
            print(c, "median", statistics.median(v), v, flush=True)
    finally:
        store.close()
