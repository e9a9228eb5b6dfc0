#include "core/storage.h"

#include "core/cuda_api.h"

#include <cstdint>
#include <cstdlib>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <iterator>
#include <map>
#include <mutex>
#include <vector>

namespace sx {

namespace {
constexpr size_t kAlign = 64;
constexpr size_t kCacheMin = 32 * 1024;
constexpr size_t kCacheMax = size_t(1) << 30;  // never hold more than 1 GiB idle

struct BlockCache {
  std::mutex mu;
  std::multimap<size_t, void*> free_blocks;  // size -> block
  size_t cached = 0;
};
BlockCache& cache() {
  static BlockCache* c = new BlockCache();  // leaked on purpose: outlives static tensors
  return *c;
}
constexpr size_t kHuge = size_t(2) << 20;  // blocks this large are 2 MiB aligned

size_t round_size(size_t n) {
  if (n < kCacheMin) return (n + kAlign - 1) / kAlign * kAlign;
  if (n >= 2 * kHuge) return (n + kHuge - 1) / kHuge * kHuge;
  return (n + 4095) / 4096 * 4096;
}

// Large blocks start 2 MiB aligned plus kOffset bytes, never on a page boundary: buffers at the same
// offset within a 4 KiB page as another library's page-aligned buffers (MPI's shared-memory cells, for
// one) make the copies and reductions between the two stall on 4K aliasing (an all-reduce of 1e7
// floats ran at 0.7x the speed of the same bytes at another offset). The offset is the same for every
// large block: an output a few hundred bytes further into its page than an input would make a
// streaming kernel's loads wait on its own earlier stores.
constexpr size_t kOffset = 256;

void* system_alloc(size_t n) {
  if (n < 2 * kHuge) return std::aligned_alloc(kAlign, n);
  // No MADV_HUGEPAGE: with defrag=madvise, first touches of fresh blocks stalled for seconds
  // under memory pressure. 2 MiB alignment still lets transparent huge pages be used where enabled.
  // posix_memalign, not aligned_alloc: n + kOffset is not a multiple of the alignment, which C's
  // aligned_alloc requires (glibc lets it pass; AddressSanitizer's returns null).
  void* base = nullptr;
  if (posix_memalign(&base, kHuge, n + kOffset) != 0) return nullptr;
  return static_cast<char*>(base) + kOffset;
}

void system_free(void* p, size_t n) {
  if (n < 2 * kHuge) return std::free(p);
  std::free(reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(kHuge - 1)));
}
}  // namespace

void* cpu_alloc(size_t nbytes) {
  size_t n = round_size(nbytes == 0 ? 1 : nbytes);
  if (n >= kCacheMin) {
    BlockCache& c = cache();
    std::lock_guard<std::mutex> g(c.mu);
    // The block of this size freed last (blocks of equal size sit in the order they were freed):
    // it is the one most likely still in cache. Taking the oldest instead would cycle a loop that
    // allocates and frees one result through every cached block of its size, each one cold.
    auto it = c.free_blocks.upper_bound(n);
    if (it != c.free_blocks.begin() && std::prev(it)->first == n) {
      --it;
      void* p = it->second;
      c.free_blocks.erase(it);
      c.cached -= n;
      return p;
    }
  }
  void* p = system_alloc(n);
  if (!p) {
    cpu_empty_cache();
    p = system_alloc(n);
  }
  if (!p) throw MemoryError(msg("[alloc] cannot allocate ", nbytes, " bytes on cpu"));
  return p;
}

void cpu_free(void* p, size_t nbytes) {
  size_t n = round_size(nbytes == 0 ? 1 : nbytes);
  if (n >= kCacheMin && n <= kCacheMax / 4) {
    BlockCache& c = cache();
    std::lock_guard<std::mutex> g(c.mu);
    while (c.cached + n > kCacheMax && !c.free_blocks.empty()) {
      auto it = c.free_blocks.begin();
      c.cached -= it->first;
      system_free(it->second, it->first);
      c.free_blocks.erase(it);
    }
    c.free_blocks.emplace(n, p);
    c.cached += n;
    return;
  }
  system_free(p, n);
}

size_t cpu_empty_cache() {
  BlockCache& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  size_t released = c.cached;
  for (auto& kv : c.free_blocks) system_free(kv.second, kv.first);
  c.free_blocks.clear();
  c.cached = 0;
#ifdef __GLIBC__
  // Small tensors live in malloc's heap; freed ones stay mapped until the heap is trimmed.
  malloc_trim(0);
#endif
  return released;
}

size_t cpu_cached_bytes() {
  BlockCache& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  return c.cached;
}

namespace {
thread_local bool t_inference_mode = false;
}
bool inference_mode_enabled() { return t_inference_mode; }
void set_inference_mode(bool on) { t_inference_mode = on; }

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  auto s = std::make_shared<Storage>();
  s->nbytes = nbytes;
  s->device = device;
  if (device.type == DeviceType::Meta) return s;  // no memory: the data pointer stays null
  s->data = device.type == DeviceType::CPU ? cpu_alloc(nbytes) : cuda_alloc(nbytes, device.index);
  return s;
}

std::shared_ptr<Storage> Storage::allocate_pinned(size_t nbytes) {
  void* p = cuda_host_alloc(nbytes);
  auto s = wrap(p, nbytes, Device{}, std::shared_ptr<void>(p, [](void* q) { cuda_host_free(q); }));
  s->pinned = true;
  return s;
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t nbytes, Device device, std::shared_ptr<void> owner) {
  auto s = std::make_shared<Storage>();
  s->data = data;
  s->nbytes = nbytes;
  s->device = device;
  s->owner = owner ? std::move(owner) : std::shared_ptr<void>(data, [](void*) {});
  return s;
}

Storage::~Storage() {
  if (owner || !data) return;  // foreign memory: the owner's deleter frees it
  if (device.type == DeviceType::CPU) cpu_free(data, nbytes);
  else cuda_free(data, nbytes, device.index);
}

}  // namespace sx
