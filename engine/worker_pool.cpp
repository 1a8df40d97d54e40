#include "engine/worker_pool.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/thread_name.h"

namespace webhooker {

WorkerPool::WorkerPool(Options options, Mutex& mutex, Jobs& jobs)
    : mutex_(mutex),
      jobs_(jobs),
      idleTimeout_(options.idleTimeout),
      growth_(options.workers, options.maxWorkers, options.slowAttempt) {}

void WorkerPool::start() {
  grower_ = std::jthread([this](std::stop_token st) { growLoop(st); });
  MutexLock lock(mutex_);
  for (size_t i = 0; i < growth_.started(); ++i) addWorkerLocked();
}

void WorkerPool::stop() {
  wake_.notify_all();
  grower_ = std::jthread();  // requests stop and joins
}

void WorkerPool::join() {
  std::vector<std::jthread> workers;
  {
    MutexLock lock(mutex_);
    workers = std::move(workers_);  // none is added while stopping
    for (std::jthread& w : retired_) workers.push_back(std::move(w));
    retired_.clear();
  }
  for (auto& w : workers) w.request_stop();
  wake_.notify_all();
  workers.clear();  // joins
}

size_t WorkerPool::workersLocked() const {
  mutex_.assertHeld();
  return workers_.size();
}

void WorkerPool::addWorkerLocked() {
  workers_.emplace_back([this](std::stop_token st) { work(st); });
}

void WorkerPool::retireWorkerLocked() {
  const auto self = std::find_if(workers_.begin(), workers_.end(), [](const std::jthread& w) {
    return w.get_id() == std::this_thread::get_id();
  });
  for (std::jthread& earlier : retired_) earlier.join();
  retired_.clear();
  retired_.push_back(std::move(*self));
  workers_.erase(self);
  spdlog::debug("delivery.worker_retired workers={}", workers_.size());
}

void WorkerPool::jobReadyLocked() {
  mutex_.assertHeld();
  if (idle_ > 0 || busy_ < workers_.size() || jobs_.stopping() ||
      workers_.size() < growth_.started() || workers_.size() >= growth_.most()) {
    wake_.notify_one();
    return;
  }
  // Every worker is in a job.
  const auto now = std::chrono::steady_clock::now();
  if (workers_.size() >= growth_.workersDue(now)) {
    const std::optional<WorkerGrowth::TimePoint> next = growth_.lookAgainAt(now);
    if (next && (!growAt_ || *next < *growAt_)) {
      growAt_ = next;
      growWanted_.notify_one();
    }
    return;
  }
  addWorkerLocked();
  spdlog::debug("delivery.worker_added workers={}", workers_.size());
}

void WorkerPool::growLoop(std::stop_token stop) {
  nameThisThread("wh-pool");
  MutexLock lock(mutex_);
  while (!jobs_.stopping() && !stop.stop_requested()) {
    if (!growAt_) {
      growWanted_.wait(lock, stop, [&]() REQUIRES(mutex_) { return jobs_.stopping() || growAt_; });
      continue;
    }
    const auto at = *growAt_;
    if (std::chrono::steady_clock::now() < at) {
      growWanted_.wait_until(lock, stop, at, [&]() REQUIRES(mutex_) {
        return jobs_.stopping() || !growAt_ || *growAt_ < at;
      });
      continue;
    }
    growAt_.reset();
    if (jobs_.jobReady()) jobReadyLocked();
  }
}

void WorkerPool::work(std::stop_token stop) {
  nameThisThread("wh-worker");
  MutexLock lock(mutex_);
  while (true) {
    ++idle_;
    const bool extra = workers_.size() > growth_.started();
    const bool found =
        jobs_.awaitJob(lock, wake_, stop, extra ? std::optional(idleTimeout_) : std::nullopt);
    --idle_;
    if (jobs_.stopping() || stop.stop_requested()) return;
    if (!found && workers_.size() > growth_.started()) return retireWorkerLocked();
    ++busy_;  // first: a lane the take lists wakes another worker, or starts one
    std::optional<Task> job = jobs_.takeJob();
    if (!job) {
      --busy_;
      continue;
    }
    const WorkerGrowth::Attempt attempt = growth_.attemptStarted(std::chrono::steady_clock::now());
    const std::string targetId = job->targetId;  // runJob may move from the job

    lock.unlock();
    jobs_.runJob(*job);
    lock.lock();
    --busy_;
    growth_.attemptEnded(attempt);
    jobs_.jobEnded(targetId);
  }
}

}  // namespace webhooker
