// RetryCore: the retry core every target that retries shares (http, slack,
// redis_stream, nats, amqp). One deliver() call is one attempt: breaker
// gate, the attempt itself (a subclass's), its outcome (success / retryable
// / terminal / gone), the result row written together with the new status,
// then the reschedule. RetryingTarget is the HTTP side: subclasses only say
// what request to send, and the response is classified as below.
//
//   success    2xx
//   retryable  connection, DNS, TLS errors, every timeout, 5xx, 408, 425, 429
//   terminal   other 4xx and 3xx (http_<code>), blocked_destination,
//              invalid_config; max_attempts once retries are used up
//              (tls_failed / auth_failed when the last attempt failed in
//              TLS / getting its OAuth2 token)
//   gone       410: the target is disabled (HealthReporter) and the
//              delivery waits, `pending` again, for it to be enabled
// A delivery whose failure disabled its target (no success for its
// disable_after) waits the same way instead of retrying or ending
// max_attempts, so the oldest goes first when the target is enabled.
#pragma once

#include "base/clock.h"
#include "base/random.h"
#include "base/result.h"
#include "targets/circuit_breaker.h"
#include "targets/http_client.h"
#include "targets/target.h"

namespace webhooker {

// What one attempt came to, for the retry core to record and act on.
struct AttemptOutcome {
  // kGone: the receiver says it is gone for good (HTTP 410): the target is
  // disabled and the delivery waits for it to be enabled again.
  enum class Verdict { kSuccess, kRetry, kTerminal, kGone };
  Verdict verdict = Verdict::kTerminal;
  std::optional<FailureReason> reason;  // failure_reason when terminal
  // Something was offered to the receiver: its breaker, health and the
  // attempt metrics hear of it. False for invalid_config and
  // blocked_destination, which say nothing about the receiver.
  bool sent = false;
  std::optional<int> statusCode;
  std::string responseBody;
  std::string error;  // the result row's error text
  std::chrono::milliseconds duration{0};
  std::optional<std::chrono::milliseconds> retryAfter;
};

class RetryCore : public Target, public Rescheduler {
 public:
  RetryCore(CircuitBreakers& breakers, Random& random, const Clock& clock);

  void deliver(const DeliveryContext& context, Task task) final;
  std::chrono::milliseconds remainingBackoff(const TargetRecord& target,
                                             std::optional<TimePoint> lastAttemptAt,
                                             int attemptNum) override;

 protected:
  // Makes the attempt. Called from worker threads, concurrently. Never throws.
  virtual AttemptOutcome attempt(const DeliveryContext& context, const Task& task) = 0;
  // The injected clock, so a subclass stamps requests (e.g. webhook-timestamp)
  // with the same "now" the retry core uses.
  const Clock& clock() const { return clock_; }

 private:
  CircuitBreakers& breakers_;
  Random& random_;
  const Clock& clock_;
};

class RetryingTarget : public RetryCore {
 public:
  RetryingTarget(HttpClient& client, CircuitBreakers& breakers, Random& random,
                 const Clock& clock);

 protected:
  // The request for this attempt, or "invalid_config".
  virtual Result<OutboundRequest> buildRequest(const DeliveryContext& context,
                                               const Task& task) = 0;

 private:
  AttemptOutcome attempt(const DeliveryContext& context, const Task& task) final;

  HttpClient& client_;
};

}  // namespace webhooker
