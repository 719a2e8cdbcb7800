#!/usr/bin/env bash
# GPU check for a machine with an NVIDIA GPU (H200 class): from a checkout it
# builds what it needs, runs a CUDA program with a known duty cycle, samples it
# with `gpufeed gpu record`, and asserts what gpufeed measured:
#   busy fraction within +-10 points, idle gap within +-20%.
# Then gpufeed's CUDA device backend (bench/gpu/transfer_overlap.cu):
#   page-locked host-to-device bandwidth on its non-blocking stream >= 90% of
#   a plain cudaMemcpyAsync bandwidth test, and a batch copy that overlaps a
#   running kernel (done before the kernel ends, by timestamps).
# Prints the summary tables; exits 0 when every check passes, 1 otherwise, and
# 77 (skipped) on a machine without an NVIDIA GPU. Takes about 2 minutes.
# With GPUFEED_PREBUILT=DIR it builds nothing and runs what
# scripts/gpu-check-pack.sh DIR built elsewhere (for a GPU machine that lacks
# gpufeed's build dependencies).
#   scripts/gpu-check.sh [all|duty|transfer]     (default: all)
set -euo pipefail
only=${1:-all}
case $only in all|duty|transfer) ;; *) echo "usage: $0 [all|duty|transfer]" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
out=${GPUFEED_GPU_CHECK_DIR:-build/gpu-check}
mkdir -p "$out"

if ! ldconfig -p 2>/dev/null | grep -q libnvidia-ml.so.1 && ! command -v nvidia-smi >/dev/null; then
  echo "gpu-check: no NVIDIA driver (libnvidia-ml.so.1) on this machine: skipped"
  exit 77
fi
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[[ -x $nvcc ]] || { echo "gpu-check: nvcc not found (set NVCC=...)" >&2; exit 1; }

prebuilt=${GPUFEED_PREBUILT:-}
if [[ -n $prebuilt ]]; then
  prebuilt=$(cd "$prebuilt" && pwd)
  for f in gpufeed duty_cycle transfer_overlap; do
    [[ -x $prebuilt/bin/$f ]] || { echo "gpu-check: $prebuilt/bin/$f missing (run scripts/gpu-check-pack.sh $prebuilt)" >&2; exit 1; }
  done
  gpufeed() { LD_LIBRARY_PATH="$prebuilt/lib:/usr/local/cuda/lib64:$prebuilt/cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$prebuilt/bin/gpufeed" "$@"; }
else
  if [[ ! -x build/gpufeed ]]; then
    echo "gpu-check: building gpufeed"
    cmake -S . -B build -DGPUFEED_BUILD_TESTS=OFF >/dev/null
    cmake --build build -j"$(nproc)" --target gpufeed >/dev/null
  fi
  gpufeed() { build/gpufeed "$@"; }
fi
fail=0

