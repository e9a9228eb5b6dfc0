// Part 1 of the CPU unary kernels: the definitions whose UnaryOp index is 1 modulo kUnaryParts.
#include "cpu/unary_impl.h"

SX_UNARY_PART(1)
