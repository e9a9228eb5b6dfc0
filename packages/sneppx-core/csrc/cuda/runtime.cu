// The CUDA runtime seam (core/cuda_api.h): device queries, a caching allocator per device,
// synchronisation and copies between the host and devices.
#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "core/cuda_api.h"
#include "cuda/cuda_util.cuh"
#include "cuda/kernels.h"

namespace sx {

namespace {

struct Visible {
  int count = 0;
  std::string why;  // CUDA's reason when no device is visible
};
const Visible& visible() {
  static const Visible v = [] {
    Visible r;
    cudaError_t e = cudaGetDeviceCount(&r.count);
    if (e != cudaSuccess) {
      r.count = 0;
      r.why = e == cudaErrorInsufficientDriver ? "no NVIDIA driver for CUDA 13 was found"
                                               : std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
      cudaGetLastError();  // leave no pending error for later calls
    }
    return r;
  }();
  return v;
}

void check_index(int index) {
  const Visible& v = visible();
  SX_CHECK(v.count > 0, RuntimeError, "[cuda] no CUDA device is visible",
           v.why.empty() ? std::string() : " (" + v.why + ")");
  SX_CHECK(index >= 0 && index < v.count, RuntimeError, "[cuda] device cuda:", index, " is out of range: ", v.count,
           " CUDA device(s) visible");
}

// ---- the caching allocator: blocks are rounded to size classes (512 bytes below 1 MiB, 2 MiB
// above) and freed blocks wait in a per-device cache for the next request of the same class. All
// work of a device runs on its one stream, so a block handed out again is only touched by work
// queued after everything that used it before (stream-ordered reuse).
constexpr size_t kSmall = size_t(1) << 20;
constexpr size_t kLarge = size_t(2) << 20;

size_t size_class(size_t n) {
  if (n == 0) n = 1;
  if (n < kSmall) return (n + 511) / 512 * 512;
  return (n + kLarge - 1) / kLarge * kLarge;
}

struct DeviceCache {
  std::mutex mu;
  std::multimap<size_t, void*> free_blocks;
  int64_t allocated = 0, peak = 0, reserved = 0;
};

DeviceCache& cache(int index) {
  static std::vector<DeviceCache*>* caches = [] {  // leaked on purpose: outlives static tensors
    auto* v = new std::vector<DeviceCache*>();
    for (int i = 0; i < visible().count; ++i) v->push_back(new DeviceCache());
    return v;
  }();
  return *(*caches)[size_t(index)];
}

size_t release_cached(DeviceCache& c, int index) {  // caller holds c.mu
  if (c.free_blocks.empty()) return 0;
  cuda::use_device({DeviceType::CUDA, index});
  size_t freed = 0;
  for (auto& [size, p] : c.free_blocks) {
    cudaFree(p);
    freed += size;
  }
  c.reserved -= int64_t(freed);
  c.free_blocks.clear();
  return freed;
}

}  // namespace

bool cuda_available() { return visible().count > 0; }
int cuda_device_count() { return visible().count; }

std::string cuda_device_name(int index) {
  check_index(index);
  cudaDeviceProp p;
  SX_CUDA_CHECK(cudaGetDeviceProperties(&p, index), "cuda.get_device_name");
  return p.name;
}

void* cuda_alloc(size_t nbytes, int index) {
  check_index(index);
  size_t n = size_class(nbytes);
  DeviceCache& c = cache(index);
  std::lock_guard<std::mutex> g(c.mu);
  void* p = nullptr;
  auto it = c.free_blocks.find(n);
  if (it != c.free_blocks.end()) {
    p = it->second;
    c.free_blocks.erase(it);
  } else {
    cuda::use_device({DeviceType::CUDA, index});
    cudaError_t e = cudaMalloc(&p, n);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      release_cached(c, index);
      e = cudaMalloc(&p, n);
    }
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw MemoryError(msg("[cuda] out of memory: cannot allocate ", nbytes, " bytes on cuda:", index, " (",
                            c.allocated, " bytes in use by tensors)"));
    }
    cuda::check(e, "cudaMalloc");
    c.reserved += int64_t(n);
  }
  c.allocated += int64_t(n);
  if (c.allocated > c.peak) c.peak = c.allocated;
  return p;
}

void cuda_free(void* p, size_t nbytes, int index) {
  if (!p) return;
  size_t n = size_class(nbytes);
  DeviceCache& c = cache(index);
  std::lock_guard<std::mutex> g(c.mu);
  c.free_blocks.emplace(n, p);
  c.allocated -= int64_t(n);
}

CudaMemoryStats cuda_memory_stats(int index) {
  check_index(index);
  DeviceCache& c = cache(index);
  std::lock_guard<std::mutex> g(c.mu);
  return {c.allocated, c.peak, c.reserved};
}

