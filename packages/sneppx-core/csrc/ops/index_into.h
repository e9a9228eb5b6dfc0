// In-place writes through one index tensor, for x[..., i, ...] = v (python/bind_index.cpp).
#pragma once
#include "ops/ops.h"

namespace sx {
// x[..., i, ...] = v along dim `dim` with a contiguous 1-d int64 index i, written into x: whole rows of a
// contiguous x as block copies (index_put's kernel), else a scatter of i repeated over the indexed
// shape (a view). v broadcasts to the indexed shape. Returns false, having done nothing, when an index
// is out of range, v does not fit, or the write cannot go into x's memory (see writes_into); the
// caller then takes the general path, which raises for the bad cases.
bool index_put_into(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& v);
}  // namespace sx
