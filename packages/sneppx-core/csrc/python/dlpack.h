// DLPack exchange (the protocol NumPy and PyTorch speak): the ABI structs and converters.
#pragma once
#include <pybind11/pybind11.h>

#include "core/tensor.h"

namespace py = pybind11;

namespace sx {

py::capsule to_dlpack(const Tensor& t);
Tensor from_dlpack(py::object obj);

}  // namespace sx
