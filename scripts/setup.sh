#!/usr/bin/env bash
# Installs every Debian package that gpufeed's build, tests and demo need
# (only what is missing: no network when everything is there), then
# configures and builds into build/ (or $GPUFEED_BUILD_DIR).
#
#   scripts/setup.sh                      # install + build
#   scripts/setup.sh --with-bench         # also what bench/ compares against
#   GPUFEED_CMAKE_ARGS=-DGPUFEED_SANITIZE=ON GPUFEED_BUILD_DIR=build-asan scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
with_bench=0
[[ ${1:-} == --with-bench ]] && with_bench=1

# Package -> why we need it.
packages=(
  build-essential     # g++ 12, make
  cmake               # 3.25
  ninja-build         # faster builds on 2 cores
  pkg-config          # finds hwloc
  python3             # scripts/gen-topology.py (test fixtures)
  libhwloc-dev        # topology (probe)
  libcli11-dev        # command line (src/cli only)
  libfmt-dev          # text output
  nlohmann-json3-dev  # JSON documents
  libvalijson-dev     # JSON Schema validation in tests
  libgtest-dev        # GoogleTest
  libgmock-dev
  clang               # compiles bpf/*.bpf.c for the BPF target
  llvm                # llvm-strip for the BPF object
  libbpf-dev          # libbpf (CO-RE loader) and its BPF headers
  bpftool             # generates the BPF skeleton; tests list loaded programs
  libfuse3-dev        # the latency-injecting FUSE test filesystem
  fuse3               # fusermount3, /dev/fuse helpers
  python3-torch       # the real PyTorch DataLoader job in the diagnose tests
  python3-pil         # JPEG test datasets (tests/fixtures/make_dataset.py)
  librocm-smi-dev     # rocm_smi.h: types for the rocm-smi sampler (never linked)
  librocm-smi64-1     # the real rocm-smi library, tested on GPU-less hosts too
  libcurl4-openssl-dev  # the S3 store (libcurl with SigV4)
  libturbojpeg0-dev   # JPEG decode in the loader (libjpeg-turbo)
  libtorch-dev        # the optional LibTorch step plugin (--model)
  python3-botocore    # reference SigV4 signer the S3 tests check against
  libcpp-httplib-dev  # the HTTP server of `gpufeed monitor`'s /metrics endpoint
  prometheus          # promtool and a real server: the monitor tests scrape and check with them
)
if ((with_bench)); then
  packages+=(
    strace            # baseline tracer in bench/trace_overhead.py
    libbpf-tools      # syscount -L, the libbpf baseline
    bpfcc-tools       # syscount-bpfcc, bcc's tool (reported when it cannot run)
    fio               # baseline reader in bench/loader_overhead.py
  )
fi

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
# lstopo (fixture generator) comes from hwloc or hwloc-nox; either will do.
command -v lstopo-no-graphics >/dev/null || missing+=(hwloc-nox)
# Node.js and npm run s3rver, the S3 server of the tests. Any install will do
# (these machines carry NodeSource's, which bundles npm; Debian's needs both).
command -v npm >/dev/null || missing+=(nodejs npm)

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 3; }
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# s3rver, the real S3 server the S3 tests start (npm; does nothing when present).
scripts/install-s3rver.sh

build_dir=${GPUFEED_BUILD_DIR:-build}
generator=()
# Keep the generator an existing build directory was made with.
[[ -f "$build_dir/CMakeCache.txt" ]] || generator=(-G Ninja)
# shellcheck disable=SC2086  # GPUFEED_CMAKE_ARGS is a list of flags
# A release binary (optimised, no debug info); GPUFEED_CMAKE_ARGS can ask for
# another build type (docs/development.md).
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release ${GPUFEED_CMAKE_ARGS:-} >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
