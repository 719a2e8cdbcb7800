#pragma once
// The few NVML declarations gpufeed needs, written from the public NVML API
// documentation (no NVIDIA header exists on our build hosts). Only what the
// NVML sampler (nvml_sampler.cpp) and the test fake (tests/fixtures/fake_nvml)
// use; layouts must match the driver's ABI exactly, so every struct is the
// plain C layout of the named NVML type. Kept C-compatible so the fake, a C
// library, can include it too.
#ifdef __cplusplus
extern "C" {
#endif

// nvmlReturn_t: 0 is success; the codes we name.
typedef int nvmlReturn_t;
#define GPUFEED_NVML_SUCCESS 0
#define GPUFEED_NVML_ERROR_UNINITIALIZED 1
#define GPUFEED_NVML_ERROR_INVALID_ARGUMENT 2
#define GPUFEED_NVML_ERROR_NOT_SUPPORTED 3
#define GPUFEED_NVML_ERROR_NO_PERMISSION 4
#define GPUFEED_NVML_ERROR_NOT_FOUND 6
#define GPUFEED_NVML_ERROR_INSUFFICIENT_SIZE 7
#define GPUFEED_NVML_ERROR_DRIVER_NOT_LOADED 9
#define GPUFEED_NVML_ERROR_FUNCTION_NOT_FOUND 13
#define GPUFEED_NVML_ERROR_GPU_IS_LOST 15
#define GPUFEED_NVML_ERROR_NO_DATA 21
#define GPUFEED_NVML_ERROR_UNKNOWN 999

// nvmlDevice_t: an opaque handle owned by the library.
typedef struct nvmlDevice_st* nvmlDevice_t;

// nvmlUtilization_t: percent of the last sample period during which a kernel
// ran (gpu) / device memory was read or written (memory).
typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

// nvmlMemory_t (v1, for nvmlDeviceGetMemoryInfo): bytes.
typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

// nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v2/_v3. busId is
// "domain:bus:device.function" with an 8-digit hex domain.
#define GPUFEED_NVML_PCI_BUS_ID_LEGACY_SIZE 16
#define GPUFEED_NVML_PCI_BUS_ID_SIZE 32
typedef struct {
  char busIdLegacy[GPUFEED_NVML_PCI_BUS_ID_LEGACY_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;     // device id << 16 | vendor id
  unsigned int pciSubSystemId;
  char busId[GPUFEED_NVML_PCI_BUS_ID_SIZE];
} nvmlPciInfo_t;

// nvmlDeviceGetName: NVML_DEVICE_NAME_V2_BUFFER_SIZE is enough for any name.
#define GPUFEED_NVML_DEVICE_NAME_BUFFER_SIZE 96

// nvmlTemperatureSensors_t
#define GPUFEED_NVML_TEMPERATURE_GPU 0

// nvmlSamplingType_t
#define GPUFEED_NVML_GPU_UTILIZATION_SAMPLES 1

// nvmlValueType_t: which member of nvmlValue_t a sample holds.
typedef int nvmlValueType_t;
#define GPUFEED_NVML_VALUE_TYPE_DOUBLE 0
#define GPUFEED_NVML_VALUE_TYPE_UNSIGNED_INT 1
#define GPUFEED_NVML_VALUE_TYPE_UNSIGNED_LONG 2
#define GPUFEED_NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3
#define GPUFEED_NVML_VALUE_TYPE_SIGNED_LONG_LONG 4
#define GPUFEED_NVML_VALUE_TYPE_SIGNED_INT 5
#define GPUFEED_NVML_VALUE_TYPE_UNSIGNED_SHORT 6

typedef union {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  signed int siVal;
  unsigned short usVal;
} nvmlValue_t;

// nvmlSample_t: timeStamp in microseconds (wall clock of the driver).
typedef struct {
  unsigned long long timeStamp;
  nvmlValue_t sampleValue;
} nvmlSample_t;

// usedGpuMemory is this when the driver cannot tell (NVML_VALUE_NOT_AVAILABLE).
#define GPUFEED_NVML_VALUE_NOT_AVAILABLE (~0ULL)

// nvmlProcessInfo_v1_t: what the unversioned
// nvmlDeviceGetComputeRunningProcesses fills (16 bytes with padding).
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

// nvmlProcessInfo_v2_t / nvmlProcessInfo_t: what the _v2 and _v3 entry points
// fill (24 bytes). The MIG instance ids are 0xFFFFFFFF outside MIG.
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;

// The entry points, as function pointer types for dlsym().
typedef nvmlReturn_t (*nvmlInit_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlDeviceGetCount_fn)(unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_fn)(unsigned int, nvmlDevice_t*);
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t, char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_fn)(nvmlDevice_t, nvmlPciInfo_t*);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t, nvmlMemory_t*);
typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRates_fn)(nvmlDevice_t, nvmlUtilization_t*);
typedef nvmlReturn_t (*nvmlDeviceGetPowerUsage_fn)(nvmlDevice_t, unsigned int*);  // mW
typedef nvmlReturn_t (*nvmlDeviceGetTemperature_fn)(nvmlDevice_t, int, unsigned int*);  // °C
typedef nvmlReturn_t (*nvmlDeviceGetSamples_fn)(nvmlDevice_t, int, unsigned long long,
                                                nvmlValueType_t*, unsigned int*, nvmlSample_t*);
// Either layout above; the caller knows which by the symbol it resolved.
typedef nvmlReturn_t (*nvmlDeviceGetComputeRunningProcesses_fn)(nvmlDevice_t, unsigned int*, void*);

#ifdef __cplusplus
}  // extern "C"
#endif
