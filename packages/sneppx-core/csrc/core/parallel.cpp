#include "core/parallel.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <pthread.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace sx {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// How long an idle worker keeps polling for the next job before it sleeps. A sleeping worker
// takes tens of microseconds to wake (and may first be scheduled on the caller's core), which is
// the whole run time of a 1e5..1e6-element op; back-to-back ops find the worker still polling.
// Past the first few hundred polls it yields between polls, so that it gives way to any other
// runnable thread (BLAS workers, other processes) on its core.
constexpr auto kSpin = std::chrono::microseconds(300);
constexpr int kPausePolls = 256;
// Chunks per thread in a job: a few, so that a thread that starts late (or is preempted on a busy
// host) leaves its share to the others instead of holding up the whole job.
constexpr int64_t kChunksPerThread = 4;

// Chunks of at least this many elements are cut at multiples of kChunkAlign elements, so that a chunk
// of a contiguous float32 (or wider) buffer starts on a cache-line boundary when the buffer does: a
// chunk that starts mid-line makes every vector load and store of the kernel straddle two lines (a
// relu of 65712 floats ran its 4 chunks at 0.11 ns per element, against 0.086 for aligned ones).
constexpr int64_t kAlignFrom = 1024;
constexpr int64_t kChunkAlign = 64;

using Fn = std::function<void(int64_t, int64_t)>;

// The pool runs one job at a time. The caller publishes a job by writing its description and bumping
// the generation; workers claim its chunks from one counter per thread ("group"), each tagged with
// the job's generation in its high 32 bits. The chunks are dealt in contiguous groups: thread t runs
// group t first, so that it handles the same part of the data in every call (the part its core's
// cache may still hold from the last op, as with OpenMP's static schedule), then helps with the groups
// of threads that have not finished theirs (one that started late or was preempted).
//
// No lock or reference count is taken on the way to a chunk (each would cost a cache-line transfer
// between cores, and a worker took ~0.6 us to start with three of them). A worker that wakes late, after
// its job finished and the next was published, can read the next job's description, but all its
// claims fail: the caller re-tags the counters with the new generation before it rewrites the
// description, and a job's counters are exhausted before the caller moves on, so a claim tagged
// with the worker's (old) generation never succeeds.
class Pool {
 public:
  explicit Pool(int n) { resize(n); }
  ~Pool() { stop(); }
  int size() const { return int(workers_.size()) + 1; }

  void resize(int n) {
    stop();
    quit_ = false;
    next_.reset(new Counter[size_t(std::max(n, 1))]);
    uint64_t now = generation_.load();  // workers wait for the job after this one
    for (int i = 1; i < n; ++i) workers_.emplace_back([this, i, now] { loop(i, now); });
  }

  void run(int64_t n, int64_t chunks, const Fn& fn) {
    uint64_t gen = generation_.load(std::memory_order_relaxed) + 1;  // only the caller changes it
    int groups = int(std::min<int64_t>(size(), chunks));
    for (int g = 0; g < groups; ++g)  // first: from here on claims of the last job fail
      next_[g].next.store(tag(gen) | uint64_t(first(chunks, groups, g)), std::memory_order_release);
    fn_.store(&fn, std::memory_order_release);
    n_.store(n, std::memory_order_release);
    align_.store(n / chunks >= kAlignFrom, std::memory_order_release);
    chunks_.store(chunks, std::memory_order_release);
    groups_.store(groups, std::memory_order_release);
    finished_.store(0, std::memory_order_relaxed);
    err_ = nullptr;
    {
      std::lock_guard<std::mutex> g(mu_);  // pairs with a worker's check before it sleeps
      generation_.store(gen, std::memory_order_release);
    }
    if (sleepers_.load() > 0) cv_.notify_all();
    work(gen, 0);
    // The chunks still running elsewhere are short: poll for them, yielding now and then.
    for (int spins = 0; finished_.load(std::memory_order_acquire) != chunks; ++spins) {
      if (spins < 4096) cpu_relax();
      else std::this_thread::yield();
    }
    if (err_) std::rethrow_exception(err_);
  }

 private:
  struct alignas(64) Counter {
    std::atomic<uint64_t> next{0};  // tag(generation) | the group's next chunk
  };
  static uint64_t tag(uint64_t gen) { return gen << 32; }  // a job's chunk count is far below 2^32
  static int64_t first(int64_t chunks, int groups, int g) { return chunks * g / groups; }
  // Chunk c of n elements in `chunks` chunks is [bound(c), bound(c + 1)): as even as whole elements
  // allow (17 rows in 8 chunks: seven of 2 and one of 3, not five of 3 and three empty), cut at a
  // multiple of kChunkAlign when `align`.
  static int64_t bound(int64_t c, int64_t n, int64_t chunks, bool align) {
    if (c >= chunks) return n;
    int64_t b = n * c / chunks;
    return align ? b / kChunkAlign * kChunkAlign : b;
  }

