// The special functions of the unary formula sheet (ops/unary_defs.h): lgamma, digamma, polygamma
// (through the Hurwitz zeta function), erfinv, the modified Bessel functions i0 and i1, and frexp's two
// parts. Each computes
// in double whatever the tensor's dtype (float32, float16 and bfloat16 round the double result once),
// on the host and, compiled by nvcc, on the device. The algorithms are the Cephes ones that PyTorch
// also uses (digamma by recurrence and its asymptotic series, zeta by Euler-Maclaurin summation, i0 /
// i1 by Chebyshev expansions); erfinv refines a rational approximation with Newton steps on erf (on
// erfc in the tails, where erf(x) is too close to 1 to resolve x).
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/dtype.h"

// Coefficient tables: static on the host (read from memory once), plain locals on the device.
#if defined(__CUDA_ARCH__)
#define SX_COEFFS const
#else
#define SX_COEFFS static constexpr
#endif

namespace sx::spm {
#ifdef __CUDACC__
inline namespace device {
#else
inline namespace host {
#endif

constexpr double kPi = 3.14159265358979323846264338327950288;
constexpr double kMachEp = 1.11022302462515654042e-16;

// Clenshaw's recurrence for a Chebyshev series (Cephes' chbevl).
SX_HD inline double chbevl(double x, const double* c, int n) {
  double b0 = c[0], b1 = 0, b2 = 0;
  for (int i = 1; i < n; ++i) {
    b2 = b1;
    b1 = b0;
    b0 = x * b1 - b2 + c[i];
  }
  return 0.5 * (b0 - b2);
}

SX_HD inline double lgamma(double x) { return ::lgamma(x); }

// psi(x): -x reflected for negative x, shifted up to x >= 10 by the recurrence psi(x) = psi(x + 1) - 1/x,
// then the asymptotic series. +-inf at +-0 (the sign of the pole's side), NaN at the negative integers.
SX_HD inline double digamma(double x) {
  if (x == 0) return ::copysign(INFINITY, -x);
  double result = 0;
  if (x < 0) {
    if (x == ::trunc(x)) return NAN;  // -inf included
    double r = x - ::trunc(x);        // psi(x) = psi(1 - x) - pi / tan(pi x), tan on the fractional part
    result = -kPi / ::tan(kPi * r);
    x = 1 - x;
  }
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  if (x == 10) return result + 2.25175258906672110764;
  SX_COEFFS double A[] = {8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
                          -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
                          8.33333333333333333333E-2};
  double y = 0;
  if (x < 1.0e17) {
    double z = 1 / (x * x), p = A[0];
    for (int i = 1; i < 7; ++i) p = p * z + A[i];
    y = z * p;
  }
  return result + ::log(x) - 0.5 / x - y;
}

// The Hurwitz zeta function sum_k (k + q)^-s for s > 1 (Cephes' zeta: direct sum up to q + 9, then
// Euler-Maclaurin). inf at s == 1 and at the poles q = 0, -1, ...; NaN for s < 1 and for q < 0 with
// a fractional s; 0 at q = inf. q below -2^22 would take millions of terms: NaN.
// (2j)! / B_2j for j = 1..12: the Euler-Maclaurin tail's divisors (shared with cpu/vspecial.h).
#define SX_ZETA_A                                                                                            \
  12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,                 \
      -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15, 1.8152105401943546773e17, \
      -7.1661652561756670113e18
SX_HD inline double zeta(double s, double q) {
  SX_COEFFS double A[] = {SX_ZETA_A};
  if (s == 1) return INFINITY;
  if (s < 1 || s != s || q != q) return NAN;
  if (q == INFINITY) return 0;
  if (q <= 0) {
    if (q == ::floor(q)) return INFINITY;
    if (s != ::floor(s) || q < -4194304.0) return NAN;
  }
  double sum = ::pow(q, -s), a = q, b = 0;
  int i = 0;
  while (i < 9 || a <= 9.0) {
    i += 1;
    a += 1;
    b = ::pow(a, -s);
    sum += b;
    if (-kMachEp * sum < b && b < kMachEp * sum) return sum;
  }
  double w = a, k = 0, t;
  sum += b * w / (s - 1);
  sum -= 0.5 * b;
  a = 1;
  for (int j = 0; j < 12; ++j) {
    a *= s + k;
    b /= w;
    t = a * b / A[j];
    sum += t;
    if (::fabs(t / sum) < kMachEp) return sum;
    k += 1;
    a *= s + k;
    b /= w;
    k += 1;
  }
  return sum;
}

// psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 1; digamma for n == 0. n arrives as a double
// (the sheet's parameter) holding a non-negative integer.
SX_HD inline double polygamma(double x, double n) {
  if (n == 0) return digamma(x);
  double sign = ::fmod(n, 2.0) == 1.0 ? 1.0 : -1.0;
  return sign * ::exp(::lgamma(n + 1)) * zeta(n + 1, x);
}

// erf^-1(y) on [-1, 1]: NaN outside, +-inf at +-1. A rational first guess (accurate to about 1e-7),
// then Newton steps on erf(x) = y, or, for |y| > 0.7, on erfc(x) = 1 - |y| (exact there), whose
// relative accuracy keeps the tails right to the last bits (four steps: the first guess is coarsest
// there).
SX_HD inline double erfinv(double y) {
  SX_COEFFS double a[] = {0.886226899, -1.645349621, 0.914624893, -0.140543331};
  SX_COEFFS double b[] = {-2.118377725, 1.442710462, -0.329097515, 0.012229801};
  SX_COEFFS double c[] = {-1.970840454, -1.624906493, 3.429567803, 1.641345311};
  SX_COEFFS double d[] = {3.543889200, 1.637067800};
  constexpr double k = 1.12837916709551257390;  // 2 / sqrt(pi)
  double ya = ::fabs(y);
  if (!(ya <= 1)) return NAN;
  if (ya == 1) return ::copysign(INFINITY, y);
  double x;
  if (ya <= 0.7) {
    double z = y * y;
    double num = ((a[3] * z + a[2]) * z + a[1]) * z + a[0];
    double den = (((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + 1.0;
    x = y * num / den;
    for (int i = 0; i < 3; ++i) x -= (::erf(x) - y) / (k * ::exp(-x * x));
    return x;
  }
  double w = 1 - ya;  // exact: ya >= 0.5
  double z = ::sqrt(-::log(w / 2.0));
  double num = ((c[3] * z + c[2]) * z + c[1]) * z + c[0];
  double den = (d[1] * z + d[0]) * z + 1.0;
  x = num / den;
  for (int i = 0; i < 4; ++i) x += (::erfc(x) - w) / (k * ::exp(-x * x));
  return ::copysign(x, y);
}

// Cephes' Chebyshev coefficients of exp(-x) i0(x) on [0, 8] (in x / 2 - 2) and of exp(-x) sqrt(x) i0(x)
// on (8, inf) (in 32 / x - 2), shared with the float kernel in cpu/vspecial.h.
#define SX_I0_A \
  -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16, \
  1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14, \
  -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11, \
  9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9, \
  -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7, \
  1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5, \
  -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4, \
  1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2, \
  -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2, \
  1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1
#define SX_I0_B \
  -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17, \
  3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16, \
  1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15, \
  -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13, \
  7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11, \
  -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10, \
  3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7, 2.89137052083475648297E-6, \
  6.88975834691682398426E-5, 3.36911647825569408990E-3, 8.04490411014108831608E-1

// Modified Bessel functions of the first kind, orders 0 and 1 (Cephes' i0 and i1: Chebyshev expansions
// of exp(-x) I(x) on [0, 8] and of exp(-x) sqrt(x) I(x) on (8, inf); +-inf at +-inf).
SX_HD inline double i0(double x) {
  SX_COEFFS double A[] = {SX_I0_A};
  SX_COEFFS double B[] = {SX_I0_B};
  x = ::fabs(x);
  if (x == INFINITY) return x;
  if (x <= 8.0) return ::exp(x) * chbevl(x / 2.0 - 2.0, A, 30);
  return ::exp(x) * chbevl(32.0 / x - 2.0, B, 25) / ::sqrt(x);
}

SX_HD inline double i1(double x) {
  SX_COEFFS double A[] = {
      2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
      -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
      3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
      -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
      9.38153738649577178388E-9,  -4.44505912879632808065E-8, 2.00329475355213526229E-7,
      -8.56872026469545474066E-7, 3.47025130813767847674E-6,  -1.32731636560394358279E-5,
      4.78156510755005422638E-5,  -1.61760815825896745588E-4, 5.12285956168575772895E-4,
      -1.51357245063125314899E-3, 4.15642294431288815669E-3,  -1.05640848946261981558E-2,
      2.47264490306265168283E-2,  -5.29459812080949914269E-2, 1.02643658689847095384E-1,
      -1.76416518357834055153E-1, 2.52587186443633654823E-1};
  SX_COEFFS double B[] = {
      7.51729631084210481353E-18,  4.41434832307170791151E-18,  -4.65030536848935832153E-17,
      -3.20952592199342395980E-17, 2.96262899764595013876E-16,  3.30820231092092828324E-16,
      -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
      4.27244001671195135429E-14,  -2.10154184277266431302E-14, -4.08355111109219731823E-13,
      -7.19855177624590851209E-13, 2.03562854414708950722E-12,  1.41258074366137813316E-11,
      3.25260358301548823856E-11,  -1.89749581235054123450E-11, -5.58974346219658380687E-10,
      -3.83538038596423702205E-9,  -2.63146884688951950684E-8,  -2.51223623787020892529E-7,
      -3.88256480887769039346E-6,  -1.10588938762623716291E-4,  -9.76109749136146840777E-3,
      7.78576235018280120474E-1};
  double z = ::fabs(x), r;
  if (z == INFINITY) return x;
  if (z <= 8.0) r = chbevl(z / 2.0 - 2.0, A, 29) * z * ::exp(z);
  else r = ::exp(z) * chbevl(32.0 / z - 2.0, B, 25) / ::sqrt(z);
  return x < 0 ? -r : r;
}

// frexp's two parts, x = m 2^e with 0.5 <= |m| < 1 (m = x, e = 0 for zeros, infinities and NaN).
SX_HD inline double frexp_mantissa(double x) {
  if (x == 0 || x - x != 0) return x;
  int e;
  return ::frexp(x, &e);
}
SX_HD inline double frexp_exponent(double x) {
  if (x == 0 || x - x != 0) return 0;
  int e;
  ::frexp(x, &e);
  return double(e);
}

}  // inline namespace
}  // namespace sx::spm