void cuda_reset_peak_memory(int index) {
  check_index(index);
  DeviceCache& c = cache(index);
  std::lock_guard<std::mutex> g(c.mu);
  c.peak = c.allocated;
}

size_t cuda_empty_cache() {
  size_t freed = 0;
  for (int i = 0; i < visible().count; ++i) {
    DeviceCache& c = cache(i);
    std::lock_guard<std::mutex> g(c.mu);
    freed += release_cached(c, i);
  }
  return freed;
}

namespace {
std::atomic<int> current_device{0};
}

void cuda_set_device(int index) {
  check_index(index);
  cuda::use_device({DeviceType::CUDA, index});
  current_device = index;
}

int cuda_current_device() { return current_device; }

void cuda_synchronize(int index) {
  check_index(index);
  cuda::use_device({DeviceType::CUDA, index});
  SX_CUDA_CHECK(cudaDeviceSynchronize(), "synchronize");
}

void* cuda_host_alloc(size_t nbytes) {
  check_index(0);
  void* p = nullptr;
  cudaError_t e = cudaMallocHost(&p, nbytes ? nbytes : 1);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw MemoryError(msg("[pin_memory] cannot allocate ", nbytes, " bytes of page-locked host memory"));
  }
  cuda::check(e, "pin_memory");
  return p;
}

void cuda_host_free(void* p) {
  if (p) cudaFreeHost(p);
}

uintptr_t cuda_event_create(int index, bool timing) {
  check_index(index);
  cuda::use_device({DeviceType::CUDA, index});
  cudaEvent_t e;
  SX_CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming), "cuda.Event");
  return reinterpret_cast<uintptr_t>(e);
}

void cuda_event_destroy(uintptr_t event) {
  if (event) cudaEventDestroy(reinterpret_cast<cudaEvent_t>(event));
}

void cuda_event_record(uintptr_t event, int index) {
  check_index(index);
  cuda::use_device({DeviceType::CUDA, index});
  SX_CUDA_CHECK(cudaEventRecord(reinterpret_cast<cudaEvent_t>(event), cuda::stream()), "Event.record");
}

void cuda_event_synchronize(uintptr_t event) {
  SX_CUDA_CHECK(cudaEventSynchronize(reinterpret_cast<cudaEvent_t>(event)), "Event.synchronize");
}

bool cuda_event_query(uintptr_t event) {
  cudaError_t e = cudaEventQuery(reinterpret_cast<cudaEvent_t>(event));
  if (e == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  cuda::check(e, "Event.query");
  return true;
}

double cuda_event_elapsed_ms(uintptr_t start, uintptr_t end) {
  float ms = 0;
  SX_CUDA_CHECK(cudaEventElapsedTime(&ms, reinterpret_cast<cudaEvent_t>(start), reinterpret_cast<cudaEvent_t>(end)),
                "Event.elapsed_time");
  return ms;
}

namespace cuda {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  throw RuntimeError(msg("[", what, "] CUDA error: ", cudaGetErrorString(e)));
}

void check_launch(const char* op) { check(cudaGetLastError(), op); }

void use_device(Device d) {
  thread_local int current = -1;
  if (current == d.index) return;
  check(cudaSetDevice(d.index), "cudaSetDevice");
  current = d.index;
}

void no_dtype(const char* op, DType dt) {
  throw NotImplementedError(msg("[", op, "] has no CUDA kernel for ", dtype_name(dt)));
}

void transfer(const Tensor& dst, const Tensor& src, bool non_blocking) {
  size_t n = size_t(dst->numel()) * itemsize(dst->dtype);
  if (n == 0) return;
  Device dd = dst->device(), sd = src->device();
  if (dd.type == DeviceType::CUDA && sd.type == DeviceType::CUDA) {
    use_device(dd);
    if (dd == sd) SX_CUDA_CHECK(cudaMemcpyAsync(dst->raw(), src->raw(), n, cudaMemcpyDeviceToDevice, stream()), "to");
    else SX_CUDA_CHECK(cudaMemcpyPeer(dst->raw(), dd.index, src->raw(), sd.index, n), "to");
    return;
  }
  // Host memory: asynchronous on the device's stream only from or into page-locked memory and when
  // asked (the caller then synchronizes before reusing or reading the host side); otherwise the
  // copy has finished when this returns.
  const bool to_device = dd.type == DeviceType::CUDA;
  const Tensor& host = to_device ? src : dst;
  use_device(to_device ? dd : sd);
  cudaMemcpyKind kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  SX_CUDA_CHECK(cudaMemcpyAsync(dst->raw(), src->raw(), n, kind, stream()), "to");
  if (!(non_blocking && host->storage->pinned)) SX_CUDA_CHECK(cudaStreamSynchronize(stream()), "to");
}

}  // namespace cuda
}  // namespace sx
