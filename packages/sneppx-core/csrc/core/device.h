// Devices: every storage carries one, and kernels are chosen per device.
#pragma once
#include <string>

#include "core/error.h"

namespace sx {

enum class DeviceType : uint8_t { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const {
    if (type == DeviceType::CPU) return "cpu";
    return "cuda:" + std::to_string(index);
  }
  // Parses "cpu", "cuda" and "cuda:N".
  static Device parse(const std::string& s) {
    if (s == "cpu") return {};
    if (s == "cuda") return {DeviceType::CUDA, 0};
    if (s.rfind("cuda:", 0) == 0) {
      try {
        return {DeviceType::CUDA, std::stoi(s.substr(5))};
      } catch (...) {
      }
    }
    throw ValueError("[device] expected 'cpu', 'cuda' or 'cuda:N', got '" + s + "'");
  }
};

}  // namespace sx
