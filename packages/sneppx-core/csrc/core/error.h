// Exception types that the bindings map to Python's ValueError, TypeError, IndexError,
// RuntimeError, MemoryError and NotImplementedError. Messages start with the op name in brackets.
#pragma once
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace sx {

struct ValueError : std::runtime_error { using std::runtime_error::runtime_error; };
struct TypeError : std::runtime_error { using std::runtime_error::runtime_error; };
struct IndexError : std::runtime_error { using std::runtime_error::runtime_error; };
struct RuntimeError : std::runtime_error { using std::runtime_error::runtime_error; };
struct MemoryError : std::runtime_error { using std::runtime_error::runtime_error; };
// An op that exists but has no kernel on this device or backend (Python's NotImplementedError).
struct NotImplementedError : std::runtime_error { using std::runtime_error::runtime_error; };

using Shape = std::vector<int64_t>;

inline std::string shape_str(const Shape& s) {
  std::ostringstream o;
  o << "(";
  for (size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  if (s.size() == 1) o << ",";
  o << ")";
  return o.str();
}

// Builds a message from any streamable pieces: msg("[op] shapes ", a, " and ", b).
template <typename... Ts>
std::string msg(const Ts&... parts) {
  std::ostringstream o;
  (o << ... << parts);
  return o.str();
}

#define SX_CHECK(cond, ExcType, ...) \
  do {                               \
    if (!(cond)) throw ::sx::ExcType(::sx::msg(__VA_ARGS__)); \
  } while (0)

}  // namespace sx
