#!/usr/bin/python3
"""How close python/gpufeed_adapt.py's AdaptiveLoader brings a starving
PyTorch DataLoader to the rate of the same loop when it is fed.

The real torch.utils.data.DataLoader over a dataset whose every sample sleeps
--io-ms in its worker (a slow open), batch 8, a --step-ms step per batch:
  fed:      the same loop over samples that do not sleep, 2 workers, no adaptation;
  adaptive: the sleepy samples from 2 workers, AdaptiveLoader on, --epochs epochs.
Interleaved, --rounds rounds. Prints per round the fed rate, the adaptive
epochs' rates and workers, and the best of the first 4 epochs over the fed
rate; then the median of that ratio (target >= 0.95) and of the last epoch's.

  /usr/bin/python3 bench/adapt_sleepy.py [--rounds 5] [--samples 320]
      [--io-ms 40] [--step-ms 50] [--epochs 5]
Needs python3-torch (scripts/setup.sh installs it).
"""
import argparse
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from test_gpufeed_adapt import AdaptiveLoaderTorchTest, SleepyDataset  # noqa: E402


def rates(loader):
    return [r.measurement.batches_per_s for r in loader.history]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--samples", type=int, default=320)
    ap.add_argument("--io-ms", type=float, default=40)
    ap.add_argument("--step-ms", type=float, default=50)
    ap.add_argument("--epochs", type=int, default=5)
    a = ap.parse_args()
    if a.rounds < 1 or a.epochs < 2 or a.samples < 80:
        sys.exit("adapt_sleepy: --rounds >= 1, --epochs >= 2 and --samples >= 80 (10 batches) are needed")
    step = a.step_ms / 1000
    run = AdaptiveLoaderTorchTest.run_epochs
    best_ratios, last_ratios = [], []
    for i in range(a.rounds):
        fed, _ = run(SleepyDataset(a.samples, 0.0), 2, 3, step, adapt=False)
        fed_rate = statistics.median(rates(fed)[1:])
        adaptive, _ = run(SleepyDataset(a.samples, a.io_ms / 1000), 2, a.epochs, step)
        r = rates(adaptive)
        best, last = max(r[:4]) / fed_rate, r[-1] / fed_rate
        best_ratios.append(best)
        last_ratios.append(last)
        print(f"round {i + 1}: fed {fed_rate:.1f} batches/s; adaptive {', '.join(f'{x:.1f}' for x in r)} "
              f"at workers {[h.num_workers for h in adaptive.history]}; best of 4 / fed {best:.3f}, "
              f"last / fed {last:.3f}", flush=True)
    print(f"median over {a.rounds} rounds: best of the first 4 epochs / fed {statistics.median(best_ratios):.3f} "
          f"(lowest {min(best_ratios):.3f}); last epoch / fed {statistics.median(last_ratios):.3f} "
          f"(lowest {min(last_ratios):.3f})")


if __name__ == "__main__":
    main()
