#include "engine/engine.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "base/ascii_case.h"
#include "base/thread_name.h"
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
  {
    MutexLock lock(engineMutex_);
    for (size_t i = 0; i < startedWorkers(); ++i)
      workers_.emplace_back([this](std::stop_token st) { work(st); });
  }
  sweeper_ = std::jthread([this](std::stop_token st) { sweepLoop(st); });
}

bool Engine::stop(std::chrono::milliseconds grace) {
  {
    MutexLock lock(engineMutex_);
    if (stopping_ && workers_.empty()) return true;
    stopping_ = true;
  }
  workAvailable_.notify_all();
  timer_.stop();
  sweeper_ = std::jthread();  // requests stop and joins
  refiller_ = std::jthread();  // likewise; its admits are refused from now on
  bool finished;
  {
    MutexLock lock(engineMutex_);
    finished =
        idle_.wait_for(lock, grace, [&]() REQUIRES(engineMutex_) { return inFlight_ == 0; });
  }
  if (finished) {
    std::vector<std::jthread> workers;
    {
      MutexLock lock(engineMutex_);
      workers = std::move(workers_);  // none is added while stopping_
      for (std::jthread& w : retired_) workers.push_back(std::move(w));
      retired_.clear();
    }
    for (auto& w : workers) w.request_stop();
    workAvailable_.notify_all();
    workers.clear();  // joins: nobody is in an attempt any more
  }
  return finished;
}

int Engine::attemptsInFlight(const std::string& targetId) const {
  MutexLock lock(engineMutex_);
  const auto lane = lanes_.find(targetId);
  return lane == lanes_.end() ? 0 : lane->second.inFlight;
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
    if (stopping_) return;  // on disk as retrying; the next start recovers it
    held_.insert(task.deliveryId);
    ++rescheduled_[task.deliveryId];
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
  if (auto it = rescheduled_.find(task.deliveryId); it != rescheduled_.end()) {
    if (--it->second == 0) rescheduled_.erase(it);  // its attempt lets go when it ends
    return;
  }
  // Not a release: the delivery is unfinished, and a reconcile that read it
  // may take it again.
  held_.erase(task.deliveryId);
  releaseFifoHeadLocked(task.deliveryId, false);
}

void Engine::retryDue(Task task) {
  enqueueHeld(std::move(task));
  MutexLock lock(engineMutex_);
  if (retriesOnDisk_.empty() || timer_.waiting() > options_.maxWaitingRetries / 2) return;
  for (const std::string& webhookId : retriesOnDisk_) queueRefillLocked(webhookId, std::nullopt);
  retriesOnDisk_.clear();
}

bool Engine::admit(Task task, std::optional<uint64_t> readSince) {
  if (const TargetPtr target = targetFor(task.webhookId, task.targetId); target && target->fifo()) {
    // Only the oldest waiting delivery may run, and only the events DB
    // knows which that is: an idle lane reads it, a busy one reads the
    // next when its head ends.
    MutexLock lock(engineMutex_);
    if (!fifoHeads_.count(task.targetId)) queueRefillLocked(task.webhookId, task.targetId);
    return false;
  }
  {
    MutexLock lock(engineMutex_);
    if (stopping_ || (readSince && releasedSinceLocked(task.deliveryId, *readSince)) ||
        !held_.insert(task.deliveryId).second)
      return false;
  }
  enqueueHeld(std::move(task));
  return true;
}

bool Engine::releasedSinceLocked(const std::string& deliveryId, uint64_t readSince) const {
  const auto it = released_.find(deliveryId);
  return it != released_.end() && it->second > readSince;
}

Engine::HeadAdmission Engine::admitFifoHead(Task task, std::chrono::milliseconds wait,
                                            std::optional<uint64_t> readSince) {
  {
    MutexLock lock(engineMutex_);
    if (stopping_ || fifoHeads_.count(task.targetId)) return HeadAdmission::kLaneBusy;
    if (readSince && releasedSinceLocked(task.deliveryId, *readSince))
      return HeadAdmission::kReleasedSinceRead;
    fifoHeads_[task.targetId] = task.deliveryId;
    fifoHeadOf_[task.deliveryId] = {task.targetId, task.webhookId};
    // Already in memory (queued while the target was parallel): it leads
    // from where it is.
    if (!held_.insert(task.deliveryId).second) return HeadAdmission::kLaneBusy;
  }
  if (wait.count() > 0) waitInTimer(std::move(task), wait);
  else enqueueHeld(std::move(task));
  return HeadAdmission::kAdmitted;
}

