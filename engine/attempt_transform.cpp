#include "engine/attempt_transform.h"

#include <spdlog/spdlog.h>

#include <string>
#include <utility>

#include "routing/jq_sandbox.h"

namespace webhooker {

bool transformBody(const TargetCache::Target& target, const Task& task, EventsDb& db,
                   EventPayload& payload, const AttemptHold& hold, const EngineRouting& routing,
                   AttemptObserver& observer, Scheduler& scheduler, const Clock& clock) {
  if (target.routing.transformJq.empty()) return true;
  // From the stored event at every attempt, so a fixed program applies on
  // a retry; the stored event stays as received.
  Result<TransformedBody> transformed =
      routing.evaluator ? routing.evaluator->transform(target.routing, payload, task.webhookId)
                         : Result<TransformedBody>(makeError(error_code::kJqUnavailable,
                                                             "no jq evaluator is running"));
  if (transformed) {
    applyTransformedBody(payload, std::move(transformed->body));
    return true;
  }
  if (routing.metrics)
    routing.metrics->programFailed(RoutingStage::kTransform, transformed.error().code);
  if (jq_error::isRetryable(transformed.error())) {
    // The program did not run: nothing is known of it, no attempt is used.
    if (auto r = db.deferDelivery(task.deliveryId, clock.now() + kTransformRetryDelay); !r)
      spdlog::warn("delivery.defer_failed delivery_id={} error=\"{}\"", task.deliveryId,
                   r.error().message);
    spdlog::info("delivery.transform_deferred webhook_id={} delivery_id={} target_id={} "
                 "error=\"{}\"",
                 task.webhookId, task.deliveryId, task.targetId, transformed.error().message);
    scheduler.scheduleRetry(task, kTransformRetryDelay);
    return false;
  }
  // Deterministic: the same program fails the same way on every retry, so
  // the delivery ends at once (a `retry` after the program is fixed works).
  AttemptRecord record;
  record.deliveryId = task.deliveryId;
  record.attempt = task.attempt;
  record.error = transformed.error().message;
  record.newStatus = DeliveryStatus::kFailed;
  record.failureReason = FailureKind::kTransformFailed;
  spdlog::warn("delivery.transform_failed webhook_id={} delivery_id={} target_id={} reason={} "
               "error=\"{}\"",
               task.webhookId, task.deliveryId, task.targetId, transformed.error().code,
               transformed.error().message);
  db.recordAttemptAsync(std::move(record),
                        [&observer, type = target.type, deliveryId = task.deliveryId,
                         hold /* released with this callback */](Result<void> written) {
                          if (!written) {
                            spdlog::error("delivery.record_failed delivery_id={} error=\"{}\"",
                                          deliveryId, written.error().message);
                            return;
                          }
                          observer.outcome(type, DeliveryStatus::kFailed,
                                           FailureKind::kTransformFailed);
                        });
  return false;
}


}  // namespace webhooker
