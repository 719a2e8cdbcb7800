#!/usr/bin/env bash
# The quick-start demo: installs what is missing, builds, and runs gpufeed's
# main job on this machine. No GPU, no dataset and no root needed (root is
# only needed once, to install packages).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build=${GPUFEED_BUILD_DIR:-build}

echo
echo "== gpufeed probe: this machine, its GPUs and the budget per GPU rank"
"$build/gpufeed" probe --json "$build/demo-probe.json"

echo
echo "== the same on a generated 8 x MI250X node (2 sockets, 64 cores)"
"$build/gpufeed" probe --topology "$build/tests/fixtures/mi250x-2s-8gcd.xml"

echo
echo "== gpufeed diagnose on a built-in job whose loop starves (eBPF as root, /proc sampling otherwise)"
"$build/gpufeed" diagnose --duration 10 --json "$build/demo-diagnosis.json" -- /usr/bin/python3 scripts/demo_job.py 4

echo
echo "== gpufeed bench: the built-in loader on a synthetic store as slow as the incident's s3fs mount"
"$build/gpufeed" bench --data synthetic:s3fs,samples=4000 --workers 16 --prefetch 2 --batch-size 16 --step-ms 45 \
  --device host --duration 15 --json "$build/demo-bench.json"

echo
echo "== gpufeed tune: the best config for that store on this machine (built-in loader trials), then the CI gate"
"$build/gpufeed" tune --data synthetic:s3fs,samples=4000 --batch-size 8 --step-ms 45 --device host \
  --trial-seconds 6 --first-round-seconds 3 --measure-seconds 1 --out "$build/demo-config.json"
"$build/gpufeed" check --config "$build/demo-config.json" --seconds 6 --tolerance 0.25

echo
echo "== gpufeed tune --simulate: the incident's 8 x MI250X node, no hardware needed"
"$build/gpufeed" tune --simulate --profile mi250x-8gcd --profile small-files-object-store \
  --out "$build/demo-simulated-config.json"
