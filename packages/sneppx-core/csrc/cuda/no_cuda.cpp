// Linked into builds without CUDA: every CUDA entry point raises a clear error.
#include <cstddef>

#include "core/error.h"

namespace sx {

bool cuda_available() { return false; }
int cuda_device_count() { return 0; }

void* cuda_alloc(size_t, int) { throw RuntimeError("[cuda] this build of sneppx-core has no CUDA"); }
void cuda_free(void*, int) {}

}  // namespace sx
