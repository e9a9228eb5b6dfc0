// Fills the CUDA slots of the kernel table. Slots left empty here raise NotImplementedError
// ("[name] has no kernel for device cuda:0") when an op reaches them with CUDA tensors.
#include "cuda/kernels.h"
#include "ops/nn.h"

namespace sx::cuda {

SX_REGISTER_KERNEL(kern::transfer, CUDA, &transfer);
SX_REGISTER_KERNEL(kern::fill, CUDA, &fill);
SX_REGISTER_KERNEL(kern::copy, CUDA, &copy);
SX_REGISTER_KERNEL(kern::binary, CUDA, &binary);
SX_REGISTER_KERNEL(kern::where, CUDA, &where);
SX_REGISTER_KERNEL(kern::clamp, CUDA, &clamp);
SX_REGISTER_KERNEL(kern::unary, CUDA, &unary);
SX_REGISTER_KERNEL(kern::unary_grad, CUDA, &unary_grad);
SX_REGISTER_KERNEL(kern::reduce, CUDA, &reduce);
SX_REGISTER_KERNEL(kern::arg_reduce, CUDA, &arg_reduce);
SX_REGISTER_KERNEL(kern::matmul, CUDA, &matmul);
SX_REGISTER_KERNEL(kern::softmax_fwd, CUDA, &softmax_fwd);
SX_REGISTER_KERNEL(kern::softmax_bwd, CUDA, &softmax_bwd);

}  // namespace sx::cuda
