// Engine: runs deliveries. A pool of worker threads takes tasks from the
// lanes of a LaneScheduler (engine/lane_scheduler.h: one lane per target,
// the caps, rate limits and FIFO heads), so one slow or dead target can
// never take every worker or hold up the other targets. What the caps keep
// out of memory stays on disk and the refill thread reads it back as lanes
// drain; the retry timer holds retries until they are due; recovery and the
// sweep (recovery.cpp) admit what the events DBs hold and memory does not.
//
// Every delivery the engine holds in memory is in held_ (HeldDeliveries), so
// none is scheduled twice. An attempt ends for its lane when deliver()
// returns (the lane's slot is free for the next task) and for held_ when its
// AttemptHold goes, once the result is committed (finishAttempt). A FIFO
// target's lane holds its oldest waiting delivery only; ingest wakes an idle
// one, and the rows are read from disk in order, so a restart, a pause, a
// replay or a refill cannot reorder them.
//
// The worker threads are a WorkerPool's (engine/worker_pool.h); the engine
// gives them their jobs: the lanes' tasks.
//
// Ownership: references to the stores, registry, clock and observer must
// outlive the engine. Threading: submit/scheduleRetry/targetChanged from any
// thread; engineMutex_ guards the scheduler, held_ and the worker pool;
// handoffs_ and the target cache (TargetCache) have their own locks. No
// events DB is read under engineMutex_: a worker that drains an overflowed
// lane only asks, and the refill thread reads. A hold may be released on a
// commit thread of the events DBs; the destructor waits for every hold.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/open_tickets.h"
#include "engine/attempt_transform.h"
#include "engine/dispatcher.h"
#include "engine/held_deliveries.h"
#include "engine/lane_scheduler.h"
#include "engine/retry_timer.h"
#include "engine/target_cache.h"
#include "engine/worker_pool.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"
#include "targets/health_reporter.h"
#include "targets/target.h"
#include "targets/target_registry.h"

