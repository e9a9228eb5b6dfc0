// Part 2 of the CPU unary kernels: the definitions whose UnaryOp index is 2 modulo kUnaryParts.
#include "cpu/unary_impl.h"

SX_UNARY_PART(2)
