// The kernel table of the core op families: one typed slot per kernel (see core/dispatch.h).
// Ops call `kern::name(device)(args...)`; cpu/ fills every slot for the CPU, and another backend
// fills the ones it implements. Unary kernels are declared with their formula sheet
// (ops/unary_defs.h) and the fused nn kernels with their ops (ops/nn.h).
//
// Contract for every kernel: operands are validated and already broadcast to the output's shape
// and cast to the compute dtype by the op (except where a signature says otherwise); a kernel
// never allocates tensors and never throws from inside the thread pool.
#pragma once
#include "ops/index_math.h"
#include "ops/ops.h"

namespace sx {

enum class ReduceOp : uint8_t { Sum, Prod, Max, Min, SumSquares, Mean, NanSum };  // NanSum: NaN taken as 0
enum class Distribution : uint8_t { Uniform, Normal };  // of kern::random
enum class ScanOp : uint8_t { Prod, LogSumExp };  // of kern::scan

namespace kern {
// ---- elementwise
SX_KERNEL(binary, void(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b));
SX_KERNEL(where, void(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b));
// out = clamp(x, lo, hi); a bound is used only when its flag is set.
SX_KERNEL(clamp, void(const Tensor& out, const Tensor& x, double lo, double hi, bool has_lo, bool has_hi));
// out = x with NaN -> nan, +inf -> posinf, -inf -> neginf, for contiguous floating x and out of one dtype.
SX_KERNEL(nan_to_num, void(const Tensor& out, const Tensor& x, double nan, double posinf, double neginf));
// out = x clamped elementwise to the tensors lo and hi (each used when its flag is set), all of one
// dtype and broadcast to out's shape; a NaN bound gives NaN, a NaN x stays NaN.
SX_KERNEL(clamp_tensor, void(const Tensor& out, const Tensor& x, const Tensor& lo, const Tensor& hi, bool has_lo,
                             bool has_hi));
// out = tril(x, k) (lower) or triu(x, k), both contiguous of one shape and dtype (out may be x itself);
// |k| is at most the matrix's size plus one.
SX_KERNEL(tri, void(const Tensor& out, const Tensor& x, int64_t k, bool lower));
// dst = src for any pair of dtypes; src broadcast to dst's shape; dst may be any strided view.
// out = a + w * (b - a) (b - (b - a) * (1 - w) where |w| >= 0.5), all of out's floating dtype and
// broadcast to out's shape.
SX_KERNEL(lerp, void(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& w));
SX_KERNEL(copy, void(const Tensor& dst, const Tensor& src));
// out = x + value * (t1 * t2) (t1 / t2 when `divide`), each step rounded to the dtype as the separate
// ops would; all of out's floating dtype and broadcast to out's shape (out may be x itself).
SX_KERNEL(addcmul, void(const Tensor& out, const Tensor& x, const Tensor& t1, const Tensor& t2, const Scalar& value,
                        bool divide));
// out = xs concatenated along dim d, for small outputs: out contiguous, each input contiguous, on out's
// device, of out's dtype and shape except along d (inputs without elements are skipped). Returns
// false, having written nothing, for a case it does not take (the op then copies input by input).
SX_KERNEL(cat, bool(const Tensor& out, const TensorList& xs, int64_t d));
SX_KERNEL(fill, void(const Tensor& t, const Scalar& v));
// out = a + alpha * b (a - alpha * b when `subtract`), all of out's dtype and broadcast to its shape;
// alpha is first rounded to the dtype and alpha * b to the dtype before the add (the bits of a mul
// followed by an add). out may be a itself.
SX_KERNEL(add_scaled, void(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, bool subtract));
// dst = src across devices (at least one of them not the CPU): same shape and dtype, both
// contiguous. Reached through the slot of the device that is not the CPU (dst's when both are not).
// non_blocking: may return before a copy from or into page-locked host memory has finished.
SX_KERNEL(transfer, void(const Tensor& dst, const Tensor& src, bool non_blocking));

// ---- reductions over a contiguous (outer, n, inner) layout into (outer, inner) outputs
SX_KERNEL(reduce, void(ReduceOp op, const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner));
// The same reductions read in place from any strided view whose first `kept` dims are kept and
// the others reduced; out is contiguous with the kept dims' shape. out may be wider than in for
// Sum and Mean (float64, or int64 from an integer input): elements are accumulated in out's dtype.
SX_KERNEL(reduce_dims, void(ReduceOp op, const Tensor& in, const Tensor& out, int64_t kept));
SX_KERNEL(arg_reduce, void(bool is_max, const Tensor& in, const Tensor& values, const Tensor& indices, int64_t outer,
                           int64_t n, int64_t inner));
SX_KERNEL(cumsum, void(const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner));
// log(sum(exp(x))) over n of contiguous float (outer, n, inner) data, as max + log(sum(exp(x - max))),
// or the max where it is not finite (all -inf gives -inf, an inf inf, a NaN NaN); out is (outer, inner).
SX_KERNEL(logsumexp, void(const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner));
// running product (float32, float64 or int64, which wraps around) or log-sum-exp (float32, float64)
SX_KERNEL(scan, void(ScanOp op, const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner));
// running maximum (is_max) or minimum along n of contiguous (outer, n, inner) data, any dtype: the values and
// the int64 index where each was reached. As PyTorch's cummax/cummin: a tie or a NaN takes the later index,
// and after a NaN only a NaN replaces it.
SX_KERNEL(cum_extreme, void(bool is_max, const Tensor& in, const Tensor& values, const Tensor& indices, int64_t outer,
                            int64_t n, int64_t inner));
// gx = the gradient of cumprod(x) given g (all of x's dtype and layout)
SX_KERNEL(cumprod_bwd, void(const Tensor& x, const Tensor& g, const Tensor& gx, int64_t outer, int64_t n,
                            int64_t inner));
// One line of it (n elements `inner` apart), computed in C: the suffix sums r_i = g_i + x_{i+1} r_{i+1},
// then times the product of the x before i (o holds the rounded suffix sums in between).
template <typename T, typename C>
SX_HD inline void cumprod_grad_line(const T* x, const T* g, T* o, int64_t n, int64_t inner) {
  C r = C(0);
  for (int64_t i = n - 1; i >= 0; --i) {
    r = C(g[i * inner]) + (i + 1 < n ? C(x[(i + 1) * inner]) * r : C(0));
    o[i * inner] = T(r);
  }
  C l = C(1);
  for (int64_t i = 0; i < n; ++i) {
    o[i * inner] = T(l * C(o[i * inner]));
    l *= C(x[i * inner]);
  }
}

// ---- linear algebra: out[b] = a[b] @ b[b] for (batch..., m, k) and (batch..., k, n) operands
// (any strides), out contiguous (batch..., m, n) of the same dtype (float16/bfloat16 not included).
SX_KERNEL(matmul, void(const Tensor& a, const Tensor& b, const Tensor& out));
// out (0-d) = sum_k a[k] * b[k] for 1-D a and b (any strides) of one length and of out's dtype; the
// result does not depend on the thread count.
SX_KERNEL(dot, void(const Tensor& out, const Tensor& a, const Tensor& b));

// ---- indexing. Index tensors are int64 and contiguous. Indices lie in [-size, size) of their dim
// (kernels wrap negative ones): gather and scatter check that themselves while they work and return
// false, having written an unspecified part of out, when one does not; every other kernel receives
// indices already checked. `out` is contiguous unless noted.
// Whether every entry of idx lies in [-size, size), in one pass (the op then finds the bad one).
SX_KERNEL(index_in_range, bool(const Tensor& idx, int64_t size));
// out[c] = x[c with c[dim] = idx[c]] over the positions c of idx (out has idx's shape).
SX_KERNEL(gather, bool(const Tensor& out, const Tensor& x, const Tensor& idx, int64_t dim));
// out[c with c[dim] = idx[c]] = src[c] (or +=, or the larger / smaller of the two, NaN winning)
// over the positions c of idx; src has out's dtype. Out may be any strided view.
SX_KERNEL(scatter, bool(const Tensor& out, const Tensor& idx, const Tensor& src, int64_t dim, ScatterOp op));
// Advanced indexing of the leading dims: out[i, rest...] = x[idx0[i], idx1[i], ..., rest...] for
// the flattened broadcast index position i; x contiguous.
SX_KERNEL(index_front, void(const Tensor& out, const Tensor& x, const TensorList& idx));
// out (n, classes) int64 = row idx[i] of the identity in row i, for idx of n int64 entries (not yet
// checked); returns false, with out left unspecified, when an entry lies outside [0, classes).
SX_KERNEL(one_hot, bool(const Tensor& out, const Tensor& idx));
// out[idx0[i], ..., rest...] = values[i, rest...] (or +=); values contiguous, of out's dtype.
SX_KERNEL(index_put_front, void(const Tensor& out, const TensorList& idx, const Tensor& values, bool accumulate));
// out[a, k, b] = x[a, idx[k], b] along dim (idx 1-D; x any strides, but its dims after dim
// contiguous across each other).
SX_KERNEL(index_select, void(const Tensor& out, const Tensor& x, const Tensor& idx, int64_t dim));
// out[a, idx[k], b] += alpha * src[a, k, b] along dim, duplicates added in the order of k
// (src contiguous, of out's dtype; idx 1-D).
SX_KERNEL(index_add, void(const Tensor& out, const Tensor& idx, const Tensor& src, int64_t dim, const Scalar& alpha));
// The elements of a contiguous x whose position in the leading dims is true in mask (a contiguous
// bool tensor of those dims), in row-major order: out is (count, rest of x's dims...).
SX_KERNEL(masked_select, void(const Tensor& out, const Tensor& x, const Tensor& mask));
// Sorts each row of a contiguous (rows, n) tensor; writes the first k = values.shape[1] of each
// row to values and indices (both (rows, k)). NaN sorts as the largest value; ties keep their order.
SX_KERNEL(sort_rows, void(const Tensor& rows, const Tensor& values, const Tensor& indices, bool descending));
// The same along the middle dim of a contiguous x (outer, n, inner), into values and indices
// (outer, k, inner): a backend that has it sorts strided rows in place of the op's transposed copies.
SX_KERNEL(sort_dim, void(const Tensor& x, const Tensor& values, const Tensor& indices, bool descending));
// The k-th smallest (1-based) along the middle dim of a contiguous x (outer, n, inner), as a stable sort
// orders it (NaN largest, ties by position): its value and position into values and indices (outer, 1,
// inner). A selection, not a sort. With `nan_wins`, a row holding a NaN gives its first NaN instead
// (PyTorch's median).
SX_KERNEL(kth_dim, void(const Tensor& x, const Tensor& values, const Tensor& indices, int64_t k, bool nan_wins));
// The number of non-zero elements of x, and their coordinates ((count, x.dim()) int64, row-major order).
SX_KERNEL(count_nonzero, int64_t(const Tensor& x));
// out[r] = the number of true elements of row r of a contiguous bool x viewed as (rows, n), in out's dtype
// (sum of a bool tensor over its trailing dims, without widening every element first).
SX_KERNEL(count_true, void(const Tensor& x, const Tensor& out, int64_t rows, int64_t n));
SX_KERNEL(nonzero, void(const Tensor& out, const Tensor& x));

// ---- factories and random numbers (out contiguous)
// out[i] = start + i * step; with from_both_ends, the upper half counts down from `end` instead
// (end - (n - 1 - i) * step), so that linspace hits its end point exactly.
SX_KERNEL(arange, void(const Tensor& out, double start, double step, double end, bool from_both_ends));
// Random draws: element i uses Philox counter base + i of `seed`, so results depend neither on
// the number of threads nor on the device. Uniform in [a, b); Normal with mean a and std b.
SX_KERNEL(random, void(Distribution dist, const Tensor& out, uint64_t seed, uint64_t base, double a, double b));
// Integers low + (bits mod range), exact over the whole int64 range.
SX_KERNEL(randint, void(const Tensor& out, uint64_t seed, uint64_t base, int64_t low, uint64_t range));
// A random permutation of 0..n-1 (int64), Fisher-Yates with counters base + i.
SX_KERNEL(randperm, void(const Tensor& out, uint64_t seed, uint64_t base));
// out (rows, n) int64: draws from each row of probs ((rows, k) float64, checked finite, >= 0 and
// with enough positive entries); counter base + r * n + s for draw s of row r.
SX_KERNEL(multinomial, void(const Tensor& out, const Tensor& probs, bool replacement, uint64_t seed, uint64_t base));
}  // namespace kern

// The value of a one-element tensor on any device (read back through a copy off the CPU).
bool item_bool(const Tensor& t);
int64_t item_int(const Tensor& t);
double item_double(const Tensor& t);

}  // namespace sx
