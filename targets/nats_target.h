// NatsTarget: publishes each event to NATS JetStream (libnats) with the
// retry core. The subject is config.subject with {type} replaced by the
// event type; the message carries the body, the event's headers (hop-by-hop
// and forwarding ones left out, as for http) and Webhooker-Event-Id,
// Webhooker-Delivery-Id, Webhooker-Event-Type; Nats-Msg-Id is the event id,
// so the stream's duplicate window drops a resend of an event it has (after
// a lost ack, a retry, a crash before the result was written).
//
// An attempt succeeds only on the stream's ack (kept as the result's
// response body: stream, sequence, and "duplicate" when the stream had it);
// no ack within timeout_ms, no stream for the subject, a full stream, or a
// broken connection retries. One connection per broker address and
// credentials, shared by the attempts (libnats is thread-safe), no
// reconnecting of its own: a closed connection is dropped and the next
// attempt connects again, through the SSRF guard.
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "targets/broker_pool.h"
#include "targets/retrying_target.h"

namespace webhooker {

class NatsTarget final : public RetryCore {
 public:
  NatsTarget(const SsrfGuard& guard, CircuitBreakers& breakers, Random& random,
             const Clock& clock);
  ~NatsTarget() override;

 protected:
  AttemptOutcome attempt(const DeliveryContext& context, const Task& task) override;

 private:
  struct Connection;
  const SsrfGuard& guard_;
  std::mutex mutex_;  // guards connections_
  std::map<std::string, std::shared_ptr<Connection>> connections_;
};

}  // namespace webhooker
