// The discrete Fourier transform of one length n, run on L transforms at once (cpu/fft_kernels.cpp).
//
// Data is held lane-wise: element k of the L transforms is one Cx<V> (a vector of L real parts and one
// of L imaginary parts), so every butterfly is plain vector arithmetic with scalar twiddles and no
// shuffles. A transform is a sequence of Stockham passes (self-sorting: the result comes out in natural
// order, ping-ponging between two buffers) of radix 4, 2, 3 or a small odd prime; a length with a prime
// factor above kMaxRadix runs Bluestein's algorithm (a chirp times a circular convolution of a power of
// two length, done with two transforms of that length).
#pragma once
#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace sx::cpu::fft {

inline constexpr int kMaxRadix = 13;

// L lanes of T (plain T for one lane).
template <typename T, int L> struct Lanes {
  typedef T type __attribute__((vector_size(L * sizeof(T))));
};
template <typename T> struct Lanes<T, 1> {
  using type = T;
};

template <typename V> struct Cx {
  V re, im;
};

template <typename V> inline Cx<V> operator+(Cx<V> a, Cx<V> b) { return {a.re + b.re, a.im + b.im}; }
template <typename V> inline Cx<V> operator-(Cx<V> a, Cx<V> b) { return {a.re - b.re, a.im - b.im}; }
// a * (c + i s) for scalars c, s.
template <typename V, typename T> inline Cx<V> rotate(Cx<V> a, T c, T s) {
  return {a.re * c - a.im * s, a.re * s + a.im * c};
}
template <typename V> inline Cx<V> conj(Cx<V> a) { return {a.re, -a.im}; }
// -i a (Inv false) or i a (Inv true): the quarter turn of the forward or the inverse transform.
template <bool Inv, typename V> inline Cx<V> quarter(Cx<V> a) {
  if constexpr (Inv) return {-a.im, a.re};
  else return {a.im, -a.re};
}

template <typename T> struct Plan {
  int64_t n = 0;
  std::vector<int> radix;           // the passes' radices (product n); empty for Bluestein and for n = 1
  std::vector<T> wr, wi;            // e^{-2 pi i j / n}, j < n (direct plans)
  std::vector<T> hr, hi;            // e^{-pi i k / n}, k <= n: the twiddles of a real transform of 2n points
  std::shared_ptr<const Plan> sub;  // Bluestein: the plan of m, a power of two >= 2n - 1
  std::vector<T> cr, ci;            // Bluestein: the chirp e^{-pi i k^2 / n}, k < n
  std::vector<T> fr, fi;            // Bluestein: the transform of the conjugate chirp (length m), divided by m
  // Elements of room each of the two buffers needs.
  int64_t work() const { return sub ? sub->n : n; }
};

// One Stockham pass of radix R over the current length nn (stride s, nn * s = n): the R-point transforms of
// x[j + s (q + r m)] (r < R, m = nn / R), twiddled by w^{q t} (w = e^{-2 pi i / nn}), go to y[j + s (R q + t)].
template <bool Inv, int R, typename T, typename V>
void pass(const Plan<T>& p, int64_t nn, int64_t s, const Cx<V>* x, Cx<V>* y) {
  const int64_t m = nn / R;
  const T sign = Inv ? T(-1) : T(1);
  for (int64_t q = 0; q < m; ++q) {
    T c[R], sn[R];
    for (int t = 1; t < R; ++t) c[t] = p.wr[q * t * s], sn[t] = sign * p.wi[q * t * s];
    for (int64_t j = 0; j < s; ++j) {
      const Cx<V>* a = x + j + s * q;
      Cx<V>* b = y + j + s * R * q;
      const int64_t in = s * m;
      Cx<V> o[R];
      if constexpr (R == 2) {
        o[0] = a[0] + a[in];
        o[1] = a[0] - a[in];
      } else if constexpr (R == 4) {
        Cx<V> t0 = a[0] + a[2 * in], t1 = a[0] - a[2 * in], t2 = a[in] + a[3 * in], t3 = quarter<Inv>(a[in] - a[3 * in]);
        o[0] = t0 + t2;
        o[1] = t1 + t3;
        o[2] = t0 - t2;
        o[3] = t1 - t3;
      } else if constexpr (R == 3) {
        const T k = T(0.86602540378443864676);  // sqrt(3) / 2
        Cx<V> t = a[in] + a[2 * in], d = quarter<Inv>(a[in] - a[2 * in]), h = {a[0].re - t.re * T(0.5), a[0].im - t.im * T(0.5)};
        o[0] = a[0] + t;
        o[1] = {h.re + d.re * k, h.im + d.im * k};
        o[2] = {h.re - d.re * k, h.im - d.im * k};
      } else {  // a small odd prime: the R-point sums directly, w_R^{rt} = w^{(rt mod R) n / R}
        const int64_t step = p.n / R;
        for (int t = 0; t < R; ++t) {
          Cx<V> acc = a[0];
          for (int r = 1; r < R; ++r) {
            const int64_t e = (r * t % R) * step;
            acc = acc + rotate(a[r * in], p.wr[e], sign * p.wi[e]);
          }
          o[t] = acc;
        }
      }
      b[0] = o[0];
      if (q == 0) {
        for (int t = 1; t < R; ++t) b[t * s] = o[t];
      } else {
        for (int t = 1; t < R; ++t) b[t * s] = rotate(o[t], c[t], sn[t]);
      }
    }
  }
}

