// RetryingTarget: the retry core shared by the http and slack targets.
//
// One deliver() call is one attempt: breaker gate, request, classification
// (success / retryable / terminal), the result row written together with the
// new status, then the reschedule. Subclasses only say what to send.
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

class RetryingTarget : public Target, public Rescheduler {
 public:
  RetryingTarget(HttpClient& client, CircuitBreakers& breakers, Random& random,
                 const Clock& clock);

  void deliver(const DeliveryContext& context, Task task) final;
  std::chrono::milliseconds remainingBackoff(const TargetRecord& target,
                                             std::optional<TimePoint> lastAttemptAt,
                                             int attemptNum) override;

 protected:
  // The request for this attempt, or "invalid_config".
  virtual Result<OutboundRequest> buildRequest(const DeliveryContext& context,
                                               const Task& task) = 0;
  // The injected clock, so a subclass stamps requests (e.g. webhook-timestamp)
  // with the same "now" the retry core uses.
  const Clock& clock() const { return clock_; }

 private:
  HttpClient& client_;
  CircuitBreakers& breakers_;
  Random& random_;
  const Clock& clock_;
};

}  // namespace webhooker
