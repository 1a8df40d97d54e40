// AmqpTarget: publishes each event to an AMQP 0-9-1 broker (RabbitMQ) with
// librabbitmq and the retry core: to config.exchange ("" is the default
// exchange) with config.routing_key ({type} replaced by the event type),
// persistent, mandatory, with publisher confirms. Properties: content_type,
// message_id (the event id), type (the event type); headers: the event's
// (hop-by-hop and forwarding ones left out, as for http) and
// Webhooker-Delivery-Id.
//
// An attempt succeeds only on the broker's ack. A nack, a message returned
// as unroutable (no queue bound), no confirm within timeout_ms, a closed
// channel (no such exchange, access refused) or a broken connection
// retries. The broker's host goes through the SSRF guard at every attempt:
// plain connections go to the vetted address; a TLS one connects by name
// (the certificate is checked against it) and the address it reached is
// checked again before anything is sent. At-least-once: a publish whose
// confirm is lost is sent again (message_id lets a consumer drop it).
#pragma once

#include "targets/broker_pool.h"
#include "targets/retrying_target.h"

namespace webhooker {

class AmqpTarget final : public RetryCore {
 public:
  AmqpTarget(const SsrfGuard& guard, CircuitBreakers& breakers, Random& random,
             const Clock& clock);
  ~AmqpTarget() override;

 protected:
  AttemptOutcome attempt(const DeliveryContext& context, const Task& task) override;

 private:
  struct Connection;
  const SsrfGuard& guard_;
  BrokerPool<Connection> pool_;
};

}  // namespace webhooker
