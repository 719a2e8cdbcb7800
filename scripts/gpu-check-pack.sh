#!/usr/bin/env bash
# Builds what scripts/gpu-check.sh runs, on this machine (which needs no GPU,
# only nvcc and gpufeed's build dependencies), into one folder that can be
# copied to a GPU machine lacking those dependencies:
#   DIR/bin   gpufeed, the CUDA programs duty_cycle and transfer_overlap,
#             and the gpu-labelled test suites
#   DIR/lib   the shared libraries they need beyond the C and C++ runtimes
#   DIR/cuda  the CUDA runtime they were built with, a fallback
# On the GPU machine:  GPUFEED_PREBUILT=DIR scripts/gpu-check.sh
#   scripts/gpu-check-pack.sh DIR
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$1
cd "$(dirname "$0")/.."
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[[ -x $nvcc ]] || { # A CUDA runtime of the toolkit that built them, used only where the GPU
# machine has none of its own on the library path.
mkdir -p "$dir/cuda"
cp -L "$(dirname "$(readlink -f "$nvcc")")/../lib64/libcudart.so.13" "$dir/cuda/"
echo "gpu-check-pack: nvcc not found (set NVCC=...)" >&2; exit 1; }
[[ -f build/CMakeCache.txt ]] || cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc)" --target gpufeed gpufeed_device gpufeed_gpu_tests gpufeed_device_gpu_tests >/dev/null
rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib"
cp build/gpufeed build/tests/gpufeed_gpu_tests build/tests/gpufeed_device_gpu_tests "$dir/bin/"
"$nvcc" -O2 -o "$dir/bin/duty_cycle" bench/gpu/duty_cycle.cu
"$nvcc" -O2 -std=c++20 -cudart shared -Iinclude -o "$dir/bin/transfer_overlap" bench/gpu/transfer_overlap.cu \
  build/src/device/libgpufeed_device.a build/src/os/libgpufeed_os.a build/src/libgpufeed_core.a -lfmt -ldl
# Every library the programs load, except the C and C++ runtimes (the GPU
# machine's own are newer and must stay in charge) and the CUDA runtime and
# driver (they must match the GPU machine's driver).
for program in "$dir"/bin/*; do
  ldd "$program" | awk '$3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
    libcudart.so*|libcuda.so*|libnvidia-ml.so*) ;;
    *) cp -L "$lib" "$dir/lib/" ;;
  esac
done
# A CUDA runtime of the toolkit that built them, used only where the GPU
# machine has none of its own on the library path.
mkdir -p "$dir/cuda"
cp -L "$(dirname "$(readlink -f "$nvcc")")/../lib64/libcudart.so.13" "$dir/cuda/"
echo "gpu-check-pack: $(du -sh "$dir" | cut -f1) in $dir; on the GPU machine: GPUFEED_PREBUILT=$dir scripts/gpu-check.sh"
