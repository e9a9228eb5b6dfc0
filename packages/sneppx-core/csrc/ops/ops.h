// The public C++ op set. Each op validates its arguments (errors name the op, shapes and
// dtypes), promotes dtypes, computes the output, and records autograd when needed.
#pragma once
#include <optional>
#include <utility>

#include "autograd/node.h"
#include "core/dispatch.h"
#include "core/generator.h"
#include "core/tensor.h"

namespace sx {

// A Python number: keeps its kind for type promotion (int + float tensor stays float32, ...).
struct Scalar {
  enum Kind : uint8_t { Bool, Int, Float } kind = Float;
  double d = 0;
  int64_t i = 0;
  Scalar() = default;
  Scalar(double v) : kind(Float), d(v), i(int64_t(v)) {}
  Scalar(float v) : Scalar(double(v)) {}
  Scalar(int64_t v) : kind(Int), d(double(v)), i(v) {}
  Scalar(int v) : Scalar(int64_t(v)) {}
  Scalar(bool v) : kind(Bool), d(v), i(v) {}
  template <typename T> T to() const {
    if constexpr (std::is_integral_v<T>) return kind == Float ? T(d) : T(i);
    else return T(kind == Float ? d : double(i));
  }
};
using IntList = std::vector<int64_t>;
using OptDims = std::optional<IntList>;  // nullopt = all dims

// ---- dtype / promotion helpers
DType result_type(const Tensor& a, const Tensor& b);
DType scalar_result_type(const Tensor& t, const Scalar& s);
Tensor scalar_tensor(const Scalar& s, DType dtype, Device device = {});
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// ---- factories (factory.cpp)
Tensor zeros(const Shape& s, DType dt = DType::Float32, Device dev = {});
Tensor ones(const Shape& s, DType dt = DType::Float32, Device dev = {});
// Raises RuntimeError when dt cannot hold v ("[op] value ... cannot be converted to dt without overflow").
void check_scalar_fits(const Scalar& v, DType dt, const char* op);
Tensor full(const Shape& s, const Scalar& v, DType dt, Device dev = {});
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor arange(double start, double end, double step, DType dt);
Tensor linspace(double start, double end, int64_t steps, DType dt);
Tensor eye(int64_t n, int64_t m, DType dt);
// The (2, N) int64 row and column indices of the lower (tril_indices) or upper (triu_indices) triangle
// of a row x col matrix, on and beside the diagonal `offset`, row by row.
Tensor tri_indices(int64_t row, int64_t col, int64_t offset, bool upper);
Tensor rand(const Shape& s, DType dt, Generator* g);
Tensor randn(const Shape& s, DType dt, Generator* g);
Tensor randint(int64_t low, int64_t high, const Shape& s, DType dt, Generator* g);
Tensor randperm(int64_t n, DType dt, Generator* g);
Tensor multinomial(const Tensor& probs, int64_t n, bool replacement, Generator* g);
Tensor bernoulli(const Tensor& p, Generator* g);
void uniform_(const Tensor& t, double lo, double hi, Generator* g);
void normal_(const Tensor& t, double mean, double std, Generator* g);
void fill_(const Tensor& t, const Scalar& v);

// ---- conversion and copies (copy.cpp)
Tensor to_dtype(const Tensor& x, DType dt);  // differentiable; returns x when dt matches
Tensor contiguous(const Tensor& x);
Tensor clone(const Tensor& x);
void copy_(const Tensor& dst, const Tensor& src);  // broadcasts src, converts dtype, bumps version
Tensor detach(const Tensor& x);
// x on device d (a copy, differentiable; x itself when it is there already). non_blocking: a copy from
// or into page-locked memory may still be running when this returns (a copy to the CPU then lands in
// page-locked memory).
Tensor to_device(const Tensor& x, Device d, bool non_blocking = false);
// A contiguous copy of a CPU tensor in page-locked memory (x itself when it is pinned already).
Tensor pin_memory(const Tensor& x);

// ---- complex tensors (complex.cpp): written with real ops on the (real, imaginary) pairs
// The pairs of a complex tensor as a real (..., 2) view, and back (the last dim of size 2 with stride 1, the
// other strides and the offset even); both differentiable.
Tensor view_as_real(const Tensor& x);
Tensor view_as_complex(const Tensor& x);
Tensor real(const Tensor& x);  // a view of the real parts (x itself for a real x)
Tensor imag(const Tensor& x);  // a view of the imaginary parts (raises for a real x, as PyTorch)
Tensor complex(const Tensor& re, const Tensor& im);        // re + i im (float32 or float64, broadcast)
Tensor polar(const Tensor& abs, const Tensor& angle);      // abs (cos angle + i sin angle)
Tensor conj(const Tensor& x);                              // a new tensor (x itself for a real x)
Tensor complex_abs(const Tensor& x);                       // |z|, real
Tensor complex_angle(const Tensor& x);                     // arg z in (-pi, pi], real

// ---- elementwise (elementwise.cpp)
// Binary ops: (enum entry, name, backward node name). Names come from this list, never from positions;
// the comparisons and logical ops (results of dtype bool) stay last, from Eq on. The bitwise ops
// take integer and bool operands (the shifts integers only); gcd and lcm integers only, nextafter
// floating operands only (it has no gradient, as in PyTorch).
#define SX_BINARY_OPS(X)                                                                                    \
  X(Add, "add", "AddBackward") X(Sub, "sub", "SubBackward") X(Mul, "mul", "MulBackward")                    \
  X(Div, "div", "DivBackward") X(FloorDiv, "floor_divide", "FloorDivBackward")                              \
  X(Rem, "remainder", "RemainderBackward") X(Pow, "pow", "PowBackward") X(Max, "maximum", "MaximumBackward") \
  X(Min, "minimum", "MinimumBackward") X(Atan2, "atan2", "Atan2Backward") X(Fmod, "fmod", "FmodBackward")    \
  X(NextAfter, "nextafter", "NextafterBackward") X(Gcd, "gcd", "") X(Lcm, "lcm", "")                        \
  X(BitAnd, "bitwise_and", "") X(BitOr, "bitwise_or", "") X(BitXor, "bitwise_xor", "")                      \
  X(Shl, "bitwise_left_shift", "") X(Shr, "bitwise_right_shift", "")                                        \
  X(Eq, "eq", "") X(Ne, "ne", "") X(Lt, "lt", "") X(Le, "le", "") X(Gt, "gt", "") X(Ge, "ge", "")           \
  X(And, "logical_and", "") X(Or, "logical_or", "") X(Xor, "logical_xor", "")
enum class BinaryOp : uint8_t {
#define SX_ENUM_ENTRY(E, NAME, BW) E,
  SX_BINARY_OPS(SX_ENUM_ENTRY)
#undef SX_ENUM_ENTRY
};
const char* binary_name(BinaryOp op);
// Unary ops and activations are defined in ops/unary_defs.h (the formula sheet).
enum class UnaryOp : uint8_t;
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor unary(UnaryOp op, const Tensor& x);
// x = op(x, b) and x = op(x) computed straight into x's memory (x.mul_(b), x.relu_()) when that gives
// what the out-of-place op and a copy back would: autograd records nothing, the result has x's dtype
// and shape, no two elements of x share memory, and b shares none with x unless it is x itself.
// Return false, having done nothing, otherwise.
bool binary_into(BinaryOp op, const Tensor& x, const Tensor& b);
bool unary_into(UnaryOp op, const Tensor& x, double p0, double p1);
// Special functions beyond the formula sheet's one-tensor form (ops/unary.cpp, ops/elementwise.cpp):
// polygamma(n, x) checks n >= 0; mvlgamma(x, p) = sum_i<p lgamma(x - i/2) + p (p-1)/4 log(pi), with
// PyTorch's check that x > (p-1)/2; frexp(x) = (mantissa, int32 exponent); ldexp(x, e) = x * 2**e in the promoted
// floating dtype.
Tensor polygamma(int64_t n, const Tensor& x);
Tensor mvlgamma(const Tensor& x, int64_t p);
std::pair<Tensor, Tensor> frexp(const Tensor& x);
Tensor ldexp(const Tensor& x, const Tensor& e);
// The same for x.clamp_(lo, hi), x.lerp_(end, w), x.tril_(k) / x.triu_(k), x.addcmul_(t1, t2, value=v)
// (x.addcdiv_ when `divide`), x.scatter_(d, i, src) / x.scatter_add_, x.index_add_(d, i, src) and
// x.index_copy_(d, i, src): the other operands must share no memory with x; scatter_, index_add_ and
// index_copy_ check every index before they write, so a bad one leaves x as it was (index_copy_ raises
// for a bad argument, and returns false for an index out of range: the general path raises).
bool clamp_into(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi);
bool lerp_into(const Tensor& x, const Tensor& end, const Tensor& w);
bool tri_into(const Tensor& x, int64_t k, bool lower);
bool addcmul_into(const Tensor& x, const Tensor& t1, const Tensor& t2, const Scalar& value, bool divide);
bool scatter_into(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, bool add);
bool index_add_into(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, double alpha);
bool index_copy_into(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// x[..., i, ...] = v along dim with a contiguous 1-d int64 index i (python/bind_index.cpp), written into x:
// whole rows of a contiguous x as block copies (index_put's kernel), else a scatter of i repeated over the
// indexed shape. v broadcasts to the indexed shape. False, having done nothing, when an index is out of
// range, v does not fit, or the write cannot go into x's memory; the general path then raises.
bool index_put_into(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& v);
// Whether an in-place op may run its kernel with x as the output: autograd records nothing for x or
// the operands, no two elements of x share memory, and no operand shares memory with x or lives on
// another device.
bool writes_into(const Tensor& x, std::initializer_list<const Tensor*> operands);
// True when no two elements of t share memory (a transpose or a slice; not an expand).
bool elements_distinct(const Tensor& t);
// ~x: logical not of a bool tensor, bitwise complement of an integer one (floats raise).
Tensor bitwise_not(const Tensor& x);
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, const Scalar& b);
// a + alpha * b (a - alpha * b when `subtract`) with the dtype, result and gradients of
// add(a, mul(b, alpha)), in one pass where b's dtype is the result's. With `into_a`, the result is
// written into a and a returned when that is safe (autograd records nothing, a has the result's
// dtype and shape and no memory in common with b); otherwise a new tensor comes back.
Tensor add_scaled(const Tensor& a, const Tensor& b, const Scalar& alpha, bool subtract, bool into_a = false);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Scalar& b);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& v);
Tensor clamp(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi);
// x with NaN -> nan, +inf -> posinf and -inf -> neginf (floating x). Even bounds are the sheet's NanToNum;
// uneven ones one pass of kern::nan_to_num where the device has it and nothing records, else the sheet's
// op (-inf -> -posinf) and a where for -inf.
Tensor nan_to_num(const Tensor& x, double nan, double posinf, double neginf);
// clamp with tensor bounds (broadcast with x); a NaN bound gives NaN, and at ties x keeps the gradient.
Tensor clamp_tensor(const Tensor& x, const std::optional<Tensor>& lo, const std::optional<Tensor>& hi);
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& w);
// In place: computes f(x, ...) and writes into x (version bump, autograd history rebased).
void assign_inplace(const Tensor& x, const Tensor& value, const char* op);