  // Claims the next chunk of group g of job `gen`, if that job is still the current one.
  bool claim(int g, uint64_t gen, int64_t end, int64_t& chunk) {
    std::atomic<uint64_t>& c = next_[g].next;
    uint64_t v = c.load(std::memory_order_acquire);
    for (;;) {
      if ((v >> 32) != (gen & 0xffffffffu) || int64_t(v & 0xffffffffu) >= end) return false;
      if (c.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel)) break;
    }
    chunk = int64_t(v & 0xffffffffu);
    return true;
  }

  // Runs the chunks of thread `self`'s group of job `gen`, then those left in the others' groups.
  void work(uint64_t gen, int self) {
    const Fn* fn = fn_.load(std::memory_order_acquire);
    int64_t n = n_.load(std::memory_order_acquire);
    bool align = align_.load(std::memory_order_acquire);
    int64_t chunks = chunks_.load(std::memory_order_acquire);
    int groups = groups_.load(std::memory_order_acquire);
    for (int k = 0; k < groups; ++k) {
      int g = (self + k) % groups;
      for (int64_t c; claim(g, gen, first(chunks, groups, g + 1), c);) {
        int64_t b = bound(c, n, chunks, align), e = bound(c + 1, n, chunks, align);
        try {
          if (b < e) (*fn)(b, e);
        } catch (...) {  // an exception must not escape a worker thread (std::terminate)
          std::lock_guard<std::mutex> lk(err_mu_);
          if (!err_) err_ = std::current_exception();
        }
        finished_.fetch_add(1, std::memory_order_release);
      }
    }
  }

  // Returns the next generation after `seen`, or `seen` when the pool is stopping.
  uint64_t wait_for_job(uint64_t seen) {
    auto until = std::chrono::steady_clock::now() + kSpin;
    for (int i = 1;; ++i) {
      if (quit_.load(std::memory_order_relaxed)) return seen;
      uint64_t g = generation_.load(std::memory_order_acquire);
      if (g != seen) return g;
      if (i < kPausePolls) {
        cpu_relax();
      } else {
        std::this_thread::yield();
        if (std::chrono::steady_clock::now() > until) break;
      }
    }
    std::unique_lock<std::mutex> lk(mu_);
    sleepers_.fetch_add(1);  // the publisher notifies only when it sees a sleeper
    cv_.wait(lk, [&] { return quit_.load() || generation_.load() != seen; });
    sleepers_.fetch_sub(1);
    return quit_.load() ? seen : generation_.load();
  }

  void loop(int self, uint64_t seen);  // worker `self` (1..size()-1; the calling thread is 0)
  void stop() {
    {
      std::lock_guard<std::mutex> g(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  // The current job, written by the caller before it bumps generation_ and left alone until every
  // chunk of the job has run.
  alignas(64) std::atomic<uint64_t> generation_{0};
  std::atomic<const Fn*> fn_{nullptr};
  std::atomic<int64_t> n_{0}, chunks_{0};
  std::atomic<int> groups_{0};
  std::atomic<bool> align_{false};  // chunk bounds at multiples of kChunkAlign
  std::unique_ptr<Counter[]> next_;  // one per group
  alignas(64) std::atomic<int64_t> finished_{0};  // chunks of the current job that have run
  std::mutex err_mu_;
  std::exception_ptr err_;  // the first exception of any chunk, rethrown on the calling thread

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int> sleepers_{0};
  std::atomic<bool> quit_{false};
};

// OMP_NUM_THREADS when it starts with a positive count (as PyTorch honours it; "4,2" means 4), else the
// hardware's thread count.
int default_threads() {
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end != env && n > 0 && n <= 4096) return int(n);
  }
  unsigned h = std::thread::hardware_concurrency();
  return h == 0 ? 1 : int(h);
}

Pool*& pool_ptr() {
  static Pool* p = nullptr;
  return p;
}
int& num_threads() {
  static int n = default_threads();
  return n;
}
thread_local bool in_parallel = false;
std::mutex run_mu;  // one parallel job at a time

void Pool::loop(int self, uint64_t seen) {
  in_parallel = true;  // nested parallel_for calls inside a chunk run inline
  for (;;) {
    uint64_t g = wait_for_job(seen);
    if (g == seen) return;  // stopping
    seen = g;
    work(g, self);
  }
}

}  // namespace

int get_num_threads() { return num_threads(); }

void set_num_threads(int n) {
  if (n < 1) n = 1;
  std::lock_guard<std::mutex> g(run_mu);
  num_threads() = n;
  if (pool_ptr()) pool_ptr()->resize(n);
}

// A forked child (DataLoader workers) has none of the parent's threads: start a fresh pool lazily.
static void reset_after_fork() { pool_ptr() = nullptr; }
static const int fork_handler_registered = pthread_atfork(nullptr, nullptr, reset_after_fork);

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  int threads = num_threads();
  // ceil(n / grain) chunks; past the thread count, rounded up to a multiple of it (3 grains on 2 threads
  // become 4 smaller chunks, 2 per thread, rather than 3 chunks of which one thread runs 2)
  int64_t chunks = (n + grain - 1) / std::max<int64_t>(grain, 1);
  if (chunks > threads) chunks = std::min<int64_t>(int64_t(threads) * kChunksPerThread, (chunks + threads - 1) / threads * threads);
  if (threads <= 1 || chunks <= 1 || in_parallel) {
    fn(0, n);
    return;
  }
  std::unique_lock<std::mutex> g(run_mu, std::try_to_lock);
  if (!g.owns_lock()) {  // another thread is using the pool: run inline
    fn(0, n);
    return;
  }
  if (!pool_ptr()) pool_ptr() = new Pool(threads);  // never destroyed: lives until exit
  in_parallel = true;
  try {
    pool_ptr()->run(n, chunks, fn);
  } catch (...) {
    in_parallel = false;
    throw;
  }
  in_parallel = false;
}

}  // namespace sx
