// TargetRegistry: the Target implementation for each type. The engine
// looks targets up here and knows nothing of their kinds.
//
// Ownership: owns the targets. Built once at start-up, then read-only, so
// lookups need no lock.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/random.h"
#include "targets/circuit_breaker.h"
#include "targets/http_client.h"
#include "targets/target.h"

namespace webhooker {

class TargetRegistry {
 public:
  void add(TargetType type, std::unique_ptr<Target> target);
  Target* find(TargetType type) const;
  // The target's recovery interface, or nullptr for fire-and-forget types.
  Rescheduler* rescheduler(TargetType type) const;

 private:
  std::map<TargetType, std::unique_ptr<Target>> targets_;
};

// Every type: http, slack, database, log, redis_stream, nats and amqp, sharing
// one breaker registry; the queue types vet brokers with the client's guard.
TargetRegistry standardTargets(HttpClient& client, CircuitBreakers& breakers, Random& random,
                               const Clock& clock);

}  // namespace webhooker
