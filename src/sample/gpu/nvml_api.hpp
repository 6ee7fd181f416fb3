// Our own declarations of the NVML types and entry points baton uses (design.md: no
// build-time dependency on CUDA headers; the library is dlopen'ed). Values and layouts
// follow NVIDIA's public NVML API reference; only what we call is declared.
// The test fake (tests/fake_nvml) implements the same entry points from these declarations.
#pragma once

#include <cstdint>

extern "C" {

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;

enum : int {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_UNKNOWN = 999,
};

// nvmlDeviceGetTemperature sensor, clock types, PCIe counters, ECC selectors.
enum : unsigned { NVML_TEMPERATURE_GPU = 0 };
enum : unsigned { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum : unsigned { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };
enum : unsigned { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum : unsigned {
    NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
    NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1
};
// NVLinks a GPU may have (NVML_NVLINK_MAX_LINKS: 18 on Hopper).
constexpr unsigned NVML_NVLINK_MAX_LINKS = 18;
enum : unsigned { NVML_VOLATILE_ECC = 0 };
enum : unsigned {
    NVML_COMPUTEMODE_DEFAULT = 0,
    NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
    NVML_COMPUTEMODE_PROHIBITED = 2,
    NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3
};

// Clock event (throttle) reason bits.
enum : unsigned long long {
    NVML_CLOCKS_EVENT_GPU_IDLE = 0x1ULL,
    NVML_CLOCKS_EVENT_APPLICATIONS_CLOCKS_SETTING = 0x2ULL,
    NVML_CLOCKS_EVENT_SW_POWER_CAP = 0x4ULL,
    NVML_CLOCKS_EVENT_HW_SLOWDOWN = 0x8ULL,
    NVML_CLOCKS_EVENT_SYNC_BOOST = 0x10ULL,
    NVML_CLOCKS_EVENT_SW_THERMAL = 0x20ULL,
    NVML_CLOCKS_EVENT_HW_THERMAL = 0x40ULL,
    NVML_CLOCKS_EVENT_HW_POWER_BRAKE = 0x80ULL,
    NVML_CLOCKS_EVENT_DISPLAY_CLOCK_SETTING = 0x100ULL,
};

// Event types of nvmlDeviceRegisterEvents; an XID's number is the event's eventData.
constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x8ULL;

// What nvmlEventSetWait_v2 fills: the GPU, the event type and its data (the XID), and for an event
// of a MIG device its instance ids (0xFFFFFFFF otherwise).
struct nvmlEventData_t {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;
    unsigned gpuInstanceId;
    unsigned computeInstanceId;
};

// "Not available" marker in usedGpuMemory (e.g. under some virtualisation).
constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE = ~0ULL;

struct nvmlUtilization_t {
    unsigned int gpu;
    unsigned int memory;
};

struct nvmlMemory_t {
    unsigned long long total, free, used;
};

struct nvmlMemory_v2_t {
    unsigned int version;
    unsigned long long total, reserved, free, used;
};
// NVML_STRUCT_VERSION(Memory, 2)
constexpr unsigned int nvmlMemory_v2 = static_cast<unsigned int>(sizeof(nvmlMemory_v2_t)) | (2u << 24);

struct nvmlPciInfo_t {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
};

// The three process record layouts met in the wild (design.md):
// v1 (16 bytes), v2 (24 bytes: + GPU/compute instance ids), and the 32-byte record that R535
// drivers write through the _v3 entry point (+ usedGpuCcProtectedMemory).
struct nvmlProcessInfo_v1_t {
    unsigned int pid;
    unsigned long long usedGpuMemory;
};
struct nvmlProcessInfo_v2_t {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
};
struct nvmlProcessInfo_r535_t {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
    unsigned long long usedGpuCcProtectedMemory;
};
static_assert(sizeof(nvmlProcessInfo_v1_t) == 16 && sizeof(nvmlProcessInfo_v2_t) == 24 &&
              sizeof(nvmlProcessInfo_r535_t) == 32);

struct nvmlProcessUtilizationSample_t {
    unsigned int pid;
    unsigned long long timeStamp;  // CPU timestamp in microseconds
    unsigned int smUtil, memUtil, encUtil, decUtil;
};

// nvmlDeviceGetFieldValues: one request and its answer per entry. NVLink data throughput fields
// are per link (scopeId = the link) and count KiB since the driver loaded.
enum : unsigned { NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139 };
// The memory's own temperature (C), on GPUs with HBM: the rest answer NVML_ERROR_NOT_SUPPORTED in the entry.
enum : unsigned { NVML_FI_DEV_MEMORY_TEMP = 82 };
enum : unsigned {
    NVML_VALUE_TYPE_DOUBLE = 0,
    NVML_VALUE_TYPE_UNSIGNED_INT = 1,
    NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
    NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
    NVML_VALUE_TYPE_SIGNED_INT = 5,
};
union nvmlValue_t {
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    long long sllVal;
};
struct nvmlFieldValue_t {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;  // microseconds since the epoch
    long long latencyUsec;
    unsigned int valueType;  // NVML_VALUE_TYPE_*
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
};
static_assert(sizeof(nvmlFieldValue_t) == 40);

// GPU Performance Monitoring (Hopper and newer).
enum : unsigned { NVML_GPM_METRIC_SM_UTIL = 2, NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5 };
struct nvmlGpmSupport_t {
    unsigned int version;  // NVML_GPM_SUPPORT_VERSION = 1
    unsigned int isSupportedDevice;
};
struct nvmlGpmMetric_t {
    unsigned int metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    struct {
        char* shortName;
        char* longName;
        char* unit;
    } metricInfo;
};
// The library fills only numMetrics entries; the array is sized generously so that a newer
// library with a larger NVML_GPM_METRIC_MAX never writes past it.
struct nvmlGpmMetricsGet_t {
    unsigned int version;  // NVML_GPM_METRICS_GET_VERSION = 1
    unsigned int numMetrics;
    nvmlGpmSample_t sample1;
    nvmlGpmSample_t sample2;
    nvmlGpmMetric_t metrics[256];
};

}  // extern "C"
