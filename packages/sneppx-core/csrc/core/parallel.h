// A persistent thread pool and parallel_for. Work below `grain` elements runs inline.
#pragma once
#include <cstdint>
#include <functional>

namespace sx {

int get_num_threads();
void set_num_threads(int n);  // BLAS itself stays single-threaded: products split over the pool
// Calls fn(begin, end) on disjoint chunks covering [0, n); chunks are at least `grain` long.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace sx
