// The kernel table per device. An op family declares a typed slot for each kernel it needs
// (SX_KERNEL in its header); every backend fills the slots it implements (SX_REGISTER_KERNEL in
// its own sources: cpu/ for the CPU, cuda/ for CUDA). Ops never name a backend: they call
// `slot(device)(args...)`, and a slot that a backend left empty raises NotImplementedError
// naming the kernel and the device.
//
// Kernel contract: operands are validated, broadcast and cast by the op; a kernel never
// allocates tensors and never throws from inside the thread pool.
#pragma once
#include <type_traits>

#include "core/device.h"
#include "core/error.h"

namespace sx {

inline constexpr int kDeviceTypes = 3;  // DeviceType::CPU, DeviceType::CUDA, DeviceType::Meta

// The meta device's kernel for every slot: the op has made its outputs (memoryless on meta), so a kernel
// that only writes them has nothing to do. Slots answering bool (an index check passed, a fast path taken)
// answer true: there were no values to find out of range. A kernel that returns a value (a count, a norm)
// needs the operands' values, which meta tensors do not have: KernelSlot raises instead.
template <typename Fn> struct MetaKernel;
template <typename R, typename... A> struct MetaKernel<R(A...)> {
  static R nothing(A...) {
    if constexpr (std::is_same_v<R, bool>) return true;
  }
  static R (*kernel())(A...) {
    if constexpr (std::is_void_v<R> || std::is_same_v<R, bool>) return &nothing;
    else return nullptr;
  }
};

template <typename Fn>
struct KernelSlot {
  const char* name;
  Fn* impl[kDeviceTypes] = {};

  // The kernel for `d`; raises when no backend registered one.
  Fn* operator()(Device d) const {
    if (d.type == DeviceType::Meta) [[unlikely]] {
      if (Fn* f = MetaKernel<Fn>::kernel()) return f;
      throw NotImplementedError(msg("[", name, "] needs the values of its operands, which meta tensors do not have"));
    }
    Fn* f = impl[int(d.type)];
    if (!f) throw NotImplementedError(msg("[", name, "] has no kernel for device ", d.str()));
    return f;
  }
  // Whether `slot(device)` gives a kernel: on meta, for the slots MetaKernel fills, so that ops take the
  // same path there as on a device with the kernel (and the same output geometry).
  bool has(DeviceType t) const {
    if (t == DeviceType::Meta) return MetaKernel<Fn>::kernel() != nullptr;
    return impl[int(t)] != nullptr;
  }
  bool set(DeviceType t, Fn* f) {
    impl[int(t)] = f;
    return true;
  }
};

// Declares a slot in a header: SX_KERNEL(k_softmax_fwd, void(const Tensor&, ...));
#define SX_KERNEL(slot, ...) extern constinit ::sx::KernelSlot<__VA_ARGS__> slot
// Defines it once, in the op family's .cpp (constant-initialised, so registration order is free).
#define SX_DEFINE_KERNEL(slot) constinit decltype(slot) slot{#slot}
// Fills a slot for one device type from a backend's source file, at load time.
#define SX_REGISTER_KERNEL(slot, dev, fn) \
  [[maybe_unused]] static const bool SX_CONCAT(sx_reg_, __LINE__) = (slot).set(::sx::DeviceType::dev, fn)
#define SX_CONCAT_(a, b) a##b
#define SX_CONCAT(a, b) SX_CONCAT_(a, b)

}  // namespace sx
