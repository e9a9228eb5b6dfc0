#include "core/default_dtype.h"

#include <atomic>

namespace sx {
namespace {
std::atomic<DType> g_default{DType::Float32};
}
DType default_float_dtype() { return g_default.load(std::memory_order_relaxed); }
void set_default_float_dtype(DType d) { g_default.store(d, std::memory_order_relaxed); }
}  // namespace sx
