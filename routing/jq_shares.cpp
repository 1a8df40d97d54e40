#include "routing/jq_shares.h"

#include <algorithm>

namespace webhooker {

namespace {

double millis(JqShares::Duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

}  // namespace

JqShares::JqShares(int workers, std::chrono::milliseconds budget)
    : workers_(std::max(1, workers)),
      budget_(budget),
      burst_(static_cast<double>(budget.count()) * kBurstBudgets) {}

JqShares::Tenant& JqShares::tenant(std::string_view name, TimePoint now) {
  auto [it, added] = tenants_.try_emplace(std::string(name));
  if (added) {
    it->second.account = burst_;
    it->second.accountAt = now;
  }
  return it->second;
}

size_t JqShares::activeAt(TimePoint now) const {
  size_t active = 0;
  for (const auto& [name, t] : tenants_)
    if (t.waiting > 0 || t.running > 0 || now - t.lastActive < kActiveWindow) ++active;
  return std::max<size_t>(active, 1);
}

double JqShares::accountAt(const Tenant& t, TimePoint now, size_t active) const {
  if (now <= t.accountAt) return t.account;
  const double share = static_cast<double>(workers_) / static_cast<double>(active);
  return std::min(burst_, t.account + millis(now - t.accountAt) * share);
}

std::optional<JqShares::TimePoint> JqShares::throttledUntil(std::string_view tenant,
                                                            TimePoint now) const {
  const auto it = tenants_.find(std::string(tenant));
  if (it == tenants_.end() || it->second.throttledUntil <= now) return std::nullopt;
  return it->second.throttledUntil;
}

bool JqShares::overShare(std::string_view tenant, TimePoint now) const {
  const auto it = tenants_.find(std::string(tenant));
  return it != tenants_.end() && accountAt(it->second, now, activeAt(now)) < 0;
}

bool JqShares::struck(std::string_view tenant) const {
  const auto it = tenants_.find(std::string(tenant));
  return it != tenants_.end() && it->second.strikes > 0;
}

void JqShares::waiting(std::string_view name, TimePoint now) {
  Tenant& t = tenant(name, now);
  ++t.waiting;
  t.lastActive = now;
}

void JqShares::gaveUp(std::string_view name, TimePoint now) {
  --tenant(name, now).waiting;
  forgetIdle(now);
}

bool JqShares::isTurnOf(std::string_view tenant, TimePoint now) const {
  const size_t active = activeAt(now);
  const Tenant* next = nullptr;
  bool nextOver = false;
  std::string_view nextName;
  for (const auto& [name, t] : tenants_) {
    if (t.waiting == 0 || t.throttledUntil > now) continue;
    const bool over = accountAt(t, now, active) < 0;
    // Over its share, or with strikes left, a webhook holds one worker.
    if (t.running >= (t.strikes > 0 || over ? 1 : workers_)) continue;
    if (!next || (!over && nextOver) || (over == nextOver && t.lastServed < next->lastServed)) {
      next = &t;
      nextOver = over;
      nextName = name;
    }
  }
  return next && nextName == tenant;
}

void JqShares::took(std::string_view name, TimePoint now) {
  Tenant& t = tenant(name, now);
  --t.waiting;
  ++t.running;
  t.lastServed = ++turns_;
  t.lastActive = now;
}

void JqShares::returned(std::string_view name, bool overran, Duration held, TimePoint now) {
  Tenant& t = tenant(name, now);
  // Charged what it held, an overrun at least its budget.
  const double charge = std::max(millis(held), overran ? static_cast<double>(budget_.count()) : 0);
  t.account = accountAt(t, now, activeAt(now)) - charge;
  t.accountAt = now;
  --t.running;
  t.lastActive = now;
  if (overran) {
    ++t.strikes;
    const int quadruplings = std::min(t.strikes - 1, 8);
    const auto throttle = std::min<std::chrono::milliseconds>(
        budget_ * (int64_t{1} << (2 * quadruplings)), kMaxThrottle);
    t.throttledUntil = std::max(t.throttledUntil, now + throttle);
  } else if (t.strikes > 0) {
    --t.strikes;
  }
  forgetIdle(now);
}

void JqShares::forgetIdle(TimePoint now) {
  const size_t active = activeAt(now);
  std::erase_if(tenants_, [&](const auto& entry) {
    const Tenant& t = entry.second;
    return t.waiting == 0 && t.running == 0 && t.strikes == 0 &&
           now - t.lastActive >= kActiveWindow && accountAt(t, now, active) >= burst_;
  });
}

}  // namespace webhooker
