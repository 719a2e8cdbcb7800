#pragma once
/* The plain C interface between gpufeed (torch_loader.cpp, no LibTorch) and
 * the LibTorch step plugin (torch_plugin.cpp, libgpufeed_torch_step.so).
 * Only C types cross it, so the plugin's C++ (LibTorch's ABI flags, its
 * exceptions) stays inside the plugin. Every call that can fail returns 0 on
 * success, or nonzero with a one-line, NUL-terminated message in `error`
 * (truncated to error_size). */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a signature or struct below changes. */
#define GPUFEED_TORCH_PLUGIN_ABI 1

typedef struct gpufeed_torch_step gpufeed_torch_step;

/* One collated batch: batch_size samples of `shape` (rank dims), uint8 each,
 * packed; bytes == batch_size * product(shape). */
typedef struct {
  const unsigned char* data;
  size_t bytes;
  int64_t batch_size;
  const int64_t* shape;
  int rank;
} gpufeed_torch_batch;

typedef int (*gpufeed_torch_abi_version_fn)(void);
/* Loads the TorchScript model; NULL on failure, with `error` set. */
typedef gpufeed_torch_step* (*gpufeed_torch_open_fn)(const char* model_path, char* error, size_t error_size);
/* One training step: forward, scalar loss, backward. */
typedef int (*gpufeed_torch_run_fn)(gpufeed_torch_step* step, const gpufeed_torch_batch* batch, char* error,
                                    size_t error_size);
/* What runs, e.g. "forward+backward on CPU, 2 threads, LibTorch 1.13.0". */
typedef void (*gpufeed_torch_describe_fn)(const gpufeed_torch_step* step, char* out, size_t out_size);
typedef void (*gpufeed_torch_close_fn)(gpufeed_torch_step* step);

#ifdef __cplusplus
} /* extern "C" */
#endif
