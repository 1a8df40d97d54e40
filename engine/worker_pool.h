// WorkerPool: the engine's delivery threads. It starts `workers` worker
// threads (wh-worker), each taking one job at a time from its Jobs (the
// engine's lanes) and running it. When a job is ready while every worker is
// in one, it starts one more as WorkerGrowth allows (attempts held by slow
// receivers do not count), or has its grower thread (wh-pool) look again
// when the next attempt turns slow. A worker started beyond `workers` ends
// once it has waited idleTimeout for a job.
//
// Ownership: owns its threads; `mutex` and `jobs` must outlive it, and its
// destructor joins the threads (call stop() first). Threading: it shares
// the engine's mutex, which guards its fields. The ...Locked() methods run
// with it held (the engine's lane events call them, as does the grower),
// the others without it; the Jobs calls say which. The analysis cannot see
// that the engine's mutex is this one, so ...Locked() assert it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "engine/worker_growth.h"
#include "targets/task.h"

namespace webhooker {

class WorkerPool {
 public:
  // Where the workers' jobs come from (the engine). Called on the pool's
  // threads.
  class Jobs {
   public:
    virtual ~Jobs() = default;
    // Under the mutex: no job starts any more; the threads end.
    virtual bool stopping() const = 0;
    // Under the mutex: a job is ready to take.
    virtual bool jobReady() const = 0;
    // Under `lock` (the mutex): waits on `wake`, and `stop`, until a job
    // may be ready or stopping(); for at most `idleFor` when given. False
    // if that long passed with no job.
    virtual bool awaitJob(MutexLock& lock, std::condition_variable_any& wake, std::stop_token stop,
                          std::optional<std::chrono::milliseconds> idleFor) = 0;
    // Under the mutex: the next job, if any.
    virtual std::optional<Task> takeJob() = 0;
    // Without the mutex: runs the job (and may move from it). Throws nothing.
    virtual void runJob(Task& job) = 0;
    // Under the mutex: the job of target `targetId` has run.
    virtual void jobEnded(const std::string& targetId) = 0;
  };

  // As EngineOptions' workers, maxWorkers, slowAttempt, workerIdleTimeout.
  struct Options {
    int workers;
    int maxWorkers;
    std::chrono::milliseconds slowAttempt;
    std::chrono::milliseconds idleTimeout;
  };

  WorkerPool(Options options, Mutex& mutex, Jobs& jobs);
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Starts the grower and the workers.
  void start() EXCLUDES(mutex_);
  // Once Jobs::stopping(): wakes every worker to end (one in a job ends
  // after it) and joins the grower.
  void stop() EXCLUDES(mutex_);
  // Joins every worker; call after stop(), once no job runs.
  void join() EXCLUDES(mutex_);

  // A job became ready: wakes a waiting worker, or starts one more when none
  // waits, every worker is in a job and WorkerGrowth has one due; otherwise
  // asks the grower to look again when it may be. A worker between two jobs
  // takes the new one itself on its way back. Before start() the pool is not
  // there to grow.
  void jobReadyLocked();
  // Wakes one waiting worker (a throttled lane times its wake-up).
  void wakeOne() { wake_.notify_one(); }
  // Worker threads running: `workers`, more while slow receivers hold them.
  size_t workersLocked() const;

 private:
  // A worker thread's life.
  void work(std::stop_token stop);
  // Looks again, at growAt_, whether a ready job should start a worker.
  void growLoop(std::stop_token stop);
  void addWorkerLocked() REQUIRES(mutex_);
  // Takes the calling worker, one beyond WorkerGrowth::started() that
  // waited idleTimeout for a job, out of workers_; it returns right after.
  void retireWorkerLocked() REQUIRES(mutex_);

  Mutex& mutex_;
  Jobs& jobs_;
  const std::chrono::milliseconds idleTimeout_;
  std::condition_variable_any wake_;        // a job may be ready, or stopping
  std::condition_variable_any growWanted_;  // growAt_ was set or moved earlier
  WorkerGrowth growth_ GUARDED_BY(mutex_);
  size_t idle_ GUARDED_BY(mutex_) = 0;  // workers waiting for a job
  size_t busy_ GUARDED_BY(mutex_) = 0;  // workers taking or running a job
  std::optional<WorkerGrowth::TimePoint> growAt_ GUARDED_BY(mutex_);
  std::vector<std::jthread> workers_ GUARDED_BY(mutex_);
  // Workers that retired (retireWorkerLocked), to be joined: by the next
  // one to retire, or by join(). They never take the mutex again.
  std::vector<std::jthread> retired_ GUARDED_BY(mutex_);
  std::jthread grower_;
};

}  // namespace webhooker
