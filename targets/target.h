// Target: one way of delivering an event (http, slack, database, log).
//
// A Target owns its whole delivery: it makes the attempt, writes the
// delivery_results row together with the delivery's new status, and — if it
// retries — decides whether to, computes its backoff, gates on its circuit
// breaker and hands the next attempt to the Scheduler.
// The engine knows targets only through this header and a registry keyed by
// type; targets never include engine/.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "base/clock.h"
#include "storage/delivery_status.h"
#include "storage/failure_reason.h"
#include "storage/event_payload.h"
#include "storage/records.h"
#include "targets/delivery_config.h"
#include "targets/task.h"

namespace webhooker {

class EventsDb;
class HealthReporter;

// Re-enqueues a task for a later attempt. Implemented by the engine.
// Threading: any thread. The task is queued even when the engine is busy;
// if memory is full it may be dropped, never lost: the row is on disk.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual void scheduleRetry(Task task, std::chrono::milliseconds delay) = 0;
};

// What a target reports about each attempt it actually dispatched. Never
// called for a delivery the circuit breaker refused (nothing was sent).
// Implemented by the engine's metrics; the default does nothing.
class AttemptObserver {
 public:
  virtual ~AttemptObserver() = default;
  virtual void attempted(TargetType targetType, std::chrono::milliseconds duration) = 0;
  // After the status row is written: delivered, retrying or failed. No type:
  // the delivery's target is gone (recovery ends it as target_deleted).
  virtual void outcome(std::optional<TargetType> targetType, DeliveryStatus status,
                       std::optional<FailureReason> failureReason) = 0;
};

// Keeps an attempt unfinished in the engine's eyes while any copy lives:
// the delivery is not queued again by recovery, the sweep or a refill, and
// Engine::stop() waits for it. A target that writes its result in the
// background (EventsDb::recordAttemptAsync) keeps a copy until the write
// is committed, so nobody reads the row as still pending and sends it twice.
using AttemptHold = std::shared_ptr<const void>;

// Everything an attempt needs besides the task. References are owned by the
// engine and valid for the duration of deliver(); the scheduler and the
// observer also for as long as the attempt's hold lives.
struct DeliveryContext {
  EventsDb& db;               // the webhook's events DB
  const TargetRecord& target; // its current config (may hold credentials)
  const DeliveryConfig& config; // target.configJson as read for attempts
  // The event as received, inline or loaded; this attempt's own copy, so a
  // target may move the body into its request instead of copying it.
  EventPayload& payload;
  Scheduler& scheduler;
  AttemptObserver& observer;
  AttemptHold hold;           // released when deliver() returns, unless copied
  // Told about the receiver's health (targets/health_reporter.h); nullptr:
  // nobody listens. Lives as long as the scheduler.
  HealthReporter* health = nullptr;
  // payload.body is the target's transform output, not the body received.
  bool transformed = false;
};

class Target {
 public:
  virtual ~Target() = default;
  // Runs one attempt of `task` (task.attempt). Never throws; every failure
  // ends up recorded or rescheduled. Called from engine worker threads,
  // concurrently for different deliveries of the same target. The attempt
  // may finish after it returns (its result still being written): then it
  // keeps context.hold until it has.
  virtual void deliver(const DeliveryContext& context, Task task) = 0;
};

// Implemented by targets that retry, so recovery and the sweep keep the
// retry schedule target-owned.
class Rescheduler {
 public:
  virtual ~Rescheduler() = default;
  // How long a recovered `retrying` delivery still has to wait: the backoff
  // after attempt `attemptNum` of its series (Task::attemptInSeries), minus
  // the time since that attempt was recorded (`lastAttemptAt`; none: no wait).
  virtual std::chrono::milliseconds remainingBackoff(const TargetRecord& target,
                                                     std::optional<TimePoint> lastAttemptAt,
                                                     int attemptNum) = 0;
};

}  // namespace webhooker
