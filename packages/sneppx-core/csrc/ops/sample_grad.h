// Gamma draws and the implicit reparameterisation gradients of draws (ops/sample_grad.cpp), for
// sneppx_core.distributions: float64 CPU tensors (of one shape), no autograd.
#pragma once
#include "core/generator.h"
#include "core/tensor.h"

namespace sx {

// log of Gamma(alpha, 1) draws (the log keeps draws for tiny alpha from underflowing); NaN for NaN or
// negative alpha, inf for infinite alpha. Draws from g (the default generator when null).
Tensor log_standard_gamma(const Tensor& alpha, Generator* g);

// dx/dalpha of Gamma(alpha, 1) draws x.
Tensor standard_gamma_grad(const Tensor& alpha, const Tensor& x);
// The scaled Beta(alpha, total - alpha) gradient -(dI_x/dalpha) / pdf(x) / (1 - x) that Dirichlet draws use
// (PyTorch's _dirichlet_grad quantity).
Tensor beta_sample_grad(const Tensor& x, const Tensor& alpha, const Tensor& total);

}  // namespace sx
