// ProbeCudaDriver: CUDA driver/runtime versions and device properties through dlopen'ed libcuda.
#include <cuda.h>
#include <dlfcn.h>

#include "cupmon/monitor/monitor.h"

namespace cupmon {

DriverInfo ProbeCudaDriver() {
  DriverInfo info;
  // The runtime is whatever the application loaded; look it up without loading another one.
  using RtVersionFn = int (*)(int*);
  if (auto fn = reinterpret_cast<RtVersionFn>(dlsym(RTLD_DEFAULT, "cudaRuntimeGetVersion"))) {
    int v = 0;
    if (fn(&v) == 0) info.runtime_version = v;
  }
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return info;  // no driver: nothing to say about devices
  auto sym = [&](const char* name) { return dlsym(lib, name); };
  auto driver_version = reinterpret_cast<CUresult (*)(int*)>(sym("cuDriverGetVersion"));
  auto count = reinterpret_cast<CUresult (*)(int*)>(sym("cuDeviceGetCount"));
  auto get = reinterpret_cast<CUresult (*)(CUdevice*, int)>(sym("cuDeviceGet"));
  auto name = reinterpret_cast<CUresult (*)(char*, int, CUdevice)>(sym("cuDeviceGetName"));
  auto uuid = reinterpret_cast<CUresult (*)(CUuuid*, CUdevice)>(sym("cuDeviceGetUuid_v2"));
  auto attr = reinterpret_cast<CUresult (*)(int*, CUdevice_attribute, CUdevice)>(
      sym("cuDeviceGetAttribute"));
  auto mem = reinterpret_cast<CUresult (*)(size_t*, CUdevice)>(sym("cuDeviceTotalMem_v2"));
  int v = 0;
  if (driver_version && driver_version(&v) == CUDA_SUCCESS) info.driver_version = v;
  int n = 0;
  // cuDeviceGetCount fails with CUDA_ERROR_NOT_INITIALIZED before cuInit. cupmon never calls
  // cuInit: doing so behind the application's back fixes CUDA_VISIBLE_DEVICES early and breaks
  // programs that fork before they use CUDA. The writer probes at the first completed buffer,
  // when CUDA is up; a recording with no GPU activity has no devices in its header.
  if (!count || !get) return info;
  const CUresult r = count(&n);
  if (r != CUDA_SUCCESS) return info;
  for (int i = 0; i < n; ++i) {
    CUdevice dev{};
    if (get(&dev, i) != CUDA_SUCCESS) continue;
    pb::Device d;
    d.set_id(static_cast<uint32_t>(i));
    char buf[256] = {};
    if (name && name(buf, sizeof(buf) - 1, dev) == CUDA_SUCCESS) d.set_name(buf);
    CUuuid u{};
    if (uuid && uuid(&u, dev) == CUDA_SUCCESS) d.set_uuid(std::string(u.bytes, sizeof(u.bytes)));
    int value = 0;
    if (attr && attr(&value, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == CUDA_SUCCESS)
      d.set_cc_major(static_cast<uint32_t>(value));
    if (attr && attr(&value, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == CUDA_SUCCESS)
      d.set_cc_minor(static_cast<uint32_t>(value));
    if (attr && attr(&value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) == CUDA_SUCCESS)
      d.set_sm_count(static_cast<uint32_t>(value));
    size_t bytes = 0;
    if (mem && mem(&bytes, dev) == CUDA_SUCCESS) d.set_global_memory_bytes(bytes);
    info.devices.push_back(std::move(d));
  }
  return info;
}

}  // namespace cupmon