template <bool Inv, typename T, typename V> Cx<V>* run(const Plan<T>& p, Cx<V>* x, Cx<V>* y);

// Bluestein: X_k = c_k sum_j (x_j c_j) conj(c_{k-j}) with c_k = e^{-pi i k^2 / n}, the sum a circular
// convolution of length m. The inverse transform is conj(forward(conj(x))).
template <bool Inv, typename T, typename V> Cx<V>* bluestein(const Plan<T>& p, Cx<V>* x, Cx<V>* y) {
  const int64_t n = p.n, m = p.sub->n;
  for (int64_t k = 0; k < n; ++k) x[k] = rotate(Inv ? conj(x[k]) : x[k], p.cr[k], p.ci[k]);
  for (int64_t k = n; k < m; ++k) x[k] = Cx<V>{V{}, V{}};
  Cx<V>* r = run<false>(*p.sub, x, y);
  for (int64_t k = 0; k < m; ++k) r[k] = rotate(r[k], p.fr[k], p.fi[k]);
  Cx<V>* z = run<true>(*p.sub, r, r == x ? y : x);
  for (int64_t k = 0; k < n; ++k) {
    Cx<V> v = rotate(z[k], p.cr[k], p.ci[k]);
    z[k] = Inv ? conj(v) : v;
  }
  return z;
}

// The transform (unnormalised; Inv: with e^{+2 pi i jk / n}) of the n elements in x, using y (both of
// p.work() elements) as the second buffer. Returns the buffer that holds the result.
template <bool Inv, typename T, typename V> Cx<V>* run(const Plan<T>& p, Cx<V>* x, Cx<V>* y) {
  if (p.sub) return bluestein<Inv>(p, x, y);
  int64_t nn = p.n, s = 1;
  for (int R : p.radix) {
    switch (R) {
      case 4: pass<Inv, 4>(p, nn, s, x, y); break;
      case 2: pass<Inv, 2>(p, nn, s, x, y); break;
      case 3: pass<Inv, 3>(p, nn, s, x, y); break;
      case 5: pass<Inv, 5>(p, nn, s, x, y); break;
      case 7: pass<Inv, 7>(p, nn, s, x, y); break;
      case 11: pass<Inv, 11>(p, nn, s, x, y); break;
      default: pass<Inv, 13>(p, nn, s, x, y); break;  // 13: the only other radix make_plan gives
    }
    std::swap(x, y);
    nn /= R;
    s *= R;
  }
  return x;
}

// The plan of n (n >= 1). Twiddles are computed in double and rounded to T.
template <typename T> std::shared_ptr<const Plan<T>> make_plan(int64_t n) {
  auto p = std::make_shared<Plan<T>>();
  p->n = n;
  const double pi = 3.14159265358979323846;
  p->hr.resize(n + 1);
  p->hi.resize(n + 1);
  for (int64_t k = 0; k <= n; ++k) p->hr[k] = T(std::cos(pi * k / n)), p->hi[k] = T(-std::sin(pi * k / n));
  std::vector<int> radix;
  int64_t rest = n;
  for (; rest % 4 == 0; rest /= 4) radix.push_back(4);
  for (; rest % 2 == 0; rest /= 2) radix.push_back(2);
  for (int64_t f = 3; f <= kMaxRadix && rest > 1; f += 2)
    for (; rest % f == 0; rest /= f) radix.push_back(int(f));
  if (rest == 1) {
    p->radix = std::move(radix);
    p->wr.resize(n);
    p->wi.resize(n);
    for (int64_t j = 0; j < n; ++j) p->wr[j] = T(std::cos(2 * pi * j / n)), p->wi[j] = T(-std::sin(2 * pi * j / n));
    return p;
  }
  int64_t m = 1;
  while (m < 2 * n - 1) m *= 2;
  p->sub = make_plan<T>(m);
  p->cr.resize(n);
  p->ci.resize(n);
  for (int64_t k = 0; k < n; ++k) {
    const double a = pi * double((k * k) % (2 * n)) / double(n);  // k^2 mod 2n keeps the angle exact
    p->cr[k] = T(std::cos(a)), p->ci[k] = T(-std::sin(a));
  }
  std::vector<Cx<T>> f(m), g(m);
  for (int64_t k = 0; k < n; ++k) f[k] = {p->cr[k], -p->ci[k]};
  for (int64_t k = 1; k < n; ++k) f[m - k] = f[k];
  const Cx<T>* r = run<false>(*p->sub, f.data(), g.data());
  p->fr.resize(m);
  p->fi.resize(m);
  for (int64_t k = 0; k < m; ++k) p->fr[k] = r[k].re / T(m), p->fi[k] = r[k].im / T(m);
  return p;
}

}  // namespace sx::cpu::fft
