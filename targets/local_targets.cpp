#include "targets/local_targets.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "storage/events_db.h"

namespace webhooker {

namespace {

using Stopwatch = std::chrono::steady_clock;

// Records the single, successful attempt of a fire-and-forget target.
void recordDone(const DeliveryContext& ctx, const Task& task, Stopwatch::time_point started) {
  const auto duration =
      std::chrono::duration_cast<std::chrono::milliseconds>(Stopwatch::now() - started);
  ctx.observer.attempted(task.targetType, duration);
  AttemptRecord record;
  record.deliveryId = task.deliveryId;
  record.attempt = task.attempt;
  record.durationMs = duration.count();
  record.success = true;
  record.newStatus = DeliveryStatus::kDelivered;
  // Written in the background like the http targets' results (the hold
  // keeps the delivery ours until it is).
  ctx.db.recordAttemptAsync(
      std::move(record), [deliveryId = task.deliveryId, attempt = task.attempt,
                          type = task.targetType, &observer = ctx.observer,
                          hold = ctx.hold /* released with this callback */](Result<void> r) {
        if (!r) {
          spdlog::error("delivery.record_failed delivery_id={} attempt={} error=\"{}\"",
                        deliveryId, attempt, r.error().message);
          return;
        }
        observer.outcome(type, DeliveryStatus::kDelivered, std::nullopt);
      });
}

}  // namespace

void DatabaseTarget::deliver(const DeliveryContext& ctx, Task task) {
  const auto started = Stopwatch::now();
  recordDone(ctx, task, started);
}

void LogTarget::deliver(const DeliveryContext& ctx, Task task) {
  const auto started = Stopwatch::now();
  const EventPayload& p = ctx.payload;
  const std::string body = p.body.substr(0, kMaxLoggedBody);
  // JSON-escape the body so a hostile payload cannot forge log lines.
  spdlog::info("event.logged webhook_id={} event_id={} target_id={} method={} content_type={} "
               "size={} body={}{}",
               task.webhookId, task.eventId, task.targetId, p.method,
               nlohmann::json(p.contentType).dump(-1, ' ', false,
                                                  nlohmann::json::error_handler_t::replace),
               p.body.size(),
               nlohmann::json(body).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
               p.body.size() > kMaxLoggedBody ? " (cut)" : "");
  recordDone(ctx, task, started);
}

}  // namespace webhooker
