#!/usr/bin/env bash
# Installs every Debian package that gpufeed's build, tests and demo need
# (only what is missing: no network when everything is there), then
# configures and builds into build/ (or $GPUFEED_BUILD_DIR).
#
#   scripts/setup.sh                      # install + build
#   GPUFEED_CMAKE_ARGS=-DGPUFEED_SANITIZE=ON GPUFEED_BUILD_DIR=build-asan scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

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
)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
# lstopo (fixture generator) comes from hwloc or hwloc-nox; either will do.
command -v lstopo-no-graphics >/dev/null || missing+=(hwloc-nox)

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

build_dir=${GPUFEED_BUILD_DIR:-build}
generator=()
# Keep the generator an existing build directory was made with.
[[ -f "$build_dir/CMakeCache.txt" ]] || generator=(-G Ninja)
# shellcheck disable=SC2086  # GPUFEED_CMAKE_ARGS is a list of flags
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${GPUFEED_CMAKE_ARGS:-} >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
