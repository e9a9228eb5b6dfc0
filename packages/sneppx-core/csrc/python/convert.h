// Conversions between Python objects and core types, shared by the binding files.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "ops/ops.h"

namespace py = pybind11;

namespace pybind11::detail {
// None is not a Tensor. pybind11's shared_ptr caster turns None into a null holder, which every op
// would dereference (sx.mul(None, 0) crashed the interpreter); rejecting it here makes overload
// resolution raise a TypeError instead. Every binding file includes this header, so all agree.
template <>
class type_caster<std::shared_ptr<sx::TensorImpl>>
    : public copyable_holder_caster<sx::TensorImpl, std::shared_ptr<sx::TensorImpl>> {
 public:
  bool load(handle src, bool convert) {
    if (src.is_none()) return false;
    return copyable_holder_caster<sx::TensorImpl, std::shared_ptr<sx::TensorImpl>>::load(src, convert);
  }
};
}  // namespace pybind11::detail

namespace sx::py_conv {

// The Python callable of a gradient hook. A named type rather than a lambda so that the Tensor type's
// tp_traverse/tp_clear (module.cpp) can find, through std::function::target, the callables a tensor
// owns and show them to Python's cycle collector: a hook that captures its own tensor is a cycle
// through C++ that the GC could not otherwise see.
// The callable is held through a shared holder that takes the GIL to let go of it, since a graph
// may be freed inside a kernel that runs with the GIL released.
using PyRef = std::shared_ptr<py::object>;
PyRef py_ref(py::object o);
struct PyGradHook {
  PyRef fn;
  Tensor operator()(const Tensor& g) const;  // None keeps the gradient; anything else must be a Tensor
};
struct PyPostAccHook {
  PyRef fn;
  void operator()(const Tensor& leaf) const;
};

// Releases the GIL for the rest of a scope when an op's work is large enough to let other Python
// threads (data loading, communication, user threads) run meanwhile; for small tensors the hand-over
// would cost more than the op. Arguments must be converted from Python objects before this point.
class ReleaseGilIf {
 public:
  explicit ReleaseGilIf(bool heavy) : state_(heavy ? PyEval_SaveThread() : nullptr) {}
  ~ReleaseGilIf() {
    if (state_) PyEval_RestoreThread(state_);
  }
  ReleaseGilIf(const ReleaseGilIf&) = delete;
  ReleaseGilIf& operator=(const ReleaseGilIf&) = delete;

 private:
  PyThreadState* state_;
};
inline bool heavy(const Tensor& t) { return t && t->numel() >= 16384; }
inline bool heavy(const TensorList& ts) {
  int64_t n = 0;
  for (auto& t : ts) n += t ? t->numel() : 0;
  return n >= 16384;
}

DType parse_dtype(py::handle h);                 // Dtype, "float32", numpy dtype or None -> error
std::optional<DType> opt_dtype(py::handle h);    // None -> nullopt
Device parse_device(py::handle h);               // "cpu", "cuda:0", Device, None -> cpu
bool is_tensor(py::handle h);
bool is_scalar(py::handle h);
Scalar to_scalar(py::handle h, const char* op);
// Whether x OP h should return NotImplemented so that Python calls h's reflected method: h is none
// of the things operand() takes and its type defines `reflected` (sparse tensors do).
bool defers_to(py::handle h, const char* reflected);
// mm/matmul called with something other than two tensors: the sparse tensors' handler registered by
// _C._set_sparse_call (sneppx_core._sparse_make) takes the call, or a TypeError names the op and types.
py::object sparse_call(const char* op, py::handle a, py::handle b);
void set_sparse_call(py::handle fn);
// A Tensor operand for a binary op: tensors pass through, numbers become wrapped 0-d tensors.
Tensor operand(py::handle h, const Tensor& other, const char* op);
// The tensor an in-place op on x computes from: a clone when autograd tracks x (the op may save its
// input for backward, and the write would invalidate it), else x itself.
Tensor inplace_source(const Tensor& x);
// In-place ops write their result into x only where PyTorch's can_cast allows it: not a float
// result into an integer or bool tensor, nor an integer result into a bool one.
void check_inplace_cast(const char* op, DType result, DType out);
// x op= y: computes `compute(x)` out of place, checks the cast, writes back into x (unless the
// result already is x: add_ and sub_ with alpha may write into x directly).
template <typename F>
Tensor inplace_with(const char* op, const Tensor& x, F compute) {
  // x.mul_(w) under autograd computes from a clone: w's gradient needs the old x.
  Tensor r = compute(inplace_source(x));
  if (r == x) return x;
  check_inplace_cast(op, r->dtype, x->dtype);
  assign_inplace(x, r, op);
  return x;
}
// x + alpha * y (x - alpha * y when `subtract`) for add and sub's alpha: a number takes add_scaled's
// one pass (written into x when `into_x` and add_scaled finds it safe), another alpha (a tensor)
// multiplies y as an operand first.
Tensor add_alpha(const Tensor& x, const Tensor& y, py::handle alpha, bool subtract, const char* op,
                 bool into_x = false);
// Shape from varargs (zeros(2, 3)) or one sequence (zeros((2, 3))).
IntList shape_args(const py::args& args, const char* op);
IntList int_list(py::handle h, const char* op);  // int or sequence of ints
OptDims opt_dims(py::handle h, const char* op);  // None, int or sequence
Generator* opt_generator(py::handle h);
// Copies arbitrary Python data (nested lists, scalars, arrays, Tensors) into a new tensor.
Tensor from_data(py::handle data, std::optional<DType> dtype);
Tensor from_numpy(py::array a);                  // shares memory
py::array to_numpy(const Tensor& t);              // shares memory
py::object tolist(const Tensor& t);

}  // namespace sx::py_conv
