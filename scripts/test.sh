#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test suite (labels: unit,
# system, root, gpu). Tests that cannot run here are skipped and their
# reasons printed at the end. Extra arguments go to ctest (e.g. -L unit).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build=${GPUFEED_BUILD_DIR:-build}

status=0
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@" || status=$?

# GTEST_SKIP messages: "file:line: Skipped" followed by the reason.
log="$build/Testing/Temporary/LastTest.log"
if [[ -f $log ]] && grep -q ": Skipped$" "$log"; then
  echo "Skipped tests and why:"
  awk '/ Testing: /{name=$NF} /: Skipped$/{getline reason; print "  " name ": " reason}' "$log"
fi
exit "$status"
