// HealthReporter: what the retry core tells about a receiver's health, so
// the engine can disable a target whose receiver is gone (410) or keeps
// failing, enable it again when a probe succeeds, and announce dead letters.
// Implemented by the engine (engine/target_health_monitor.h).
//
// Threading: any thread. attemptSucceeded/attemptFailed/receiverGone are
// called on the delivery worker, before the attempt's result is queued for
// writing, and may write the main DB; deadLettered is called once the dead
// letter is committed, on a commit thread of the events DBs, and must neither
// block nor wait for an events DB write of its own.
#pragma once

#include <string>

#include "storage/failure_reason.h"
#include "storage/records.h"
#include "targets/task.h"

namespace webhooker {

class HealthReporter {
 public:
  virtual ~HealthReporter() = default;
  // The attempt reached the receiver and it answered 2xx.
  virtual void attemptSucceeded(const TargetRecord& target, const Task& task) = 0;
  // The attempt was sent and failed (an error or a non-2xx answer). True if
  // this failure disabled the target (no success for its disable_after):
  // the delivery then waits instead of being dead-lettered.
  virtual bool attemptFailed(const TargetRecord& target, const Task& task) = 0;
  // The receiver answered 410 Gone: the target is disabled at once.
  virtual void receiverGone(const TargetRecord& target, const Task& task) = 0;
  // The delivery ended `failed` with `reason` (committed).
  virtual void deadLettered(const Task& task, FailureReason reason) = 0;
  // The target's config changed: what its breaker knew was about another
  // receiver. Called by the engine once it has dropped the old config, and
  // before the deliveries the breaker put off go again.
  virtual void receiverChanged(const std::string& webhookId, const std::string& targetId) = 0;
};

}  // namespace webhooker
