#include "engine/lane_scheduler.h"

#include <algorithm>
#include <utility>

namespace webhooker {

LaneScheduler::LaneScheduler(LaneCaps caps, const Clock& clock, Events& events)
    : caps_(caps), clock_(clock), events_(events) {}

LaneScheduler::Enqueued LaneScheduler::enqueue(Task task, const LaneSettings* settings) {
  const auto existing = lanes_.find(task.targetId);
  if (!stopping_ && globalRoom(existing == lanes_.end() ? 0 : existing->second.queue.size()) == 0) {
    releaseFifoHead(task.deliveryId, false);  // the global refill reads it again
    globalOverflow_.emplace(task.targetId, task.webhookId);
    return Enqueued::kGlobalCapFull;
  }
  Lane& lane = existing != lanes_.end() ? existing->second : lanes_[task.targetId];
  if (settings) apply(task.targetId, lane, *settings);
  if (stopping_ || lane.queue.size() >= caps_.maxQueuedPerTarget) {
    // The row is on disk; a refill brings it back once the lane has drained
    // (the next start-up, if stopping).
    releaseFifoHead(task.deliveryId, false);
    if (stopping_) return Enqueued::kStopping;
    lane.overflowWebhookId = task.webhookId;
    return Enqueued::kLaneFull;
  }
  const std::string targetId = task.targetId;
  lane.queue.push_back(std::move(task));
  ++queued_;
  markReady(targetId, lane, Taker::kWokenWorker);
  return Enqueued::kQueued;
}

void LaneScheduler::configure(const std::string& targetId, const LaneSettings& settings) {
  apply(targetId, lanes_[targetId], settings);
}

void LaneScheduler::apply(const std::string& targetId, Lane& lane, const LaneSettings& settings) {
  lane.maxConcurrency = std::max(1, settings.maxConcurrency);
  lane.targetType = settings.targetType;
  if (!settings.ratePerSecond) {
    buckets_.erase(targetId);
    return;
  }
  const auto bucket = buckets_.find(targetId);
  if (bucket == buckets_.end() || bucket->second.rate() != *settings.ratePerSecond)
    buckets_.insert_or_assign(targetId, TokenBucket(*settings.ratePerSecond, clock_.now()));
}

std::optional<Task> LaneScheduler::takeNext() {
  if (ready_.empty()) return std::nullopt;
  const std::string targetId = std::move(ready_.front());
  ready_.pop_front();
  Lane& lane = lanes_[targetId];
  lane.ready = false;
  if (lane.queue.empty()) return std::nullopt;
  Task task = std::move(lane.queue.front());
  lane.queue.pop_front();
  --queued_;
  ++lane.inFlight;
  requestRefills(targetId, lane);
  // Another lane may have been woken for while the calling worker was its
  // only waiting one.
  if (!markReady(targetId, lane, Taker::kWokenWorker) && !ready_.empty()) events_.laneReady();
  return task;
}

void LaneScheduler::attemptEnded(const std::string& targetId) {
  Lane& lane = lanes_[targetId];
  --lane.inFlight;
  markReady(targetId, lane, Taker::kCaller);
  if (lane.queue.empty() && lane.inFlight == 0 && !lane.ready) lanes_.erase(targetId);
}

bool LaneScheduler::markReady(const std::string& targetId, Lane& lane, Taker taker) {
  if (lane.ready || lane.throttled || lane.queue.empty() || lane.inFlight >= lane.maxConcurrency)
    return false;
  if (auto bucket = buckets_.find(targetId); bucket != buckets_.end()) {
    const TimePoint now = clock_.now();
    if (!bucket->second.take(now)) {
      // The delivery waits in its lane: no attempt is made or counted.
      lane.throttled = true;
      throttled_.emplace(bucket->second.nextTokenAt(now), targetId);
      events_.laneThrottled(lane.targetType);
      return false;
    }
  }
  lane.ready = true;
  ready_.push_back(targetId);
  if (taker == Taker::kWokenWorker) events_.laneReady();
  return true;
}

std::optional<TimePoint> LaneScheduler::releaseThrottled() {
  const TimePoint now = clock_.now();
  while (!throttled_.empty() && throttled_.begin()->first <= now) {
    const std::string targetId = std::move(throttled_.begin()->second);
    throttled_.erase(throttled_.begin());
    const auto lane = lanes_.find(targetId);
    if (lane == lanes_.end()) continue;
    lane->second.throttled = false;
    markReady(targetId, lane->second, Taker::kWokenWorker);  // may throttle it again
  }
  return nextTokenDue();
}

std::optional<TimePoint> LaneScheduler::nextTokenDue() const {
  if (throttled_.empty()) return std::nullopt;
  return throttled_.begin()->first;
}

int LaneScheduler::inFlight(const std::string& targetId) const {
  const auto lane = lanes_.find(targetId);
  return lane == lanes_.end() ? 0 : lane->second.inFlight;
}

size_t LaneScheduler::queued(const std::string& targetId) const {
  const auto lane = lanes_.find(targetId);
  return lane == lanes_.end() ? 0 : lane->second.queue.size();
}

size_t LaneScheduler::evenShare() const {
  return caps_.maxQueued / std::max<size_t>(1, lanes_.size());
}

size_t LaneScheduler::globalRoom(size_t laneQueued) const {
  const size_t limit =
      laneQueued < evenShare() ? caps_.maxQueued : caps_.maxQueued / kAboveShareCapDivisor;
  return limit - std::min(queued_, limit);
}

void LaneScheduler::requestRefills(const std::string& targetId, Lane& lane) {
  if (!lane.overflowWebhookId.empty() &&
      lane.queue.size() < std::max<size_t>(1, caps_.maxQueuedPerTarget / kLowWaterDivisor)) {
    queueRefill(lane.overflowWebhookId, targetId);
    lane.overflowWebhookId.clear();
  }
  // A lane the global cap cut off is refilled once it drains below its mark
  // of an even share, while there is room: waiting for every queue to drain
  // would hold a fast target behind slow ones whose tasks fill the cap, and
  // the slow ones, far above their share, leave the room to it.
  if (auto cut = globalOverflow_.find(targetId);
      cut != globalOverflow_.end() &&
      lane.queue.size() < std::max<size_t>(1, evenShare() / kLowWaterDivisor) &&
      queued_ < caps_.maxQueued) {
    queueRefill(cut->second, targetId);
    globalOverflow_.erase(cut);
  }
  if (!globalOverflow_.empty() &&
      queued_ < std::max<size_t>(1, caps_.maxQueued / kLowWaterDivisor)) {
    for (const auto& [target, webhookId] : globalOverflow_) queueRefill(webhookId, target);
    globalOverflow_.clear();
  }
}

void LaneScheduler::queueRefill(const std::string& webhookId,
                                std::optional<std::string> targetId) {
  Refill refill{webhookId, std::move(targetId)};
  if (stopping_ || !refillsQueued_.insert(refill.key()).second) return;
  refills_.push_back(std::move(refill));
  events_.refillQueued();
}

std::optional<Refill> LaneScheduler::takeRefill() {
  if (refills_.empty()) return std::nullopt;
  Refill refill = std::move(refills_.front());
  refills_.pop_front();
  refillsQueued_.erase(refill.key());
  return refill;
}

std::optional<int> LaneScheduler::refillPage(const std::string& webhookId,
                                             const std::string& targetId, bool firstPage) {
  if (stopping_) return std::nullopt;
  const auto lane = lanes_.find(targetId);
  const size_t queued = lane == lanes_.end() ? 0 : lane->second.queue.size();
  const size_t inFlight = lane == lanes_.end() ? 0 : static_cast<size_t>(lane->second.inFlight);
  const size_t laneRoom = caps_.maxQueuedPerTarget - std::min(queued, caps_.maxQueuedPerTarget);
  const size_t room = std::min({laneRoom, globalRoom(queued), kMostPerRefillPage});
  if (room > 0) return static_cast<int>(firstPage ? room + queued + inFlight : room);
  // Full: the rest waits on disk, as if a read task had not fitted.
  if (laneRoom == 0) lane->second.overflowWebhookId = webhookId;
  else globalOverflow_.emplace(targetId, webhookId);
  return std::nullopt;
}

bool LaneScheduler::leaveToRefill(const std::string& targetId) {
  const auto lane = lanes_.find(targetId);
  if ((lane == lanes_.end() || lane->second.overflowWebhookId.empty()) &&
      !globalOverflow_.count(targetId))
    return false;
  // A refill is asked for when a worker takes one of the lane's tasks; a
  // lane that emptied while the caps had no room has none left to take.
  Lane emptied;
  requestRefills(targetId, lane == lanes_.end() ? emptied : lane->second);
  return true;
}

std::optional<std::string> LaneScheduler::fifoHead(const std::string& targetId) const {
  const auto it = fifoHeads_.find(targetId);
  if (it == fifoHeads_.end()) return std::nullopt;
  return it->second;
}

bool LaneScheduler::setFifoHead(const std::string& targetId, const std::string& deliveryId,
                                const std::string& webhookId) {
  if (!fifoHeads_.emplace(targetId, deliveryId).second) return false;
  fifoHeadOf_[deliveryId] = {targetId, webhookId};
  return true;
}

void LaneScheduler::releaseFifoHead(const std::string& deliveryId, bool readNext) {
  const auto it = fifoHeadOf_.find(deliveryId);
  if (it == fifoHeadOf_.end()) return;
  const FifoHead head = std::move(it->second);
  fifoHeadOf_.erase(it);
  fifoHeads_.erase(head.targetId);
  if (readNext) queueRefill(head.webhookId, head.targetId);
}

void LaneScheduler::fifoDeliveryWaiting(const std::string& webhookId,
                                        const std::string& targetId) {
  if (!fifoHeads_.count(targetId)) queueRefill(webhookId, targetId);
}

}  // namespace webhooker
