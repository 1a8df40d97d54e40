#include "targets/target_registry.h"

#include "targets/amqp_target.h"
#include "targets/http_target.h"
#include "targets/local_targets.h"
#include "targets/nats_target.h"
#include "targets/redis_stream_target.h"
#include "targets/slack_target.h"

namespace webhooker {

void TargetRegistry::add(TargetType type, std::unique_ptr<Target> target) {
  targets_[type] = std::move(target);
}

Target* TargetRegistry::find(TargetType type) const {
  auto it = targets_.find(type);
  return it == targets_.end() ? nullptr : it->second.get();
}

Rescheduler* TargetRegistry::rescheduler(TargetType type) const {
  return dynamic_cast<Rescheduler*>(find(type));
}

TargetRegistry standardTargets(HttpClient& client, CircuitBreakers& breakers, Random& random,
                               const Clock& clock) {
  TargetRegistry registry;
  registry.add(TargetType::kHttp, std::make_unique<HttpTarget>(client, breakers, random, clock));
  registry.add(TargetType::kSlack, std::make_unique<SlackTarget>(client, breakers, random, clock));
  registry.add(TargetType::kDatabase, std::make_unique<DatabaseTarget>());
  registry.add(TargetType::kLog, std::make_unique<LogTarget>());
  registry.add(TargetType::kRedisStream,
               std::make_unique<RedisStreamTarget>(client.guard(), breakers, random, clock));
  registry.add(TargetType::kNats,
               std::make_unique<NatsTarget>(client.guard(), breakers, random, clock));
  registry.add(TargetType::kAmqp,
               std::make_unique<AmqpTarget>(client.guard(), breakers, random, clock));
  return registry;
}

}  // namespace webhooker
