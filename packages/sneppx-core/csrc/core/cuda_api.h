// The CUDA runtime seam: device queries, device memory and synchronisation. Implemented by
// cuda/runtime.cu in CUDA builds and by cuda/no_cuda.cpp otherwise (where every call that needs
// a GPU raises "this build of sneppx-core has no CUDA").
#pragma once
#include <atomic>
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
// The current device (torch.cuda.set_device): what a bare "cuda" names, and the device the CUDA
// runtime calls of the calling thread go to (NCCL's communicators, for one). 0 until set.
void cuda_set_device(int index);
int cuda_current_device();
// Waits until all work queued on device `index` has finished.
void cuda_synchronize(int index);

// Page-locked host memory (Tensor.pin_memory()): copies between it and a device can run
// asynchronously (non_blocking=True). Raises RuntimeError without a visible GPU.
void* cuda_host_alloc(size_t nbytes);
void cuda_host_free(void* p);

// Whether float32 matrix products on CUDA may use TF32 tensor cores (backends.cuda.matmul.allow_tf32,
// set_float32_matmul_precision("high")); off by default. Kept by builds without CUDA too.
inline std::atomic<bool>& cuda_tf32_flag() {
  static std::atomic<bool> on{false};
  return on;
}
inline void cuda_set_allow_tf32(bool on) { cuda_tf32_flag() = on; }
inline bool cuda_allow_tf32() { return cuda_tf32_flag(); }

// Events on the stream of device `index` (every kernel and copy of a device runs on its one default
// stream): created with or without timing, recorded, waited for, queried, and the milliseconds
// between two recorded ones. Handles are opaque; destroy releases one.
uintptr_t cuda_event_create(int index, bool timing);
void cuda_event_destroy(uintptr_t event);
void cuda_event_record(uintptr_t event, int index);
void cuda_event_synchronize(uintptr_t event);
bool cuda_event_query(uintptr_t event);
double cuda_event_elapsed_ms(uintptr_t start, uintptr_t end);

}  // namespace sx
