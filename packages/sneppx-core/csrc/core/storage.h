// Reference-counted, 64-byte aligned memory with a device and a version counter.
#pragma once
#include <atomic>
#include <cstddef>
#include <memory>

#include "core/device.h"

namespace sx {

// Inference mode of the calling thread (sneppx_core.inference_mode): storage allocated while it is on
// belongs to inference tensors (Tensor.is_inference(), true for every view of them too).
bool inference_mode_enabled();
void set_inference_mode(bool on);

struct Storage {
  void* data = nullptr;
  size_t nbytes = 0;
  Device device;
  // Bumped by every in-place write; autograd compares it with the value seen at save time.
  // Atomic because kernels may run with the GIL released.
  std::atomic<uint32_t> version{0};
  // Memory we must not write: a read-only NumPy array (np.frombuffer(bytes), mmap_mode="r") or a
  // DLPack tensor flagged read-only. In-place writes check it first (TensorImpl::check_writable).
  bool read_only = false;
  // Page-locked host memory (Tensor.pin_memory()): copies to and from a GPU may run asynchronously.
  bool pinned = false;
  // Allocated in inference mode (see inference_mode_enabled).
  bool inference = inference_mode_enabled();
  // Keeps foreign memory (a NumPy array, a DLPack capsule) alive; empty for our own blocks.
  std::shared_ptr<void> owner;

  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage();

  // Allocates nbytes on device (contents undefined).
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device);
  // Allocates nbytes of page-locked CPU memory (needs a visible GPU).
  static std::shared_ptr<Storage> allocate_pinned(size_t nbytes);
  // Wraps memory owned by someone else; owner is released when the storage dies.
  static std::shared_ptr<Storage> wrap(void* data, size_t nbytes, Device device, std::shared_ptr<void> owner);
};

// The CPU allocator: 64-byte aligned blocks; blocks of 32 KiB and more are cached for reuse so
// that temporaries do not pay fresh page faults on every op (from malloc's mmap, or from its heap
// top, which glibc trims once two freed temporaries of a few hundred KiB lie there).
void* cpu_alloc(size_t nbytes);
void cpu_free(void* p, size_t nbytes);
// Returns cached blocks to the system; returns the number of bytes released.
size_t cpu_empty_cache();
size_t cpu_cached_bytes();

}  // namespace sx
