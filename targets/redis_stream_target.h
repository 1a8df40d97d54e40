// RedisStreamTarget: appends each event to a Redis stream with XADD
// (libhiredis), with the retry core. The entry's fields: event_id,
// delivery_id, type (the event type, "" if none), content_type, headers (a
// JSON array of [name, value], hop-by-hop and forwarding headers left out as
// for http) and body. With maxlen, XADD trims with MAXLEN ~ n.
//
// An attempt succeeds when Redis answers with the entry's id (kept as the
// result's response body); an error reply (OOM, WRONGTYPE, NOAUTH...) or a
// broken connection retries. The broker's host goes through the SSRF guard
// at every attempt and the connection goes to the address it vetted.
// At-least-once: an XADD whose answer is lost (a timeout, or webhooker
// killed before the result is written) is sent again, so a consumer may
// see an event_id twice: what was in flight or not yet recorded at a kill.
#pragma once

#include "targets/broker_pool.h"
#include "targets/retrying_target.h"

struct redisContext;

namespace webhooker {

class RedisStreamTarget final : public RetryCore {
 public:
  RedisStreamTarget(const SsrfGuard& guard, CircuitBreakers& breakers, Random& random,
                    const Clock& clock);
  ~RedisStreamTarget() override;  // where Connection is complete

 protected:
  AttemptOutcome attempt(const DeliveryContext& context, const Task& task) override;

 private:
  struct Connection;
  const SsrfGuard& guard_;
  BrokerPool<Connection> pool_;
};

}  // namespace webhooker