// ---- reductions (reduce.cpp)
Tensor sum(const Tensor& x, const OptDims& dims = std::nullopt, bool keepdim = false,
           std::optional<DType> dt = std::nullopt);
Tensor mean(const Tensor& x, const OptDims& dims = std::nullopt, bool keepdim = false);
// Sum with NaN taken as 0 (integers: sum); the gradient is g where x is not NaN, 0 at NaN.
Tensor nansum(const Tensor& x, const OptDims& dims = std::nullopt, bool keepdim = false,
              std::optional<DType> dt = std::nullopt);
// Sum of a matrix's main diagonal; integer and bool inputs give int64.
Tensor trace(const Tensor& x);
Tensor prod(const Tensor& x, std::optional<int64_t> dim, bool keepdim);
Tensor amax(const Tensor& x, const OptDims& dims, bool keepdim);
Tensor amin(const Tensor& x, const OptDims& dims, bool keepdim);
std::pair<Tensor, Tensor> max_dim(const Tensor& x, int64_t dim, bool keepdim);
std::pair<Tensor, Tensor> min_dim(const Tensor& x, int64_t dim, bool keepdim);
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim);
Tensor var(const Tensor& x, const OptDims& dims, double correction, bool keepdim);
Tensor std_(const Tensor& x, const OptDims& dims, double correction, bool keepdim);
Tensor logsumexp(const Tensor& x, const OptDims& dims, bool keepdim);
Tensor norm(const Tensor& x, double p, const OptDims& dims, bool keepdim);
Tensor all(const Tensor& x, const OptDims& dims, bool keepdim);
Tensor any(const Tensor& x, const OptDims& dims, bool keepdim);
Tensor cumsum(const Tensor& x, int64_t dim);
// Running product (integers and bool give int64) and running log(sum(exp(x))) along dim (scan.cpp).
Tensor cumprod(const Tensor& x, int64_t dim);
Tensor logcumsumexp(const Tensor& x, int64_t dim);
// Running maximum (is_max) or minimum along dim and the indices where each was reached (cummax / cummin).
std::pair<Tensor, Tensor> cum_extreme(const Tensor& x, int64_t dim, bool is_max);
Tensor sum_to(const Tensor& g, const Shape& shape);  // reduces broadcast dims back to shape

