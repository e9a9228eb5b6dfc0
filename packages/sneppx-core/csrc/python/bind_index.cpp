// Python indexing: ints, slices (with steps), None, Ellipsis, bool masks and integer tensors,
// following NumPy's rules for where advanced-index dims land.
#include "python/convert.h"

#include "ops/common.h"
#include "ops/ops.h"

namespace sx {
using namespace py_conv;

namespace {

struct Parsed {
  Tensor view;                 // after basic indexing
  std::vector<int64_t> dims;   // dims of `view` indexed by tensors
  TensorList indices;
};

bool is_bool_seq(py::handle h) {
  if (!py::isinstance<py::list>(h) || py::len(h) == 0) return false;
  for (auto v : h) if (!PyBool_Check(v.ptr())) return false;
  return true;
}

// One element of an index after conversion: None, Ellipsis, an int, a slice or a tensor.
struct Item {
  enum Kind { NewAxis, Dots, Int, Slice, Array } kind;
  py::ssize_t start = 0, stop = 0, step = 1;
  Tensor t;
  py::handle h;  // the int itself (borrowed from the index, which outlives parsing)
};

// An int index as int64; anything past int64 cannot be in range of any dim.
int64_t index_int(py::handle h, int64_t size, int64_t dim) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
  if (overflow || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    throw IndexError(msg("[index] index ", std::string(py::str(h)), " is out of bounds for dimension ", dim,
                         " with size ", size));
  }
  return int64_t(v);
}

Item convert(py::handle it) {
  Item r{Item::Array};
  if (it.is_none()) {
    r.kind = Item::NewAxis;
  } else if (it.ptr() == Py_Ellipsis) {
    r.kind = Item::Dots;
  } else if (PyLong_Check(it.ptr()) && !PyBool_Check(it.ptr())) {
    r.kind = Item::Int;
    r.h = it;
  } else if (PySlice_Check(it.ptr())) {
    r.kind = Item::Slice;
    // Clamps bounds past the int64 range (x[10**30:]) as Python's own sequences do.
    if (PySlice_Unpack(it.ptr(), &r.start, &r.stop, &r.step) < 0) throw py::error_already_set();  // TypeError
    SX_CHECK(r.step > 0, ValueError, "[index] slice step must be positive, got ", int64_t(r.step), "; use flip()");
  } else if (is_tensor(it)) {
    r.t = it.cast<Tensor>();
  } else if (PyRange_Check(it.ptr())) {  // x[range(3)]: the range's ints, as a list of them
    r.t = from_data(py::list(py::reinterpret_borrow<py::object>(it)), DType::Int64);
  } else if (is_bool_seq(it)) {
    r.t = from_data(it, DType::Bool);
  } else if (py::isinstance<py::list>(it) || py::isinstance<py::tuple>(it) || py::isinstance<py::array>(it) ||
             py::hasattr(it, "__index__")) {
    r.t = from_data(it, std::nullopt);  // may be a bool array of any rank (NumPy masks, nested lists)
  } else {
    throw IndexError(msg("[index] unsupported index type ", std::string(py::str(py::type::of(it).attr("__name__")))));
  }
  return r;
}

Parsed parse(const Tensor& x, py::handle idx) {
  std::vector<Item> items;
  if (py::isinstance<py::tuple>(idx)) {
    for (auto it : py::reinterpret_borrow<py::tuple>(idx)) items.push_back(convert(it));
  } else {
    items.push_back(convert(idx));
  }
  // Every index is converted before counting, so a mask's rank is known whatever form it came in.
  int64_t consumed = 0;
  bool seen_ellipsis = false;
  for (auto& it : items) {
    if (it.kind == Item::NewAxis || it.kind == Item::Dots) continue;
    if (it.kind == Item::Array && it.t->dtype == DType::Bool) consumed += it.t->dim();  // x[True] consumes none
    else consumed += 1;
  }
  SX_CHECK(consumed <= x->dim(), IndexError, "[index] too many indices for a tensor of ", x->dim(), " dims (got ",
           consumed, ") with shape ", shape_str(x->shape));
  Parsed p;
  p.view = x;
  int64_t dim = 0;
  for (auto& it : items) {
    if (it.kind == Item::NewAxis) {
      p.view = unsqueeze(p.view, dim++);
    } else if (it.kind == Item::Dots) {
      SX_CHECK(!seen_ellipsis, IndexError, "[index] an index can only have a single ellipsis");
      seen_ellipsis = true;
      dim += x->dim() - consumed;
    } else if (it.kind == Item::Int) {
      SX_CHECK(dim < p.view->dim(), IndexError, "[index] too many indices for a tensor of shape ", shape_str(x->shape));
      p.view = select(p.view, dim, index_int(it.h, p.view->shape[dim], dim));
    } else if (it.kind == Item::Slice) {
      SX_CHECK(dim < p.view->dim(), IndexError, "[index] too many indices for a tensor of shape ", shape_str(x->shape));
      p.view = slice(p.view, dim, int64_t(it.start), int64_t(it.stop), int64_t(it.step));
      ++dim;
    } else {
      Tensor t = it.t;
      if (t->dtype == DType::Bool) {
        int64_t k = std::max<int64_t>(t->dim(), 1);
        SX_CHECK(dim + t->dim() <= p.view->dim(), IndexError, "[index] boolean mask of shape ", shape_str(t->shape),
                 " has more dims than remain at dim ", dim, " of a tensor of shape ", shape_str(x->shape));
        for (int64_t i = 0; i < t->dim(); ++i)
          SX_CHECK(t->shape[i] == p.view->shape[dim + i], IndexError, "[index] boolean mask of shape ", shape_str(t->shape),
                   " does not match the indexed shape at dim ", dim + i, " (size ", p.view->shape[dim + i], ")");
        if (t->dim() == 0) {  // x[True]: add a dim of size 1 (or 0)
          p.view = unsqueeze(p.view, dim);
          t = reshape(t, {1});
        }
        Tensor nz = nonzero(t);
        for (int64_t i = 0; i < k; ++i) {
          p.dims.push_back(dim + i);
          p.indices.push_back(select(nz, 1, i));
        }
        dim += k;
      } else {
        SX_CHECK(!is_floating(t->dtype), IndexError, "[index] tensors used as indices must be integer or bool, got ", describe(t));
        SX_CHECK(dim < p.view->dim(), IndexError, "[index] too many indices for a tensor of shape ", shape_str(x->shape));
        p.dims.push_back(dim++);
        p.indices.push_back(t);
      }
    }
  }
  return p;
}

// Moves the indexed dims to the front, in order; returns the permutation.
IntList front_perm(const Tensor& v, const std::vector<int64_t>& dims) {
  IntList perm(dims.begin(), dims.end());
  for (int64_t i = 0; i < v->dim(); ++i)
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) perm.push_back(i);
  return perm;
}

