// Engine: runs deliveries. A bounded pool of worker threads serves one lane
// per target; each lane has its own FIFO and an in-flight limit (the
// target's max_concurrency), so one slow or dead target can never take
// every worker or hold up the other targets.
//
// Every delivery the engine holds in memory (queued, in flight, its result
// still being written, or waiting for its retry time) is in held_, so
// recovery, the sweep and refills never schedule one delivery twice. An
// attempt ends for its lane when deliver() returns (the lane's slot is free
// for the next request) and for held_ when its AttemptHold goes, once the
// result is committed (finishAttempt). Queues are bounded: a task that does not fit
// is dropped from memory only (its row stays on disk) and its lane is marked
// overflowed; once that lane's queue drains below a quarter of its cap (when
// the global cap was the reason: below a quarter of an even share of it
// while the cap has room, or once all queues together drain below a quarter
// of it), the refill thread reads the target's waiting deliveries from the
// events DB again, so a backlog larger than the caps drains without waiting
// for the sweep, and slow targets whose tasks fill the global cap do not
// keep a fast target's lane empty.
//
// FIFO targets (ordering fifo) get no queue of their own: their lane holds
// one delivery at a time, its head, which is always the oldest waiting
// delivery of the target as the events DB orders them (created_at, rowid).
// A retrying or breaker-deferred head stays the head while it waits, so it
// holds the ones behind it; once it ends (delivered or failed) the refill
// thread reads the next oldest. Ingest only wakes an idle FIFO lane; the
// rows are read from disk in order, so a restart, a pause, a replay or a
// refill cannot reorder them.
//
// Ownership: references to the stores, registry, clock and observer must
// outlive the engine. Threading: submit/scheduleRetry/targetChanged from any
// thread; engineMutex_ guards lanes_, ready_, held_, rescheduled_, the
// rate limits (buckets_, throttled_), the
// reconcile bookkeeping (releases_, reconcileStarts_, released_), queued_,
// globalOverflow_, refills_, refillsQueued_, inFlight_ (attempts whose hold
// lives) and stopping_; handoffs_ has its own lock;
// targetsMutex_ guards the target cache. No events DB is read
// under engineMutex_: a worker that drains an overflowed lane only asks, and
// the refill thread reads. A hold may be released on an events DB's flusher
// thread; the destructor waits for every hold.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/open_tickets.h"
#include "engine/dispatcher.h"
#include "engine/retry_timer.h"
#include "engine/routing_metrics.h"
#include "engine/token_bucket.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"
#include "targets/routing_evaluator.h"
#include "targets/target.h"
#include "targets/health_reporter.h"
#include "targets/target_registry.h"

namespace webhooker {

struct EngineOptions {
  // Workers started with the engine. A lane that is ready while every
  // worker is in an attempt (slow receivers hold them) starts one more, up
  // to maxWorkers: a worker blocked on a socket costs no CPU, and a fast
  // target must not wait for slow ones to answer.
  int workers = 8;
  int maxWorkers = 64;
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

// What the engine needs for targets with a transform or a rate limit
// (targets/routing_rules.h); both must outlive the engine. Without an
// evaluator, a delivery of a target with a transform fails transform_failed.
struct EngineRouting {
  RoutingEvaluator* evaluator = nullptr;
  RoutingMetrics* metrics = nullptr;
};

class Engine final : public Dispatcher, public Scheduler {
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
  struct Lane {
    std::deque<Task> queue;
    int inFlight = 0;
    int maxConcurrency = 4;
    std::string targetType;
    bool ready = false;  // listed in ready_
    // Waiting in throttled_ for a token of its target's rate limit.
    bool throttled = false;
    // Set when a task was dropped because the queue was full: the webhook
    // whose events DB holds the rest. Cleared when a refill is asked for.
    std::string overflowWebhookId;
  };
  struct Refill {
    std::string webhookId;
    // None: every target of the webhook, retries not due yet included
    // (they go to the timer), for the retries the timer let go.
    std::optional<std::string> targetId;
    // At most one refill is queued per key.
    const std::string& key() const { return targetId ? *targetId : webhookId; }
  };
  // A target as cached: its row, and its routing and config, read once.
  struct CachedTarget : TargetRecord {
    TargetRouting routing;
    DeliveryConfig config;
  };
  using TargetPtr = std::shared_ptr<const CachedTarget>;
  // The lane of a FIFO target holds this delivery (see above).
  struct FifoHead {
    std::string targetId;
    std::string webhookId;
  };
  enum class HeadAdmission { kAdmitted, kLaneBusy, kReleasedSinceRead };

