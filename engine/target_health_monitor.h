// TargetHealthMonitor: the engine's side of endpoint health
// (docs/receiver-outages.md). It
//   - disables a target whose receiver answered 410 Gone (reason gone), or
//     whose attempts failed with no success for its disable_after (failing);
//   - enables a disabled target again when an auto-resume probe succeeds,
//     and sends those probes every probe_interval;
//   - persists circuit breaker transitions and failing streaks in the main
//     DB and puts them back at start-up (attach());
//   - logs every transition with the target and the reason, and sends it
//     as an operational event.
// A failing streak is written to the main DB once it is a minute old (and
// cleared at its end), so a flapping receiver costs no write per attempt and
// a restart forgets at most that minute.
//
// Threading: the HealthReporter methods on any delivery thread; the breaker
// listener on whichever thread changed a breaker; probeDue() on the probe
// thread (start()). mutex_ guards streaks_ and lastProbe_; no lock is held
// while the main DB is written or the engine is called.
#pragma once

#include <chrono>
#include <string>
#include <thread>
#include <unordered_map>

#include "base/clock.h"
#include "base/mutex.h"
#include "engine/engine.h"
#include "engine/operational_events.h"
#include "storage/main_store.h"
#include "targets/circuit_breaker.h"
#include "targets/health_reporter.h"

namespace webhooker {

class TargetHealthMonitor final : public HealthReporter {
 public:
  static constexpr std::chrono::minutes kStreakPersistAfter{1};

  TargetHealthMonitor(MainStore& store, Engine& engine, OperationalEvents& events,
                      const Clock& clock);
  ~TargetHealthMonitor() override;

  // Restores the persisted breakers and failing streaks into `breakers`
  // and this monitor, then records every breaker transition. Before the
  // engine starts.
  void attach(CircuitBreakers& breakers);
  // The probe thread: probeDue() every `interval`.
  void start(std::chrono::milliseconds interval);
  void stop();
  // Probes every auto-resume target whose probe is due.
  void probeDue();

  void attemptSucceeded(const TargetRecord& target, const Task& task) override;
  bool attemptFailed(const TargetRecord& target, const Task& task) override;
  void receiverGone(const TargetRecord& target, const Task& task) override;
  void deadLettered(const Task& task, FailureReason reason) override;
  void receiverChanged(const std::string& webhookId, const std::string& targetId) override;

 private:
  struct Streak {
    TimePoint since;
    bool persisted = false;
  };
  // True if the target is disabled now (by this call or before).
  bool disable(const TargetRecord& target, DisabledReason reason, const Task& task);
  void enableAfterProbe(const TargetRecord& target, const Task& task);
  void breakerChanged(const CircuitBreakers::Transition& transition);

  MainStore& store_;
  Engine& engine_;
  OperationalEvents& events_;
  const Clock& clock_;
  CircuitBreakers* breakers_ = nullptr;  // set by attach()

  Mutex mutex_;
  std::unordered_map<std::string, Streak> streaks_ GUARDED_BY(mutex_);    // by target id
  std::unordered_map<std::string, TimePoint> lastProbe_ GUARDED_BY(mutex_);  // by target id
  std::jthread probeThread_;
};

}  // namespace webhooker
