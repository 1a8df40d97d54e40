#include "targets/retrying_target.h"

#include <spdlog/spdlog.h>

#include "storage/events_db.h"
#include "targets/backoff.h"
#include "targets/health_reporter.h"

namespace webhooker {

namespace {

using std::chrono::milliseconds;

using Verdict = AttemptOutcome::Verdict;

struct Classified {
  Verdict verdict;
  // failure_reason when terminal; when retryable, the reason the delivery
  // ends with if it is out of attempts (none: max_attempts).
  std::optional<FailureReason> reason;
};

Classified classify(const OutboundResponse& r) {
  using F = OutboundResponse::Failure;
  if (r.failure == F::kBlocked) return {Verdict::kTerminal, FailureKind::kBlockedDestination};
  if (r.failure == F::kTls) return {Verdict::kRetry, FailureKind::kTlsFailed};
  if (r.failure == F::kAuth) return {Verdict::kRetry, FailureKind::kAuthFailed};
  if (r.failure != F::kNone) return {Verdict::kRetry, std::nullopt};
  if (r.status >= 200 && r.status < 300) return {Verdict::kSuccess, std::nullopt};
  if (r.status == 410) return {Verdict::kGone, std::nullopt};
  if (r.status >= 500 || r.status == 408 || r.status == 425 || r.status == 429)
    return {Verdict::kRetry, std::nullopt};
  return {Verdict::kTerminal, FailureReason::httpStatus(r.status)};
}

// After the attempt's result is written (or failed to be): metrics, the log
// line, and the next attempt.
void finishAttempt(const Result<void>& written, const AttemptRecord& record, milliseconds delay,
                   Task task, Scheduler& scheduler, AttemptObserver& observer,
                   HealthReporter* health) {
  if (!written) {
    // The row keeps its previous state and attempt count; the sweep picks it
    // up again. Rescheduling here would skip an attempt number.
    spdlog::error("delivery.record_failed delivery_id={} attempt={} error=\"{}\"", task.deliveryId,
                  task.attempt, written.error().message);
    return;
  }
  observer.outcome(task.targetType, record.newStatus, record.failureReason);
  switch (record.newStatus) {
    case DeliveryStatus::kRetrying:
      spdlog::info("delivery.attempt_failed webhook_id={} delivery_id={} target_id={} attempt={} "
                   "status_code={} error=\"{}\" retry_in_ms={}",
                   task.webhookId, task.deliveryId, task.targetId, task.attempt,
                   record.statusCode.value_or(0), record.error, delay.count());
      break;
    case DeliveryStatus::kFailed:
      spdlog::warn("delivery.dead_lettered webhook_id={} delivery_id={} target_id={} attempt={} "
                   "reason={} status_code={} error=\"{}\"",
                   task.webhookId, task.deliveryId, task.targetId, task.attempt,
                   failureReasonWord(*record.failureReason), record.statusCode.value_or(0),
                   record.error);
      if (health) health->deadLettered(task, *record.failureReason);
      break;
    case DeliveryStatus::kPending:
      spdlog::info("delivery.held webhook_id={} delivery_id={} target_id={} attempt={} "
                   "status_code={} reason=target_disabled",
                   task.webhookId, task.deliveryId, task.targetId, task.attempt,
                   record.statusCode.value_or(0));
      break;
    case DeliveryStatus::kDelivered:
      // debug: at thousands a second, successes would be most of the log
      spdlog::debug("delivery.delivered webhook_id={} delivery_id={} target_id={} attempt={} "
                    "status_code={} duration_ms={}",
                    task.webhookId, task.deliveryId, task.targetId, task.attempt,
                    record.statusCode.value_or(0), record.durationMs);
      break;
  }
  if (record.newStatus == DeliveryStatus::kRetrying) {
    ++task.attempt;
    task.probe = false;
    scheduler.scheduleRetry(std::move(task), delay);
  }
}

}  // namespace

RetryCore::RetryCore(CircuitBreakers& breakers, Random& random, const Clock& clock)
    : breakers_(breakers), random_(random), clock_(clock) {}

RetryingTarget::RetryingTarget(HttpClient& client, CircuitBreakers& breakers, Random& random,
                               const Clock& clock)
    : RetryCore(breakers, random, clock), client_(client) {}

AttemptOutcome RetryingTarget::attempt(const DeliveryContext& ctx, const Task& task) {
  AttemptOutcome out;
  out.reason = FailureKind::kInvalidConfig;
  auto request = buildRequest(ctx, task);
  if (!request) {
    out.error = request.error().message;
    return out;
  }
  const OutboundResponse response = client_.send(std::move(request.value()));
  Classified verdict = classify(response);
  out.verdict = verdict.verdict;
  out.reason = std::move(verdict.reason);
  out.sent = response.failure != OutboundResponse::Failure::kBlocked;
  if (response.status > 0) out.statusCode = response.status;
  out.responseBody = response.body;
  out.error = response.error;
  out.duration = response.duration;
  out.retryAfter = response.retryAfter;
  return out;
}

void RetryCore::deliver(const DeliveryContext& ctx, Task task) {
  const RetryPolicy& policy = ctx.target.retry;
  // max_retries 0 means one attempt and no breaker: nothing to protect. An
  // auto-resume probe is the one attempt a disabled target gets: it passes.
  const bool guarded = policy.maxRetries > 0 && !task.probe;
  if (guarded) {
    const auto decision = breakers_.allow(task.targetId);
    if (!decision.allowed) {
      // Not an attempt: no result row, no metric, no attempt used up.
      if (auto r = ctx.db.deferDelivery(task.deliveryId, clock_.now() + decision.retryIn); !r)
        spdlog::warn("delivery.defer_failed delivery_id={} error=\"{}\"", task.deliveryId,
                     r.error().message);
      spdlog::debug("delivery.breaker_refused target_id={} delivery_id={} retry_in_ms={}",
                    task.targetId, task.deliveryId, decision.retryIn.count());
      task.breakerDeferred = true;
      ctx.scheduler.scheduleRetry(std::move(task), decision.retryIn);
      return;
    }
  }
  task.breakerDeferred = false;

  AttemptRecord record;
  record.deliveryId = task.deliveryId;
  record.attempt = task.attempt;
  const AttemptOutcome verdict = attempt(ctx, task);
  record.statusCode = verdict.statusCode;
  record.responseBody = verdict.responseBody;
  record.error = verdict.error;
  record.durationMs = verdict.duration.count();
  const std::optional<milliseconds> retryAfter = verdict.retryAfter;
  const bool sent = verdict.sent;
  if (sent) ctx.observer.attempted(task.targetType, verdict.duration);
  // Nothing sent says nothing about the receiver.
  if (guarded) {
    // A half-open breaker's probe must not stay out forever; a 410 leaves
    // the breaker to the disabled state.
    if (!sent || verdict.verdict == Verdict::kGone) breakers_.releaseProbe(task.targetId);
    else if (verdict.verdict == Verdict::kRetry)
      breakers_.recordFailure(task.targetId, task.targetType, task.webhookId);
    else if (verdict.verdict == Verdict::kSuccess) breakers_.recordSuccess(task.targetId);
  } else if (task.probe && verdict.verdict == Verdict::kSuccess) {
    breakers_.recordSuccess(task.targetId);
  }
  bool disabledNow = false;
  if (sent && ctx.health) {
    if (verdict.verdict == Verdict::kSuccess) ctx.health->attemptSucceeded(ctx.target, task);
    else if (verdict.verdict == Verdict::kGone) ctx.health->receiverGone(ctx.target, task);
    else disabledNow = ctx.health->attemptFailed(ctx.target, task);
  }

  milliseconds delay{0};
  if (verdict.verdict == Verdict::kSuccess) {
    record.success = true;
    record.newStatus = DeliveryStatus::kDelivered;
  } else if (verdict.verdict == Verdict::kTerminal) {
    record.newStatus = DeliveryStatus::kFailed;
    record.failureReason = verdict.reason;
  } else if (verdict.verdict == Verdict::kGone || disabledNow) {
    // The target is disabled: the delivery waits, first in line, for it to
    // be enabled (which queues every waiting delivery again).
    record.newStatus = DeliveryStatus::kPending;
  } else if (task.attemptInSeries() > policy.maxRetries) {
    record.newStatus = DeliveryStatus::kFailed;
    record.failureReason = verdict.reason.value_or(FailureKind::kMaxAttempts);
  } else {
    delay = applyRetryAfter(retryDelay(policy, task.attemptInSeries(), random_), retryAfter,
                            policy);
    record.newStatus = DeliveryStatus::kRetrying;
    record.nextAttemptAt = clock_.now() + delay;
  }

  // The worker goes on to its next attempt while the result is committed;
  // the rest happens once it is (the hold keeps the delivery ours till then).
  ctx.db.recordAttemptAsync(
      record, [record, delay, task = std::move(task), &scheduler = ctx.scheduler,
               &observer = ctx.observer, health = ctx.health,
               hold = ctx.hold /* released with this callback */](Result<void> written) mutable {
        finishAttempt(written, record, delay, std::move(task), scheduler, observer, health);
      });
}

milliseconds RetryCore::remainingBackoff(const TargetRecord& target,
                                              std::optional<TimePoint> lastAttemptAt,
                                              int attemptNum) {
  if (!lastAttemptAt) return milliseconds(0);
  // The nominal backoff (no jitter): recovery must not restart the wait.
  RetryPolicy nominal = target.retry;
  nominal.jitter = 0;
  const auto due = *lastAttemptAt + retryDelay(nominal, attemptNum, random_);
  const auto remaining = std::chrono::duration_cast<milliseconds>(due - clock_.now());
  return remaining.count() > 0 ? remaining : milliseconds(0);
}

}  // namespace webhooker
