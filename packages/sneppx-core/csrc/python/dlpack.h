// DLPack exchange (the protocol NumPy and PyTorch speak): the ABI structs and converters.
#pragma once
#include <pybind11/pybind11.h>

#include "core/tensor.h"

namespace py = pybind11;

namespace sx {

// versioned: a DLPack 1.0 capsule ("dltensor_versioned"), else the legacy "dltensor" one.
py::capsule to_dlpack(const Tensor& t, bool versioned = false);
Tensor from_dlpack(py::object obj);

}  // namespace sx
