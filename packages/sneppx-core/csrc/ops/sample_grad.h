// Gamma and Dirichlet draws and the implicit reparameterisation gradients of draws (ops/sample_grad.cpp), for
// sneppx_core.distributions, on the host. Draws from g (the default generator when null).
#pragma once
#include "core/generator.h"
#include "core/tensor.h"

namespace sx {

// Gamma(alpha, 1) draws in alpha's dtype (float32 or float64, CPU), at least the dtype's smallest normal number,
// differentiable (first order) in alpha by the implicit gradient; NaN for NaN or negative alpha.
Tensor standard_gamma(const Tensor& alpha, Generator* g);
// Dirichlet draws over alpha's last dim (float32 or float64, CPU), differentiable (first order) in alpha by
// PyTorch's implicit gradient (the Beta marginals' gradients, projected onto the simplex).
Tensor sample_dirichlet(const Tensor& alpha, Generator* g);

// Without autograd, on float64 CPU tensors (of one shape):
// log of Gamma(alpha, 1) draws (the log keeps draws for tiny alpha from underflowing); NaN for NaN or
// negative alpha, inf for infinite alpha.
Tensor log_standard_gamma(const Tensor& alpha, Generator* g);

// dx/dalpha of Gamma(alpha, 1) draws x.
Tensor standard_gamma_grad(const Tensor& alpha, const Tensor& x);
// The scaled Beta(alpha, total - alpha) gradient -(dI_x/dalpha) / pdf(x) / (1 - x) that Dirichlet draws use
// (PyTorch's _dirichlet_grad quantity).
Tensor beta_sample_grad(const Tensor& x, const Tensor& alpha, const Tensor& total);

}  // namespace sx
