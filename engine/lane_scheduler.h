// LaneScheduler: which delivery runs next, apart from the threads that run
// it (Engine). One lane per target: its queue, an in-flight limit (the
// target's max_concurrency; 1 for a FIFO target) and, with a rate limit, a
// token bucket. A lane with queued work, room to run and a token is listed in
// the ready queue, which workers take in turn; without a token it waits,
// throttled, until its next one is due.
//
// Caps: a lane queues at most maxQueuedPerTarget tasks, all lanes together
// maxQueued, and a lane at or above its even share of maxQueued (maxQueued
// over the lanes) only up to maxQueued / kAboveShareCapDivisor in all, so
// slow targets' backlogs cannot fill the global cap and keep the other lanes
// from taking tasks. A task that does not fit is refused (its row stays on
// disk) and its lane is marked overflowed. An overflowed lane is refilled
// (a Refill queued for the engine's refill thread, which reads the events
// DB) once it drains below its low-water mark: a kLowWaterDivisor-th of its
// cap; for the global cap, of an even share of it while the cap has room, or
// every cut-off lane at once when all queues together drain below a
// kLowWaterDivisor-th of it. So a backlog larger than the caps drains
// without waiting for the sweep.
//
// FIFO targets get no queue: their lane holds one delivery at a time, its
// head, the oldest waiting delivery as the events DB orders them. When the
// head leaves memory the lane asks for a refill, which reads the next one.
//
// Ownership: a plain value; `clock` and `events` must outlive it.
// Threading: none of its own and no I/O; the engine calls it under its mutex.
// `events` are called from inside the call that causes them.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "base/clock.h"
#include "engine/token_bucket.h"
#include "targets/task.h"

namespace webhooker {

// How a target's lane runs, from its config.
struct LaneSettings {
  int maxConcurrency = 4;
  TargetType targetType = TargetType::kHttp;
  std::optional<double> ratePerSecond;  // none: no rate limit
};

struct LaneCaps {
  size_t maxQueuedPerTarget = 10'000;
  size_t maxQueued = 20'000;  // over all lanes
};

// A read of waiting deliveries the refill thread is to make.
struct Refill {
  std::string webhookId;
  // None: every target of the webhook, retries not due yet included (they
  // go to the timer), for the retries the timer let go.
  std::optional<std::string> targetId;
  // At most one refill is queued per key.
  const std::string& key() const { return targetId ? *targetId : webhookId; }
};

class LaneScheduler {
 public:
  // A lane below a kLowWaterDivisor-th of its cap is refilled (see above).
  static constexpr size_t kLowWaterDivisor = 4;
  // A lane at or above its even share may fill this fraction of maxQueued.
  static constexpr size_t kAboveShareCapDivisor = 2;
  // The most rows one page of a refill reads: a page the lane's workers can
  // start on while the next is read.
  static constexpr size_t kMostPerRefillPage = 1000;

  // What the engine does with the scheduler's news (its threads).
  class Events {
   public:
    virtual ~Events() = default;
    // A lane was listed ready, or one is ready that the calling worker will
    // not take: a worker should look at the ready queue.
    virtual void laneReady() = 0;
    // A lane of `targetType` waits for a token (nextTokenDue() moved).
    virtual void laneThrottled(TargetType targetType) = 0;
    // A refill was queued (takeRefill()).
    virtual void refillQueued() = 0;
  };

  LaneScheduler(LaneCaps caps, const Clock& clock, Events& events);
  LaneScheduler(const LaneScheduler&) = delete;
  LaneScheduler& operator=(const LaneScheduler&) = delete;

  // Who takes a lane a call lists ready: a worker laneReady() wakes, or the
  // calling worker, which is about to look at the ready queue anyway.
  enum class Taker { kWokenWorker, kCaller };
  enum class Enqueued { kQueued, kGlobalCapFull, kLaneFull, kStopping };
  // Queues `task` in its target's lane, with `settings` applied first when
  // given. Refused (anything but kQueued): the caller lets go of the task,
  // whose row stays on disk; the lane or the global cap is marked
  // overflowed. A refused FIFO head stops being the head without a refill:
  // the overflow's refill reads it again.
  Enqueued enqueue(Task task, const LaneSettings* settings);
  // Applies a target's settings to its lane, making the lane if need be.
  void configure(const std::string& targetId, const LaneSettings& settings);
  // A worker takes the first ready lane's next task, which counts as in
  // flight in the lane until attemptEnded(). None if nothing is ready.
  std::optional<Task> takeNext();
  void attemptEnded(const std::string& targetId);
  // Lists the throttled lanes whose token is due; returns when the next
  // still throttled one is due (none: no lane is throttled).
  std::optional<TimePoint> releaseThrottled();
  bool hasReady() const { return !ready_.empty(); }
  std::optional<TimePoint> nextTokenDue() const;
  int inFlight(const std::string& targetId) const;
  size_t queued(const std::string& targetId) const;
  size_t queued() const { return queued_; }
  size_t laneCount() const { return lanes_.size(); }

