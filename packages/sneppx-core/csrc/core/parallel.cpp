#include "core/parallel.h"

#include <atomic>
#include <exception>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include <pthread.h>

extern "C" void scipy_openblas_set_num_threads(int);

namespace sx {
namespace {

// One parallel_for call. Workers hold it by shared_ptr and take chunks only from its own counter, so
// a worker that wakes late (after the job finished and a new one started) sees an exhausted counter
// and never runs a chunk of a job it does not belong to.
struct Job {
  const std::function<void(int64_t, int64_t)>* fn;
  int64_t n, chunks;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> finished{0};
  std::mutex err_mu;
  std::exception_ptr err;  // the first exception of any chunk, rethrown on the calling thread
  Job(const std::function<void(int64_t, int64_t)>* f, int64_t n_, int64_t c) : fn(f), n(n_), chunks(c) {}
};

// Workers sleep on a condition variable between jobs; a job is split into one chunk per thread.
class Pool {
 public:
  explicit Pool(int n) { resize(n); }
  ~Pool() { stop(); }
  int size() const { return int(workers_.size()) + 1; }

  void resize(int n) {
    stop();
    quit_ = false;
    for (int i = 1; i < n; ++i) workers_.emplace_back([this] { loop(); });
  }

  void run(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t)>& fn) {
    auto job = std::make_shared<Job>(&fn, n, chunks);
    {
      std::lock_guard<std::mutex> g(mu_);
      job_ = job;
      ++generation_;
    }
    cv_.notify_all();
    work(*job);
    {
      std::unique_lock<std::mutex> lk(mu_);
      done_cv_.wait(lk, [&] { return job->finished.load() == job->chunks; });
      if (job_ == job) job_.reset();
    }
    if (job->err) std::rethrow_exception(job->err);
  }

 private:
  void work(Job& j) {
    for (int64_t c; (c = j.next.fetch_add(1)) < j.chunks;) {
      int64_t per = (j.n + j.chunks - 1) / j.chunks;
      int64_t b = c * per, e = std::min(j.n, b + per);
      try {
        if (b < e) (*j.fn)(b, e);
      } catch (...) {  // an exception must not escape a worker thread (std::terminate)
        std::lock_guard<std::mutex> g(j.err_mu);
        if (!j.err) j.err = std::current_exception();
      }
      if (j.finished.fetch_add(1) + 1 == j.chunks) {
        std::lock_guard<std::mutex> g(mu_);
        done_cv_.notify_all();
      }
    }
  }
  void loop();
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
  std::shared_ptr<Job> job_;  // the current job; guarded by mu_
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

void Pool::loop() {
  in_parallel = true;  // nested parallel_for calls inside a chunk run inline
  uint64_t seen = 0;
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return quit_ || generation_ != seen; });
      if (quit_) return;
      seen = generation_;
      job = job_;
    }
    if (job) work(*job);
  }
}

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
