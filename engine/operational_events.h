// OperationalEvents: tells the operator's own endpoint what happens to
// receivers — target.disabled, target.enabled, target.breaker_opened,
// target.breaker_closed, delivery.dead_lettered — as Standard Webhooks-signed
// JSON {"type", "timestamp", "data": {webhook_id, target_id, reason, ...}}.
//
// The endpoint is an ordinary webhook with one http target (made by the
// admin API's PUT /settings/operational-webhook, its entrypoint removed so
// nobody can post into it): an event is stored in that webhook's events DB
// and delivered by the engine like any other, with its retries, breaker,
// SSRF rules and recovery after a kill -9. What happens to that webhook
// itself never becomes an operational event, so a failing operational
// endpoint cannot feed itself.
//
// Dead letters: one event each, up to kDeadLettersPerMinute in a minute per
// webhook (one webhook's flood hides no other's); beyond that they are
// counted and one summary event per webhook (data.summary true, its
// webhook_id, the count and the first and last of them) goes out when its
// minute ends.
//
// Threading: any thread. publish() and deadLettered() only queue the event
// (they may be called on a commit thread of the events DBs, which must not open
// or write another events DB); a thread of its own stores the queue in the
// operational webhook's events DB, hands the deliveries to the engine and
// sends minute summaries. An event is durable once stored, a few ms after
// the transition. mutex_ guards the setting, the queue and the dead-letter
// window.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <thread>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "engine/dispatcher.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"

namespace webhooker {

enum class OperationalEventType {
  kTargetDisabled,
  kTargetEnabled,
  kBreakerOpened,
  kBreakerClosed,
  kDeadLettered,
};

inline constexpr OperationalEventType kOperationalEventTypes[] = {
    OperationalEventType::kTargetDisabled, OperationalEventType::kTargetEnabled,
    OperationalEventType::kBreakerOpened, OperationalEventType::kBreakerClosed,
    OperationalEventType::kDeadLettered};

constexpr std::string_view operationalEventWord(OperationalEventType type) {
  switch (type) {
    case OperationalEventType::kTargetDisabled: return "target.disabled";
    case OperationalEventType::kTargetEnabled: return "target.enabled";
    case OperationalEventType::kBreakerOpened: return "target.breaker_opened";
    case OperationalEventType::kBreakerClosed: return "target.breaker_closed";
    case OperationalEventType::kDeadLettered: return "delivery.dead_lettered";
  }
  return "target.disabled";  // not reached
}

std::optional<OperationalEventType> parseOperationalEventType(std::string_view text);

// What the setting "operational_webhook" holds: where the events go (the
// url and secret live in the target's config) and which types are sent.
struct OperationalWebhookSetting {
  static constexpr const char* kSettingKey = "operational_webhook";
  std::string webhookId;
  std::string targetId;
  std::set<OperationalEventType> eventTypes;

  nlohmann::json toJson() const;
  static std::optional<OperationalWebhookSetting> fromJson(const nlohmann::json& json);
};

class OperationalEvents {
 public:
  static constexpr int kDeadLettersPerMinute = 10;

  OperationalEvents(MainStore& store, EventsDbPool& eventsDbs, Dispatcher& dispatcher,
                    const Clock& clock);

  ~OperationalEvents();
  // Reads the setting (at start-up, and after the admin API changed it).
  void reload();
  // The storing thread; stop() stores what is queued, then ends it.
  void start();
  void stop();
  // Returns once everything queued before the call is stored (tests).
  void drain();
  // The setting in force, if any.
  std::optional<OperationalWebhookSetting> setting() const;

  // Sends `type` with `data` (which names webhook_id and target_id) unless
  // no endpoint is set, the type is not subscribed, or the data is about
  // the operational webhook itself.
  void publish(OperationalEventType type, nlohmann::json data);
  // A dead letter: an event of its own, or counted into the minute's summary.
  void deadLettered(nlohmann::json data);

 private:
  struct Queued {
    OperationalWebhookSetting setting;
    OperationalEventType type;
    nlohmann::json data;
  };
  bool concernsOperationalWebhookLocked(const nlohmann::json& data) const REQUIRES(mutex_);
  void enqueueLocked(OperationalEventType type, nlohmann::json data) REQUIRES(mutex_);
  // One webhook's minute of dead letters.
  struct DeadLetterWindow {
    TimePoint start;
    int count = 0;
    nlohmann::json suppressedFirst;  // the first one past the limit
    nlohmann::json suppressedLast;
    int suppressed = 0;
  };
  // Queues the summaries of the minutes that have ended at `now`.
  void summarizeEndedLocked(TimePoint now) REQUIRES(mutex_);
  void run(std::stop_token stop);
  // Stores the event and hands its delivery to the engine.
  void store(Queued event);

  MainStore& store_;
  EventsDbPool& eventsDbs_;
  Dispatcher& dispatcher_;
  const Clock& clock_;

  mutable Mutex mutex_;
  std::optional<OperationalWebhookSetting> setting_ GUARDED_BY(mutex_);
  // The current minute of dead letters of each webhook that had one.
  std::map<std::string, DeadLetterWindow> windows_ GUARDED_BY(mutex_);
  std::deque<Queued> queue_ GUARDED_BY(mutex_);
  uint64_t queuedCount_ GUARDED_BY(mutex_) = 0;  // ever queued
  uint64_t storedCount_ GUARDED_BY(mutex_) = 0;  // of those, taken and stored (or dropped)
  std::condition_variable_any wake_;
  std::condition_variable_any stored_;
  std::jthread thread_;
};

}  // namespace webhooker
