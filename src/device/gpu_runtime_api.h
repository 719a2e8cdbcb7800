#pragma once
/* The few CUDA runtime / HIP runtime declarations the device backends need,
 * written from the public API documentation so that no vendor header is
 * needed to build (like src/gpu/nvml_api.hpp for NVML). The two runtimes
 * have the same shape for everything used here: the same argument lists, and
 * the same values for the constants below (cudaMemcpyHostToDevice ==
 * hipMemcpyHostToDevice == 1, ...), so one set of function pointer types
 * serves both; only the symbol names differ (gpu_runtime.cpp).
 * Kept C-compatible so the test fake (tests/fixtures/fake_gpu_runtime), a C
 * library, implements exactly these signatures. */
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cudaError_t / hipError_t: an int-sized enum, 0 is success. */
typedef int gpufeed_gpu_error;
#define GPUFEED_GPU_SUCCESS 0
#define GPUFEED_GPU_ERROR_INSUFFICIENT_DRIVER 35 /* CUDA without a driver */
#define GPUFEED_GPU_ERROR_NO_DEVICE 100          /* both runtimes */
#define GPUFEED_GPU_ERROR_NOT_READY 600          /* event or stream not done yet */

/* cudaStream_t / hipStream_t and cudaEvent_t / hipEvent_t: opaque handles. */
typedef struct gpufeed_gpu_stream_st* gpufeed_gpu_stream;
typedef struct gpufeed_gpu_event_st* gpufeed_gpu_event;

#define GPUFEED_GPU_HOST_ALLOC_DEFAULT 0u    /* cudaHostAllocDefault, hipHostMallocDefault */
#define GPUFEED_GPU_STREAM_NON_BLOCKING 1u   /* cudaStreamNonBlocking, hipStreamNonBlocking */
#define GPUFEED_GPU_EVENT_DEFAULT 0u         /* timing enabled */
#define GPUFEED_GPU_MEMCPY_HOST_TO_DEVICE 1  /* cudaMemcpyHostToDevice, hipMemcpyHostToDevice */

/* cudaGetDeviceProperties / hipGetDeviceProperties fill a large struct whose
 * layout changes between releases; its first member is the device name,
 * char name[256], in every release of both. We pass a buffer comfortably
 * larger than any release's struct and read only the name. */
#define GPUFEED_GPU_DEVICE_NAME_SIZE 256
#define GPUFEED_GPU_DEVICE_PROP_BUFFER_SIZE 16384

typedef gpufeed_gpu_error (*gpufeed_gpu_get_device_count_fn)(int* count);
typedef gpufeed_gpu_error (*gpufeed_gpu_set_device_fn)(int device);
typedef gpufeed_gpu_error (*gpufeed_gpu_get_device_properties_fn)(void* prop, int device);
typedef gpufeed_gpu_error (*gpufeed_gpu_version_fn)(int* version);
typedef const char* (*gpufeed_gpu_error_text_fn)(gpufeed_gpu_error error);

typedef gpufeed_gpu_error (*gpufeed_gpu_host_alloc_fn)(void** ptr, size_t bytes, unsigned int flags);
typedef gpufeed_gpu_error (*gpufeed_gpu_malloc_fn)(void** ptr, size_t bytes);
typedef gpufeed_gpu_error (*gpufeed_gpu_free_fn)(void* ptr);

typedef gpufeed_gpu_error (*gpufeed_gpu_stream_create_fn)(gpufeed_gpu_stream* stream, unsigned int flags);
typedef gpufeed_gpu_error (*gpufeed_gpu_stream_fn)(gpufeed_gpu_stream stream);
typedef gpufeed_gpu_error (*gpufeed_gpu_memcpy_async_fn)(void* dst, const void* src, size_t bytes, int kind,
                                                         gpufeed_gpu_stream stream);

typedef gpufeed_gpu_error (*gpufeed_gpu_event_create_fn)(gpufeed_gpu_event* event, unsigned int flags);
typedef gpufeed_gpu_error (*gpufeed_gpu_event_record_fn)(gpufeed_gpu_event event, gpufeed_gpu_stream stream);
typedef gpufeed_gpu_error (*gpufeed_gpu_event_fn)(gpufeed_gpu_event event);
typedef gpufeed_gpu_error (*gpufeed_gpu_event_elapsed_fn)(float* ms, gpufeed_gpu_event start, gpufeed_gpu_event end);

#ifdef __cplusplus
} /* extern "C" */
#endif