  // Refills: at most one per Refill::key() waits; none once stopping.
  void queueRefill(const std::string& webhookId, std::optional<std::string> targetId);
  std::optional<Refill> takeRefill();
  bool hasRefill() const { return !refills_.empty(); }
  // How many rows the next page of `targetId`'s refill reads: its lane's
  // room under both caps (kMostPerRefillPage at most), plus, on the first
  // page, its queued and in-flight tasks, which come first in the order.
  // None when stopping or without room: the lane is then marked overflowed,
  // so it is refilled once it drains.
  std::optional<int> refillPage(const std::string& webhookId, const std::string& targetId,
                                bool firstPage);
  // For the sweep: true while the caps keep `targetId`'s backlog on disk,
  // for a refill once its lane drains; asks for that refill if the lane is
  // already low enough.
  bool leaveToRefill(const std::string& targetId);

  // FIFO lanes.
  std::optional<std::string> fifoHead(const std::string& targetId) const;
  // Makes `deliveryId` the head of `targetId`'s lane; false if it has one.
  bool setFifoHead(const std::string& targetId, const std::string& deliveryId,
                   const std::string& webhookId);
  // A delivery leaves memory: if it was a head, its lane has none, and with
  // `readNext` a refill reads the next.
  void releaseFifoHead(const std::string& deliveryId, bool readNext);
  // A FIFO target has a new delivery: an idle lane reads its head.
  void fifoDeliveryWaiting(const std::string& webhookId, const std::string& targetId);

  // From now on tasks are refused and no refill is queued.
  void stop() { stopping_ = true; }
  bool stopping() const { return stopping_; }

 private:
  struct Lane {
    std::deque<Task> queue;
    int inFlight = 0;
    int maxConcurrency = 4;
    TargetType targetType = TargetType::kHttp;
    bool ready = false;      // listed in ready_
    bool throttled = false;  // in throttled_, waiting for a token
    // Set when a task was refused because the queue was full: the webhook
    // whose events DB holds the rest. Cleared when its refill is queued.
    std::string overflowWebhookId;
  };
  struct FifoHead {
    std::string targetId;
    std::string webhookId;
  };

  void apply(const std::string& targetId, Lane& lane, const LaneSettings& settings);
  // Lists the lane in ready_ if it has work, room to run and (with a rate
  // limit) a token; without a token it waits in throttled_. True if listed.
  bool markReady(const std::string& targetId, Lane& lane, Taker taker);
  // How many more tasks the global cap admits to a lane holding `laneQueued`.
  size_t globalRoom(size_t laneQueued) const;
  size_t evenShare() const;
  // An overflowed lane that drained below its low-water mark is refilled;
  // so are the lanes the global cap cut off, by the rules above.
  void requestRefills(const std::string& targetId, Lane& lane);

  const LaneCaps caps_;
  const Clock& clock_;
  Events& events_;
  std::unordered_map<std::string, Lane> lanes_;
  std::deque<std::string> ready_;  // lanes with queued work and room to run
  size_t queued_ = 0;              // tasks in all lanes' queues
  // Rate-limited targets' buckets, kept while their lanes come and go.
  std::unordered_map<std::string, TokenBucket> buckets_;
  // Throttled lanes by the time their next token is due.
  std::multimap<TimePoint, std::string> throttled_;
  // Targets that had a task refused because the global cap was reached,
  // and their webhooks.
  std::unordered_map<std::string, std::string> globalOverflow_;
  std::deque<Refill> refills_;
  std::unordered_set<std::string> refillsQueued_;  // their keys
  // FIFO lanes: target id -> its head's delivery id, and back.
  std::unordered_map<std::string, std::string> fifoHeads_;
  std::unordered_map<std::string, FifoHead> fifoHeadOf_;
  bool stopping_ = false;
};

}  // namespace webhooker
