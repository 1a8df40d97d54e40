#include "engine/held_deliveries.h"

#include <unordered_map>

namespace webhooker {

bool HeldDeliveries::hold(const std::string& deliveryId, std::optional<uint64_t> readSince) {
  if (readSince && releasedSince(deliveryId, *readSince)) return false;
  return held_.insert(deliveryId).second;
}

void HeldDeliveries::holdForRetry(const std::string& deliveryId) {
  held_.insert(deliveryId);
  ++rescheduled_[deliveryId];
}

bool HeldDeliveries::consumeRetryHold(const std::string& deliveryId) {
  const auto it = rescheduled_.find(deliveryId);
  if (it == rescheduled_.end()) return false;
  if (--it->second == 0) rescheduled_.erase(it);
  return true;
}

bool HeldDeliveries::attemptFinished(const std::string& deliveryId) {
  if (consumeRetryHold(deliveryId)) return false;
  held_.erase(deliveryId);
  if (!reconcileStarts_.empty()) released_[deliveryId] = ++releases_;
  return true;
}

bool HeldDeliveries::letGoOfRetry(const std::string& deliveryId) {
  if (consumeRetryHold(deliveryId)) return false;  // its attempt lets go when it ends
  held_.erase(deliveryId);
  return true;
}

uint64_t HeldDeliveries::openReconcile() {
  reconcileStarts_.insert(releases_);
  return releases_;
}

void HeldDeliveries::closeReconcile(uint64_t started) {
  reconcileStarts_.erase(reconcileStarts_.find(started));
  // Releases before the oldest open reconcile matter to none.
  const bool none = reconcileStarts_.empty();
  const uint64_t oldest = none ? 0 : *reconcileStarts_.begin();
  std::erase_if(released_, [&](const auto& entry) { return none || entry.second <= oldest; });
}

bool HeldDeliveries::releasedSince(const std::string& deliveryId, uint64_t started) const {
  const auto it = released_.find(deliveryId);
  return it != released_.end() && it->second > started;
}

}  // namespace webhooker