  // engine.cpp
  void work(std::stop_token stop);
  // A lane became ready: wakes a waiting worker, or starts one more when
  // none waits and every worker is inside an attempt (see
  // EngineOptions::maxWorkers). A worker between two attempts takes the
  // lane itself on its way back.
  void wakeWorkerLocked() REQUIRES(engineMutex_);
  // The workers the engine starts with.
  size_t startedWorkers() const;
  // Takes the calling worker, one beyond startedWorkers() that waited
  // workerIdleTimeout for work, out of workers_; it returns right after.
  void retireWorkerLocked() REQUIRES(engineMutex_);
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
  // (`readSince`: its start, see reconcileStarts_), also if the delivery was
  // released after that read may have been made.
  bool admit(Task task, std::optional<uint64_t> readSince = std::nullopt);
  bool releasedSinceLocked(const std::string& deliveryId, uint64_t readSince) const
      REQUIRES(engineMutex_);
  // Makes `task` its FIFO target's head unless the lane has one; runs it
  // after `wait`. A delivery held already becomes the head where it is.
  HeadAdmission admitFifoHead(Task task, std::chrono::milliseconds wait,
                              std::optional<uint64_t> readSince);
  // A held delivery leaves memory: if it was a FIFO head, its lane reads
  // the next one (when `readNext`).
  void releaseFifoHeadLocked(const std::string& deliveryId, bool readNext) REQUIRES(engineMutex_);
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
  void enqueueHeld(Task task);           // for tasks already in held_
  // Who takes a lane markReadyLocked lists: a worker it wakes, or the
  // calling worker, which is about to look at ready_ anyway (waking another
  // would only cost a thread switch).
  enum class Taker { kWokenWorker, kCaller };
  // Lists a lane in ready_ if it has work, room to run and (with a rate
  // limit) a token; without a token it waits in throttled_.
  // True if it listed the lane.
  bool markReadyLocked(const std::string& targetId, Lane& lane, Taker taker = Taker::kWokenWorker)
      REQUIRES(engineMutex_);
  // How many more tasks the global cap admits to a lane holding
  // `laneQueued`: up to the cap for a lane below its even share of it, up
  // to half the cap for one at or above it, so lanes far above their share
  // (slow targets' backlogs) cannot fill the cap and keep the others from
  // taking new tasks and refilling.
  size_t globalRoomLocked(size_t laneQueued) const REQUIRES(engineMutex_);
  // Sets (or drops) the target's token bucket after its rate limit.
  void applyRateLimitLocked(const std::string& targetId, const TargetRouting& routing)
      REQUIRES(engineMutex_);
  // Moves the throttled lanes whose next token is due back to ready_, and
  // returns when the next one is due (nullopt: none throttled).
  std::optional<TimePoint> releaseThrottledLocked() REQUIRES(engineMutex_);
  // The body `task` is sent with, transformed if its target says so; false
  // when the transform failed (the delivery is then failed and recorded).
  bool applyTransform(const CachedTarget& target, const Task& task, EventsDb& db,
                      EventPayload& payload, const AttemptHold& hold);
  // An overflowed lane that drained below the low-water mark asks the
  // refill thread to read its target's deliveries again; so do the lanes
  // that overflowed the global cap once the total is below its mark.
  void requestRefillsLocked(const std::string& targetId, Lane& lane) REQUIRES(engineMutex_);
  void queueRefillLocked(const std::string& webhookId, std::optional<std::string> targetId)
      REQUIRES(engineMutex_);
  TargetPtr targetFor(const std::string& webhookId, const std::string& targetId);
  // The record with its routing and delivery config parsed once.
  static TargetPtr cachedTarget(TargetRecord record);
  // Puts every live target in the cache with one read of the main store, for
  // a restart's recovery, which would otherwise read them one at a time.
  void cacheLiveTargets() EXCLUDES(targetsMutex_);

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
  // delivery released meanwhile is stale and skipped (releasedSinceLocked
  // with started()). Opened before the read.
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
  // How many rows the next page of a target's refill reads: the room its
  // lane has under both caps (1,000 at most), plus, on the first page, the
  // lane's queued and in-flight tasks, which come first in the order. None
  // when stopping or when there is no room; the lane is then marked as cut
  // off, so it is refilled once it drains.
  std::optional<int> refillPage(const std::string& webhookId, const std::string& targetId,
                                bool firstPage) EXCLUDES(engineMutex_);
  // For the sweep: true while the caps keep `targetId`'s backlog on disk,
  // to be refilled once its lane drains; asks for that refill if the lane
  // is already low enough.
  bool leaveToRefill(const std::string& targetId) EXCLUDES(engineMutex_);
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
  std::condition_variable_any workAvailable_;
  std::condition_variable_any idle_;
  std::unordered_map<std::string, Lane> lanes_ GUARDED_BY(engineMutex_);
  // Lanes with queued work and room to run.
  std::deque<std::string> ready_ GUARDED_BY(engineMutex_);
  std::unordered_set<std::string> held_ GUARDED_BY(engineMutex_);
  // In flight and asked for a retry: how many such attempts are still to
  // finish (a quick retry can finish before the attempt that scheduled it).
  std::unordered_map<std::string, int> rescheduled_ GUARDED_BY(engineMutex_);
  // A reconcile may read a delivery as unfinished just before a worker
  // finishes it. Releases are numbered while a reconcile runs (released_:
  // id -> number); each reconcile notes the count at its start and skips
  // what was released after it. An entry goes once no running reconcile
  // started before it, so one reconcile's bookkeeping never holds back
  // another's or a fresh submit.
  uint64_t releases_ GUARDED_BY(engineMutex_) = 0;
  std::multiset<uint64_t> reconcileStarts_ GUARDED_BY(engineMutex_);
  std::unordered_map<std::string, uint64_t> released_ GUARDED_BY(engineMutex_);
  size_t queued_ GUARDED_BY(engineMutex_) = 0;  // tasks in all lanes' queues
  // Rate-limited targets' buckets, kept while their lanes come and go.
  std::unordered_map<std::string, TokenBucket> buckets_ GUARDED_BY(engineMutex_);
  // Throttled lanes by the time their next token is due.
  std::multimap<TimePoint, std::string> throttled_ GUARDED_BY(engineMutex_);
  // Targets that had a task dropped because queued_ reached maxQueued, and
  // their webhooks.
  std::unordered_map<std::string, std::string> globalOverflow_ GUARDED_BY(engineMutex_);
  // Webhooks with retries the timer had no room for (letGoOfRetryLocked).
  std::unordered_set<std::string> retriesOnDisk_ GUARDED_BY(engineMutex_);
  // Refills asked for and not yet started, at most one per Refill::key().
  std::condition_variable_any refillWanted_;
  std::deque<Refill> refills_ GUARDED_BY(engineMutex_);
  std::unordered_set<std::string> refillsQueued_ GUARDED_BY(engineMutex_);  // their keys
  int inFlight_ GUARDED_BY(engineMutex_) = 0;
  // FIFO lanes: target id -> its head's delivery id, and back.
  std::unordered_map<std::string, std::string> fifoHeads_ GUARDED_BY(engineMutex_);
  std::unordered_map<std::string, FifoHead> fifoHeadOf_ GUARDED_BY(engineMutex_);
  bool stopping_ GUARDED_BY(engineMutex_) = false;
  std::vector<std::jthread> workers_ GUARDED_BY(engineMutex_);
  // Workers that retired (retireWorkerLocked), to be joined: by the next
  // one to retire, or by stop(). They never take engineMutex_ again.
  std::vector<std::jthread> retired_ GUARDED_BY(engineMutex_);
  int idleWorkers_ GUARDED_BY(engineMutex_) = 0;  // waiting for a ready lane
  size_t busyWorkers_ GUARDED_BY(engineMutex_) = 0;  // inside runAttempt()

  // Ingest handoffs opened and not yet closed (openHandoff).
  OpenTickets handoffs_;

  Mutex targetsMutex_;
  std::unordered_map<std::string, TargetPtr> targetCache_ GUARDED_BY(targetsMutex_);
  // Moves with every targetChanged(): a load that began before a change
  // read the old row and must not be cached after the change dropped it.
  uint64_t targetChanges_ GUARDED_BY(targetsMutex_) = 0;

  RetryTimer timer_;
  std::jthread sweeper_;
  std::jthread refiller_;
};

}  // namespace webhooker
