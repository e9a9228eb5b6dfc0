#include "core/parallel.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
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

// One parallel_for call. Workers hold it by shared_ptr and take chunks only from its own counters, so
// a worker that wakes late (after the job finished and a new one started) sees exhausted counters
// and never runs a chunk of a job it does not belong to.
//
// The chunks are dealt in contiguous groups, one per thread: thread t runs group t first, so that
// thread t handles the same part of the data in every call (the part that its core's cache may still
// hold from the last op, as with OpenMP's static schedule), and then helps with the groups of threads
// that have not finished theirs (one that started late or was preempted).
struct Job {
  const std::function<void(int64_t, int64_t)>* fn;
  int64_t n, chunks, per;
  int groups;
  std::unique_ptr<std::atomic<int64_t>[]> next;  // the next chunk of each group
  std::atomic<int64_t> finished{0};
  std::mutex err_mu;
  std::exception_ptr err;  // the first exception of any chunk, rethrown on the calling thread
  Job(const std::function<void(int64_t, int64_t)>* f, int64_t n_, int64_t c, int threads)
      : fn(f), n(n_), chunks(c), per((n_ + c - 1) / c), groups(int(std::min<int64_t>(threads, c))),
        next(new std::atomic<int64_t>[size_t(groups)]) {
    for (int g = 0; g < groups; ++g) next[g].store(first(g), std::memory_order_relaxed);
  }
  int64_t first(int g) const { return chunks * g / groups; }  // group g: chunks [first(g), first(g + 1))
};

// Workers poll a generation counter for a while after each job, then sleep on a condition
// variable. Chunks are claimed dynamically, so whichever thread is free takes the next one.
class Pool {
 public:
  explicit Pool(int n) { resize(n); }
  ~Pool() { stop(); }
  int size() const { return int(workers_.size()) + 1; }

  void resize(int n) {
    stop();
    quit_ = false;
    for (int i = 1; i < n; ++i) workers_.emplace_back([this, i] { loop(i); });
  }

  void run(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t)>& fn) {
    auto job = std::make_shared<Job>(&fn, n, chunks, size());
    {
      std::lock_guard<std::mutex> g(mu_);
      job_ = job;
      generation_.fetch_add(1);
    }
    if (sleepers_.load() > 0) cv_.notify_all();
    work(*job, 0);
    // The chunks still running elsewhere are short: poll for them, yielding now and then.
    for (int spins = 0; job->finished.load(std::memory_order_acquire) != job->chunks; ++spins) {
      if (spins < 4096) cpu_relax();
      else std::this_thread::yield();
    }
    if (job->err) std::rethrow_exception(job->err);
  }

 private:
  // Runs the chunks of thread `self`'s group, then those left in the others' groups.
  static void work(Job& j, int self) {
    for (int k = 0; k < j.groups; ++k) {
      int g = (self + k) % j.groups;
      for (int64_t c, end = j.first(g + 1); (c = j.next[g].fetch_add(1)) < end;) {
        int64_t b = c * j.per, e = std::min(j.n, b + j.per);
        try {
          if (b < e) (*j.fn)(b, e);
        } catch (...) {  // an exception must not escape a worker thread (std::terminate)
          std::lock_guard<std::mutex> lk(j.err_mu);
          if (!j.err) j.err = std::current_exception();
        }
        j.finished.fetch_add(1, std::memory_order_release);
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

  void loop(int self);  // worker `self` (1..size()-1; the calling thread is 0)
  void stop() {
    {
      std::lock_guard<std::mutex> g(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<Job> job_;  // the current job; guarded by mu_
  std::atomic<uint64_t> generation_{0};  // bumped under mu_ with each new job
  std::atomic<int> sleepers_{0};
  std::atomic<bool> quit_{false};
};

int default_threads() {
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

void Pool::loop(int self) {
  in_parallel = true;  // nested parallel_for calls inside a chunk run inline
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = wait_for_job(seen);
    if (g == seen) return;  // stopping
    seen = g;
    std::shared_ptr<Job> job;
    {
      std::lock_guard<std::mutex> lk(mu_);
      job = job_;
    }
    if (job) work(*job, self);
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
