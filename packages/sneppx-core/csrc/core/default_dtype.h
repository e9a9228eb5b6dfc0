// The default floating dtype (torch.set_default_dtype): what Python floats become, and what integer
// operands of ops with floating results (true division, sqrt, sigmoid, ...) are promoted to. float32 unless
// set; process-wide, as in PyTorch.
#pragma once
#include "core/dtype.h"

namespace sx {
DType default_float_dtype();
void set_default_float_dtype(DType d);  // a floating dtype (checked by the caller)
}  // namespace sx