void Engine::releaseFifoHeadLocked(const std::string& deliveryId, bool readNext) {
  const auto it = fifoHeadOf_.find(deliveryId);
  if (it == fifoHeadOf_.end()) return;
  const FifoHead head = it->second;
  fifoHeadOf_.erase(it);
  fifoHeads_.erase(head.targetId);
  if (readNext) queueRefillLocked(head.webhookId, head.targetId);
}

std::optional<std::string> Engine::fifoHead(const std::string& targetId) const {
  MutexLock lock(engineMutex_);
  const auto it = fifoHeads_.find(targetId);
  if (it == fifoHeads_.end()) return std::nullopt;
  return it->second;
}

bool Engine::probe(const std::string& webhookId, const std::string& targetId) {
  const TargetPtr target = targetFor(webhookId, targetId);
  if (!target) return false;
  auto db = eventsDbs_.get(webhookId);
  if (!db) return false;
  auto oldest = db.value()->unfinishedDeliveries(&targetId, 1);
  if (!oldest || oldest->empty()) return false;
  const UnfinishedDelivery& d = oldest->front();
  Task task;
  task.deliveryId = d.id;
  task.eventId = d.eventId;
  task.webhookId = webhookId;
  task.targetId = targetId;
  task.targetType = target->type;
  task.attempt = d.attempts + 1;
  task.seriesStart = d.seriesStart;
  task.probe = true;
  if (target->fifo())
    return admitFifoHead(std::move(task), std::chrono::milliseconds(0), std::nullopt) ==
           HeadAdmission::kAdmitted;
  {
    MutexLock lock(engineMutex_);
    if (stopping_ || !held_.insert(task.deliveryId).second) return false;
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
  const TargetPtr target = targetFor(task.webhookId, task.targetId);
  MutexLock lock(engineMutex_);
  const auto existing = lanes_.find(task.targetId);
  if (!stopping_ &&
      globalRoomLocked(existing == lanes_.end() ? 0 : existing->second.queue.size()) == 0) {
    held_.erase(task.deliveryId);
    releaseFifoHeadLocked(task.deliveryId, false);  // the global refill reads it again
    globalOverflow_.emplace(task.targetId, task.webhookId);
    spdlog::debug("engine.queues_full target_id={} delivery_id={}", task.targetId, task.deliveryId);
    return;
  }
  Lane& lane = existing != lanes_.end() ? existing->second : lanes_[task.targetId];
  if (target) {
    lane.maxConcurrency = target->fifo() ? 1 : std::max(1, target->maxConcurrency);
    lane.targetType = target->type;
    applyRateLimitLocked(task.targetId, target->routing);
  }
  if (stopping_ || lane.queue.size() >= options_.maxQueuedPerTarget) {
    // Memory is full; the row is on disk and a refill brings it back once
    // the lane has drained (the next start-up, if stopping).
    held_.erase(task.deliveryId);
    releaseFifoHeadLocked(task.deliveryId, false);
    if (!stopping_) lane.overflowWebhookId = task.webhookId;
    spdlog::debug("engine.queue_full target_id={} delivery_id={}", task.targetId, task.deliveryId);
    return;
  }
  const std::string targetId = task.targetId;
  lane.queue.push_back(std::move(task));
  ++queued_;
  markReadyLocked(targetId, lane);
}

size_t Engine::globalRoomLocked(size_t laneQueued) const {
  const size_t evenShare = options_.maxQueued / std::max<size_t>(1, lanes_.size());
  const size_t limit = laneQueued < evenShare ? options_.maxQueued : options_.maxQueued / 2;
  return limit - std::min(queued_, limit);
}

bool Engine::markReadyLocked(const std::string& targetId, Lane& lane, Taker taker) {
  if (lane.ready || lane.throttled || lane.queue.empty() || lane.inFlight >= lane.maxConcurrency)
    return false;
  if (auto bucket = buckets_.find(targetId); bucket != buckets_.end()) {
    const TimePoint now = clock_.now();
    if (!bucket->second.take(now)) {
      // The delivery waits in its lane: no attempt is made or counted.
      lane.throttled = true;
      throttled_.emplace(bucket->second.nextTokenAt(now), targetId);
      if (routing_.metrics) routing_.metrics->throttled(lane.targetType);
      workAvailable_.notify_one();  // a waiting worker times its wake-up by the earliest
      return false;
    }
  }
  lane.ready = true;
  ready_.push_back(targetId);
  if (taker == Taker::kWokenWorker) wakeWorkerLocked();
  return true;
}

size_t Engine::startedWorkers() const { return static_cast<size_t>(std::max(1, options_.workers)); }

size_t Engine::workerCount() const {
  MutexLock lock(engineMutex_);
  return workers_.size();
}

void Engine::retireWorkerLocked() {
  const auto self = std::find_if(workers_.begin(), workers_.end(), [](const std::jthread& w) {
    return w.get_id() == std::this_thread::get_id();
  });
  for (std::jthread& earlier : retired_) earlier.join();
  retired_.clear();
  retired_.push_back(std::move(*self));
  workers_.erase(self);
  spdlog::debug("delivery.worker_retired workers={}", workers_.size());
}

void Engine::wakeWorkerLocked() {
  // Before start() (recovery queues first) the pool is not there to grow.
  const size_t started = startedWorkers();
  const size_t most = std::max(started, static_cast<size_t>(options_.maxWorkers));
  if (idleWorkers_ > 0 || busyWorkers_ < workers_.size() || stopping_ ||
      workers_.size() < started || workers_.size() >= most) {
    workAvailable_.notify_one();
    return;
  }
  workers_.emplace_back([this](std::stop_token st) { work(st); });
  spdlog::debug("delivery.worker_added workers={}", workers_.size());
}

void Engine::applyRateLimitLocked(const std::string& targetId, const TargetRouting& routing) {
  if (!routing.ratePerSecond) {
    buckets_.erase(targetId);
    return;
  }
  auto it = buckets_.find(targetId);
  if (it == buckets_.end() || it->second.rate() != *routing.ratePerSecond)
    buckets_.insert_or_assign(targetId, TokenBucket(*routing.ratePerSecond, clock_.now()));
}

std::optional<TimePoint> Engine::releaseThrottledLocked() {
  const TimePoint now = clock_.now();
  while (!throttled_.empty() && throttled_.begin()->first <= now) {
    const std::string targetId = std::move(throttled_.begin()->second);
    throttled_.erase(throttled_.begin());
    auto lane = lanes_.find(targetId);
    if (lane == lanes_.end()) continue;
    lane->second.throttled = false;
    markReadyLocked(targetId, lane->second);  // may throttle it again
  }
  if (throttled_.empty()) return std::nullopt;
  return throttled_.begin()->first;
}

void Engine::requestRefillsLocked(const std::string& targetId, Lane& lane) {
  if (!lane.overflowWebhookId.empty() &&
      lane.queue.size() < std::max<size_t>(1, options_.maxQueuedPerTarget / 4)) {
    queueRefillLocked(lane.overflowWebhookId, targetId);
    lane.overflowWebhookId.clear();
  }
  // A lane the global cap cut off is refilled once it drains below a quarter
  // of an even share of the cap, while there is room: waiting for every
  // queue to drain would hold a fast target behind slow ones whose tasks
  // fill the cap, and the slow ones, far above their share, leave the room to it.
  const size_t evenShare = options_.maxQueued / std::max<size_t>(1, lanes_.size());
  if (auto cut = globalOverflow_.find(targetId);
      cut != globalOverflow_.end() && lane.queue.size() < std::max<size_t>(1, evenShare / 4) &&
      queued_ < options_.maxQueued) {
    queueRefillLocked(cut->second, targetId);
    globalOverflow_.erase(cut);
  }
  if (!globalOverflow_.empty() && queued_ < std::max<size_t>(1, options_.maxQueued / 4)) {
    for (const auto& [target, webhookId] : globalOverflow_) queueRefillLocked(webhookId, target);
    globalOverflow_.clear();
  }
}

void Engine::queueRefillLocked(const std::string& webhookId,
                               std::optional<std::string> targetId) {
  Refill refill{webhookId, std::move(targetId)};
  if (stopping_ || !refillsQueued_.insert(refill.key()).second) return;
  refills_.push_back(std::move(refill));
  refillWanted_.notify_one();
}

void Engine::work(std::stop_token stop) {
  nameThisThread("wh-worker");
  MutexLock lock(engineMutex_);
  while (true) {
    const std::optional<TimePoint> nextToken = releaseThrottledLocked();
    ++idleWorkers_;
    bool idledOut = false;
    if (!nextToken) {
      const auto woken = [&]() REQUIRES(engineMutex_) {
        return stopping_ || !ready_.empty() || !throttled_.empty();
      };
      if (workers_.size() > startedWorkers())
        idledOut = !workAvailable_.wait_for(lock, stop, options_.workerIdleTimeout, woken);
      else
        workAvailable_.wait(lock, stop, woken);
    } else if (ready_.empty()) {
      // Until the next token, or sooner if a lane is throttled until earlier.
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(*nextToken - clock_.now());
      workAvailable_.wait_for(lock, stop, std::max(wait, std::chrono::milliseconds(1)),
                              [&]() REQUIRES(engineMutex_) {
                                return stopping_ || !ready_.empty() || throttled_.empty() ||
                                       throttled_.begin()->first < *nextToken;
                              });
    }
    --idleWorkers_;
    if (stopping_ || stop.stop_requested()) return;
    if (idledOut && workers_.size() > startedWorkers()) return retireWorkerLocked();
    if (ready_.empty()) continue;
    const std::string targetId = std::move(ready_.front());
    ready_.pop_front();
    Lane& lane = lanes_[targetId];
    lane.ready = false;
    if (lane.queue.empty()) continue;
    Task task = std::move(lane.queue.front());
    lane.queue.pop_front();
    --queued_;
    ++lane.inFlight;
    ++inFlight_;
    ++busyWorkers_;
    requestRefillsLocked(targetId, lane);
    // Another lane may have been woken for while this worker was its only
    // waiting one.
    if (!markReadyLocked(targetId, lane) && !ready_.empty()) wakeWorkerLocked();
    const std::string deliveryId = task.deliveryId;

    lock.unlock();
    try {
      runAttempt(task, holdAttempt(deliveryId));
    } catch (const std::exception& e) {
      // A bug, not a delivery outcome: keep the worker alive; the row stays
      // on disk in its last recorded state and the sweep retries it.
      spdlog::critical("delivery.crashed delivery_id={} error=\"{}\"", deliveryId, e.what());
    }
    lock.lock();
    --busyWorkers_;

    // The lane's slot is free again; the delivery stays held until its
    // result is written (finishAttempt).
    Lane& done = lanes_[targetId];
    --done.inFlight;
    markReadyLocked(targetId, done, Taker::kCaller);
    if (done.queue.empty() && done.inFlight == 0 && !done.ready) lanes_.erase(targetId);
  }
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
  if (auto it = rescheduled_.find(deliveryId); it != rescheduled_.end()) {
    if (--it->second == 0) rescheduled_.erase(it);
  } else {
    held_.erase(deliveryId);
    if (!reconcileStarts_.empty()) released_[deliveryId] = ++releases_;
    releaseFifoHeadLocked(deliveryId, !stopping_);
  }
  if (inFlight_ == 0) idle_.notify_all();
}

Engine::TargetPtr Engine::cachedTarget(TargetRecord record) {
  auto target = std::make_shared<CachedTarget>();
  static_cast<TargetRecord&>(*target) = std::move(record);
  target->routing = storedTargetRouting(target->routingJson);
  target->config = readDeliveryConfig(target->type, target->configJson);
  return target;
}

Engine::TargetPtr Engine::targetFor(const std::string& webhookId, const std::string& targetId) {
  uint64_t changesBefore = 0;
  {
    MutexLock lock(targetsMutex_);
    if (auto it = targetCache_.find(targetId); it != targetCache_.end()) return it->second;
    changesBefore = targetChanges_;
  }
  auto loaded = store_.getTarget(webhookId, targetId);
  if (!loaded) {
    if (!loaded.error().isNotFound())
      spdlog::warn("engine.target_lookup_failed target_id={} error=\"{}\"", targetId,
                   loaded.error().message);
    return nullptr;
  }
  TargetPtr target = cachedTarget(std::move(loaded.value()));
  MutexLock lock(targetsMutex_);
  if (targetChanges_ == changesBefore) targetCache_[targetId] = target;
  return target;
}

void Engine::cacheLiveTargets() {
  uint64_t changesBefore = 0;
  {
    MutexLock lock(targetsMutex_);
    changesBefore = targetChanges_;
  }
  auto live = store_.listLiveTargets();
  if (!live) {  // targetFor reads each one when it is first wanted
    spdlog::warn("engine.target_list_failed error=\"{}\"", live.error().message);
    return;
  }
  std::vector<TargetPtr> targets;
  targets.reserve(live->size());
  for (TargetRecord& record : live.value()) targets.push_back(cachedTarget(std::move(record)));
  MutexLock lock(targetsMutex_);
  if (targetChanges_ != changesBefore) return;  // some may be stale: read on demand
  for (TargetPtr& target : targets) targetCache_.emplace(target->id, std::move(target));
}

void Engine::targetChanged(const std::string& webhookId, const std::string& targetId) {
  changeTarget(webhookId, targetId, false);
}

void Engine::receiverChanged(const std::string& webhookId, const std::string& targetId) {
  changeTarget(webhookId, targetId, true);
}

void Engine::changeTarget(const std::string& webhookId, const std::string& targetId,
                          bool receiverChanged) {
  {
    MutexLock lock(targetsMutex_);
    targetCache_.erase(targetId);
    ++targetChanges_;
  }
  if (receiverChanged && health_) health_->receiverChanged(webhookId, targetId);
  reconcileWebhook(webhookId, &targetId, true);
  // What an open breaker put off goes now: a receiver change has reset the
  // breaker (and if it has not, the breaker refuses again, at no attempt).
  // Every retry of a webhook moving out goes now too, to be let go at
  // once: held until its time, it could outlive the move and, were the
  // webhook moved back, run against the file that came back.
  const TargetPtr target = targetFor(webhookId, targetId);
  const bool movingOut = target && target->webhookMovingOut;
  timer_.expedite(targetId,
                  [movingOut](const Task& t) { return movingOut || t.breakerDeferred; });
}

void Engine::runAttempt(Task& task, AttemptHold hold) {
  TargetPtr target = targetFor(task.webhookId, task.targetId);
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
    if (auto r = db.value()->failWithoutAttempt(task.deliveryId, "target_deleted"); r)
      observer_.outcome(target->type, DeliveryStatus::kFailed, "target_deleted");
    return;
  }
  // Paused by an operator or disabled by the engine: resumes when the
  // target is enabled. An auto-resume probe is the exception.
  if (!target->deliverable() && !(task.probe && target->active && target->disabled)) return;
  {
    MutexLock lock(engineMutex_);
    lanes_[task.targetId].maxConcurrency = target->fifo() ? 1 : target->maxConcurrency;
    applyRateLimitLocked(task.targetId, target->routing);
  }
  Target* impl = targets_.find(target->type);
  if (!impl) {
    spdlog::error("delivery.unknown_target_type target_id={} type={}", task.targetId, target->type);
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
  if (!applyTransform(*target, task, *db.value(), payload, hold)) return;
  DeliveryContext context{*db.value(),     *target, target->config,
                          payload,         *this,   observer_,
                          std::move(hold), health_, !target->routing.transformJq.empty()};
  impl->deliver(context, std::move(task));
}

bool Engine::applyTransform(const CachedTarget& target, const Task& task, EventsDb& db,
                            EventPayload& payload, const AttemptHold& hold) {
  if (target.routing.transformJq.empty()) return true;
  // From the stored event at every attempt, so a fixed program applies on
  // a retry; the stored event stays as received.
  Result<TransformedBody> transformed =
      routing_.evaluator ? routing_.evaluator->transform(target.routing, payload)
                         : Result<TransformedBody>(makeError(jq_error::kUnavailable,
                                                             "no jq evaluator is running"));
  if (transformed) {
    payload.body = std::move(transformed->body);
    payload.contentType = "application/json";
    // What described the body received does not describe this one.
    std::erase_if(payload.headers, [](const auto& h) {
      return equalsIgnoringCase(h.first, "Content-Type") ||
             equalsIgnoringCase(h.first, "Content-Encoding") ||
             equalsIgnoringCase(h.first, "Content-MD5") || equalsIgnoringCase(h.first, "Digest");
    });
    payload.headers.emplace_back("Content-Type", "application/json");
    return true;
  }
  // Deterministic: the same program fails the same way on every retry, so
  // the delivery ends at once (a `retry` after the program is fixed works).
  if (routing_.metrics)
    routing_.metrics->programFailed(RoutingStage::kTransform, transformed.error().code);
  AttemptRecord record;
  record.deliveryId = task.deliveryId;
  record.attempt = task.attempt;
  record.error = transformed.error().message;
  record.newStatus = DeliveryStatus::kFailed;
  record.failureReason = "transform_failed";
  spdlog::warn("delivery.transform_failed webhook_id={} delivery_id={} target_id={} reason={} "
               "error=\"{}\"",
               task.webhookId, task.deliveryId, task.targetId, transformed.error().code,
               transformed.error().message);
  db.recordAttemptAsync(std::move(record),
                        [&observer = observer_, type = target.type, deliveryId = task.deliveryId,
                         hold /* released with this callback */](Result<void> written) {
                          if (!written) {
                            spdlog::error("delivery.record_failed delivery_id={} error=\"{}\"",
                                          deliveryId, written.error().message);
                            return;
                          }
                          observer.outcome(type, DeliveryStatus::kFailed, "transform_failed");
                        });
  return false;
}

}  // namespace webhooker