# --- GPU activity: duty cycle measured by `gpufeed gpu record` -------------
# (The body stays unindented: its here-documents end at column 0.)
duty_check() {
if [[ -n $prebuilt ]]; then cp "$prebuilt/bin/duty_cycle" "$out/"; else "$nvcc" -O2 -o "$out/duty_cycle" bench/gpu/duty_cycle.cu; fi

# Periods long enough for NVML's utilization window (1/6 s to 1 s) to resolve.
period_ms=2000
seconds=24
rows=()
for busy_ms in 600 1400; do
  trace="$out/duty-$busy_ms.gputrace"
  gpufeed gpu record --quiet --backend nvml --hz 20 --duration $((seconds + 4)) --out "$trace" &
  recorder=$!
  sleep 2
  ran=$("$out/duty_cycle" "$busy_ms" "$period_ms" "$seconds")
  wait "$recorder"
  # Only the GPU the program ran on (device 0) counts.
  read -r busy gap period < <(gpufeed gpu show "$trace" --json - | /usr/bin/env python3 -c '
import json, sys
d = json.load(sys.stdin)["devices"][0]
f = lambda v: "nan" if v is None else v
print(f(d["busy_fraction"]), f(d["mean_idle_gap_ms"]), f(d["period_ms"]))')
  read -r verdict expected_busy expected_gap < <(/usr/bin/env python3 - "$busy" "$gap" "$busy_ms" "$period_ms" "$seconds" <<'PY'
import math, sys
busy, gap, busy_ms, period_ms, seconds = map(float, sys.argv[1:])
# The recording runs 2 s before and ~2 s after the program: idle time that is
# not part of the duty cycle. Expected busy over the whole recording:
window = seconds + 4
exp_busy = busy_ms / period_ms * seconds / window
exp_gap = period_ms - busy_ms
ok = (not math.isnan(busy) and abs(busy - exp_busy) <= 0.10 and
      not math.isnan(gap) and abs(gap - exp_gap) <= 0.20 * exp_gap)
print("PASS" if ok else "FAIL", round(exp_busy, 3), exp_gap)
PY
)
  [[ $verdict == PASS ]] || fail=1
  rows+=("$(printf '%-10s %-10s %-10s %-12s %-12s %-10s %s' "$busy_ms/$period_ms" "$expected_busy" "$busy" "$expected_gap" "$gap" "$period" "$verdict")")
  echo "  ($ran)"
done

echo
echo "gpufeed GPU check on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
printf '%-10s %-10s %-10s %-12s %-12s %-10s %s\n' "duty ms" "busy exp" "busy got" "gap ms exp" "gap ms got" "period ms" "verdict"
printf '%s\n' "${rows[@]}"
}

# --- Device backend: bandwidth and copy/compute overlap --------------------
transfer_check() {
  # The backend library only; the program links it and the shared CUDA
  # runtime, which gpufeed's dlopen("libcudart.so.13") then finds loaded.
  local program="$out/transfer_overlap" log="$out/transfer_overlap.log" status=0
  if [[ -n $prebuilt ]]; then
    program="$prebuilt/bin/transfer_overlap"
  else
    [[ -f build/CMakeCache.txt ]] || cmake -S . -B build -DGPUFEED_BUILD_TESTS=OFF >/dev/null
    cmake --build build -j"$(nproc)" --target gpufeed_device gpufeed_os gpufeed_core >/dev/null
    "$nvcc" -O2 -std=c++20 -cudart shared -Iinclude -o "$program" bench/gpu/transfer_overlap.cu \
      build/src/device/libgpufeed_device.a build/src/os/libgpufeed_os.a build/src/libgpufeed_core.a -lfmt -ldl
  fi
  LD_LIBRARY_PATH="${prebuilt:+$prebuilt/lib:/usr/local/cuda/lib64:$prebuilt/cuda:}${LD_LIBRARY_PATH:-}" "$program" 512 9 >"$log" 2>&1 || status=$?
  cat "$log"
  ((status == 0)) || fail=1
  echo
  echo "gpufeed device backend on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
  /usr/bin/env python3 - "$log" <<'PY'
import sys
fields = {}
for line in open(sys.argv[1]):
    words = line.split()
    if words and words[0] in ("bandwidth", "overlap"):
        fields[words[0]] = dict(w.split("=", 1) for w in words[1:] if "=" in w)
b, o = fields.get("bandwidth"), fields.get("overlap")
print(f"{'check':<34} {'expected':<26} {'measured':<36} verdict")
if b:
    print(f"{'H2D bandwidth, gpufeed stream':<34} {'>= 0.90 x plain memcpy':<26} "
          f"{b['gpufeed_gbps'] + ' vs ' + b['raw_gbps'] + ' GB/s = ' + b['ratio']:<36} {b['verdict']}")
if o:
    print(f"{'copy overlaps a running step':<34} {'copy done < step end':<26} "
          f"{o['copy_done_ms'] + ' ms < ' + o['step_ms'] + ' ms (serial ' + o['serial_copy_done_ms'] + ')':<36} {o['verdict']}")
if not (b and o):
    print("transfer_overlap did not report both checks: FAIL")
PY
}

[[ $only == transfer ]] || duty_check
[[ $only == duty ]] || transfer_check
exit $fail