// ---- linear algebra (linalg.cpp)
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor outer(const Tensor& a, const Tensor& b);
// The inner product of two 1-D tensors of one length and dtype (a 0-d tensor).
Tensor dot(const Tensor& a, const Tensor& b);

// ---- shapes and views (shape.cpp)
Tensor reshape(const Tensor& x, const IntList& shape);
Tensor view(const Tensor& x, const IntList& shape);
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
Tensor permute(const Tensor& x, const IntList& dims);
Tensor squeeze(const Tensor& x, const OptDims& dims);
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor expand(const Tensor& x, const IntList& shape);
Tensor flatten(const Tensor& x, int64_t start, int64_t end);
Tensor unflatten(const Tensor& x, int64_t dim, const IntList& sizes);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor slice(const Tensor& x, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop,
             int64_t step);
Tensor select(const Tensor& x, int64_t dim, int64_t index);
// The views x.select(dim, i) for every i, made in one pass.
TensorList unbind(const Tensor& x, int64_t dim);
Tensor cat(const TensorList& xs, int64_t dim);
Tensor stack(const TensorList& xs, int64_t dim);
TensorList split(const Tensor& x, const IntList& sizes, int64_t dim);
TensorList split_size(const Tensor& x, int64_t size, int64_t dim);
TensorList chunk(const Tensor& x, int64_t chunks, int64_t dim);
Tensor tril(const Tensor& x, int64_t k);
Tensor triu(const Tensor& x, int64_t k);
Tensor flip(const Tensor& x, const IntList& dims);
Tensor roll(const Tensor& x, const IntList& shifts, const IntList& dims);
Tensor repeat(const Tensor& x, const IntList& reps);
// Each slice of x along dim repeated `repeats` times (one count for all: a broadcast view copied once) or
// counts[i] times (a 1-d integer tensor of one count per slice, read on the host, then an index_select).
// Without dim, x is flattened first. output_size, when given, must be the result's length along dim.
Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size = std::nullopt);
Tensor repeat_interleave(const Tensor& x, const Tensor& counts, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size = std::nullopt);
// Gradient of slice(x, dim, start, .., step): zeros of `shape` with g written into the slice.
Tensor slice_backward(const Tensor& g, const Shape& shape, int64_t dim, int64_t start, int64_t step);
// The diagonal with `offset` of the matrices in dims d1 and d2, as a last dim: a view, as PyTorch's
// (writes through it reach x). Its vjp, diagonal_backward, puts g on that diagonal of zeros of `shape`
// (diag_embed); each is the other's vjp.
Tensor diagonal(const Tensor& x, int64_t offset, int64_t d1, int64_t d2);
Tensor diagonal_backward(const Tensor& g, const Shape& shape, int64_t offset, int64_t d1, int64_t d2);
// x's last dim on the diagonal (offset) of new square matrices in dims d1 and d2 of the result.
Tensor diag_embed(const Tensor& x, int64_t offset, int64_t d1, int64_t d2);

