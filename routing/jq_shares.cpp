#include "routing/jq_shares.h"

#include <algorithm>

namespace webhooker {

JqShares::JqShares(int workers, std::chrono::milliseconds budget)
    : workers_(std::max(1, workers)), budget_(budget) {}

std::optional<JqShares::TimePoint> JqShares::throttledUntil(std::string_view tenant,
                                                            TimePoint now) const {
  const auto it = tenants_.find(std::string(tenant));
  if (it == tenants_.end() || it->second.throttledUntil <= now) return std::nullopt;
  return it->second.throttledUntil;
}

void JqShares::waiting(std::string_view tenant) { ++tenants_[std::string(tenant)].waiting; }

void JqShares::gaveUp(std::string_view tenant) {
  --tenants_[std::string(tenant)].waiting;
  forgetIfIdle(tenant);
}

bool JqShares::isTurnOf(std::string_view tenant, TimePoint now) const {
  const Tenant* next = nullptr;
  std::string_view nextName;
  for (const auto& [name, t] : tenants_) {
    if (t.waiting == 0 || t.running >= capOf(t) || t.throttledUntil > now) continue;
    if (!next || t.lastServed < next->lastServed) {
      next = &t;
      nextName = name;
    }
  }
  return next && nextName == tenant;
}

void JqShares::took(std::string_view tenant) {
  Tenant& t = tenants_[std::string(tenant)];
  --t.waiting;
  ++t.running;
  t.lastServed = ++turns_;
}

void JqShares::returned(std::string_view tenant, bool overran, TimePoint now) {
  Tenant& t = tenants_[std::string(tenant)];
  --t.running;
  if (overran) {
    ++t.strikes;
    const int doublings = std::min(t.strikes - 1, 16);
    const auto throttle = std::min<std::chrono::milliseconds>(budget_ * (int64_t{1} << doublings),
                                                              kMaxThrottle);
    t.throttledUntil = std::max(t.throttledUntil, now + throttle);
  } else if (t.strikes > 0) {
    --t.strikes;
  }
  forgetIfIdle(tenant);
}

void JqShares::forgetIfIdle(std::string_view tenant) {
  const auto it = tenants_.find(std::string(tenant));
  if (it == tenants_.end()) return;
  const Tenant& t = it->second;
  if (t.waiting == 0 && t.running == 0 && t.strikes == 0) tenants_.erase(it);
}

}  // namespace webhooker
