#include "engine/target_health_monitor.h"

#include <spdlog/spdlog.h>

#include <condition_variable>

#include "base/thread_name.h"
#include "base/time_format.h"

namespace webhooker {

namespace {

nlohmann::json subject(const std::string& webhookId, const std::string& targetId,
                       std::string_view reason) {
  return {{"webhook_id", webhookId}, {"target_id", targetId}, {"reason", reason}};
}

}  // namespace

TargetHealthMonitor::TargetHealthMonitor(MainStore& store, Engine& engine,
                                         OperationalEvents& events, const Clock& clock)
    : store_(store), engine_(engine), events_(events), clock_(clock) {}

TargetHealthMonitor::~TargetHealthMonitor() { stop(); }

void TargetHealthMonitor::attach(CircuitBreakers& breakers) {
  breakers_ = &breakers;
  auto rows = store_.listTargetHealth();
  if (!rows) {
    spdlog::error("health.restore_failed error=\"{}\"", rows.error().message);
  } else {
    for (const StoredTargetHealth& row : rows.value()) {
      const auto openedAt = row.breakerOpenedAt ? parseTime(*row.breakerOpenedAt) : std::nullopt;
      breakers.restore(row, openedAt.value_or(clock_.now()));
      if (row.breakerState != BreakerState::kClosed)
        spdlog::info("breaker.restored webhook_id={} target_id={} state={} opened_at={}",
                     row.webhookId, row.targetId, breakerStateWord(row.breakerState),
                     row.breakerOpenedAt.value_or(""));
      if (const auto since = row.failingSince ? parseTime(*row.failingSince) : std::nullopt) {
        MutexLock lock(mutex_);
        streaks_[row.targetId] = {*since, true};
      }
    }
  }
  breakers.onTransition([this](const CircuitBreakers::Transition& t) { breakerChanged(t); });
}

void TargetHealthMonitor::start(std::chrono::milliseconds interval) {
  probeThread_ = std::jthread([this, interval](std::stop_token stop) {
    nameThisThread("wh-health");
    Mutex sleepMutex;  // guards nothing: the sleep waits for a stop only
    std::condition_variable_any sleeper;
    while (!stop.stop_requested()) {
      {
        MutexLock lock(sleepMutex);
        sleeper.wait_for(lock, stop, interval, [] { return false; });
      }
      if (stop.stop_requested()) return;
      probeDue();
    }
  });
}

void TargetHealthMonitor::stop() { probeThread_ = std::jthread(); }

void TargetHealthMonitor::probeDue() {
  auto disabled = store_.listDisabledTargets();
  if (!disabled) {
    spdlog::error("health.probe_scan_failed error=\"{}\"", disabled.error().message);
    return;
  }
  const TimePoint now = clock_.now();
  for (const TargetRecord& target : disabled.value()) {
    if (!target.health.autoResume || !target.active ||
        target.disabled->reason != DisabledReason::kFailing)
      continue;
    TimePoint last = parseTime(target.disabled->at).value_or(now);
    {
      MutexLock lock(mutex_);
      if (auto it = lastProbe_.find(target.id); it != lastProbe_.end())
        last = std::max(last, it->second);
    }
    if (now - last < target.health.probeInterval) continue;
    {
      MutexLock lock(mutex_);
      lastProbe_[target.id] = now;
    }
    const bool sent = engine_.probe(target.webhookId, target.id);
    spdlog::info("target.probe webhook_id={} target_id={} sent={}", target.webhookId, target.id,
                 sent);
  }
}

void TargetHealthMonitor::attemptSucceeded(const TargetRecord& target, const Task& task) {
  if (target.disabled) enableAfterProbe(target, task);
  bool persisted = false;
  {
    MutexLock lock(mutex_);
    const auto it = streaks_.find(target.id);
    if (it == streaks_.end()) return;
    persisted = it->second.persisted;
    streaks_.erase(it);
  }
  if (persisted)
    if (auto r = store_.setFailingSince(target.id, std::nullopt); !r)
      spdlog::warn("health.write_failed target_id={} error=\"{}\"", target.id, r.error().message);
}

bool TargetHealthMonitor::attemptFailed(const TargetRecord& target, const Task& task) {
  if (target.disabled) return true;  // a failed probe: the delivery keeps waiting
  const TimePoint now = clock_.now();
  TimePoint since;
  bool persistNow = false;
  {
    MutexLock lock(mutex_);
    Streak& streak = streaks_.try_emplace(target.id, Streak{now, false}).first->second;
    since = streak.since;
    if (!streak.persisted && now - since >= kStreakPersistAfter) persistNow = streak.persisted = true;
  }
  if (persistNow)
    if (auto r = store_.setFailingSince(target.id, since); !r)
      spdlog::warn("health.write_failed target_id={} error=\"{}\"", target.id, r.error().message);
  if (now - since < target.health.disableAfter) return false;
  return disable(target, DisabledReason::kFailing, task);
}

void TargetHealthMonitor::receiverGone(const TargetRecord& target, const Task& task) {
  disable(target, DisabledReason::kGone, task);
}

bool TargetHealthMonitor::disable(const TargetRecord& target, DisabledReason reason,
                                  const Task& task) {
  auto changed = store_.setTargetDisabled(target.webhookId, target.id, reason);
  if (!changed) {
    spdlog::error("target.disable_failed webhook_id={} target_id={} reason={} error=\"{}\"",
                  target.webhookId, target.id, disabledReasonWord(reason),
                  changed.error().message);
    return false;
  }
  if (!changed.value()) return true;  // disabled already
  // A new streak starts when it is enabled again.
  {
    MutexLock lock(mutex_);
    streaks_.erase(target.id);
    lastProbe_.erase(target.id);
  }
  if (auto r = store_.setFailingSince(target.id, std::nullopt); !r)
    spdlog::warn("health.write_failed target_id={} error=\"{}\"", target.id, r.error().message);
  spdlog::warn("target.disabled webhook_id={} target_id={} reason={} delivery_id={}",
               target.webhookId, target.id, disabledReasonWord(reason), task.deliveryId);
  nlohmann::json data = subject(target.webhookId, target.id, disabledReasonWord(reason));
  data["target_name"] = target.name;
  data["delivery_id"] = task.deliveryId;
  data["disabled_at"] = formatTime(clock_.now());
  events_.publish(OperationalEventType::kTargetDisabled, std::move(data));
  // Its cached record goes; what is queued for it stays on disk.
  engine_.targetChanged(target.webhookId, target.id);
  return true;
}

void TargetHealthMonitor::enableAfterProbe(const TargetRecord& target, const Task& task) {
  auto changed = store_.setTargetDisabled(target.webhookId, target.id, std::nullopt);
  if (!changed) {
    spdlog::error("target.enable_failed webhook_id={} target_id={} error=\"{}\"", target.webhookId,
                  target.id, changed.error().message);
    return;
  }
  if (!changed.value()) return;
  spdlog::info("target.enabled webhook_id={} target_id={} reason=probe_succeeded delivery_id={}",
               target.webhookId, target.id, task.deliveryId);
  nlohmann::json data = subject(target.webhookId, target.id, "probe_succeeded");
  data["target_name"] = target.name;
  events_.publish(OperationalEventType::kTargetEnabled, std::move(data));
  engine_.targetChanged(target.webhookId, target.id);
}

void TargetHealthMonitor::deadLettered(const Task& task, FailureReason reason) {
  nlohmann::json data = subject(task.webhookId, task.targetId, failureReasonWord(reason));
  data["delivery_id"] = task.deliveryId;
  data["event_id"] = task.eventId;
  data["attempts"] = task.attempt;
  events_.deadLettered(std::move(data));
}

void TargetHealthMonitor::receiverChanged(const std::string& webhookId,
                                          const std::string& targetId) {
  if (!breakers_) return;
  spdlog::info("breaker.reset webhook_id={} target_id={} reason=config_changed", webhookId,
               targetId);
  breakers_->reset(targetId);
}

void TargetHealthMonitor::breakerChanged(const CircuitBreakers::Transition& t) {
  const bool open = t.to != BreakerState::kClosed;
  if (auto r = store_.saveBreaker(t.targetId, t.to, open ? std::optional(t.openedAt) : std::nullopt,
                                  t.consecutiveFailures);
      !r)
    spdlog::warn("breaker.write_failed target_id={} error=\"{}\"", t.targetId, r.error().message);
  const std::string_view reason = t.to == BreakerState::kOpen && t.from == BreakerState::kClosed
                                      ? "consecutive_failures"
                                  : t.to == BreakerState::kOpen ? "probe_failed"
                                  : t.to == BreakerState::kHalfOpen ? "cooldown_ended"
                                  : t.from == BreakerState::kHalfOpen ? "probe_succeeded"
                                                                      : "reset";
  spdlog::info("breaker.{} webhook_id={} target_id={} from={} reason={} consecutive_failures={}",
               breakerStateWord(t.to), t.webhookId, t.targetId, breakerStateWord(t.from), reason,
               t.consecutiveFailures);
  // Announced: opening after a closed spell, and closing. Half-open and a
  // failed probe's reopening are steps of the same outage.
  nlohmann::json data = subject(t.webhookId, t.targetId, reason);
  if (t.to == BreakerState::kOpen && t.from == BreakerState::kClosed) {
    data["consecutive_failures"] = t.consecutiveFailures;
    data["opened_at"] = formatTime(t.openedAt);
    events_.publish(OperationalEventType::kBreakerOpened, std::move(data));
  } else if (t.to == BreakerState::kClosed) {
    events_.publish(OperationalEventType::kBreakerClosed, std::move(data));
  }
}

}  // namespace webhooker