namespace webhooker {

struct EngineOptions {
  // Workers started with the engine. A lane that is ready while every
  // worker is in an attempt starts one more, up to maxWorkers, for each
  // attempt that has run slowAttempt or longer (engine/worker_growth.h).
  int workers = 8;
  int maxWorkers = 64;
  std::chrono::milliseconds slowAttempt = std::chrono::milliseconds(20);
  // A worker started beyond `workers` ends once it has waited this long
  // for work: a burst of slow receivers does not keep its threads.
  std::chrono::milliseconds workerIdleTimeout = std::chrono::seconds(60);
  size_t maxQueuedPerTarget = 10'000;
  size_t maxQueued = 20'000;  // over all targets; ~640 bytes each
  // Retries waiting for their time in memory, the earliest due; the others
  // wait on disk and are read again as these go (see RetryTimer).
  size_t maxWaitingRetries = 50'000;
  std::chrono::milliseconds sweepInterval = std::chrono::seconds(60);
};

class Engine final : public Dispatcher,
                     public Scheduler,
                     private LaneScheduler::Events,
                     private WorkerPool::Jobs {
 public:
  Engine(EngineOptions options, MainStore& store, EventsDbPool& eventsDbs,
         const TargetRegistry& targets, const Clock& clock, AttemptObserver& observer,
         EngineRouting routing = {});
  // Every ingest handoff must be closed by then (destroy the HTTP server
  // first); a debug build aborts with a message otherwise.
  ~Engine() override;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Scans every events DB (pending now, retrying after their remaining
  // backoff, deliveries of deleted targets failed as target_deleted), then
  // starts the refill thread, the workers, the retry timer and the periodic
  // sweep.
  void start();
  // Stops starting attempts and waits up to `grace` for the ones in flight
  // to record their results. False if some were still running.
  bool stop(std::chrono::milliseconds grace);

  Handoff openHandoff() override;
  void submit(std::vector<Task> tasks) override;
  void targetChanged(const std::string& webhookId, const std::string& targetId) override;
  void receiverChanged(const std::string& webhookId, const std::string& targetId) override;
  int attemptsInFlight(const std::string& targetId) const override;
  void scheduleRetry(Task task, std::chrono::milliseconds delay) override;

  // Where attempts report the receivers' health; set once, before start().
  void setHealthReporter(HealthReporter& health) { health_ = &health; }
  // Told, during start(), of each events DB a restart's recovery read from
  // its closed file: its backlog, and the pool's Peek::closings while it
  // was read (the backlog sampler's cache takes it instead of reading the
  // file again). Set once, before start().
  using RecoveredBacklog = std::function<void(const std::string& webhookId, uint64_t closings,
                                              std::vector<EventsDb::BacklogCount> backlog)>;
  void setRecoveredBacklog(RecoveredBacklog recovered) { recoveredBacklog_ = std::move(recovered); }
  // An auto-resume probe: one attempt of the target's oldest waiting
  // delivery although the target is disabled. False if it has none, or
  // that delivery is in memory already.
  bool probe(const std::string& webhookId, const std::string& targetId);
  // The delivery a FIFO target's lane holds (its head), if any.
  std::optional<std::string> fifoHead(const std::string& targetId) const;

  // One pass of the sweep (the periodic thread calls it; tests may too).
  // A webhook whose events DB the pool does not hold is asked first, on its
  // own (EventsDbPool::waitingTargetsIfClosed), and opened only if the
  // sweep could act on something in it.
  void sweep();
  size_t heldCount() const;
  // Worker threads running (EngineOptions::workers, more while slow
  // receivers hold them).
  size_t workerCount() const;

 private:
  using TargetPtr = TargetCache::Ptr;
  enum class HeadAdmission { kAdmitted, kLaneBusy, kReleasedSinceRead };

  // engine.cpp
  // WorkerPool::Jobs, for the workers: the scheduler's stop, ready lanes,
  // its token waits, its next task (counted in inFlight_), the attempt,
  // and the lane's slot free again.
  bool stopping() const override;
  bool jobReady() const override;
  bool awaitJob(MutexLock& lock, std::condition_variable_any& wake, std::stop_token stop,
                std::optional<std::chrono::milliseconds> idleFor) override;
  std::optional<Task> takeJob() override;
  void runJob(Task& task) override;
  void jobEnded(const std::string& targetId) override;
  void runAttempt(Task& task, AttemptHold hold);
  // targetChanged and receiverChanged: the cached target goes, then (for a
  // receiver change) the health reporter forgets the old receiver, then the
  // target's waiting deliveries are picked up again.
  void changeTarget(const std::string& webhookId, const std::string& targetId,
                    bool receiverChanged);
  // The hold of one attempt (see AttemptHold): counted in inFlight_ from
  // now; finishAttempt() runs when its last copy is gone.
  AttemptHold holdAttempt(const std::string& deliveryId);
  void finishAttempt(const std::string& deliveryId);
  // False if already held or stopping; for a task a reconcile read
  // (`readSince`: its start), also if the delivery was released after that
  // read may have been made (HeldDeliveries::releasedSince).
  bool admit(Task task, std::optional<uint64_t> readSince = std::nullopt);
  // Makes `task` its FIFO target's head unless the lane has one; runs it
  // after `wait`. A delivery held already becomes the head where it is.
  HeadAdmission admitFifoHead(Task task, std::chrono::milliseconds wait,
                              std::optional<uint64_t> readSince);
  // A held delivery the timer had no room for: it waits on disk (retrying,
  // its due time stored) and a reload of its webhook reads it again.
  void letGoOfRetryLocked(const Task& task) REQUIRES(engineMutex_);
  // Hands a held task to the timer, letting go of what does not fit.
  void waitInTimer(Task task, std::chrono::milliseconds delay) EXCLUDES(engineMutex_);
  // The timer hands back a retry that is due; once the timer is half empty,
  // the webhooks whose retries it let go are read again.
  void retryDue(Task task);
  // Returns once every handoff opened before the call has closed.
  void waitForOpenHandoffs();
  void enqueueHeld(Task task);  // for tasks already in held_
  // LaneScheduler::Events, called under engineMutex_: wake a worker (or
  // start one, see WorkerPool::jobReadyLocked), count a throttled lane,
  // wake the refill thread.
  void laneReady() override;
  void laneThrottled(TargetType targetType) override;
  void refillQueued() override;

  // recovery.cpp
  // A restart's recovery: every webhook's waiting deliveries are admitted,
  // or put in the timer if not due yet; logs recovery.done.
  void recover();
  // Reads a webhook's waiting deliveries (only `onlyTarget`'s, if given) and
  // admits those nothing holds; with `scheduleFuture`, also puts those not
  // due yet in the timer (start-up, a changed target, retries back from disk).
  // Without either, it is the sweep.
  void reconcileWebhook(const std::string& webhookId, const std::string* onlyTarget,
                        bool scheduleFuture);
  // Open while a reconcile reads and acts on what it read: a row of a
  // delivery released meanwhile is stale and skipped
  // (HeldDeliveries::releasedSince with started()). Opened before the read.
  class ReconcileWindow {
   public:
    explicit ReconcileWindow(Engine& engine) EXCLUDES(engine.engineMutex_);
    ~ReconcileWindow() EXCLUDES(engine_.engineMutex_);
    ReconcileWindow(const ReconcileWindow&) = delete;
    ReconcileWindow& operator=(const ReconcileWindow&) = delete;
    uint64_t started() const { return started_; }

   private:
    Engine& engine_;
    uint64_t started_ = 0;
  };
  // Reconciles the rows of one read of a webhook (all its waiting
  // deliveries, or one target's), first waiting for the ingest handoffs
  // open now unless the read was of a FIFO target (ingest never admits
  // those itself).
  enum class Handoffs { kWait, kNone };
  void reconcileRows(const std::string& webhookId, const std::vector<UnfinishedDelivery>& rows,
                     bool scheduleFuture, uint64_t started, Handoffs handoffs);
  // Reads `targetId`'s waiting deliveries page by page, oldest first, each
  // page one read of the events DB, `pageSize(firstPage)` rows each (none:
  // stop), and reconciles them without scheduling; stops at a FIFO
  // target's head. False if a read failed (logged).
  bool reconcilePages(const std::string& webhookId, EventsDb& db, const std::string& targetId,
                      uint64_t started, std::unordered_set<std::string>& fifoDecided,
                      const std::function<std::optional<int>(bool firstPage)>& pageSize);
  // Takes out of a reconcile read the rows an attempt, a lane or the timer
  // holds, under one lock: admit() would skip each of them anyway, and
  // beside slow neighbours a sweep or a refill meets thousands (two engine
  // locks and a target lookup a row). A row let go of after this is one
  // released since the read began, which reconcileDelivery() skips too.
  void dropHeld(std::vector<UnfinishedDelivery>& rows) EXCLUDES(engineMutex_);
  // One row of a reconcile read: admitted, put in the timer, ended
  // (target_deleted) or skipped. `fifoDecided`: the FIFO targets whose head
  // this reconcile has settled.
  void reconcileDelivery(const std::string& webhookId, const UnfinishedDelivery& d,
                         bool scheduleFuture, uint64_t started,
                         std::unordered_set<std::string>& fifoDecided);
  // For the sweep: false when `webhookId`'s DB is closed and holds nothing
  // reconcileDelivery() would act on now (no delivery due, none of a FIFO,
  // deleted or unknown target), so it need not be opened.
  bool maySweep(const std::string& webhookId);
  void sweepLoop(std::stop_token stop);
  void refillLoop(std::stop_token stop);

  const EngineOptions options_;
  MainStore& store_;
  EventsDbPool& eventsDbs_;
  const TargetRegistry& targets_;
  const Clock& clock_;
  AttemptObserver& observer_;
  const EngineRouting routing_;
  HealthReporter* health_ = nullptr;
  RecoveredBacklog recoveredBacklog_;

  mutable Mutex engineMutex_;
  std::condition_variable_any idle_;
  LaneScheduler scheduler_ GUARDED_BY(engineMutex_);
  HeldDeliveries held_ GUARDED_BY(engineMutex_);
  // Webhooks with retries the timer had no room for (letGoOfRetryLocked).
  std::unordered_set<std::string> retriesOnDisk_ GUARDED_BY(engineMutex_);
  std::condition_variable_any refillWanted_;  // the scheduler has a refill
  int inFlight_ GUARDED_BY(engineMutex_) = 0;  // attempts whose hold lives
  // Its threads use the members above; destroyed (joined) before them.
  WorkerPool workerPool_;

  // Ingest handoffs opened and not yet closed (openHandoff).
  OpenTickets handoffs_;

  TargetCache targetCache_;

  RetryTimer timer_;
  std::jthread sweeper_;
  std::jthread refiller_;
};

}  // namespace webhooker
