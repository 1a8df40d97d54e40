#include "engine/engine.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "engine/attempt_transform.h"
#include "storage/events_db.h"

namespace webhooker {

Engine::Engine(EngineOptions options, MainStore& store, EventsDbPool& eventsDbs,
               const TargetRegistry& targets, const Clock& clock, AttemptObserver& observer,
               EngineRouting routing)
    : options_(options),
      store_(store),
      eventsDbs_(eventsDbs),
      targets_(targets),
      clock_(clock),
      observer_(observer),
      routing_(routing),
      scheduler_({options_.maxQueuedPerTarget, options_.maxQueued}, clock_, *this),
      workerPool_(
          {options_.workers, options_.maxWorkers, options_.slowAttempt, options_.workerIdleTimeout},
          engineMutex_, *this),
      targetCache_(store),
      timer_(options_.maxWaitingRetries, [this](Task task) { retryDue(std::move(task)); }) {}

Engine::~Engine() {
  stop(std::chrono::milliseconds(0));
  // An attempt's hold may outlive its worker (a result still being written)
  // and calls back into the engine when it goes.
  MutexLock lock(engineMutex_);
  idle_.wait(lock, [&]() REQUIRES(engineMutex_) { return inFlight_ == 0; });
#ifndef NDEBUG
  // An open handoff is an ingest whose commit callback is still parked and
  // will call into this engine: its owner destroyed the engine before the
  // HTTP server, whose ingest handler waits for those callbacks.
  if (!handoffs_.waitForEarlier(std::chrono::steady_clock::now())) {
    std::fputs("webhooker: Engine destroyed with an ingest handoff still open; destroy the "
               "HTTP server (it waits for parked ingests) before the engine\n",
               stderr);
    std::abort();
  }
#endif
}

void Engine::start() {
  // Recovery runs before the workers so that a restart's backlog is queued
  // oldest first, ahead of anything new.
  recover();
  refiller_ = std::jthread([this](std::stop_token st) { refillLoop(st); });
  workerPool_.start();
  sweeper_ = std::jthread([this](std::stop_token st) { sweepLoop(st); });
}

bool Engine::stop(std::chrono::milliseconds grace) {
  {
    MutexLock lock(engineMutex_);
    if (scheduler_.stopping() && workerPool_.workersLocked() == 0) return true;
    scheduler_.stop();
  }
  workerPool_.stop();
  timer_.stop();
  sweeper_ = std::jthread();  // requests stop and joins
  refiller_ = std::jthread();  // likewise; its admits are refused from now on
  bool finished;
  {
    MutexLock lock(engineMutex_);
    finished =
        idle_.wait_for(lock, grace, [&]() REQUIRES(engineMutex_) { return inFlight_ == 0; });
  }
  if (finished) workerPool_.join();  // nobody is in an attempt any more
  return finished;
}

int Engine::attemptsInFlight(const std::string& targetId) const {
  MutexLock lock(engineMutex_);
  return scheduler_.inFlight(targetId);
}

size_t Engine::heldCount() const {
  MutexLock lock(engineMutex_);
  return held_.size();
}

void Engine::submit(std::vector<Task> tasks) {
  for (Task& t : tasks) admit(std::move(t));
}

void Engine::scheduleRetry(Task task, std::chrono::milliseconds delay) {
  {
    MutexLock lock(engineMutex_);
    if (scheduler_.stopping()) return;  // on disk as retrying; the next start recovers it
    held_.holdForRetry(task.deliveryId);
  }
  waitInTimer(std::move(task), delay);
}

void Engine::waitInTimer(Task task, std::chrono::milliseconds delay) {
  if (auto left = timer_.schedule(std::move(task), delay)) {
    MutexLock lock(engineMutex_);
    letGoOfRetryLocked(*left);
  }
}

void Engine::letGoOfRetryLocked(const Task& task) {
  retriesOnDisk_.insert(task.webhookId);
  if (held_.letGoOfRetry(task.deliveryId)) scheduler_.releaseFifoHead(task.deliveryId, false);
}

void Engine::retryDue(Task task) {
  enqueueHeld(std::move(task));
  MutexLock lock(engineMutex_);
  if (retriesOnDisk_.empty() || timer_.waiting() > options_.maxWaitingRetries / 2) return;
  for (const std::string& webhookId : retriesOnDisk_) scheduler_.queueRefill(webhookId, std::nullopt);
  retriesOnDisk_.clear();
}

bool Engine::admit(Task task, std::optional<uint64_t> readSince) {
  const TargetPtr target = targetCache_.get(task.webhookId, task.targetId);
  // A pull target's deliveries wait on disk for a consumer's lease.
  if (target && target->pulled()) return false;
  if (target && target->fifo()) {
    // Only the oldest waiting delivery may run, and only the events DB
    // knows which that is: an idle lane reads it, a busy one reads the
    // next when its head ends.
    MutexLock lock(engineMutex_);
    scheduler_.fifoDeliveryWaiting(task.webhookId, task.targetId);
    return false;
  }
  {
    MutexLock lock(engineMutex_);
    if (scheduler_.stopping() || !held_.hold(task.deliveryId, readSince)) return false;
  }
  enqueueHeld(std::move(task));
  return true;
}

Engine::HeadAdmission Engine::admitFifoHead(Task task, std::chrono::milliseconds wait,
                                            std::optional<uint64_t> readSince) {
  {
    MutexLock lock(engineMutex_);
    if (scheduler_.stopping() || scheduler_.fifoHead(task.targetId))
      return HeadAdmission::kLaneBusy;
    if (readSince && held_.releasedSince(task.deliveryId, *readSince))
      return HeadAdmission::kReleasedSinceRead;
    scheduler_.setFifoHead(task.targetId, task.deliveryId, task.webhookId);
    // Already in memory (queued while the target was parallel): it leads
    // from where it is.
    if (!held_.hold(task.deliveryId)) return HeadAdmission::kLaneBusy;
  }
  if (wait.count() > 0) waitInTimer(std::move(task), wait);
  else enqueueHeld(std::move(task));
  return HeadAdmission::kAdmitted;
}

std::optional<std::string> Engine::fifoHead(const std::string& targetId) const {
  MutexLock lock(engineMutex_);
  return scheduler_.fifoHead(targetId);
}

bool Engine::probe(const std::string& webhookId, const std::string& targetId) {
  const TargetPtr target = targetCache_.get(webhookId, targetId);
  if (!target) return false;
  auto db = eventsDbs_.get(webhookId);
  if (!db) return false;
  auto oldest = db.value()->unfinishedDeliveries(&targetId, 1);
  if (!oldest || oldest->empty()) return false;
  const UnfinishedDelivery& d = oldest->front();
  Task task = nextAttempt(webhookId, d, target->type);
  task.probe = true;
  if (target->fifo())
    return admitFifoHead(std::move(task), std::chrono::milliseconds(0), std::nullopt) ==
           HeadAdmission::kAdmitted;
  {
    MutexLock lock(engineMutex_);
    if (scheduler_.stopping() || !held_.hold(task.deliveryId)) return false;
  }
  enqueueHeld(std::move(task));
  return true;
}

Dispatcher::Handoff Engine::openHandoff() { return handoffs_.open(); }

void Engine::waitForOpenHandoffs() { handoffs_.waitForEarlier(); }

void Engine::enqueueHeld(Task task) {
  // The lane's in-flight limit must hold from its first task, not only once
  // an attempt has looked the target up: a restart queues a whole backlog
  // before any attempt runs. (A cache hit but for the first task.)
  const TargetPtr target = targetCache_.get(task.webhookId, task.targetId);
  const std::optional<LaneSettings> settings =
      target ? std::optional(target->laneSettings()) : std::nullopt;
  const std::string deliveryId = task.deliveryId;
  const std::string targetId = task.targetId;
  MutexLock lock(engineMutex_);
  const LaneScheduler::Enqueued enqueued =
      scheduler_.enqueue(std::move(task), settings ? &*settings : nullptr);
  if (enqueued == LaneScheduler::Enqueued::kQueued) return;
  // Memory is full: the row is on disk and a refill brings it back.
  held_.drop(deliveryId);
  if (enqueued != LaneScheduler::Enqueued::kStopping)
    spdlog::debug("engine.{} target_id={} delivery_id={}",
                  enqueued == LaneScheduler::Enqueued::kGlobalCapFull ? "queues_full" : "queue_full",
                  targetId, deliveryId);
}

void Engine::laneReady() { workerPool_.jobReadyLocked(); }

void Engine::laneThrottled(TargetType targetType) {
  if (routing_.metrics) routing_.metrics->throttled(targetType);
  workerPool_.wakeOne();  // a waiting worker times its wake-up by the earliest
}

void Engine::refillQueued() { refillWanted_.notify_one(); }

size_t Engine::workerCount() const {
  MutexLock lock(engineMutex_);
  return workerPool_.workersLocked();
}

bool Engine::stopping() const {
  engineMutex_.assertHeld();
  return scheduler_.stopping();
}

bool Engine::jobReady() const {
  engineMutex_.assertHeld();
  return scheduler_.hasReady();
}

bool Engine::awaitJob(MutexLock& lock, std::condition_variable_any& wake, std::stop_token stop,
                      std::optional<std::chrono::milliseconds> idleFor) {
  engineMutex_.assertHeld();
  const std::optional<TimePoint> nextToken = scheduler_.releaseThrottled();
  if (!nextToken) {
    const auto woken = [&]() REQUIRES(engineMutex_) {
      return scheduler_.stopping() || scheduler_.hasReady() || scheduler_.nextTokenDue();
    };
    if (idleFor) return wake.wait_for(lock, stop, *idleFor, woken);
    wake.wait(lock, stop, woken);
  } else if (!scheduler_.hasReady()) {
    // Until the next token, or sooner if a lane is throttled until earlier.
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(*nextToken - clock_.now());
    wake.wait_for(
        lock, stop, std::max(wait, std::chrono::milliseconds(1)), [&]() REQUIRES(engineMutex_) {
          const std::optional<TimePoint> due = scheduler_.nextTokenDue();
          return scheduler_.stopping() || scheduler_.hasReady() || !due || *due < *nextToken;
        });
  }
  return true;
}

std::optional<Task> Engine::takeJob() {
  engineMutex_.assertHeld();
  std::optional<Task> task = scheduler_.takeNext();
  if (task) ++inFlight_;
  return task;
}

void Engine::runJob(Task& task) {
  const std::string deliveryId = task.deliveryId;
  try {
    runAttempt(task, holdAttempt(deliveryId));
  } catch (const std::exception& e) {
    // A bug, not a delivery outcome: keep the worker alive; the row stays
    // on disk in its last recorded state and the sweep retries it.
    spdlog::critical("delivery.crashed delivery_id={} error=\"{}\"", deliveryId, e.what());
  }
}

void Engine::jobEnded(const std::string& targetId) {
  engineMutex_.assertHeld();
  // The lane's slot is free again; the delivery stays held until its
  // result is written (finishAttempt).
  scheduler_.attemptEnded(targetId);
}

AttemptHold Engine::holdAttempt(const std::string& deliveryId) {
  class Hold {
   public:
    Hold(Engine& engine, std::string deliveryId)
        : engine_(engine), deliveryId_(std::move(deliveryId)) {}
    ~Hold() { engine_.finishAttempt(deliveryId_); }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    Engine& engine_;
    const std::string deliveryId_;
  };
  return std::make_shared<const Hold>(*this, deliveryId);
}

void Engine::finishAttempt(const std::string& deliveryId) {
  MutexLock lock(engineMutex_);
  --inFlight_;
  if (held_.attemptFinished(deliveryId))
    scheduler_.releaseFifoHead(deliveryId, !scheduler_.stopping());
  if (inFlight_ == 0) idle_.notify_all();
}

void Engine::targetChanged(const std::string& webhookId, const std::string& targetId) {
  changeTarget(webhookId, targetId, false);
}

void Engine::receiverChanged(const std::string& webhookId, const std::string& targetId) {
  changeTarget(webhookId, targetId, true);
}

void Engine::changeTarget(const std::string& webhookId, const std::string& targetId,
                          bool receiverChanged) {
  targetCache_.forget(targetId);
  if (receiverChanged && health_) health_->receiverChanged(webhookId, targetId);
  reconcileWebhook(webhookId, &targetId, true);
  // What an open breaker put off goes now: a receiver change has reset the
  // breaker (and if it has not, the breaker refuses again, at no attempt).
  // Every retry of a webhook moving out goes now too, to be let go at
  // once: held until its time, it could outlive the move and, were the
  // webhook moved back, run against the file that came back.
  const TargetPtr target = targetCache_.get(webhookId, targetId);
  const bool movingOut = target && target->webhookMovingOut;
  timer_.expedite(targetId,
                  [movingOut](const Task& t) { return movingOut || t.breakerDeferred; });
}

void Engine::runAttempt(Task& task, AttemptHold hold) {
  TargetPtr target = targetCache_.get(task.webhookId, task.targetId);
  // No row at all: the whole webhook was deleted with its events DB.
  if (!target) return;
  auto db = eventsDbs_.get(task.webhookId);
  if (!db && db.error().isNotFound()) {
    // The webhook was deleted with its events DB after its target was cached.
    spdlog::debug("delivery.webhook_deleted webhook_id={} delivery_id={}", task.webhookId,
                  task.deliveryId);
    return;
  }
  if (!db) {
    spdlog::error("delivery.events_db_unavailable webhook_id={} error=\"{}\"", task.webhookId,
                  db.error().message);
    return;
  }
  if (target->deletedAt) {
    if (auto r = db.value()->failWithoutAttempt(task.deliveryId, FailureKind::kTargetDeleted); r)
      observer_.outcome(target->type, DeliveryStatus::kFailed, FailureKind::kTargetDeleted);
    return;
  }
  // Paused by an operator or disabled by the engine: resumes when the
  // target is enabled. An auto-resume probe is the exception.
  if (!target->deliverable() && !(task.probe && target->active && target->disabled)) return;
  {
    MutexLock lock(engineMutex_);
    scheduler_.configure(task.targetId, target->laneSettings());
  }
  Target* impl = targets_.find(target->type);
  if (!impl) {
    spdlog::error("delivery.unknown_target_type target_id={} type={}", task.targetId,
                  targetTypeWord(target->type));
    return;
  }
  // The attempt's own copy: the event's other deliveries may share the
  // task's. A retry reads the body again: one waiting for its time holds none.
  EventPayload payload;
  if (task.payload) {
    payload = *task.payload;
    task.payload.reset();
  } else {
    auto loaded = db.value()->loadPayload(task.eventId);
    if (!loaded) {
      spdlog::error("delivery.payload_unavailable delivery_id={} error=\"{}\"", task.deliveryId,
                    loaded.error().message);
      return;
    }
    payload = std::move(loaded.value());
  }
  task.targetType = target->type;
  if (!transformBody(*target, task, *db.value(), payload, hold, routing_, observer_, *this, clock_))
    return;
  DeliveryContext context{*db.value(),     *target, target->config,
                          payload,         *this,   observer_,
                          std::move(hold), health_, !target->routing.transformJq.empty()};
  impl->deliver(context, std::move(task));
}

}  // namespace webhooker
