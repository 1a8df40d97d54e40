#include "engine/operational_events.h"

#include <spdlog/spdlog.h>

#include "base/thread_name.h"
#include "base/time_format.h"

namespace webhooker {

std::optional<OperationalEventType> parseOperationalEventType(std::string_view text) {
  for (OperationalEventType type : kOperationalEventTypes)
    if (operationalEventWord(type) == text) return type;
  return std::nullopt;
}

nlohmann::json OperationalWebhookSetting::toJson() const {
  nlohmann::json types = nlohmann::json::array();
  for (OperationalEventType type : eventTypes) types.push_back(operationalEventWord(type));
  return {{"webhook_id", webhookId}, {"target_id", targetId}, {"event_types", types}};
}

std::optional<OperationalWebhookSetting> OperationalWebhookSetting::fromJson(
    const nlohmann::json& json) {
  if (!json.is_object() || !json.contains("webhook_id") || !json["webhook_id"].is_string() ||
      !json.contains("target_id") || !json["target_id"].is_string() ||
      !json.contains("event_types") || !json["event_types"].is_array())
    return std::nullopt;
  OperationalWebhookSetting setting;
  setting.webhookId = json["webhook_id"].get<std::string>();
  setting.targetId = json["target_id"].get<std::string>();
  for (const auto& word : json["event_types"]) {
    if (!word.is_string()) return std::nullopt;
    const auto type = parseOperationalEventType(word.get<std::string>());
    if (!type) return std::nullopt;
    setting.eventTypes.insert(*type);
  }
  return setting;
}

OperationalEvents::OperationalEvents(MainStore& store, EventsDbPool& eventsDbs,
                                     Dispatcher& dispatcher, const Clock& clock)
    : store_(store), eventsDbs_(eventsDbs), dispatcher_(dispatcher), clock_(clock) {}

void OperationalEvents::reload() {
  auto stored = store_.getSetting(OperationalWebhookSetting::kSettingKey);
  if (!stored) {
    spdlog::error("operational_webhook.load_failed error=\"{}\"", stored.error().message);
    return;
  }
  std::optional<OperationalWebhookSetting> setting;
  if (stored.value()) {
    setting = OperationalWebhookSetting::fromJson(
        nlohmann::json::parse(*stored.value(), nullptr, false));
    if (!setting) spdlog::error("operational_webhook.setting_unreadable");
  }
  MutexLock lock(mutex_);
  setting_ = std::move(setting);
}

std::optional<OperationalWebhookSetting> OperationalEvents::setting() const {
  MutexLock lock(mutex_);
  return setting_;
}

bool OperationalEvents::concernsOperationalWebhookLocked(const nlohmann::json& data) const {
  return setting_ && data.value("webhook_id", "") == setting_->webhookId;
}

OperationalEvents::~OperationalEvents() { stop(); }

void OperationalEvents::start() {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void OperationalEvents::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  wake_.notify_all();
  thread_.join();
}

void OperationalEvents::drain() {
  MutexLock lock(mutex_);
  const uint64_t target = queuedCount_;
  stored_.wait(lock, [&]() REQUIRES(mutex_) { return storedCount_ >= target; });
}

void OperationalEvents::enqueueLocked(OperationalEventType type, nlohmann::json data) {
  queue_.push_back({*setting_, type, std::move(data)});
  ++queuedCount_;
  wake_.notify_one();
}

void OperationalEvents::publish(OperationalEventType type, nlohmann::json data) {
  MutexLock lock(mutex_);
  if (!setting_ || !setting_->eventTypes.count(type) || concernsOperationalWebhookLocked(data))
    return;
  enqueueLocked(type, std::move(data));
}

void OperationalEvents::deadLettered(nlohmann::json data) {
  MutexLock lock(mutex_);
  if (!setting_ || !setting_->eventTypes.count(OperationalEventType::kDeadLettered) ||
      concernsOperationalWebhookLocked(data))
    return;
  const TimePoint now = clock_.now();
  summarizeEndedLocked(now);
  const std::string webhookId = data.value("webhook_id", "");
  auto [it, fresh] = windows_.try_emplace(webhookId);
  DeadLetterWindow& window = it->second;
  if (fresh) window.start = now;
  if (++window.count > kDeadLettersPerMinute) {
    if (window.suppressed++ == 0) window.suppressedFirst = data;
    window.suppressedLast = std::move(data);
    return;
  }
  enqueueLocked(OperationalEventType::kDeadLettered, std::move(data));
}

void OperationalEvents::summarizeEndedLocked(TimePoint now) {
  for (auto it = windows_.begin(); it != windows_.end();) {
    DeadLetterWindow& window = it->second;
    if (now - window.start < std::chrono::minutes(1)) {
      ++it;
      continue;
    }
    if (window.suppressed > 0 && setting_) {
      enqueueLocked(OperationalEventType::kDeadLettered,
                    {{"summary", true},
                     {"webhook_id", it->first},
                     {"count", window.suppressed},
                     {"reason", "more_than_limit_per_minute"},
                     {"limit_per_minute", kDeadLettersPerMinute},
                     {"window_start", formatTime(window.start)},
                     {"first", std::move(window.suppressedFirst)},
                     {"last", std::move(window.suppressedLast)}});
    }
    it = windows_.erase(it);
  }
}

void OperationalEvents::run(std::stop_token stop) {
  nameThisThread("wh-op-events");
  MutexLock lock(mutex_);
  while (true) {
    // Wakes for queued events, and once a second for a minute that ended.
    wake_.wait_for(lock, stop, std::chrono::seconds(1),
                   [&]() REQUIRES(mutex_) { return !queue_.empty(); });
    summarizeEndedLocked(clock_.now());
    while (!queue_.empty()) {
      Queued event = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      store(std::move(event));
      lock.lock();
      ++storedCount_;
      stored_.notify_all();
    }
    if (stop.stop_requested()) return;
  }
}

void OperationalEvents::store(Queued queued) {
  const std::string& webhookId = queued.setting.webhookId;
  const std::string_view type = operationalEventWord(queued.type);
  auto db = eventsDbs_.get(webhookId);
  if (!db) {
    spdlog::error("operational_webhook.unavailable webhook_id={} type={} error=\"{}\"", webhookId,
                  type, db.error().message);
    return;
  }
  InboundEvent event;
  event.entrypointId = "operational";
  event.method = "POST";
  event.path = "/operational";
  event.contentType = "application/json";
  event.eventType = type;  // listed and replayed by type like any event
  event.headers = {{"Content-Type", "application/json"}, {"User-Agent", "webhooker"}};
  event.body = nlohmann::json{{"type", type},
                              {"timestamp", formatTime(clock_.now())},
                              {"data", std::move(queued.data)}}
                   .dump();
  // Held open from before the write until the deliveries are submitted, as
  // ingest does, so a sweep never takes a row that is about to be handed over.
  const Dispatcher::Handoff handoff = dispatcher_.openHandoff();
  auto stored = db.value()->ingest(event, {queued.setting.targetId}, std::chrono::milliseconds(0));
  if (!stored) {
    spdlog::error("operational_webhook.store_failed type={} error=\"{}\"", type,
                  stored.error().message);
    return;
  }
  spdlog::info("operational_webhook.queued type={} event_id={}", type, stored->eventId);
  dispatcher_.submit(firstAttempts(webhookId, std::move(event), *stored,
                                    [](const std::string&) { return TargetType::kHttp; }));
}

}  // namespace webhooker
