#include "engine/target_cache.h"

#include <spdlog/spdlog.h>

#include <utility>
#include <vector>

namespace webhooker {

TargetCache::Ptr TargetCache::parse(TargetRecord record) {
  auto target = std::make_shared<Target>();
  static_cast<TargetRecord&>(*target) = std::move(record);
  target->routing = storedTargetRouting(target->routingJson);
  target->config = readDeliveryConfig(target->type, target->configJson);
  return target;
}

TargetCache::Ptr TargetCache::get(const std::string& webhookId, const std::string& targetId) {
  uint64_t changesBefore = 0;
  {
    MutexLock lock(mutex_);
    if (auto it = cache_.find(targetId); it != cache_.end()) return it->second;
    changesBefore = changes_;
  }
  auto loaded = store_.getTarget(webhookId, targetId);
  if (!loaded) {
    if (!loaded.error().isNotFound())
      spdlog::warn("engine.target_lookup_failed target_id={} error=\"{}\"", targetId,
                   loaded.error().message);
    return nullptr;
  }
  Ptr target = parse(std::move(loaded.value()));
  MutexLock lock(mutex_);
  if (changes_ == changesBefore) cache_[targetId] = target;
  return target;
}

void TargetCache::loadLive() {
  uint64_t changesBefore = 0;
  {
    MutexLock lock(mutex_);
    changesBefore = changes_;
  }
  auto live = store_.listLiveTargets();
  if (!live) {  // get() reads each one when it is first wanted
    spdlog::warn("engine.target_list_failed error=\"{}\"", live.error().message);
    return;
  }
  std::vector<Ptr> targets;
  targets.reserve(live->size());
  for (TargetRecord& record : live.value()) targets.push_back(parse(std::move(record)));
  MutexLock lock(mutex_);
  if (changes_ != changesBefore) return;  // some may be stale: read on demand
  for (Ptr& target : targets) cache_.emplace(target->id, std::move(target));
}

void TargetCache::forget(const std::string& targetId) {
  MutexLock lock(mutex_);
  cache_.erase(targetId);
  ++changes_;
}

}  // namespace webhooker
