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
