// The CUDA runtime seam: device queries, device memory and synchronisation. Implemented by
// cuda/runtime.cu in CUDA builds and by cuda/no_cuda.cpp otherwise (where every call that needs
// a GPU raises "this build of sneppx-core has no CUDA").
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace sx {

bool cuda_available();     // a GPU is visible (false in builds without CUDA)
int cuda_device_count();   // visible GPUs (0 in builds without CUDA)
std::string cuda_device_name(int index);

// Device memory through the caching allocator of device `index`; raises RuntimeError when no GPU
// is visible or the index is out of range, MemoryError when the device is full.
void* cuda_alloc(size_t nbytes, int index);
void cuda_free(void* p, size_t nbytes, int index);

struct CudaMemoryStats {
  int64_t allocated = 0;  // bytes held by live tensors (rounded to the allocator's size classes)
  int64_t peak = 0;       // the most `allocated` has been since the last reset
  int64_t reserved = 0;   // bytes obtained from the driver: allocated plus cached
};
CudaMemoryStats cuda_memory_stats(int index);
void cuda_reset_peak_memory(int index);
// Returns every cached block of every device to the driver; returns the bytes released.
size_t cuda_empty_cache();
// Waits until all work queued on device `index` has finished.
void cuda_synchronize(int index);

}  // namespace sx
