// Devices: every storage carries one, and kernels are chosen per device.
#pragma once
#include <string>

#include "core/error.h"

namespace sx {

// Meta: tensors with a shape, a dtype and strides but no memory (PyTorch's meta device). Ops on them
// compute their outputs' geometry and run no kernel (KernelSlot in core/dispatch.h); reading their values
// raises (TensorImpl::raw).
enum class DeviceType : uint8_t { CPU, CUDA, Meta };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  // "cpu", "cuda" or "meta": the type alone.
  const char* type_name() const { return type == DeviceType::CPU ? "cpu" : type == DeviceType::CUDA ? "cuda" : "meta"; }
  std::string str() const {
    if (type != DeviceType::CUDA) return type_name();
    return "cuda:" + std::to_string(index);
  }
  // Parses "cpu", "meta", "cuda" and "cuda:N".
  static Device parse(const std::string& s) {
    if (s == "cpu") return {};
    if (s == "meta") return {DeviceType::Meta, 0};
    if (s == "cuda") return {DeviceType::CUDA, 0};
    if (s.rfind("cuda:", 0) == 0) {
      try {
        return {DeviceType::CUDA, std::stoi(s.substr(5))};
      } catch (...) {
      }
    }
    throw ValueError("[device] expected 'cpu', 'cuda', 'cuda:N' or 'meta', got '" + s + "'");
  }
};

}  // namespace sx
