#include "core/parallel.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include <pthread.h>

extern "C" void scipy_openblas_set_num_threads(int);

namespace sx {
namespace {

// Workers sleep on a condition variable between jobs; a job is split into one chunk per thread.
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
    {
      std::lock_guard<std::mutex> g(mu_);
      fn_ = &fn;
      n_ = n;
      chunks_ = chunks;
      next_.store(1);
      pending_.store(int(chunks) - 1);
      ++generation_;
    }
    cv_.notify_all();
    do_chunk(0);
    for (int64_t c; (c = next_.fetch_add(1)) < chunks_;) {
      do_chunk(c);
      pending_.fetch_sub(1);
    }
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [this] { return pending_.load() == 0; });
    fn_ = nullptr;
  }

 private:
  void do_chunk(int64_t c) {
    int64_t per = (n_ + chunks_ - 1) / chunks_;
    int64_t b = c * per, e = std::min(n_, b + per);
    if (b < e) (*fn_)(b, e);
  }
  void loop(int) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return quit_ || generation_ != seen; });
        if (quit_) return;
        seen = generation_;
      }
      for (int64_t c; (c = next_.fetch_add(1)) < chunks_;) {
        do_chunk(c);
        if (pending_.fetch_sub(1) == 1) {
          std::lock_guard<std::mutex> g(mu_);
          done_cv_.notify_all();
        }
      }
    }
  }
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
  std::condition_variable cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, chunks_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int> pending_{0};
  uint64_t generation_ = 0;
  bool quit_ = false;
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

}  // namespace

int get_num_threads() { return num_threads(); }

void set_num_threads(int n) {
  if (n < 1) n = 1;
  std::lock_guard<std::mutex> g(run_mu);
  num_threads() = n;
  if (pool_ptr()) pool_ptr()->resize(n);
  scipy_openblas_set_num_threads(n);
}

// A forked child (DataLoader workers) has none of the parent's threads: start a fresh pool lazily.
static void reset_after_fork() { pool_ptr() = nullptr; }
static const int fork_handler_registered = pthread_atfork(nullptr, nullptr, reset_after_fork);

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  int threads = num_threads();
  int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / std::max<int64_t>(grain, 1));
  if (chunks <= 1 || in_parallel) {
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