bool adjacent(const std::vector<int64_t>& dims) {
  for (size_t i = 1; i < dims.size(); ++i) if (dims[i] != dims[i - 1] + 1) return false;
  return true;
}

// Permutation that takes the index_front result (B..., rest...) to NumPy's layout.
IntList result_perm(int64_t nb, int64_t ndim, const std::vector<int64_t>& dims) {
  IntList perm;
  if (!adjacent(dims) || dims[0] == 0) {
    for (int64_t i = 0; i < ndim; ++i) perm.push_back(i);
    return perm;
  }
  int64_t before = dims[0];
  for (int64_t i = 0; i < before; ++i) perm.push_back(nb + i);
  for (int64_t i = 0; i < nb; ++i) perm.push_back(i);
  for (int64_t i = nb + before; i < ndim; ++i) perm.push_back(i);
  return perm;
}

}  // namespace

Tensor getitem(const Tensor& x, py::handle idx) {
  if (is_tensor(idx)) {  // x[mask] with a mask of leading dims: one selecting pass, no index tensors
    Tensor m = idx.cast<Tensor>();
    if (m->dtype == DType::Bool && m->dim() >= 1 && m->dim() <= x->dim()) return mask_front(x, m);
  }
  Parsed p = parse(x, idx);
  if (p.dims.empty()) return p.view;
  IntList fp = front_perm(p.view, p.dims);
  bool in_order = true;
  for (size_t i = 0; i < fp.size(); ++i) in_order = in_order && fp[i] == int64_t(i);
  Tensor front = in_order ? p.view : permute(p.view, fp);
  Tensor r = index_front(front, p.indices);
  int64_t nb = r->dim() - (front->dim() - int64_t(p.dims.size()));
  IntList perm = result_perm(nb, r->dim(), p.dims);
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
  return identity ? r : permute(r, perm);
}

void setitem(const Tensor& x, py::handle idx, py::handle value) {
  Tensor v = is_tensor(value) ? value.cast<Tensor>() : from_data(value, x->dtype);
  Parsed p = parse(x, idx);
  if (p.dims.empty()) {
    assign_inplace(p.view, v, "setitem");
    return;
  }
  SX_CHECK(!(grad_mode::enabled() && v->requires_grad), RuntimeError,
           "[setitem] writing a tensor that requires grad through tensor indices is not tracked by autograd; "
           "use index_put/scatter out of place or wrap the write in no_grad()");
  if (p.indices.size() == 1 && p.indices[0]->dim() == 1 && index_put_into(p.view, p.dims[0], p.indices[0], v)) return;
  Tensor front = permute(p.view, front_perm(p.view, p.dims));
  // Shape of x[idx] in NumPy's layout, then the value in the (B..., rest...) layout.
  Shape b;
  try {
    for (auto& i : p.indices) b = broadcast_shapes(b, i->shape, "setitem");
  } catch (const ValueError& e) {
    throw IndexError(msg(e.what(), " (shape mismatch between index tensors)"));
  }
  Shape fs = b;
  fs.insert(fs.end(), front->shape.begin() + int64_t(p.dims.size()), front->shape.end());
  IntList perm = result_perm(int64_t(b.size()), int64_t(fs.size()), p.dims), inv(perm.size());
  Shape res_shape;
  for (size_t i = 0; i < perm.size(); ++i) res_shape.push_back(fs[size_t(perm[i])]), inv[size_t(perm[i])] = int64_t(i);
  SX_CHECK(broadcast_shapes(res_shape, v->shape, "setitem") == res_shape, ValueError, "[setitem] value of shape ",
           shape_str(v->shape), " cannot be broadcast to the indexed shape ", shape_str(res_shape));
  Tensor vf = permute(expand_view(cast_nograd(v, x->dtype), res_shape), inv);
  Tensor updated = index_put_front(front, p.indices, vf, false);
  assign_inplace(front, updated, "setitem");
}

}  // namespace sx
