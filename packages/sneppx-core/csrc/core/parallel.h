// A persistent thread pool and parallel_for. Work below `grain` elements runs inline.
#pragma once
#include <cstdint>
#include <functional>

namespace sx {

int get_num_threads();
void set_num_threads(int n);  // BLAS itself runs single-threaded: cpu/gemm.cpp splits products over the pool
// Calls fn(begin, end) on disjoint chunks covering [0, n). Work of up to `grain` elements runs as one
// call; larger work is cut into ceil(n / grain) chunks, a number that past the thread count is rounded up
// to a multiple of it, so a chunk is at least grain / 2 long. Chunks are as even as whole elements allow;
// chunks of 1024 elements or more are cut at multiples of 64 (cache-line boundaries of a contiguous buffer).
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace sx
