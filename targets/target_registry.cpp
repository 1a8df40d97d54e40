#include "targets/target_registry.h"

#include "targets/amqp_target.h"
#include "targets/http_target.h"
#include "targets/local_targets.h"
#include "targets/nats_target.h"
#include "targets/redis_stream_target.h"
#include "targets/slack_target.h"

namespace webhooker {

void TargetRegistry::add(std::string type, std::unique_ptr<Target> target) {
  targets_[std::move(type)] = std::move(target);
}

Target* TargetRegistry::find(std::string_view type) const {
  auto it = targets_.find(type);
  return it == targets_.end() ? nullptr : it->second.get();
}

Rescheduler* TargetRegistry::rescheduler(std::string_view type) const {
  return dynamic_cast<Rescheduler*>(find(type));
}

TargetRegistry standardTargets(HttpClient& client, CircuitBreakers& breakers, Random& random,
                               const Clock& clock) {
  TargetRegistry registry;
  registry.add("http", std::make_unique<HttpTarget>(client, breakers, random, clock));
  registry.add("slack", std::make_unique<SlackTarget>(client, breakers, random, clock));
  registry.add("database", std::make_unique<DatabaseTarget>());
  registry.add("log", std::make_unique<LogTarget>());
  registry.add("redis_stream",
               std::make_unique<RedisStreamTarget>(client.guard(), breakers, random, clock));
  registry.add("nats", std::make_unique<NatsTarget>(client.guard(), breakers, random, clock));
  registry.add("amqp", std::make_unique<AmqpTarget>(client.guard(), breakers, random, clock));
  return registry;
}

}  // namespace webhooker
