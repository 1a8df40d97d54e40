// TargetCache: the targets as attempts read them, each row with its routing
// and delivery config parsed once, so an attempt reads nothing from the main
// store on the happy path.
//
// A change of a target (forget()) drops its entry; a read that began before
// the change read the old row and is not cached after it.
//
// Ownership: `store` must outlive the cache. Threading: any thread; one
// internal lock, never held while the main store is read.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/mutex.h"
#include "engine/lane_scheduler.h"
#include "routing/routing_rules.h"
#include "storage/main_store.h"
#include "targets/delivery_config.h"

namespace webhooker {

class TargetCache {
 public:
  struct Target : TargetRecord {
    TargetRouting routing;
    DeliveryConfig config;

    // What its lane runs with: a FIFO target one attempt at a time.
    LaneSettings laneSettings() const {
      return {fifo() ? 1 : maxConcurrency, type, routing.ratePerSecond};
    }
  };
  using Ptr = std::shared_ptr<const Target>;

  explicit TargetCache(MainStore& store) : store_(store) {}
  TargetCache(const TargetCache&) = delete;
  TargetCache& operator=(const TargetCache&) = delete;

  // The target, read from the main store unless cached; null if there is
  // no such row (or its read failed, which is logged).
  Ptr get(const std::string& webhookId, const std::string& targetId) EXCLUDES(mutex_);
  // Caches every live target with one read of the main store, for a
  // restart's recovery, which would otherwise read them one at a time.
  void loadLive() EXCLUDES(mutex_);
  // The target changed: the next get() reads it again.
  void forget(const std::string& targetId) EXCLUDES(mutex_);

 private:
  static Ptr parse(TargetRecord record);

  MainStore& store_;
  Mutex mutex_;
  std::unordered_map<std::string, Ptr> cache_ GUARDED_BY(mutex_);
  // Moves with every forget(): a read that began before a change read the
  // old row and must not be cached after the change dropped it.
  uint64_t changes_ GUARDED_BY(mutex_) = 0;
};

}  // namespace webhooker
