// Linked into builds without CUDA: every CUDA entry point that needs a GPU raises a clear error.

#include "core/cuda_api.h"
#include "core/error.h"

namespace sx {

namespace {
[[noreturn]] void no_cuda() { throw RuntimeError("[cuda] this build of sneppx-core has no CUDA"); }
}  // namespace

bool cuda_available() { return false; }
int cuda_device_count() { return 0; }
std::string cuda_device_name(int) { no_cuda(); }
void* cuda_alloc(size_t, int) { no_cuda(); }
void cuda_free(void*, size_t, int) {}
CudaMemoryStats cuda_memory_stats(int) { return {}; }
void cuda_reset_peak_memory(int) {}
size_t cuda_empty_cache() { return 0; }
void cuda_synchronize(int) { no_cuda(); }
void cuda_set_device(int) { no_cuda(); }
int cuda_current_device() { return 0; }
void* cuda_host_alloc(size_t) { no_cuda(); }
void cuda_host_free(void*) {}

uintptr_t cuda_event_create(int, bool) { no_cuda(); }
void cuda_event_destroy(uintptr_t) {}
void cuda_event_record(uintptr_t, int) { no_cuda(); }
void cuda_event_synchronize(uintptr_t) { no_cuda(); }
bool cuda_event_query(uintptr_t) { no_cuda(); }
double cuda_event_elapsed_ms(uintptr_t, uintptr_t) { no_cuda(); }

}  // namespace sx