// ---- indexing (index.cpp)
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// scatter_reduce with reduce "prod": x (or 1 where index points, without include_self) times the src
// elements at index along dim.
Tensor scatter_reduce_prod(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, bool include_self);
// scatter_reduce with reduce "amax" (is_max) or "amin": src elements reduced into x at index along dim.
Tensor scatter_reduce_extreme(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, bool is_max,
                              bool include_self);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, double alpha);
// x[mask] for a bool mask of x's leading dims: the selected positions in row-major order.
Tensor mask_front(const Tensor& x, const Tensor& mask);
Tensor one_hot(const Tensor& x, int64_t num_classes);
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted);
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable);
// The k-th smallest (1-based) along dim and its index: the k-th of a stable sort (NaN largest). The value
// is x gathered at the index, so gradients flow to that element. With `nan_wins` (median), a slice
// holding a NaN gives its first NaN, as PyTorch's median does.
std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim, bool nan_wins = false);
Tensor nonzero(const Tensor& x);
// Advanced indexing with integer tensors for a leading run of dims (NumPy rules applied by caller):
// result[b..., rest...] = x[i0[b], i1[b], ..., rest...].
Tensor index_front(const Tensor& x, const TensorList& indices);
// out-of-place index_put on the leading dims: result = x; result[idx...] (+)= values.
Tensor index_put_front(const Tensor& x, const TensorList& indices, const Tensor& values, bool accumulate);
// x with its slices index[i] along dim replaced by src's slices i (the last write wins where an index
// repeats); index 1-d int64/int32, src of x's dtype and of x's shape with index.numel() along dim.
Tensor index_copy(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);

}  // namespace sx
